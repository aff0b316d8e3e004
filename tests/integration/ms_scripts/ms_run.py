"""Run with the MindSpore venv's python (tests/venvs.py "mindspore").

  ms_run.py train OUTDIR    train a small network on synthetic data with
                            MindSpore's own SummaryCollector and summary
                            operators, plus a SummaryRecord session; then
                            print every file's records decoded by MindSpore's
                            own protobuf classes, as JSON
  ms_run.py decode FILE...  print the records of summary/lineage files
                            decoded by MindSpore's own classes, as JSON
"""

import json
import os
import sys

import numpy as np


def _read_records(path):
    out = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        n = int.from_bytes(data[pos:pos + 8], "little")
        out.append(data[pos + 12:pos + 12 + n])
        pos += 16 + n
    return out


def decode(path):
    from google.protobuf import json_format
    from mindspore.train import lineage_pb2, summary_pb2

    records = []
    for raw in _read_records(path):
        if path.endswith("_lineage"):
            ev = lineage_pb2.LineageEvent.FromString(raw)
            records.append(json_format.MessageToDict(ev, preserving_proto_field_name=True))
            continue
        ev = summary_pb2.Event.FromString(raw)
        rec = {"wall_time": ev.wall_time, "step": ev.step if ev.HasField("step") else None,
               "what": ev.WhichOneof("what"), "values": []}
        if rec["what"] == "version":
            rec["version"] = ev.version
        if rec["what"] == "graph_def":
            rec["nodes"] = len(ev.graph_def.node)
        for v in ev.summary.value:
            kind = v.WhichOneof("value")
            item = {"tag": v.tag, "kind": kind}
            if kind == "scalar_value":
                item["value"] = v.scalar_value
            elif kind == "image":
                item.update(height=v.image.height, width=v.image.width,
                            colorspace=v.image.colorspace, png_len=len(v.image.encoded_image))
            elif kind == "tensor":
                item.update(dims=list(v.tensor.dims), data_type=v.tensor.data_type,
                            float_data=list(v.tensor.float_data))
            elif kind == "histogram":
                h = v.histogram
                item.update(buckets=[[b.left, b.width, b.count] for b in h.buckets],
                            nan_count=h.nan_count, pos_inf_count=h.pos_inf_count,
                            neg_inf_count=h.neg_inf_count, min=h.min, max=h.max, sum=h.sum,
                            count=h.count)
            rec["values"].append(item)
        records.append(rec)
    return records


def train(outdir):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn, ops

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    ms.set_seed(1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, pad_mode="valid")
            self.fc = nn.Dense(2 * 6 * 6, 2)
            self.flatten = nn.Flatten()
            self.scalar = ops.ScalarSummary()
            self.image = ops.ImageSummary()
            self.tensor = ops.TensorSummary()
            self.hist = ops.HistogramSummary()

        def construct(self, x):
            self.image("input", x)
            h = self.conv(x)
            self.scalar("act_mean", h.mean())
            self.hist("act", h)
            y = self.fc(self.flatten(h))
            self.tensor("logits", y)
            return y

    def gen():
        rng = np.random.default_rng(0)
        for _ in range(64):
            x = rng.random((1, 8, 8)).astype(np.float32)
            yield x, np.int32(x.mean() > 0.5)

    data = ds.GeneratorDataset(gen, ["x", "y"], shuffle=False).batch(8)
    net = Net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    model = ms.Model(net, loss, opt, metrics={"acc"})
    sc = ms.SummaryCollector(os.path.join(outdir, "collector"), collect_freq=3,
                             custom_lineage_data={"team": "red", "seed": 1})
    model.train(2, data, callbacks=[sc], dataset_sink_mode=False)

    with ms.SummaryRecord(os.path.join(outdir, "record")) as rec:
        for step in range(4):
            rec.add_value("scalar", "loss", ms.Tensor(np.float32(1.0 / (step + 1))))
            rec.add_value("histogram", "w", ms.Tensor(np.linspace(-1, 1, 50, dtype=np.float32)
                                                      * (step + 1)))
            rec.add_value("tensor", "t", ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)
                                                   + step))
            rec.record(step)

    files = {}
    for sub in ("collector", "record"):
        for name in sorted(os.listdir(os.path.join(outdir, sub))):
            path = os.path.join(outdir, sub, name)
            if os.path.isfile(path):
                files[f"{sub}/{name}"] = decode(path)
    return files


if __name__ == "__main__":
    if sys.argv[1] == "train":
        json.dump(train(sys.argv[2]), sys.stdout)
    else:
        json.dump({p: decode(p) for p in sys.argv[2:]}, sys.stdout)
