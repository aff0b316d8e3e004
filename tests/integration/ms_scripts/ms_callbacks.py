"""Run with the MindSpore venv's python: summarylog's MindSpore SummaryCollector driven
through MindSpore's own RunContext the way Model.train drives it in a real sink-mode
run (on a device): step_end once per sink (cur_step_num a multiple of the sink size),
then epoch_end (on the CPU MindSpore trains step by step even with sink mode on, so
Model.train cannot reach this path here).  Also the callback checks MindSpore makes:
two SummaryCollectors in one callback list and a mode that is neither train nor eval.

  ms_callbacks.py OUTDIR
Prints JSON on its last line."""

import json
import os
import sys

import numpy as np


def main(outdir):
    import mindspore as ms
    from mindspore import Tensor, nn
    from mindspore.train.callback import RunContext
    from mindspore.train.callback._callback import InternalCallbackParam

    from summarylog.adapters.mindspore import SummaryCollector

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    net = nn.Dense(3, 2)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    train_net = nn.TrainOneStepCell(loss_net, opt)
    out = {}

    sink, epochs = 4, 3
    sc = SummaryCollector(os.path.join(outdir, "sink"), collect_freq=1,
                          collect_specified_data={"collect_landscape": {
                              "unit": "step", "intervals": [[4, 6, 8], [8, 12, 13]]}})
    cb = InternalCallbackParam(mode="train", dataset_sink_mode=True, epoch_num=epochs,
                               batch_num=sink, train_network=train_net, list_callback=[sc],
                               cur_step_num=0, cur_epoch_num=0, net_outputs=None,
                               optimizer=opt, loss_fn=nn.MSELoss(), train_dataset=None,
                               parallel_mode="stand_alone", device_number=1)
    ctx = RunContext(cb)
    weights, losses = {}, {}
    with sc:
        sc.begin(ctx)
        for epoch in range(1, epochs + 1):
            x = Tensor(np.full((4, 3), epoch, np.float32))
            y = Tensor(np.zeros((4, 2), np.float32))
            for _ in range(sink):  # the device runs the sink's steps; no callback between
                loss = train_net(x, y)
            cb.cur_epoch_num, cb.cur_step_num = epoch, epoch * sink
            cb.net_outputs = loss
            weights[cb.cur_step_num] = net.weight.asnumpy().tolist()
            losses[epoch] = float(loss.asnumpy())
            sc.step_end(ctx)  # once per sink
            sc.epoch_end(ctx)
        sc.end(ctx)
    out["sink"] = {"losses": losses, "weights": weights}

    # two SummaryCollectors in one list: MindSpore's ValueError at begin
    a = SummaryCollector(os.path.join(outdir, "two_a"), collect_specified_data={
        "collect_landscape": None})
    b = SummaryCollector(os.path.join(outdir, "two_b"), collect_specified_data={
        "collect_landscape": None})
    two = InternalCallbackParam(mode="train", dataset_sink_mode=False, epoch_num=1,
                                batch_num=1, train_network=train_net, list_callback=[a, b])
    try:
        a.begin(RunContext(two))
        out["two"] = "no error"
    except ValueError as exc:
        out["two"] = f"ValueError: {exc}"
    finally:
        a.close()
        b.close()

    # a mode that is neither train nor eval
    c = SummaryCollector(os.path.join(outdir, "mode"), collect_specified_data={
        "collect_landscape": None})
    bad = InternalCallbackParam(mode="predict", dataset_sink_mode=False, list_callback=[c])
    try:
        c.begin(RunContext(bad))
        out["mode"] = "no error"
    except ValueError as exc:
        out["mode"] = f"ValueError: {exc}"
    finally:
        c.close()
    # num_process in its positional place, as MindSpore's signature has it
    p = SummaryCollector(os.path.join(outdir, "pos"), 5, 8, {"collect_metric": True}, False)
    out["positional"] = [p.policy.collect_freq, p.policy.num_process,
                         p.policy.enabled("collect_metric"), p.policy.keep_default_action,
                         p.policy.landscape]
    p.close()
    for bad in ("8", 0):
        try:
            SummaryCollector(os.path.join(outdir, "pos"), 5, bad)
            out[f"num_process={bad!r}"] = "no error"
        except (TypeError, ValueError) as exc:
            out[f"num_process={bad!r}"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
