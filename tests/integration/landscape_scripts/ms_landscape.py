"""Run in the MindSpore venv: train a small MLP with MindSpore's own SummaryCollector
collecting the landscape checkpoints, then compute the landscapes with MindSpore's
SummaryLandscape and with summarylog's drop-in on the same checkpoints (the global
numpy RNG seeded the same before each), and print JSON with the timings.

    python ms_landscape.py RUN MODE SIZE WHICH [NUM_SAMPLES] [HIDDEN] [INTERVALS]

MODE: graph | pynative; WHICH: a comma list of mindspore, ours, ours2 (two worker
processes through device_ids=[0, 1]), ours_procs (processes=2)."""

import json
import os
import sys
import time

import numpy as np

import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Loss, Model

HIDDEN = int(sys.argv[6]) if len(sys.argv) > 6 else 8


class Net(nn.Cell):
    def __init__(self, init="normal"):
        super().__init__()
        # the callback's network is built with constant initialisers: MindSpore's random
        # ones draw from numpy's global RNG, which the Random directions come from too
        kw = {} if init == "normal" else {"weight_init": "zeros", "bias_init": "zeros"}
        self.fc1 = nn.Dense(16, HIDDEN, **kw)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(HIDDEN, 1, **kw)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def gen():
    rng = np.random.default_rng(0)
    for _ in range(4096):
        x = rng.normal(size=16).astype(np.float32)
        yield x, np.array([x[:8].sum() * 0.5 - x[8:].sum() * 0.25], np.float32)


def dataset():
    return ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(32)


def callback_fn():
    net = Net(init="zeros")
    metrics = {"Loss": Loss()}
    model = Model(net, nn.MSELoss(), metrics=metrics)
    return model, net, dataset(), metrics


def main():
    run, mode, size, which = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
    num_samples = int(sys.argv[5]) if len(sys.argv) > 5 else 256
    intervals = (json.loads(sys.argv[7]) if len(sys.argv) > 7
                 else [[1, 2, 3, 4], [5, 6, 7, 8]])
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE,
                   device_target="CPU")
    out = {"version": ms.__version__}
    if not os.path.exists(os.path.join(run, "ckpt_dir", "train_metadata.json")):
        ms.set_seed(1)
        net = Net()
        model = Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.02, 0.9))
        spec = {"landscape_size": size, "unit": "step", "num_samples": num_samples,
                "create_landscape": {"train": True, "result": True}, "intervals": intervals}
        coll = ms.SummaryCollector(run, collect_specified_data={"collect_landscape": spec})
        last = max(p for i in intervals for p in i)
        small = ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(32).take(last)
        model.train(1, small, callbacks=[coll], dataset_sink_mode=False)
    for w in which:
        np.random.seed(0)
        t0 = time.perf_counter()
        if w == "mindspore":
            ms.SummaryLandscape(run).gen_landscapes_with_multi_process(
                callback_fn, device_ids=[0], output=os.path.join(run, w))
        else:
            from summarylog.landscape.summary_landscape import SummaryLandscape

            kw = {"device_ids": [0, 1]} if w == "ours2" else {"device_ids": [0]}
            if w == "ours_procs":
                kw = {"processes": 2}
            SummaryLandscape(run).gen_landscapes_with_multi_process(
                callback_fn, output=os.path.join(run, w), progress=False, **kw)
        out[w] = time.perf_counter() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
