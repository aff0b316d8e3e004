"""Run with the MindSpore venv's python (tests/venvs.py "mindspore"), from a
file (graph mode compiles the source of ``construct``, so not from stdin).

  ms_record.py OUTDIR MODE LOOP WHICH
  ms_record.py OUTDIR MODE:LOOP,MODE:LOOP,... ours   (each case in OUTDIR/MODE-LOOP,
    one process for all: MindSpore's start-up paid once; prints {"MODE:LOOP": result})
    MODE: graph | pynative
    LOOP: loop (a custom training loop) | callback (Model.train with a custom
          callback recording at each step) | collector (the same, plus a
          SummaryCollector writing to OUTDIR/collector_WHICH; "ours" only:
          MindSpore allows one SummaryRecord per process)
    WHICH: ours (summarylog.SummaryRecord and summarylog's SummaryCollector)
           | mindspore (mindspore.SummaryRecord and mindspore.SummaryCollector)

A network with ops.ScalarSummary, ImageSummary, TensorSummary and
HistogramSummary in its construct is trained for 6 steps on fixed data; the
record is given nothing but ``record(step)``.  Prints JSON: the loss at each
step."""

import json
import os
import sys

import numpy as np

STEPS = 6


def main(outdir, mode, loop, which):
    import mindspore as ms
    from mindspore import nn, ops

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE,
                   device_target="CPU")
    ms.set_seed(1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(12, 3, weight_init="ones", bias_init="zeros")
            self.scalar = ops.ScalarSummary()
            self.image = ops.ImageSummary()
            self.tensor = ops.TensorSummary()
            self.hist = ops.HistogramSummary()

        def construct(self, x):
            self.image("input", x.reshape((4, 1, 3, 4)))
            y = self.fc(x)
            self.scalar("out_mean", y.mean())
            self.tensor("out", y)
            self.hist("fc_weight", self.fc.weight)
            return y

    rng = np.random.default_rng(0)
    xs = [rng.random((4, 12)).astype(np.float32) for _ in range(STEPS)]
    ys = [rng.integers(0, 3, 4).astype(np.int32) for _ in range(STEPS)]

    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.1)
    if which == "ours":
        from summarylog import SummaryRecord
    else:
        from mindspore import SummaryRecord
    losses = {}
    run = os.path.join(outdir, which)

    if loop == "loop":
        train = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        train.set_train()
        with SummaryRecord(run) as rec:
            for step in range(1, STEPS + 1):
                loss = train(ms.Tensor(xs[step - 1]), ms.Tensor(ys[step - 1]))
                losses[step] = float(loss.asnumpy())
                rec.record(step)
    else:
        import mindspore.dataset as ds
        from mindspore.train.callback import Callback

        class Record(Callback):
            def __init__(self, rec):
                super().__init__()
                self.rec = rec

            def step_end(self, run_context):
                cb = run_context.original_args()
                losses[int(cb.cur_step_num)] = float(np.asarray(cb.net_outputs.asnumpy()))
                self.rec.record(int(cb.cur_step_num))

        data = ds.NumpySlicesDataset({"x": np.concatenate(xs), "y": np.concatenate(ys)},
                                     shuffle=False).batch(4)
        model = ms.Model(net, loss_fn, opt)
        callbacks = []
        if loop == "collector":  # the collector and a plain record share the operators
            if which == "ours":
                from summarylog.adapters.mindspore import SummaryCollector
            else:
                from mindspore import SummaryCollector
            callbacks.append(SummaryCollector(os.path.join(outdir, f"collector_{which}"),
                                              collect_freq=2))
        with SummaryRecord(run) as rec:
            model.train(1, data, callbacks=[*callbacks, Record(rec)], dataset_sink_mode=False)
    return {"losses": losses}


if __name__ == "__main__":
    if len(sys.argv) == 4:  # several cases, "ours" only (MindSpore's record: one a process)
        outdir, cases, which = sys.argv[1:4]
        assert which == "ours", which
        results = {}
        for case in cases.split(","):
            mode, loop = case.split(":")
            os.makedirs(os.path.join(outdir, f"{mode}-{loop}"))
            results[case] = main(os.path.join(outdir, f"{mode}-{loop}"), mode, loop, which)
        print(json.dumps(results))
    else:
        print(json.dumps(main(*sys.argv[1:5])))
