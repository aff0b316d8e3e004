"""Run by ``summarylog-bench`` with a Python that has MindSpore (and
summarylog): times Model.train with no collector, MindSpore's own
SummaryCollector and summarylog's, one run of each a round, the order
rotated each round, and prints JSON {"none": [{"wall": s, "cpu": s}, ...],
"mindspore": [...], "ours": [...], ...}.

    python ms_overhead.py OUTDIR ROUNDS EPOCHS

Both collectors collect the same things: MindSpore's defaults, the loss
landscape's included (the parameters saved at steps 1-19 into ``ckpt_dir`` with
``train_metadata.json``).  ``cpu`` counts the process's threads and its reaped children
(MindSpore's writer process and its packer pool).  A collector that leaves
its summary directory without a summary and a lineage file, or without the 19
checkpoints and their train_metadata.json, fails the run.
"""

import gc
import json
import multiprocessing
import os
import sys
import time

import numpy as np


def main(outdir: str, rounds: int, epochs: int) -> None:
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn

    import summarylog
    from summarylog.adapters.mindspore import SummaryCollector

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    batches = 96

    def gen():
        rng = np.random.default_rng(0)
        for _ in range(batches * 16):
            x = rng.random(32).astype(np.float32)
            yield x, np.int32(x.sum() > 16)

    def run(which: str, i: int) -> dict:
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
        t0, c0, k0 = time.perf_counter(), time.process_time(), os.times()
        model.train(epochs, data, callbacks=cbs, dataset_sink_mode=False)
        wall = time.perf_counter() - t0
        # what a collector leaves running (MindSpore's writer processes) ends before the
        # next run, or it slows that run and its CPU is counted there (reaped then)
        for child in multiprocessing.active_children():
            child.join(30)
        gc.collect()
        k1 = os.times()
        cpu = (time.process_time() - c0 + k1.children_user - k0.children_user
               + k1.children_system - k0.children_system)
        time.sleep(0.2)
        if cbs:
            files = os.listdir(d)
            ckpts = os.listdir(os.path.join(d, "ckpt_dir")) if "ckpt_dir" in files else []
            if not (any(f.endswith("_MS") for f in files)
                    and any(f.endswith("_lineage") for f in files)
                    and "train_metadata.json" in ckpts
                    and sum(f.endswith(".ckpt") for f in ckpts) >= 19):
                raise RuntimeError(f"{which}'s collector left {d} with {sorted(files)}, "
                                   f"ckpt_dir: {sorted(ckpts)}")
        return {"wall": wall, "cpu": cpu}

    run("none", -1)  # warm-up: graph compile, dataset pipeline
    out = {"none": [], "mindspore": [], "ours": []}
    names = list(out)
    for r in range(rounds):
        for which in names[r % 3:] + names[:r % 3]:
            out[which].append(run(which, r))
    out.update(version=ms.__version__, steps=epochs * batches,
               summarylog=os.path.dirname(os.path.realpath(summarylog.__file__)))
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
