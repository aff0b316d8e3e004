"""The MindSpore-dialect schema (proto/summarylog/ms) against docs/format.md §7:
field numbers, wire types and labels of every message the dialect writes,
and a hand-encoded record byte for byte."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from google.protobuf import descriptor

from summarylog.pb import POOL, ms

F = descriptor.FieldDescriptor
REQ, OPT, REP = "required", "optional", "repeated"


def _label(d) -> str:
    """The field's label on any protobuf runtime (7.x dropped .label)."""
    if hasattr(d, "label"):
        return {F.LABEL_REQUIRED: REQ, F.LABEL_REPEATED: REP}.get(d.label, OPT)
    if d.is_required:
        return REQ
    return REP if d.is_repeated else OPT

# (message, field, number, type, label) from docs/format.md §7.1-7.5
TABLE = [
    ("Event", "wall_time", 1, F.TYPE_DOUBLE, REQ), ("Event", "step", 2, F.TYPE_INT64, OPT),
    ("Event", "version", 3, F.TYPE_STRING, OPT), ("Event", "graph_def", 4, F.TYPE_MESSAGE, OPT),
    ("Event", "summary", 5, F.TYPE_MESSAGE, OPT), ("Event", "explain", 6, F.TYPE_MESSAGE, OPT),
    ("Summary", "value", 1, F.TYPE_MESSAGE, REP),
    ("Summary.Value", "tag", 1, F.TYPE_STRING, REQ),
    ("Summary.Value", "scalar_value", 3, F.TYPE_FLOAT, OPT),
    ("Summary.Value", "image", 4, F.TYPE_MESSAGE, OPT),
    ("Summary.Value", "tensor", 8, F.TYPE_MESSAGE, OPT),
    ("Summary.Value", "histogram", 9, F.TYPE_MESSAGE, OPT),
    ("Summary.Value", "loss_landscape", 10, F.TYPE_MESSAGE, OPT),
    ("Summary.Image", "height", 1, F.TYPE_INT32, REQ), ("Summary.Image", "width", 2, F.TYPE_INT32, REQ),
    ("Summary.Image", "colorspace", 3, F.TYPE_INT32, REQ),
    ("Summary.Image", "encoded_image", 4, F.TYPE_BYTES, REQ),
    ("Summary.Histogram", "buckets", 1, F.TYPE_MESSAGE, REP),
    ("Summary.Histogram", "nan_count", 2, F.TYPE_INT64, OPT),
    ("Summary.Histogram", "pos_inf_count", 3, F.TYPE_INT64, OPT),
    ("Summary.Histogram", "neg_inf_count", 4, F.TYPE_INT64, OPT),
    ("Summary.Histogram", "max", 5, F.TYPE_DOUBLE, OPT), ("Summary.Histogram", "min", 6, F.TYPE_DOUBLE, OPT),
    ("Summary.Histogram", "sum", 7, F.TYPE_DOUBLE, OPT), ("Summary.Histogram", "count", 8, F.TYPE_INT64, OPT),
    ("Summary.Histogram.bucket", "left", 1, F.TYPE_DOUBLE, REQ),
    ("Summary.Histogram.bucket", "width", 2, F.TYPE_DOUBLE, REQ),
    ("Summary.Histogram.bucket", "count", 3, F.TYPE_INT64, REQ),
    ("TensorProto", "dims", 1, F.TYPE_INT64, REP), ("TensorProto", "data_type", 2, F.TYPE_ENUM, OPT),
    ("TensorProto", "float_data", 3, F.TYPE_FLOAT, REP), ("TensorProto", "int32_data", 4, F.TYPE_INT32, REP),
    ("TensorProto", "int64_data", 5, F.TYPE_INT64, REP), ("TensorProto", "double_data", 6, F.TYPE_DOUBLE, REP),
    ("TensorProto", "uint64_data", 7, F.TYPE_UINT64, REP), ("TensorProto", "raw_data", 8, F.TYPE_BYTES, OPT),
    ("LossLandscape", "landscape", 1, F.TYPE_MESSAGE, OPT), ("LossLandscape", "loss_path", 2, F.TYPE_MESSAGE, OPT),
    ("LossLandscape", "metadata", 3, F.TYPE_MESSAGE, OPT),
    ("LossLandscape", "convergence_point", 4, F.TYPE_MESSAGE, OPT),
    ("LineageEvent", "wall_time", 1, F.TYPE_DOUBLE, REQ), ("LineageEvent", "step", 2, F.TYPE_INT64, OPT),
    ("LineageEvent", "version", 3, F.TYPE_STRING, OPT),
    ("LineageEvent", "train_lineage", 6, F.TYPE_MESSAGE, OPT),
    ("LineageEvent", "evaluation_lineage", 7, F.TYPE_MESSAGE, OPT),
    ("LineageEvent", "dataset_graph", 9, F.TYPE_MESSAGE, OPT),
    ("LineageEvent", "user_defined_info", 10, F.TYPE_MESSAGE, OPT),
    ("TrainLineage.HyperParameters", "optimizer", 1, F.TYPE_STRING, OPT),
    ("TrainLineage.HyperParameters", "learning_rate", 2, F.TYPE_FLOAT, OPT),
    ("TrainLineage.HyperParameters", "loss_function", 3, F.TYPE_STRING, OPT),
    ("TrainLineage.HyperParameters", "epoch", 4, F.TYPE_INT32, OPT),
    ("TrainLineage.HyperParameters", "parallel_mode", 5, F.TYPE_STRING, OPT),
    ("TrainLineage.HyperParameters", "device_num", 6, F.TYPE_INT32, OPT),
    ("TrainLineage.HyperParameters", "batch_size", 8, F.TYPE_INT32, OPT),
    ("TrainLineage.TrainDataset", "train_dataset_path", 1, F.TYPE_STRING, OPT),
    ("TrainLineage.TrainDataset", "train_dataset_size", 2, F.TYPE_INT32, OPT),
    ("TrainLineage.Algorithm", "network", 1, F.TYPE_STRING, OPT),
    ("TrainLineage.Algorithm", "loss", 2, F.TYPE_FLOAT, OPT),
    ("TrainLineage.Model", "path", 3, F.TYPE_STRING, OPT), ("TrainLineage.Model", "size", 4, F.TYPE_INT64, OPT),
    ("EvaluationLineage", "metric", 2, F.TYPE_STRING, OPT),
    ("EvaluationLineage", "valid_dataset", 3, F.TYPE_MESSAGE, OPT),
    ("UserDefinedInfo", "user_info", 1, F.TYPE_MESSAGE, REP),
    ("UserDefinedInfo", "map_int32", 3, F.TYPE_MESSAGE, REP),
    ("UserDefinedInfo", "map_str", 4, F.TYPE_MESSAGE, REP),
    ("UserDefinedInfo", "map_double", 5, F.TYPE_MESSAGE, REP),
    ("DatasetGraph", "children", 1, F.TYPE_MESSAGE, REP), ("DatasetGraph", "parameter", 2, F.TYPE_MESSAGE, OPT),
    ("DatasetGraph", "operations", 3, F.TYPE_MESSAGE, REP), ("DatasetGraph", "sampler", 4, F.TYPE_MESSAGE, OPT),
]


