"""Run with the MindSpore venv's python: train with summarylog's MindSpore
SummaryCollector (and, for comparison, MindSpore's own), in graph or
PyNative mode, sink mode or not.

  ms_collector.py OUTDIR FORMAT MODE SINK [which]
    FORMAT: mindinsight | tensorboard;  MODE: graph | pynative;  SINK: 0 | 1
    which: ours (default) | mindspore | both
Prints JSON: {"ours": {...}, "mindspore": {...}} with the loss values
MindSpore's loss gave at each step (from a callback) and timings."""

import json
import os
import sys
import time

import numpy as np


def main(outdir, fmt, mode, sink, which="ours"):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn, ops
    from mindspore.train.callback import Callback

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE,
                   device_target="CPU")

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, pad_mode="valid")
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(4 * 6 * 6, 2)
            self.relu = nn.ReLU()
            self.scalar = ops.ScalarSummary()
            self.hist = ops.HistogramSummary()
            self.tensor = ops.TensorSummary()

        def construct(self, x):
            h = self.relu(self.conv(x))
            self.scalar("act_mean", h.mean())
            self.hist("act", h)
            y = self.fc(self.flatten(h))
            self.tensor("logits", y)
            return y

    def gen():
        rng = np.random.default_rng(0)
        for _ in range(96):
            x = rng.random((3, 8, 8)).astype(np.float32)
            yield x, np.int32(x.mean() > 0.5)

    class Losses(Callback):
        def __init__(self):
            super().__init__()
            self.values = {}

        def step_end(self, run_context):
            cb = run_context.original_args()
            self.values[int(cb.cur_step_num)] = float(np.asarray(cb.net_outputs.asnumpy()).mean())

    out = {}
    for name in (["ours", "mindspore"] if which == "both" else [which]):
        ms.set_seed(1)
        data = ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(8)
        net = Net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
        model = ms.Model(net, loss, opt, metrics={"acc": nn.Accuracy()})
        kw = dict(collect_freq=4, custom_lineage_data={"team": "blue", "trial": 2},
                  collect_specified_data={"histogram_regular": "^fc"})
        d = os.path.join(outdir, name)
        if name == "ours":
            from summarylog.adapters.mindspore import SummaryCollector

            sc = SummaryCollector(d, format=fmt, **kw)
        else:
            sc = ms.SummaryCollector(d, **kw)
        losses = Losses()
        t0 = time.perf_counter()
        model.train(3, data, callbacks=[losses, sc], dataset_sink_mode=sink == "1")
        model.eval(data, callbacks=[sc], dataset_sink_mode=False)
        if hasattr(sc, "close"):
            sc.close()
        out[name] = {"losses": losses.values, "seconds": time.perf_counter() - t0,
                     "files": sorted(os.listdir(d))}
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
