"""summarylog.SummaryRecord: MindSpore's API and packaging rules, read back
through summarylog's Reader and through the protobuf classes directly."""

from __future__ import annotations

import json
import logging
import os
import re
import stat

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord
from summarylog.dialects.mindspore import histogram_buckets, image_grid, tensor_proto
from summarylog.pb import ms
from summarylog.records import RecordReader
from summarylog.summary_record import TagNameError


def _events(path: str) -> list:
    with RecordReader(path) as rr:
        return [ms.Event.FromString(p) for p in rr]


def _summary_file(d) -> str:
    (name,) = [n for n in os.listdir(d) if n.endswith("_MS")]
    return os.path.join(d, name)


def _lineage_file(d) -> str:
    (name,) = [n for n in os.listdir(d) if n.endswith("_lineage")]
    return os.path.join(d, name)


# -- files -------------------------------------------------------------------------------

def test_file_names_header_and_one_event_per_record(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("scalar", "loss", 0.5)
        rec.add_value("scalar", "lr", np.float32(0.1))
        assert rec.record(1)
        rec.add_value("scalar", "loss", 0.25)
        assert rec.record(2)
        assert rec.record(3)  # nothing pooled: no event
        log_dir = rec.log_dir
    path = _summary_file(tmp_path)
    assert log_dir == path
    assert re.fullmatch(r"events\.out\.events\.summary\.\d+\.[^/]+_MS", os.path.basename(path))
    evs = _events(path)
    assert evs[0].version == "MindSpore.Event:1" and not evs[0].HasField("step")
    assert [(e.step, [(v.tag, v.scalar_value) for v in e.summary.value]) for e in evs[1:]] == [
        (1, [("loss", 0.5), ("lr", pytest.approx(0.1))]), (2, [("loss", 0.25)])]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o400  # closed files are read-only
    assert not [n for n in os.listdir(tmp_path) if n.endswith("_lineage")]  # created lazily


def test_prefix_suffix_and_two_records_at_once(tmp_path):
    a = SummaryRecord(tmp_path, file_prefix="xx", file_suffix="_yy")
    b = SummaryRecord(tmp_path, file_prefix="xx", file_suffix="_yy")  # MindSpore forbids this
    for rec, v in ((a, 1.0), (b, 2.0)):
        rec.add_value("scalar", "x", v)
        rec.record(0)
    a.close()
    b.close()
    a.close()  # idempotent
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and all(n.startswith("xx.out.events.summary.") and n.endswith("_yy")
                                   for n in names)
    values = sorted(_events(os.path.join(tmp_path, n))[1].summary.value[0].scalar_value
                    for n in names)
    assert values == [1.0, 2.0]


# -- errors as MindSpore documents them ----------------------------------------------------

def test_errors(tmp_path):
    with SummaryRecord(tmp_path) as rec:
        with pytest.raises(ValueError, match="No such plugin"):
            rec.add_value("audio", "a", 1.0)
        for bad in ("", None, 3):
            with pytest.raises(TypeError):
                rec.add_value("scalar", bad, 1.0)
            with pytest.raises(ValueError):  # MindSpore's code raises ValueError: both hold
                rec.add_value("scalar", bad, 1.0)
        assert issubclass(TagNameError, TypeError) and issubclass(TagNameError, ValueError)
        with pytest.raises(TypeError):
            rec.add_value("scalar", "s", "1.0")
        with pytest.raises(TypeError):
            rec.add_value("histogram", "h", {"a": 1})
        with pytest.raises(ValueError):
            rec.add_value("scalar", "s", np.ones(3))
        with pytest.raises(ValueError):
            rec.add_value("image", "i", np.ones((3, 4, 4)))
        with pytest.raises(ValueError):
            rec.add_value("image", "i", np.ones((1, 2, 4, 4)))  # 2 channels
        with pytest.raises(ValueError):
            rec.add_value("tensor", "t", 1.0)  # 0-d
        with pytest.raises(TypeError):
            rec.add_value("train_lineage", "t", 1.0)
        with pytest.raises(TypeError):
            rec.add_value("custom_lineage_data", "c", {"k": [1]})
        with pytest.raises(TypeError):
            rec.add_value("custom_lineage_data", "c", {1: "v"})
        with pytest.raises(TypeError):
            rec.add_value("graph", "g", 1.0)
        with pytest.raises(TypeError):
            rec.record("1")
        with pytest.raises(TypeError):
            rec.record(True)
        with pytest.raises(TypeError):
            rec.record(1, plugin_filter="scalar")
        with pytest.raises(ValueError):
            rec.set_mode("test")
    with pytest.raises(ValueError):
        SummaryRecord(tmp_path, format="csv")
    with pytest.raises(ValueError):
        SummaryRecord(tmp_path, export_options={"tensor_format": "csv"})
    with pytest.raises(ValueError):
        SummaryRecord(tmp_path, export_options={"image_format": "npy"})
    with pytest.raises(ValueError):
        SummaryRecord(tmp_path, max_file_size=0)
    assert rec.record(5) is False  # closed


def test_duplicate_tag_keeps_the_newest(tmp_path, caplog):
    with SummaryRecord(tmp_path) as rec, caplog.at_level(logging.WARNING, "summarylog"):
        rec.add_value("scalar", "loss", 1.0)
        rec.add_value("scalar", "loss", 2.0)
        rec.add_value("histogram", "loss", np.arange(5.0))  # another plugin: kept
        rec.record(7)
    assert "Only the newest one will be recorded" in caplog.text
    (ev,) = _events(_summary_file(tmp_path))[1:]
    assert [(v.tag, v.WhichOneof("value")) for v in ev.summary.value] == [
        ("loss", "scalar_value"), ("loss", "histogram")]
    assert ev.summary.value[0].scalar_value == 2.0


def test_plugin_filter_and_eval_mode(tmp_path):
    ops = [{"a[:Scalar]": np.float32(1.0), "img[:Image]": np.zeros((1, 1, 2, 2))}]
    with SummaryRecord(tmp_path) as rec:
        rec.summary_op_sources.append(lambda: ops.pop() if ops else {})
        rec.add_value("scalar", "kept", 1.0)
        rec.add_value("histogram", "dropped", np.ones(4))
        rec.record(1, plugin_filter=lambda p: p != "histogram")
        rec.set_mode("eval")
        ops.append({"b[:Scalar]": np.float32(2.0)})
        rec.add_value("scalar", "user", 3.0)
        rec.record(2)
    evs = _events(_summary_file(tmp_path))[1:]
    assert [sorted(v.tag for v in e.summary.value) for e in evs] == [["a", "img", "kept"], ["user"]]


def test_add_later_builds_checks_and_filters_on_the_background_thread(tmp_path, caplog):
    import threading

    built_on, errors = [], []

    def build():
        built_on.append(threading.current_thread())
        return [("scalar", "loss", np.float32(0.25)), ("histogram", "w", np.arange(6.0)),
                ("tensor", "t", np.ones(3)),  # filtered out below
                ("scalar", "bad", np.ones(3)),  # ValueError: not one value
                ("image", "img", "not an image"),  # TypeError
                ("graph", "g", b"x")]  # not a summary plugin

    with SummaryRecord(tmp_path) as rec, caplog.at_level(logging.WARNING, "summarylog"):
        rec.add_later(build, nbytes=48, on_error=lambda p, t, e: errors.append((p, t, type(e))))
        rec.add_value("scalar", "eager", 1.0)
        rec.record(3, plugin_filter=lambda p: p != "tensor")
        rec.add_later(lambda: 1 / 0)  # a failing builder: a warning, nothing else lost
        rec.add_value("scalar", "loss", 5.0)  # beats the later value of the same tag
        rec.add_later(lambda: [("scalar", "loss", 9.0)])
        rec.record(4)
        with pytest.raises(TypeError, match="build"):
            rec.add_later("not callable")
        with pytest.raises(TypeError, match="nbytes"):
            rec.add_later(build, nbytes=-1)
    assert built_on and threading.current_thread() not in built_on
    assert errors == [("scalar", "bad", ValueError), ("image", "img", TypeError),
                      ("graph", "g", ValueError)]
    assert "ZeroDivisionError" in caplog.text or "division by zero" in caplog.text
    assert "Only the newest one will be recorded" in caplog.text
    e3, e4 = _events(_summary_file(tmp_path))[1:]
    assert sorted(v.tag for v in e3.summary.value) == ["eager", "loss", "w"]
    assert {v.tag: v.scalar_value for v in e3.summary.value if v.tag != "w"} == {
        "eager": 1.0, "loss": 0.25}
    assert [(v.tag, v.scalar_value) for v in e4.summary.value] == [("loss", 5.0)]


def test_owned_values_are_checked_at_every_collection(tmp_path):
    """Owned values (a collector's private copies) are checked at every
    collection, not copied again: a value that fails its check is dropped
    alone, the builder is called once per record, and nothing is lost."""
    calls: list[int] = []
    errors: list[tuple[str, str, type]] = []

    def later(step, hist, loss=None):
        def build():
            calls.append(step)
            return [("scalar", "loss/auto", float(step) if loss is None else loss),
                    ("histogram", "w/auto", hist)]
        return build

    with SummaryRecord(tmp_path, format="tensorboard", flush_secs=60) as rec:
        steps = [(1, np.arange(6.0)), (2, np.arange(6.0) + 1), (3, np.arange(6.0) + 2),
                 (4, np.arange(8.0)),  # a new shape: checked
                 (5, np.arange(8.0) + 1)]
        for step, hist in steps:
            rec.add_later(later(step, hist), owned=True,
                          on_error=lambda p, t, e: errors.append((p, t, type(e))))
            rec.record(step)
        rec.add_later(later(6, np.arange(8.0), loss="junk"), owned=True,
                      on_error=lambda p, t, e: errors.append((p, t, type(e))))
        rec.record(6)  # the loss fails its check: dropped alone
        rec.add_later(later(7, np.arange(8.0)[::2]), owned=True)  # a strided view: resolved
        rec.record(7)
        rec.flush()
    assert calls == [1, 2, 3, 4, 5, 6, 7]
    assert errors == [("scalar", "loss/auto", TypeError)]
    r = Reader(tmp_path)
    loss = r.scalars(".", "loss/auto")
    assert loss.step.tolist() == [1, 2, 3, 4, 5, 7] and loss.value.tolist() == [1, 2, 3, 4, 5, 7]
    hists = [e for e in r.events(".") if e.kind == "histogram"]
    assert [e.step for e in hists] == [1, 2, 3, 4, 5, 6, 7]
    counts = {e.step: e.value["num"] for e in hists}
    assert counts == {1: 6, 2: 6, 3: 6, 4: 8, 5: 8, 6: 8, 7: 4}
    sums = {e.step: e.value["sum"] for e in hists}
    assert sums[3] == pytest.approx(float((np.arange(6.0) + 2).sum()))
    assert sums[7] == pytest.approx(float(np.arange(8.0)[::2].sum()))


def test_one_value_arrays_of_any_shape_are_scalars_collection_after_collection(tmp_path):
    """A loss of shape (1,) (or (1, 1)) is a scalar at every collection, not
    only at the first one, when its kind was checked before."""
    with SummaryRecord(tmp_path, format="tensorboard") as rec:
        for step in range(1, 5):
            loss = np.full((1,) if step % 2 else (1, 1), float(step), np.float32)
            rec.add_later(lambda loss=loss: [("scalar", "loss/auto", loss)], owned=True)
            rec.record(step)
    loss = Reader(tmp_path).scalars(".", "loss/auto")
    assert loss.step.tolist() == [1, 2, 3, 4] and loss.value.tolist() == [1, 2, 3, 4]


# -- packaging rules ------------------------------------------------------------------------

@pytest.mark.parametrize("n, bins", [(0, 0), (1, 2), (5, 2), (6, 3), (10, 3), (11, 2), (880, 89),
                                     (881, 90), (100_000, 90)])
def test_histogram_bin_rule(n, bins):
    rng = np.random.default_rng(n)
    h = histogram_buckets(rng.normal(size=n).astype(np.float32))
    assert len(h.buckets) == bins
    assert h.count == n and sum(b.count for b in h.buckets) == n
    if n > 1:  # (one value: the range widens by 0.5 each side)
        assert h.buckets[0].left == pytest.approx(h.min, rel=1e-6)
        assert h.buckets[-1].left + h.buckets[-1].width == pytest.approx(h.max, rel=1e-5)


def test_histogram_non_finite_and_constant():
    h = histogram_buckets(np.array([np.nan, np.inf, -np.inf, -np.inf, 2.0, 2.0]))
    assert (h.count, h.nan_count, h.pos_inf_count, h.neg_inf_count) == (6, 1, 1, 2)
    assert (h.min, h.max, h.sum) == (2.0, 2.0, 4.0)
    assert [(b.left, b.width, b.count) for b in h.buckets] == [(1.5, 0.5, 0), (2.0, 0.5, 2)]
    empty = histogram_buckets(np.array([np.nan, np.inf]))
    assert len(empty.buckets) == 0 and (empty.min, empty.max, empty.sum) == (0, 0, 0)


def test_image_grid_layout_and_scaling():
    imgs = np.zeros((10, 1, 2, 3), np.float32)
    for i in range(10):
        imgs[i] = i / 10
    grid = image_grid(imgs)
    assert grid.shape == (4, 24, 3) and grid.dtype == np.uint8  # 8 columns, 2 rows
    assert grid[2, 3, 0] == int(np.float32(0.9 * 255)) and grid[3, 22, :].tolist() == [0, 0, 0]
    wide = image_grid(np.array([[[[-1.0, 3.0]]] * 3]))  # outside [0, 1]: min-max scaled
    assert wide[0, :, 0].tolist() == [0, int(np.float32(4 * 255 / 5))]
    u8 = image_grid(np.full((2, 3, 2, 2), 200, np.uint8))
    assert (u8 == 200).all() and u8.shape == (2, 4, 3)


def test_tensors_keep_their_dtype_and_exact_values():
    big = np.array([2**53 + 1, -3], np.int64)
    t = tensor_proto(big)
    assert list(t.dims) == [2] and t.data_type == ms.DataType.values_by_name["DT_INT64"].number
    assert list(t.float_data) == [float(np.float32(2**53 + 1)), -3.0]  # what MindInsight shows
    assert list(t.int64_data) == [2**53 + 1, -3]
    with pytest.raises(TypeError):
        tensor_proto(np.array(["a"]))


def test_values_read_back_through_the_reader(tmp_path):
    imgs = np.random.default_rng(0).random((3, 3, 4, 5)).astype(np.float32)
    with SummaryRecord(tmp_path) as rec:
        for step in range(5):
            rec.add_value("scalar", "loss", 1.0 / (step + 1))
            rec.add_value("tensor", "w", np.arange(6, dtype=np.float64).reshape(2, 3) * step)
            rec.add_value("histogram", "h", np.arange(100.0) + step)
            if step == 4:
                rec.add_value("image", "img", imgs)
            rec.record(step)
    r = Reader(tmp_path)
    assert r.runs() == ["."]
    s = r.scalars(".", "loss")
    np.testing.assert_array_equal(s.step, np.arange(5))
    np.testing.assert_array_equal(s.value, (1.0 / (np.arange(5) + 1)).astype(np.float32))
    assert r.tags(".") == {"h": "histogram", "img": "image", "loss": "scalar", "w": "tensor"}
    evs = [e for e in r.events(".") if e.tag == "w"]
    np.testing.assert_array_equal(evs[-1].value, np.arange(6.0).reshape(2, 3) * 4)
    assert evs[-1].value.dtype == np.float64
    (img,) = [e for e in r.events(".") if e.tag == "img"]
    assert (img.value["height"], img.value["width"]) == (4, 15)
    h = [e for e in r.events(".") if e.tag == "h"][-1].value
    assert h["num"] == 100 and len(h["buckets"]) == 11 and h["min"] == 4.0
    assert all(rep.ok for rep in r.damage(".").values())


# -- lineage ------------------------------------------------------------------------------

def test_lineage_file_and_reader_rows(tmp_path):
    for run, lr in (("a", 0.1), ("b", 0.01)):
        with SummaryRecord(tmp_path / run) as rec:
            rec.add_value("train_lineage", "x", {
                "hyper_parameters": {"optimizer": "Momentum", "learning_rate": lr,
                                     "loss_function": "SoftmaxCrossEntropyWithLogits",
                                     "epoch": 3, "batch_size": 32, "device_num": 1},
                "train_dataset": {"train_dataset_path": "/data/train", "train_dataset_size": 600},
                "algorithm": {"network": "LeNet5", "loss": 0.25},
                "model": {"path": json.dumps({"ckpt": "/ckpt/a.ckpt"}), "size": 1234}})
            rec.add_value("eval_lineage", "x", {"metric": json.dumps({"accuracy": 0.9}),
                                                "valid_dataset": {"valid_dataset_path": "/v",
                                                                  "valid_dataset_size": 100}})
            rec.add_value("custom_lineage_data", "x", {"team": "blue", "seed": 7, "wd": 0.5})
            rec.add_value("dataset_graph", "x", {"operations": [{"size": [1]}]})
            rec.record(0)
    lin = _lineage_file(tmp_path / "a")
    with RecordReader(lin) as rr:
        evs = [ms.LineageEvent.FromString(p) for p in rr]
    assert [e.WhichOneof("what") for e in evs] == ["train_lineage", "evaluation_lineage",
                                                   "dataset_graph", "user_defined_info"]
    assert all(not e.HasField("step") for e in evs)
    assert [len(u.map_str) + len(u.map_int32) + len(u.map_double)
            for u in evs[3].user_defined_info.user_info] == [1, 1, 1]  # one key per entry
    rows = {r["run"]: r for r in Reader(tmp_path).lineage()}
    assert set(rows) == {"a", "b"}
    a = rows["a"]
    assert (a["optimizer"], a["learning_rate"], a["epoch"], a["batch_size"]) == (
        "Momentum", pytest.approx(0.1), 3, 32)
    assert (a["network"], a["train_dataset_size"], a["model_size"]) == ("LeNet5", 600, 1234)
    assert a["metric"] == {"accuracy": 0.9} and a["valid_dataset_size"] == 100
    assert a["user_defined"] == {"team": "blue", "seed": 7, "wd": 0.5}
    assert rows["b"]["learning_rate"] == pytest.approx(0.01)
    assert Reader(tmp_path).runs() == ["a", "b"]


# -- limits, export, errors, TensorBoard format ------------------------------------------------

def test_max_file_size_rotate_and_stop(tmp_path):
    with SummaryRecord(tmp_path / "rot", max_file_size=600) as rec:
        for step in range(40):
            rec.add_value("scalar", "loss", float(step))
            rec.record(step)
    files = sorted(n for n in os.listdir(tmp_path / "rot") if n.endswith("_MS"))
    assert len(files) > 1
    assert all(os.path.getsize(tmp_path / "rot" / n) <= 600 for n in files)
    s = Reader(tmp_path / "rot").scalars(".", "loss")
    np.testing.assert_array_equal(s.step, np.arange(40))  # rotation lost nothing
    with pytest.warns(RuntimeWarning, match="max_file_size"):
        with SummaryRecord(tmp_path / "stop", max_file_size=600, on_limit="stop") as rec:
            for step in range(40):
                rec.add_value("scalar", "loss", float(step))
                rec.record(step)
            rec.flush()
    assert len(os.listdir(tmp_path / "stop")) == 1
    n = len(Reader(tmp_path / "stop").scalars(".", "loss").step)
    assert 0 < n < 40


def test_export_tensors_as_npy(tmp_path):
    with SummaryRecord(tmp_path, export_options={"tensor_format": "npy"}) as rec:
        rec.add_value("tensor", "layer/w", np.arange(4, dtype=np.int32))
        rec.record(3)
    (export,) = [n for n in os.listdir(tmp_path) if n.startswith("export_")]
    path = tmp_path / export / "tensor" / "layer%2Fw_3.npy"
    np.testing.assert_array_equal(np.load(path), np.arange(4, dtype=np.int32))


def test_io_error_stops_recording_or_raises(tmp_path):
    target = tmp_path / "ro"
    target.mkdir()
    os.chmod(target, 0o500)
    if os.access(target, os.W_OK):  # root ignores the mode: use a path under a file instead
        os.chmod(target, 0o700)
        (tmp_path / "file").write_text("x")
        target = tmp_path / "file" / "sub"
    with pytest.raises(OSError):
        SummaryRecord(target, raise_exception=True)
    good = SummaryRecord(tmp_path / "ok", raise_exception=False)
    good.add_value("scalar", "a", 1.0)
    assert good.record(0)
    good.flush()
    good._files.summary.current.handle  # noqa: B018 - the file exists
    from summarylog._native import lib

    lib.slg_writer_inject_fault(good._files.summary.current.handle, 28, 1000)  # ENOSPC from now on
    for step in range(1, 20):
        good.add_value("scalar", "a", float(step))
        good.record(step)
    good.flush()
    assert good.record(99) is False  # stopped, the caller is not harmed
    good.close()
    s = Reader(tmp_path / "ok").scalars(".", "a")
    assert s.step[0] == 0  # what was written before the fault stays readable


def test_tensorboard_format(tmp_path):
    with SummaryRecord(tmp_path, format="tensorboard") as rec:
        rec.add_value("scalar", "loss", 0.5)
        rec.add_value("image", "img", np.zeros((2, 3, 4, 4), np.float32))
        rec.add_value("histogram", "h", np.arange(50.0))
        rec.add_value("train_lineage", "t", {"hyper_parameters": {"optimizer": "Adam",
                                                                  "learning_rate": 0.001}})
        rec.add_value("eval_lineage", "e", {"metric": json.dumps({"acc": 0.75})})
        rec.add_value("custom_lineage_data", "c", {"seed": 1})
        rec.record(2)
    names = os.listdir(tmp_path)
    assert names and all("tfevents" in n for n in names)
    r = Reader(tmp_path)
    kinds = r.tags(".")
    assert kinds["loss"] == "scalar" and kinds["img"] == "image" and kinds["h"] == "histogram"
    hp = [e.value for e in r.events(".") if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
    assert start["optimizer"] == "Adam" and start["seed"] == 1
    assert r.scalars(".", "eval/acc").value.tolist() == [0.75]


def test_framework_tensors_are_copied_not_read_on_the_caller(tmp_path):
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    from summarylog.values import Deferred

    w = torch.ones(3, 4)
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("scalar", "loss", torch.tensor(0.25))
        rec.add_value("histogram", "w", w)
        rec.add_value("tensor", "j", jnp.arange(3.0))
        assert all(isinstance(v, Deferred) for p in ("scalar", "histogram", "tensor")
                   for _, v in rec._pool[p])
        w.mul_(10)  # a later in-place change must not reach the record
        with pytest.raises(ValueError):
            rec.add_value("scalar", "bad", torch.ones(2))
        rec.record(0)
    r = Reader(tmp_path)
    assert r.scalars(".", "loss").value.tolist() == [0.25]
    (h,) = [e.value for e in r.events(".") if e.tag == "w"]
    assert h["max"] == 1.0 and h["num"] == 12
    (j,) = [e.value for e in r.events(".") if e.tag == "j"]
    np.testing.assert_array_equal(j, [0.0, 1.0, 2.0])


def test_raise_exception_true_raises_the_io_error_naming_the_file(tmp_path):
    from summarylog._native import lib

    rec = SummaryRecord(tmp_path, raise_exception=True)
    rec.add_value("scalar", "a", 1.0)
    rec.record(0)
    rec.flush()
    path = rec._files.summary.current.path
    lib.slg_writer_inject_fault(rec._files.summary.current.handle, 28, 1000)  # ENOSPC from now on
    rec.add_value("scalar", "a", 2.0)
    rec.record(1)
    with pytest.raises(OSError) as info:
        rec.flush()
        rec.record(2)
        rec.close()
    assert path in str(info.value)
    rec._errors.pending = None
    lib.slg_writer_inject_fault(rec._files.summary.current.handle, 0, 0)
    rec.close()
    assert Reader(tmp_path).scalars(".", "a").value.tolist()[:1] == [1.0]  # kept


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_flush_secs_must_be_finite_and_positive(tmp_path, bad):
    # 0 or NaN made the background thread spin; inf killed it (Event.wait overflow)
    from summarylog import Writer

    for make in (lambda: SummaryRecord(tmp_path / "a", flush_secs=bad),
                 lambda: SummaryRecord(tmp_path / "b", flush_secs=bad, format="tensorboard"),
                 lambda: Writer(tmp_path / "c", flush_secs=bad)):
        with pytest.raises(ValueError, match="flush_secs"):
            make()
    with pytest.raises(TypeError, match="flush_secs"):
        SummaryRecord(tmp_path / "d", flush_secs="1")


@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
def test_records_reach_the_os_within_about_flush_secs(tmp_path, fmt, figure):
    """What is recorded reaches the OS (another reader sees it) on its own,
    with no flush() or close(): SummaryRecord's thread wakes every
    flush_secs, writes what is queued (the TensorBoard histograms too) and
    flushes.  The latency is reported, not asserted (noisy machines); the
    30 s limit only keeps a broken build from hanging."""
    import time

    with SummaryRecord(tmp_path, flush_secs=0.2, format=fmt) as rec:
        rec.record(0)  # the files exist
        time.sleep(0.5)  # the thread is idle, between two wakes
        t0 = time.monotonic()
        for step in (1, 2, 3):
            rec.add_value("scalar", "loss", 1.0 / step)
            rec.add_value("histogram", "w", np.arange(100, dtype=np.float32) * step)
            rec.record(step)
        seen: list[tuple[str, int]] = []
        while time.monotonic() - t0 < 30:
            try:
                seen = sorted({(e.kind, e.step) for e in Reader(tmp_path).events(".")
                               if e.kind in ("scalar", "histogram")})
            except KeyError:  # no event file with content yet
                seen = []
            if len(seen) == 6:
                break
            time.sleep(0.02)
        latency = time.monotonic() - t0
        assert seen == [(k, s) for k in ("histogram", "scalar") for s in (1, 2, 3)], seen
        assert not rec._closed  # seen before close()
    figure(f"{fmt}: 3 recorded steps seen by another reader {latency * 1e3:.0f} ms after "
           f"record(), with flush_secs=0.2 and no flush()")


def test_the_thread_handles_what_was_queued_when_it_woke(tmp_path):
    """Steps recorded while SummaryRecord's thread is busy wait for its next
    wake (flush_secs, a full buffer, flush() or close()) rather than being
    chased one by one: chasing, it would wait on each new step's device
    values and take the GIL at every step."""
    import threading
    import time

    gate, started = threading.Event(), threading.Event()
    built: list[int] = []

    def later(step):
        def build():
            if step == 1:
                started.set()
                gate.wait(30)
            built.append(step)
            return [("scalar", "loss", float(step))]
        return build

    with SummaryRecord(tmp_path, flush_secs=60, format="tensorboard") as rec:
        rec.add_later(later(1))
        rec.record(1)
        rec.flush_soon()  # wakes the thread: it builds step 1 and blocks there
        assert started.wait(30)
        for step in (2, 3):  # queued while the thread is busy
            rec.add_later(later(step))
            rec.record(step)
        gate.set()
        deadline = time.monotonic() + 30
        while len(rec._pipe.queue) > 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # step 1 and the flush are done
        time.sleep(0.3)
        assert built == [1] and len(rec._pipe.queue) == 2  # steps 2 and 3 wait for the next wake
        rec.flush()
        assert built == [1, 2, 3]
    assert Reader(tmp_path).scalars(".", "loss").step.tolist() == [1, 2, 3]