@pytest.mark.parametrize("msg, field, number, ftype, label", TABLE)
def test_field(msg, field, number, ftype, label):
    d = POOL.FindMessageTypeByName(f"summarylog.ms.{msg}").fields_by_name[field]
    assert (d.number, d.type, _label(d)) == (number, ftype, label)


def test_packed_tensor_data_and_data_types():
    t = POOL.FindMessageTypeByName("summarylog.ms.TensorProto")
    assert all(t.fields_by_name[f].is_packed for f in ("float_data", "int64_data", "double_data"))
    assert not t.fields_by_name["dims"].is_packed  # proto2 default: unpacked
    dt = ms.DataType.values_by_name
    assert (dt["DT_BOOL"].number, dt["DT_INT64"].number, dt["DT_FLOAT32"].number,
            dt["DT_FLOAT64"].number, dt["DT_STRING"].number, dt["DT_REF"].number) == (
                1, 5, 11, 12, 13, 42)


def test_hand_encoded_event():
    tag = b"a"
    value = b"\x0a" + bytes([len(tag)]) + tag + b"\x1d" + struct.pack("<f", 2.0)
    summary = b"\x0a" + bytes([len(value)]) + value
    want = b"\x09" + struct.pack("<d", 1.5) + b"\x10\x03" + b"\x2a" + bytes([len(summary)]) + summary
    ev = ms.Event(wall_time=1.5, step=3)
    ev.summary.value.add(tag="a", scalar_value=2.0)
    assert ev.SerializeToString() == want
    back = ms.Event.FromString(want)
    assert (back.wall_time, back.step, back.summary.value[0].scalar_value) == (1.5, 3, 2.0)


def test_dialects_live_in_separate_packages():
    assert POOL.FindMessageTypeByName("summarylog.ms.Event").file.package == "summarylog.ms"
    assert POOL.FindMessageTypeByName("summarylog.tb.Event").file.package == "summarylog.tb"
    for name in ("summary", "lineage", "anf_ir"):
        f = POOL.FindFileByName(f"summarylog/ms/{name}.proto")
        assert not [d.name for d in f.dependencies if "/tb/" in d.name]


