"""Run by ``summarylog-bench`` with a Python that has MindSpore (and
summarylog): times Model.train with no collector, MindSpore's own
SummaryCollector and summarylog's, each run ``repeat`` times, interleaved,
and prints JSON {"none": [s...], "mindspore": [...], "ours": [...]}.

    python ms_overhead.py OUTDIR REPEAT QUICK
"""

import json
import os
import sys
import time

import numpy as np


def main(outdir: str, repeat: int, quick: bool) -> None:
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn

    from summarylog.adapters.mindspore import SummaryCollector

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    epochs, batches = (1, 48) if quick else (4, 96)  # 384 steps

    def gen():
        rng = np.random.default_rng(0)
        for _ in range(batches * 16):
            x = rng.random(32).astype(np.float32)
            yield x, np.int32(x.sum() > 16)

    def run(which: str, i: int) -> float:
        ms.set_seed(1)
        data = ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(16)
        net = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 2))
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
        model = ms.Model(net, loss, opt)
        cbs = []
        d = os.path.join(outdir, f"{which}-{i}")
        if which == "mindspore":
            cbs.append(ms.SummaryCollector(d))
        elif which == "ours":
            cbs.append(SummaryCollector(d))
        t0 = time.perf_counter()
        model.train(epochs, data, callbacks=cbs, dataset_sink_mode=False)
        return time.perf_counter() - t0

    run("none", -1)  # warm-up: graph compile, dataset pipeline
    out = {"none": [], "mindspore": [], "ours": []}
    names = list(out)
    for r in range(repeat):
        for which in names[r % 3:] + names[:r % 3]:
            out[which].append(run(which, r))
    out["version"] = ms.__version__
    out["steps"] = epochs * batches
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")
