"""Run by the ``landscape`` bench with a Python that has MindSpore (and summarylog):
trains a small MLP with MindSpore's SummaryCollector saving what a landscape needs,
then computes the same SIZE x SIZE result landscape with MindSpore's SummaryLandscape
and with summarylog's drop-in (numpy's global RNG seeded the same before each, so the
directions are the same), ROUNDS rounds, the order rotated each round, and prints JSON
{"mindspore": [s, ...], "ours": [s, ...], "run": dir, "version": ...}; the landscapes
are left in RUN/mindspore-<i> and RUN/ours-<i>.

    python ms_landscape.py RUN SIZE ROUNDS
"""

import json
import os
import sys
import time

import numpy as np

import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Loss, Model

NUM_SAMPLES = 256
BATCH = 32


class MLP(nn.Cell):
    def __init__(self, init="normal"):
        super().__init__()
        # constant initialisers in the callback's copy: MindSpore's random ones draw from
        # numpy's global RNG, which the landscape's directions come from too
        kw = {} if init == "normal" else {"weight_init": "zeros", "bias_init": "zeros"}
        self.fc1 = nn.Dense(32, 64, **kw)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(64, 2, **kw)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def gen():
    rng = np.random.default_rng(0)
    for _ in range(NUM_SAMPLES * 2):
        x = rng.random(32).astype(np.float32)
        yield x, np.int32(x.sum() > 16)


def dataset():
    return ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(BATCH)


def loss_cell():
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def callback_fn():
    net = MLP(init="zeros")
    metrics = {"Loss": Loss()}
    return Model(net, loss_cell(), metrics=metrics), net, dataset(), metrics


def main(run: str, size: int, rounds: int) -> None:
    from summarylog.landscape.summary_landscape import SummaryLandscape

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    ms.set_seed(1)
    net = MLP()
    model = Model(net, loss_cell(), nn.Momentum(net.trainable_params(), 0.05, 0.9))
    spec = {"landscape_size": size, "unit": "step", "num_samples": NUM_SAMPLES,
            "create_landscape": {"train": False, "result": True}, "intervals": [[1, 2, 3]]}
    coll = ms.SummaryCollector(run, collect_specified_data={"collect_landscape": spec})
    model.train(1, dataset().take(3), callbacks=[coll], dataset_sink_mode=False)
    out = {"mindspore": [], "ours": []}
    names = list(out)
    for r in range(rounds):
        for which in names[r % 2:] + names[:r % 2]:
            np.random.seed(0)
            dest = os.path.join(run, f"{which}-{r}")
            t0 = time.perf_counter()
            if which == "mindspore":
                ms.SummaryLandscape(run).gen_landscapes_with_multi_process(
                    callback_fn, device_ids=[0], output=dest)
            else:
                SummaryLandscape(run).gen_landscapes_with_multi_process(
                    callback_fn, device_ids=[0], output=dest, progress=False)
            out[which].append(time.perf_counter() - t0)
    out.update(version=ms.__version__, run=run, num_samples=NUM_SAMPLES, batch=BATCH)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