def test_both_encoders_are_the_dialect_seam():
    """Each dialect's encoder gives what summarylog.dialects.base declares,
    and a recorded step's values of every summary plugin decode back as the
    same kinds, tags and numbers in either dialect."""
    import inspect

    import numpy as np

    from summarylog.dialects import mindspore as msd, tensorboard as tbd
    from summarylog.dialects.base import DialectEncoder

    from summarylog.landscape import Landscape

    landscape = Landscape("ls", [0.0, 1.0], [0.0, 1.0], [[1.0, 2.0], [3.0, 4.0]],
                          decomposition="Random").to_message()
    values = [("scalar", "loss", 0.5), ("image", "img", np.zeros((2, 3, 4, 5), np.uint8)),
              ("tensor", "t", np.arange(6.0).reshape(2, 3)),
              ("histogram", "w", np.linspace(-1.0, 1.0, 100)), ("LANDSCAPE", "ls", landscape)]
    seam = {n for n, _ in inspect.getmembers(DialectEncoder, inspect.isfunction)
            if not n.startswith("_")}
    for enc, mod in ((tbd.TensorBoardEncoder(), tbd), (msd.MindSporeEncoder(), msd)):
        for name in seam:
            want = inspect.signature(getattr(DialectEncoder, name)).parameters
            assert list(inspect.signature(getattr(enc, name)).parameters) == list(want)[1:]
        events = [e for p in enc.summary(12.0, 3, values) for e in mod.decode_event(p)]
        got = {e.tag: e for e in events}
        assert {e.step for e in events} == {3}
        assert got["loss"].kind == "scalar" and got["loss"].value == 0.5
        assert got["img"].kind == "image" and (got["img"].value["height"], got["img"].value["width"]) == (4, 10)
        assert np.array_equal(np.asarray(got["t"].value, np.float64), np.arange(6.0).reshape(2, 3))
        assert got["w"].kind == "histogram" and got["w"].value["num"] == 100
        assert got["ls"].kind == "landscape", enc.name
        assert np.array_equal(got["ls"].value.z, [[1.0, 2.0], [3.0, 4.0]])
        with pytest.raises(ValueError, match="no summary plugin"):
            enc.summary(0.0, 0, [("text", "x", "y")])


@pytest.mark.parametrize("values", [np.arange(7.0, dtype=np.float32), np.full(4, 2.5),
                                    np.array([1.0, np.nan, np.inf, -np.inf]), np.array([np.nan]),
                                    np.random.default_rng(0).normal(size=5000).astype(np.float32),
                                    np.arange(300, dtype=np.int32)])
def test_histogram_bytes_are_protobufs_own(values):
    """The buckets framed by hand are the bytes protobuf itself writes for the
    same Summary.Histogram (the encoder skips protobuf only for speed)."""
    from summarylog.dialects.mindspore import histogram_bytes

    h = ms.Histogram.FromString(histogram_bytes(values))
    again = ms.Histogram(count=h.count, nan_count=h.nan_count, pos_inf_count=h.pos_inf_count,
                         neg_inf_count=h.neg_inf_count, min=h.min, max=h.max, sum=h.sum)
    for b in h.buckets:
        again.buckets.add(left=b.left, width=b.width, count=b.count)
    assert again.SerializeToString() == histogram_bytes(values)
    assert h.count == values.size and sum(b.count for b in h.buckets) == np.isfinite(values).sum()


@pytest.mark.parametrize("step", [0, 7, 2**40, -3])
@pytest.mark.parametrize("scalar", [0.5, -0.0, float("nan"), 1e300, -1e-50, 3.4028235e38])
def test_summary_events_framed_by_hand_are_protobufs_own(step, scalar):
    """A step's Event (wall time, step, scalar and histogram values) framed by
    hand is the bytes protobuf writes for the same messages."""
    from summarylog.dialects.mindspore import MindSporeEncoder, histogram_bytes

    hist = np.random.default_rng(1).normal(size=900).astype(np.float32)
    (got,) = MindSporeEncoder().summary(1.25e9, step, [("scalar", "loss/ü", scalar),
                                                       ("histogram", "w", hist)])
    want = ms.Event(wall_time=1.25e9, step=step)
    with np.errstate(over="ignore"):
        want.summary.value.add(tag="loss/ü", scalar_value=float(np.float32(scalar)))
    want.summary.value.add(tag="w").histogram.CopyFrom(ms.Histogram.FromString(histogram_bytes(hist)))
    assert got == want.SerializeToString()
    (empty,) = MindSporeEncoder().summary(2.0, step, [])
    assert empty == ms.Event(wall_time=2.0, step=step).SerializeToString()


def test_graph_bytes_take_the_model_protos_graph_unparsed():
    """ModelProto bytes (what MindSpore's graph executor returns) give their
    graph field's bytes, the Event is protobuf's own; malformed bytes are a
    ValueError, never a hang or a partial graph."""
    from summarylog.dialects.mindspore import MindSporeEncoder, graph_bytes

    g = ms.GraphProto(name="net")
    g.node.add(name="n0", op_type="MatMul", scope="Default")
    model = ms.ModelProto(ir_version=1, domain="d", graph=g).SerializeToString()
    assert graph_bytes(model) == g.SerializeToString() == graph_bytes(g)
    assert graph_bytes(ms.ModelProto.FromString(model)) == g.SerializeToString()
    want = ms.Event(wall_time=3.5, step=2)
    want.graph_def.CopyFrom(g)
    assert MindSporeEncoder().graph(3.5, graph_bytes(model), 2) == want.SerializeToString()
    for bad in (model[:-3], b"\x22\xff\xff\xff\xff\x0f", b"\x0f"):
        with pytest.raises(ValueError, match="ModelProto"):
            graph_bytes(bad)
