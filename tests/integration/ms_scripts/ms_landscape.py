"""Run with the MindSpore venv's python: collect_landscape from summarylog's MindSpore
SummaryCollector in a real Model.train, then MindSpore's own SummaryLandscape on it.

  ms_landscape.py train OUTDIR CASE      CASE: default | step | epoch
    trains a tiny net (3 epochs of 8 steps) with our collector; the parameters
    MindSpore holds at each step end and epoch end go to OUTDIR/truth/{step|epoch}_N.npz
  ms_landscape.py landscape OUTDIR
    MindSpore's SummaryLandscape on OUTDIR's ckpt_dir (a 3x3 grid, 16 samples)
Prints JSON on its last line."""

import json
import os
import sys

import numpy as np


def _setup():
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(4, 5)
            self.bn = nn.BatchNorm1d(5)  # non-trainable moving stats are saved too
            self.fc2 = nn.Dense(5, 1)
            self.relu = nn.ReLU()

        def construct(self, x):
            return self.fc2(self.relu(self.bn(self.fc1(x))))

    def dataset():
        import mindspore.dataset as ds

        rng = np.random.default_rng(0)
        x = rng.normal(size=(64, 4)).astype(np.float32)
        y = (x[:, :1] * 2 - x[:, 1:2]).astype(np.float32)
        return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)

    return ms, nn, Net, dataset


CASES = {
    "default": None,  # MindSpore's defaults: steps 1-19
    "step": {"unit": "step", "intervals": [[2, 4, 6], [6, 9, 13, 20]], "landscape_size": 3,
             "num_samples": 16},
    "epoch": {"unit": "epoch", "intervals": [[1, 2, 3]], "landscape_size": 3,
              "num_samples": 16},
}


def train(outdir, case):
    ms, nn, Net, dataset = _setup()
    from mindspore.train.callback import Callback

    from summarylog.adapters.mindspore import SummaryCollector

    truth = os.path.join(outdir, "truth")
    os.makedirs(truth, exist_ok=True)

    class Capture(Callback):
        def _dump(self, kind, n, net):
            np.savez(os.path.join(truth, f"{kind}_{n}.npz"),
                     **{p.name: p.asnumpy().copy() for p in net.get_parameters()})

        def step_end(self, run_context):
            cb = run_context.original_args()
            self._dump("step", cb.cur_step_num, net)

        def epoch_end(self, run_context):
            cb = run_context.original_args()
            self._dump("epoch", cb.cur_epoch_num, net)

    ms.set_seed(1)
    net = Net()
    model = ms.Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.05, 0.9))
    spec = {} if CASES[case] is None else {"collect_landscape": CASES[case]}
    sc = SummaryCollector(os.path.join(outdir, "run"), collect_freq=4,
                          collect_specified_data=spec)
    made = os.path.isdir(os.path.join(outdir, "run", "ckpt_dir"))
    model.train(3, dataset(), callbacks=[Capture(), sc], dataset_sink_mode=False)
    sc.close()
    print(json.dumps({"ckpt_dir_at_construction": made,
                      "names": [p.name for p in net.get_parameters()]}))


def landscape(outdir):
    ms, nn, Net, dataset = _setup()
    from mindspore import SummaryLandscape
    from mindspore.train import Loss

    def callback_fn():
        net = Net()
        loss = nn.MSELoss()
        model = ms.Model(net, loss, metrics={"Loss": Loss()})
        return model, net, dataset(), {"Loss": Loss()}

    run = os.path.join(outdir, "run")
    before = set(os.listdir(run))
    SummaryLandscape(run).gen_landscapes_with_multi_process(
        callback_fn, collect_landscape={"landscape_size": 3, "num_samples": 16},
        device_ids=[0])
    print(json.dumps({"new_files": sorted(set(os.listdir(run)) - before)}))


if __name__ == "__main__":
    {"train": train, "landscape": landscape}[sys.argv[1]](*sys.argv[2:])
