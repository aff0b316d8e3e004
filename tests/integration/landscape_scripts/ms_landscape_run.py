"""Run with the MindSpore venv's python (tests/venvs.py "mindspore"):

  ms_landscape_run.py OUTDIR

MindSpore 2.10 itself makes loss landscapes of a tiny MLP into OUTDIR: its
SummaryCollector saves the parameters at the interval steps (1-4 and 5-8),
then its SummaryLandscape computes a 4 x 4 PCA landscape per interval and the
Random one at step 8, into a second summary file.  Seeded (the Random
directions come from numpy's global generator).  Prints the file names."""

import os
import sys

import numpy as np


def main(out):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import Model, nn
    from mindspore.train import Loss
    from mindspore.train.callback import SummaryCollector, SummaryLandscape

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    ms.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([[0.5], [-1.0], [0.25], [2.0]], np.float32)
         + 0.1 * rng.normal(size=(64, 1)).astype(np.float32))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1, self.relu, self.fc2 = nn.Dense(4, 5), nn.ReLU(), nn.Dense(5, 1)

        def construct(self, inputs):
            return self.fc2(self.relu(self.fc1(inputs)))

    def dataset():
        return ds.NumpySlicesDataset({"data": x, "label": y}, shuffle=False).batch(8)

    net = Net()
    model = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), 0.05))
    spec = {"collect_landscape": {"landscape_size": 4, "unit": "step", "num_samples": 32,
                                  "create_landscape": {"train": True, "result": True},
                                  "intervals": [[1, 2, 3, 4], [5, 6, 7, 8]]}}
    model.train(1, dataset(), callbacks=[SummaryCollector(out, collect_freq=1,
                                                          collect_specified_data=spec)],
                dataset_sink_mode=False)

    def callback():
        n = Net()
        return Model(n, nn.MSELoss(), metrics={"Loss": Loss()}), n, dataset(), {"Loss": Loss()}

    np.random.seed(0)
    SummaryLandscape(out).gen_landscapes_with_multi_process(callback, device_ids=[0])
    for name in sorted(os.listdir(out)):
        print(name)


if __name__ == "__main__":  # MindSpore's landscape pool needs the guard
    main(sys.argv[1])
