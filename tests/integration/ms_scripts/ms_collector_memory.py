"""Run with the MindSpore venv's python: graph-mode training of a net with a
4 MiB weight, summarylog's SummaryCollector histogramming that weight at
every step.  Prints JSON: the process's RSS after the first and the last
collection (MiB), and the weight's sum at each step, read by a callback
after the collector's.

  ms_collector_memory.py OUTDIR STEPS
"""

import json
import sys

import numpy as np


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def main(outdir: str, steps: str) -> None:
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train.callback import Callback

    from summarylog.adapters.mindspore import SummaryCollector

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")

    def gen():
        rng = np.random.default_rng(0)
        for _ in range(int(steps) * 2):
            x = rng.random(1024).astype(np.float32)
            yield x, np.int32(x.sum() > 512)

    class Watch(Callback):
        def __init__(self, weight):
            super().__init__()
            self.weight, self.sums, self.rss = weight, {}, []

        def step_end(self, run_context):
            step = int(run_context.original_args().cur_step_num)
            self.sums[step] = float(self.weight.asnumpy().astype(np.float64).sum())
            if step in (1, int(steps)):
                self.rss.append(rss_mib())

    ms.set_seed(1)
    net = nn.SequentialCell(nn.Dense(1024, 1024), nn.ReLU(), nn.Dense(1024, 2))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.Model(net, loss, nn.Momentum(net.trainable_params(), 0.05, 0.9))
    watch = Watch(net[0].weight)
    sc = SummaryCollector(outdir, collect_freq=1,
                          collect_specified_data={"histogram_regular": "^0.weight"})
    data = ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(2)
    model.train(1, data, callbacks=[sc, watch], dataset_sink_mode=False)
    print(json.dumps({"rss_mib": watch.rss, "sums": watch.sums}))


if __name__ == "__main__":
    main(*sys.argv[1:])
