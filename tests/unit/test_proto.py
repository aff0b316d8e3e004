"""The shipped schema module matches proto/, and our TensorBoard schema is
wire-compatible with TensorBoard's own (same numbers, types, labels)."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib

import pytest

from conftest import require_module

from summarylog.pb import POOL, tb

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_generated_module_matches_proto_sources(monkeypatch) -> None:
    require_module("grpc_tools")
    gen = _generator()
    # compare against the *installed* package's module (what users get)
    import summarylog.pb._descriptors as shipped

    monkeypatch.setattr(gen, "TARGET", pathlib.Path(shipped.__file__))
    assert gen.check(), "summarylog/pb/_descriptors.py is stale: run python proto/generate.py"


PAIRS = {
    "Event": "tensorboard.compat.proto.event_pb2:Event",
    "SessionLog": "tensorboard.compat.proto.event_pb2:SessionLog",
    "LogMessage": "tensorboard.compat.proto.event_pb2:LogMessage",
    "SourceMetadata": "tensorboard.compat.proto.event_pb2:SourceMetadata",
    "TaggedRunMetadata": "tensorboard.compat.proto.event_pb2:TaggedRunMetadata",
    "Summary": "tensorboard.compat.proto.summary_pb2:Summary",
    "SummaryMetadata": "tensorboard.compat.proto.summary_pb2:SummaryMetadata",
    "HistogramProto": "tensorboard.compat.proto.histogram_pb2:HistogramProto",
    "TensorProto": "tensorboard.compat.proto.tensor_pb2:TensorProto",
    "TensorShapeProto": "tensorboard.compat.proto.tensor_shape_pb2:TensorShapeProto",
    "ScalarPluginData": "tensorboard.plugins.scalar.plugin_data_pb2:ScalarPluginData",
    "HistogramPluginData": "tensorboard.plugins.histogram.plugin_data_pb2:HistogramPluginData",
    "ImagePluginData": "tensorboard.plugins.image.plugin_data_pb2:ImagePluginData",
    "TextPluginData": "tensorboard.plugins.text.plugin_data_pb2:TextPluginData",
    "HParamsPluginData": "tensorboard.plugins.hparams.plugin_data_pb2:HParamsPluginData",
    "SessionStartInfo": "tensorboard.plugins.hparams.plugin_data_pb2:SessionStartInfo",
    "SessionEndInfo": "tensorboard.plugins.hparams.plugin_data_pb2:SessionEndInfo",
    "Experiment": "tensorboard.plugins.hparams.api_pb2:Experiment",
    "HParamInfo": "tensorboard.plugins.hparams.api_pb2:HParamInfo",
    "MetricInfo": "tensorboard.plugins.hparams.api_pb2:MetricInfo",
    "MetricName": "tensorboard.plugins.hparams.api_pb2:MetricName",
    "Interval": "tensorboard.plugins.hparams.api_pb2:Interval",
}


def _theirs(ref: str):
    mod, name = ref.split(":")
    return getattr(importlib.import_module(mod), name).DESCRIPTOR


def _compare(ours, theirs, path: str) -> None:
    theirs_by_number = {f.number: f for f in theirs.fields}
    for f in ours.fields:
        t = theirs_by_number.get(f.number)
        assert t is not None, f"{path}.{f.name}: field {f.number} is not in TensorBoard's schema"
        assert (f.type, f.is_repeated) == (t.type, t.is_repeated), f"{path}.{f.name}"
        if f.type == f.TYPE_MESSAGE and not f.message_type.GetOptions().map_entry:
            if f.message_type.full_name.startswith("google."):
                assert f.message_type.full_name == t.message_type.full_name
            else:
                _compare(f.message_type, t.message_type, f"{path}.{f.name}")
        if f.type == f.TYPE_ENUM:
            ours_vals = {v.name: v.number for v in f.enum_type.values}
            theirs_vals = {v.name: v.number for v in t.enum_type.values}
            for name, number in ours_vals.items():
                assert theirs_vals.get(name) == number, f"{path}.{f.name}: enum {name}"



@pytest.mark.parametrize("name", sorted(PAIRS))
def test_wire_compatible_with_tensorboard(name: str) -> None:
    _compare(POOL.FindMessageTypeByName(f"summarylog.tb.{name}"), _theirs(PAIRS[name]), name)


def test_round_trip_through_tensorboard_classes() -> None:
    from tensorboard.compat.proto import event_pb2

    ev = tb.Event(wall_time=1.5, step=7)
    v = ev.summary.value.add(tag="x", simple_value=0.25)
    v.metadata.plugin_data.plugin_name = "scalars"
    theirs = event_pb2.Event.FromString(ev.SerializeToString())
    assert theirs.summary.value[0].simple_value == 0.25 and theirs.step == 7
    assert tb.Event.FromString(theirs.SerializeToString()) == ev
