"""summarylog.Reader: discovery of runs, columnar scalars equal to what every
writer wrote (summarylog, tensorboardX, torch.utils.tensorboard old and new
style, TensorBoard's own TF-free writers, TF2-style metadata-once tensors of
every scalar dtype), parity with TensorBoard's EventAccumulator, events() of
every kind, the SessionLog.START resume rule, damage reports, memory while
decoding a million scalars, follow() of a live rotating run, to_pandas()."""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import threading
import time
import tracemalloc

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog.dialects.tensorboard import histogram_proto
from summarylog.png import encode_png
from summarylog.reader import FileReport, Reader, Scalars, is_event_file
from summarylog.records import RecordWriter, Tail

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
# steps a writer must keep exactly: negative, past 2**53 (not a double), extremes
EDGE_STEPS = [0, 1, -1, -(1 << 40), (1 << 53) + 1, (1 << 62) + 12345, I64_MAX, I64_MIN]
# values that float32 rounding must treat exactly as numpy does
EDGE_VALUES = [0.1, -0.0, 1e39, -1e39, float("nan"), float("inf"), 1e-46, 1.401298464324817e-45,
               3.4028234663852886e38, 16777217.0, -2.5]


# ---- helpers -------------------------------------------------------------------------

def f32(values) -> np.ndarray:
    """float64 array of the float32 rounding of values (what simple_value keeps)."""
    with np.errstate(over="ignore"):
        return np.asarray(values, np.float64).astype(np.float32).astype(np.float64)


def assert_series(s: Scalars, steps, walls, values) -> None:
    """Exact equality of a Scalars with the expected columns (NaN == NaN, and
    the sign of zero counts)."""
    assert isinstance(s, Scalars)
    assert s.step.dtype == np.int64 and s.wall_time.dtype == np.float64
    assert s.value.dtype == np.float64
    np.testing.assert_array_equal(s.step, np.asarray(steps, np.int64))
    np.testing.assert_array_equal(s.wall_time, np.asarray(walls, np.float64))
    np.testing.assert_array_equal(s.value, np.asarray(values, np.float64))
    np.testing.assert_array_equal(np.signbit(s.value), np.signbit(np.asarray(values, np.float64)))


def records_of(path: str) -> list[tuple[int, int]]:
    """(offset, payload length) of every TFRecord of a clean file."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        out.append((pos, n))
        pos += 16 + n
    assert pos == len(data)
    return out


def patch_file(path: str, offset: int, new: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(new)


def pb():
    """TensorBoard's protos (tensorboard.compat.proto), needed without TF."""
    event_pb2 = require_module("tensorboard.compat.proto.event_pb2")
    summary_pb2 = require_module("tensorboard.compat.proto.summary_pb2")
    tensor_pb2 = require_module("tensorboard.compat.proto.tensor_pb2")
    types_pb2 = require_module("tensorboard.compat.proto.types_pb2")
    return event_pb2, summary_pb2, tensor_pb2, types_pb2


def header_event(wall: float = 1.0) -> bytes:
    event_pb2 = pb()[0]
    return event_pb2.Event(wall_time=wall, file_version="brain.Event:2").SerializeToString()


def simple_event(step: int, wall: float, **tag_values: float) -> bytes:
    event_pb2 = pb()[0]
    ev = event_pb2.Event(step=step, wall_time=wall)
    for tag, v in tag_values.items():
        ev.summary.value.add(tag=tag, simple_value=v)
    return ev.SerializeToString()


def tensor_event(step: int, wall: float, tag: str, tensor, plugin: str | None) -> bytes:
    """One tensor value; ``plugin`` names the metadata's plugin (None: no metadata,
    as TF2 writes every value of a tag after its first)."""
    event_pb2, summary_pb2, _, _ = pb()
    ev = event_pb2.Event(step=step, wall_time=wall)
    v = ev.summary.value.add(tag=tag, tensor=tensor)
    if plugin is not None:
        v.metadata.plugin_data.plugin_name = plugin
        if plugin == "scalars":
            v.metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    return ev.SerializeToString()


def write_records(path: str, payloads: list[bytes]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rw = RecordWriter(path)
    try:
        for p in payloads:
            rw.write(p)
    finally:
        rw.close()


class _InOrder:
    """A directory of copies of ``files`` renamed so that TensorBoard, which
    sorts a run's file names as strings (docs/format.md §5), reads them in the
    order given (the Reader's: numbers compared as numbers)."""

    def __init__(self, files: list[str]) -> None:
        self.files = files

    def __enter__(self) -> str:
        self._dir = tempfile.TemporaryDirectory(prefix="tb-in-order-")
        for k, f in enumerate(self.files):
            shutil.copyfile(f, os.path.join(self._dir.name, f"events.out.tfevents.{k:06d}.x"))
        return self._dir.name

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


def tb_scalars(files: list[str], exclude: tuple[str, ...] = ()) -> dict[str, tuple[list, list, list]]:
    """What TensorBoard's (plugin) EventAccumulator holds for the scalars
    plugin from one run's ``files``, keeping everything (size_guidance 0):
    tag -> (steps, walls, values); tags starting with one of ``exclude`` are
    left out."""
    pa = require_module("tensorboard.backend.event_processing.plugin_event_accumulator")
    tensor_util = require_module("tensorboard.util.tensor_util")
    with _InOrder(files) as run_dir:
        acc = pa.EventAccumulator(run_dir, size_guidance={pa.TENSORS: 0})
        acc.Reload()
    try:
        tags = acc.PluginTagToContent("scalars")
    except KeyError:
        return {}
    out = {}
    for tag in tags:
        if exclude and tag.startswith(exclude):
            continue
        evs = acc.Tensors(tag)
        out[tag] = ([e.step for e in evs], [e.wall_time for e in evs],
                    [float(tensor_util.make_ndarray(e.tensor_proto).reshape(())) for e in evs])
    return out


def tb_legacy_scalars(files: list[str]) -> dict[str, tuple[list, list, list]]:
    """The legacy EventAccumulator's Scalars (simple_value) from one run's
    ``files``, keeping everything.  (The plugin accumulator differs on purge:
    it ignores a run's first SessionLog.START, tensorflow/tensorboard#4763.)"""
    ea = require_module("tensorboard.backend.event_processing.event_accumulator")
    with _InOrder(files) as run_dir:
        acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0})
        acc.Reload()
    return {tag: ([e.step for e in acc.Scalars(tag)], [e.wall_time for e in acc.Scalars(tag)],
                  [e.value for e in acc.Scalars(tag)])
            for tag in acc.Tags()["scalars"]}


def assert_matches_tensorboard(root: str, reader: Reader | None = None) -> None:
    """Every run's scalar tags, steps, wall times and values equal TensorBoard's."""
    r = reader or Reader(root)
    assert r.runs()
    for run in r.runs():
        theirs = tb_scalars(r.files(run))
        assert sorted(theirs) == r.scalar_tags(run), run
        for tag, (steps, walls, values) in theirs.items():
            assert_series(r.scalars(run, tag), steps, walls, values)


def write_summarylog_run(logdir, n: int = 10, tag: str = "a", offset: float = 0.0, **kw) -> list[str]:
    with summarylog.Writer(logdir, **kw) as w:
        for i in range(n):
            w.add_scalar(tag, offset + i, i, walltime=1000.0 + i)
    return w.files


# ---- discovery -----------------------------------------------------------------------

class TestDiscovery:
    def test_is_event_file(self) -> None:
        assert is_event_file("events.out.tfevents.1700000000.host.1.0")
        assert is_event_file("/x/y/events.out.zevents.1700000000.host.1.0.zst")
        assert is_event_file("tfevents")
        assert not is_event_file("events.json")
        assert not is_event_file("/tfevents/notes.txt")  # the basename decides

    def test_missing_path_and_unknown_run(self, tmp_path) -> None:
        with pytest.raises(FileNotFoundError):
            Reader(tmp_path / "nope")
        assert Reader(tmp_path).runs() == []
        with pytest.raises(KeyError, match="no run"):
            Reader(tmp_path).files("x")

    def test_file_path(self, tmp_path) -> None:
        (path,) = write_summarylog_run(tmp_path / "run")
        r = Reader(path)
        assert r.runs() == ["."]
        assert r.files(".") == [path]
        assert_series(r.scalars(".", "a"), range(10), 1000.0 + np.arange(10), np.arange(10.0))

    def test_run_directory(self, tmp_path) -> None:
        files = write_summarylog_run(tmp_path / "run")
        r = Reader(str(tmp_path / "run"))
        assert r.runs() == ["."]
        assert r.files(".") == files
        assert r.scalar_tags(".") == ["a"]

    def test_root_of_nested_runs_ignores_other_files(self, tmp_path) -> None:
        root = tmp_path / "root"
        write_summarylog_run(root, offset=0)
        write_summarylog_run(root / "a", offset=100)
        write_summarylog_run(root / "a" / "b", offset=200)
        write_summarylog_run(root / "c", offset=300)
        (root / "notes.txt").write_text("not events")
        (root / "a" / "events.json").write_text("{}")
        (root / "a" / "model.ckpt").write_bytes(b"\0" * 64)
        (root / "junk").mkdir()
        (root / "junk" / "README.md").write_text("no runs here")
        (root / "c" / "x.tfevents.d").mkdir()  # a directory named like an event file
        r = Reader(root)
        assert r.runs() == [".", "a", os.path.join("a", "b"), "c"]
        for run, offset in [(".", 0), ("a", 100), (os.path.join("a", "b"), 200), ("c", 300)]:
            (f,) = r.files(run)
            assert os.path.dirname(f) == os.path.normpath(os.path.join(root, run))
            assert is_event_file(f) and os.path.isfile(f)
            assert_series(r.scalars(run, "a"), range(10), 1000.0 + np.arange(10), offset + np.arange(10.0))

    def test_zstd_segments_included(self, tmp_path) -> None:
        require_module("zstandard")
        zfiles = write_summarylog_run(tmp_path / "z", compression="zstd", offset=5)
        write_summarylog_run(tmp_path / "p", offset=7)
        assert all("zevents" in os.path.basename(f) and "tfevents" not in os.path.basename(f)
                   for f in zfiles)
        r = Reader(tmp_path)
        assert r.runs() == ["p", "z"]
        assert r.files("z") == zfiles
        assert_series(r.scalars("z", "a"), range(10), 1000.0 + np.arange(10), 5 + np.arange(10.0))
        assert_series(r.scalars("p", "a"), range(10), 1000.0 + np.arange(10), 7 + np.arange(10.0))
        assert all(rep.ok and rep.tail is None for rep in r.damage().values())

    @pytest.mark.parametrize("compression", [None, "zstd"])
    def test_rotated_segments_merge_in_order(self, tmp_path, compression) -> None:
        if compression:
            require_module("zstandard")
        n = 1500
        with summarylog.Writer(tmp_path, max_file_size=1024, compression=compression,
                               flush_secs=0.05) as w:
            for i in range(n):
                w.add_scalar("loss", i * 0.5, i, walltime=1e9 + i)
                if i % 50 == 49:
                    w.flush()  # zstd sizes grow at flushes: rotate there too
        # more than 10 segments, so "...9" < "...10" (numbers compared as numbers)
        assert len(w.files) > 10
        r = Reader(tmp_path)
        assert r.files(".") == w.files  # name order == writing order
        s = r.scalars(".", "loss")
        assert np.all(np.diff(s.step) > 0)
        assert_series(s, range(n), 1e9 + np.arange(n), np.arange(n) * 0.5)
        assert sum(rep.records for rep in r.damage(".").values()) == n + len(w.files)

    def test_per_rank_files_in_one_directory(self, tmp_path) -> None:
        w0 = summarylog.Writer(tmp_path, rank=0)
        for i in range(20):
            w0.add_scalar("loss", i, i, walltime=10.0 + i)
        w0.flush()  # rank 0's file exists before rank 1's
        w1 = summarylog.Writer(tmp_path, rank=1)
        for i in range(20):
            w1.add_scalar("loss", 100 + i, i, walltime=50.0 + i)
            w0.add_scalar("loss", 20 + i, 20 + i, walltime=30.0 + i)
        w0.close()
        w1.close()
        assert os.path.basename(w0.files[0]).endswith(".0")
        assert os.path.basename(w1.files[0]).endswith(".1")
        r = Reader(tmp_path)
        assert r.runs() == ["."]
        assert r.files(".") == w0.files + w1.files
        # files are read whole, one after the other, in name order
        assert_series(r.scalars(".", "loss"),
                      list(range(40)) + list(range(20)),
                      list(10.0 + np.arange(20)) + list(30.0 + np.arange(20)) + list(50.0 + np.arange(20)),
                      list(range(40)) + list(100 + np.arange(20)))


# ---- columnar scalars, exactly ---------------------------------------------------------

class TestScalarsExact:
    def test_summarylog_add_scalar_and_log(self, tmp_path, rng) -> None:
        n = 400
        steps = EDGE_STEPS + [rng.randrange(I64_MIN, I64_MAX) for _ in range(n - len(EDGE_STEPS))]
        walls = [0.0, -5.25, 1.7e9] + [1.7e9 + rng.random() * 1e6 for _ in range(n - 3)]
        vals = EDGE_VALUES + [rng.uniform(-1e6, 1e6) for _ in range(n - len(EDGE_VALUES))]
        with summarylog.Writer(tmp_path) as w:
            for s, t, v in zip(steps, walls, vals):
                w.add_scalar("a", v, s, walltime=t)
                w.log({"b": -v, "c": 2 * s}, step=s, walltime=t + 0.5)
            w.add_scalar("a", np.float32(1.25), 7, walltime=1.0)  # a numpy scalar
            w.add_scalar("a", 3, None, walltime=2.0)  # an int, step None -> 0
        r = Reader(tmp_path)
        assert r.scalar_tags(".") == ["a", "b", "c"]
        assert r.tags(".") == {"a": "scalar", "b": "scalar", "c": "scalar"}
        assert_series(r.scalars(".", "a"), steps + [7, 0], walls + [1.0, 2.0], f32(vals + [1.25, 3]))
        assert_series(r.scalars(".", "b"), steps, np.asarray(walls) + 0.5, f32([-v for v in vals]))
        assert_series(r.scalars(".", "c"), steps, np.asarray(walls) + 0.5, f32([2.0 * s for s in steps]))
        assert_matches_tensorboard(str(tmp_path), r)

    def test_many_tags_per_event_grow_columns(self, tmp_path) -> None:
        # ~10 bytes per value: far more values than the columns' first size
        tags = [f"t{k}" for k in range(300)]
        with summarylog.Writer(tmp_path) as w:
            for i in range(100):
                w.log({t: i + k for k, t in enumerate(tags)}, step=i, walltime=float(i))
        r = Reader(tmp_path)
        assert r.scalar_tags(".") == sorted(tags)
        for k, t in enumerate(tags):
            assert_series(r.scalars(".", t), range(100), np.arange(100.0), k + np.arange(100.0))

    def test_tensorboardx_add_scalar_and_add_scalars(self, tmp_path, rng) -> None:
        tbx = require_module("tensorboardX")
        steps = EDGE_STEPS + list(range(100, 150))
        walls = [1.6e9 + rng.random() * 1e5 for _ in steps]
        vals = [rng.uniform(-100, 100) for _ in steps]
        w = tbx.SummaryWriter(str(tmp_path))
        for s, t, v in zip(steps, walls, vals):
            w.add_scalar("loss", v, s, walltime=t)
            w.add_scalars("grp", {"x": v, "y": -v}, s, walltime=t)
        w.close()
        r = Reader(tmp_path)
        assert_series(r.scalars(".", "loss"), steps, walls, f32(vals))
        # add_scalars makes one sub-run per key, each holding the main tag
        subs = {run.replace("\\", "/").rsplit("/", 1)[-1].rsplit("_", 1)[-1]: run
                for run in r.runs() if run != "."}
        assert sorted(subs) == ["x", "y"] and len(r.runs()) == 3
        assert r.scalar_tags(subs["x"]) == ["grp"]
        assert_series(r.scalars(subs["x"], "grp"), steps, walls, f32(vals))
        assert_series(r.scalars(subs["y"], "grp"), steps, walls, f32([-v for v in vals]))
        assert_matches_tensorboard(str(tmp_path), r)

    def test_torch_old_and_new_style(self, tmp_path, rng) -> None:
        torch = require_module("torch")
        tb_writer = require_module("torch.utils.tensorboard")
        steps = [0, -3, (1 << 53) + 1, I64_MAX] + list(range(10, 40))
        walls = [1.5e9 + rng.random() * 1e5 for _ in steps]
        vals = [rng.uniform(-10, 10) for _ in steps]
        w = tb_writer.SummaryWriter(str(tmp_path))
        for s, t, v in zip(steps, walls, vals):
            w.add_scalar("old", v, s, walltime=t)
            w.add_scalar("new", torch.tensor(v, dtype=torch.float64), s, walltime=t, new_style=True)
            w.add_scalar("dbl", v, s, walltime=t, new_style=True, double_precision=True)
        w.add_scalars("main", {"a": 1.5, "b": 2.5}, 7, walltime=3.0)
        w.close()
        r = Reader(tmp_path)
        assert r.scalar_tags(".") == ["dbl", "new", "old"]
        assert_series(r.scalars(".", "old"), steps, walls, f32(vals))
        assert_series(r.scalars(".", "new"), steps, walls, f32(vals))  # DT_FLOAT float_val
        assert_series(r.scalars(".", "dbl"), steps, walls, vals)  # DT_DOUBLE: not rounded
        subs = [run for run in r.runs() if run != "."]
        assert len(subs) == 2
        got = sorted(float(r.scalars(run, "main").value[0]) for run in subs)
        assert got == [1.5, 2.5]
        assert_matches_tensorboard(str(tmp_path), r)

    def test_tensorboard_native_writer(self, tmp_path, rng) -> None:
        """tensorboard.summary.Writer: TensorBoard's own TF-free writer (tensor
        scalars with the scalars plugin's metadata on every value)."""
        tbs = require_module("tensorboard.summary")
        if not hasattr(tbs, "Writer"):
            pytest.skip("this tensorboard has no tensorboard.summary.Writer")
        steps = [0, -7, (1 << 53) + 3] + list(range(1, 30))
        walls = [1.4e9 + rng.random() for _ in steps]
        vals = [rng.uniform(-1, 1) for _ in steps]
        w = tbs.Writer(str(tmp_path))
        for s, t, v in zip(steps, walls, vals):
            w.add_scalar("acc", v, s, wall_time=t)
        w.close()
        r = Reader(tmp_path)
        assert r.tags(".") == {"acc": "scalar"}
        assert_series(r.scalars(".", "acc"), steps, walls, f32(vals))
        assert_matches_tensorboard(str(tmp_path), r)

    def test_tensorboard_v1_pb_path_without_tf(self, tmp_path, rng) -> None:
        """TensorBoard's summary v1 ``scalar_pb`` needs TensorFlow; its TF-free
        parts (tensor_util.make_tensor_proto, the scalars plugin's
        create_summary_metadata, the ``<name>/scalar_summary`` tag) build the
        same Summary, written with TensorBoard's EventFileWriter."""
        event_pb2 = pb()[0]
        tensor_util = require_module("tensorboard.util.tensor_util")
        scalar_md = require_module("tensorboard.plugins.scalar.metadata")
        efw = require_module("tensorboard.summary.writer.event_file_writer")
        n = 30
        vals = [rng.uniform(-1e4, 1e4) for _ in range(n)]
        dtypes = {"f32": np.float32, "f16": np.float16, "f64": np.float64}
        w = efw.EventFileWriter(str(tmp_path))
        for i, v in enumerate(vals):
            ev = event_pb2.Event(step=i - 10, wall_time=50.0 + i)
            for name, dt in dtypes.items():
                ev.summary.value.add(
                    tag=f"{name}/scalar_summary",
                    metadata=scalar_md.create_summary_metadata(display_name=name, description="d"),
                    tensor=tensor_util.make_tensor_proto(np.asarray(v).astype(dt)))
            w.add_event(ev)
        w.close()
        r = Reader(tmp_path)
        assert r.scalar_tags(".") == sorted(f"{k}/scalar_summary" for k in dtypes)
        for name, dt in dtypes.items():
            want = np.asarray(vals).astype(dt).astype(np.float64)
            assert_series(r.scalars(".", f"{name}/scalar_summary"), np.arange(n) - 10,
                          50.0 + np.arange(n), want)
        assert_matches_tensorboard(str(tmp_path), r)

    @pytest.mark.parametrize("writer", ["RecordWriter", "EventFileWriter"])
    def test_tf2_metadata_only_on_first_value(self, tmp_path, writer, rng) -> None:
        """TF2 writes the scalars plugin's metadata with a tag's first value
        only; later values (tensor_content or float_val) are scalars still.
        Tags whose metadata names another plugin are never scalars."""
        event_pb2, _, tensor_pb2, types_pb2 = pb()
        n = 40
        vals = [rng.uniform(-1e3, 1e3) for _ in range(n)]
        payloads: list[bytes] = []
        for i, v in enumerate(vals):
            first = i == 0
            content = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT,
                                             tensor_content=np.float32(v).tobytes())
            payloads.append(tensor_event(i, 100.0 + i, "loss", content, "scalars" if first else None))
            packed = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[v])
            payloads.append(tensor_event(2 * i, 200.0 + i, "acc", packed, "scalars" if first else None))
            # a tag of another plugin holding one float: not a scalar
            payloads.append(tensor_event(i, 300.0 + i, "custom", packed, "my_plugin" if first else None))
            # a tensor with no plugin at all: not a scalar
            payloads.append(tensor_event(i, 300.0 + i, "raw", packed, None))
        path = os.path.join(tmp_path, "events.out.tfevents.1700000000.host.1.0")
        if writer == "RecordWriter":
            write_records(path, [header_event()] + payloads)
        else:
            efw = require_module("tensorboard.summary.writer.event_file_writer")
            w = efw.EventFileWriter(str(tmp_path))
            for p in payloads:
                w.add_event(event_pb2.Event.FromString(p))
            w.close()
        r = Reader(tmp_path)
        assert r.scalar_tags(".") == ["acc", "loss"]
        assert_series(r.scalars(".", "loss"), range(n), 100.0 + np.arange(n), f32(vals))
        assert_series(r.scalars(".", "acc"), 2 * np.arange(n), 200.0 + np.arange(n), f32(vals))
        assert r.tags(".") == {"acc": "scalar", "custom": "tensor", "loss": "scalar", "raw": "tensor"}
        # events() remembers each tag's plugin too
        kinds = {(e.tag, e.kind) for e in r.events(".") if e.tag}
        assert kinds == {("loss", "scalar"), ("acc", "scalar"), ("custom", "tensor"), ("raw", "tensor")}
        assert_matches_tensorboard(str(tmp_path), r)

    def test_scalar_tensor_dtypes(self, tmp_path) -> None:
        """Scalar tensors of every dtype TF writes, in the typed repeated fields
        (half_val for float16 and bfloat16) and as tensor_content."""
        _, _, tensor_pb2, types_pb2 = pb()
        xs = [1.5, -2.25, 65504.0, 6.1e-5, 0.0, -1e-7, 3.0]
        ints = [1, -2, 2147483647, -2147483648, 0, 7, 3]
        int64s = [(1 << 53) + 1, -(1 << 62), I64_MAX, 5, 0, -1, 3]

        def bf16_bits(x: float) -> int:
            return int(np.array(x, np.float32).view(np.uint32)) >> 16  # truncated: exact in bf16

        def bf16_value(x: float) -> float:
            return float(np.array(bf16_bits(x) << 16, np.uint32).view(np.float32))

        DT = types_pb2.DataType.Value
        cases = {
            "half": ([float(np.float16(x)) for x in xs],
                     lambda x: tensor_pb2.TensorProto(dtype=DT("DT_HALF"),
                                                      half_val=[int(np.array(x, np.float16).view(np.uint16))])),
            "half_c": ([float(np.float16(x)) for x in xs],
                       lambda x: tensor_pb2.TensorProto(dtype=DT("DT_HALF"),
                                                        tensor_content=np.float16(x).tobytes())),
            "bf16": ([bf16_value(x) for x in xs],
                     lambda x: tensor_pb2.TensorProto(dtype=DT("DT_BFLOAT16"), half_val=[bf16_bits(x)])),
            "bf16_c": ([bf16_value(x) for x in xs],
                       lambda x: tensor_pb2.TensorProto(dtype=DT("DT_BFLOAT16"),
                                                        tensor_content=struct.pack("<H", bf16_bits(x)))),
            "f32": (list(f32(xs)), lambda x: tensor_pb2.TensorProto(dtype=DT("DT_FLOAT"), float_val=[x])),
            "f32_c": (list(f32(xs)), lambda x: tensor_pb2.TensorProto(
                dtype=DT("DT_FLOAT"), tensor_content=np.float32(x).tobytes())),
            "f64": (xs, lambda x: tensor_pb2.TensorProto(dtype=DT("DT_DOUBLE"), double_val=[x])),
            "f64_c": (xs, lambda x: tensor_pb2.TensorProto(dtype=DT("DT_DOUBLE"),
                                                          tensor_content=np.float64(x).tobytes())),
        }
        int_cases = {
            "i32": ([float(i) for i in ints],
                    lambda i: tensor_pb2.TensorProto(dtype=DT("DT_INT32"), int_val=[i])),
            "i32_c": ([float(i) for i in ints],
                      lambda i: tensor_pb2.TensorProto(dtype=DT("DT_INT32"), tensor_content=np.int32(i).tobytes())),
            "i64": ([float(i) for i in int64s],
                    lambda i: tensor_pb2.TensorProto(dtype=DT("DT_INT64"), int64_val=[i])),
            "i64_c": ([float(i) for i in int64s],
                      lambda i: tensor_pb2.TensorProto(dtype=DT("DT_INT64"), tensor_content=np.int64(i).tobytes())),
        }
        payloads = [header_event()]
        for tag, (_, make) in cases.items():
            for i, x in enumerate(xs):
                t = make(x)
                t.tensor_shape.SetInParent()  # rank 0
                payloads.append(tensor_event(i, 10.0 + i, tag, t, "scalars" if i == 0 else None))
        for tag, (_, make) in int_cases.items():
            src = int64s if tag.startswith("i64") else ints
            for i, x in enumerate(src):
                payloads.append(tensor_event(i, 10.0 + i, tag, make(x), "scalars" if i == 0 else None))
        write_records(os.path.join(tmp_path, "events.out.tfevents.1.h.1.0"), payloads)
        r = Reader(tmp_path)
        expected = {tag: e for tag, (e, _) in {**cases, **int_cases}.items()}
        assert r.scalar_tags(".") == sorted(expected)
        for tag, values in expected.items():
            assert_series(r.scalars(".", tag), range(len(values)), 10.0 + np.arange(len(values)), values)
        # TensorBoard agrees wherever numpy has the dtype (its make_ndarray has no bfloat16)
        theirs = tb_scalars(r.files("."), exclude=("bf16",))
        assert sorted(theirs) == sorted(t for t in expected if not t.startswith("bf16"))
        for tag, (steps, walls, values) in theirs.items():
            assert_series(r.scalars(".", tag), steps, walls, values)
        assert r.damage(".")[r.files(".")[0]].ok

    def test_bfloat16_scalars_in_events(self, tmp_path) -> None:
        _, _, tensor_pb2, types_pb2 = pb()
        t = tensor_pb2.TensorProto(dtype=types_pb2.DT_BFLOAT16, half_val=[0x3FC0])  # 1.5
        write_records(os.path.join(tmp_path, "events.out.tfevents.1.h.1.0"),
                      [header_event()] + [tensor_event(i, 1.0, "bf", t, "scalars" if i == 0 else None)
                                          for i in range(3)])
        r = Reader(tmp_path)
        assert r.scalars(".", "bf").value.tolist() == [1.5] * 3
        assert [(e.kind, e.value) for e in r.events(".") if e.tag] == [("scalar", 1.5)] * 3
        assert r.damage(".")[r.files(".")[0]].bad_events == 0


# ---- parity with TensorBoard's EventAccumulator ---------------------------------------------

class TestAgainstEventAccumulator:
    def test_mixed_writers_one_root(self, tmp_path, rng) -> None:
        """Runs from summarylog (plain and rotated), tensorboardX and torch under
        one root: the same tags, steps, wall times and values as TensorBoard."""
        tbx = require_module("tensorboardX")
        tb_writer = require_module("torch.utils.tensorboard")
        with summarylog.Writer(tmp_path / "slg", max_file_size=4096) as w:
            for i in range(300):
                w.log({"loss": rng.gauss(0, 1), "lr": 1e-3 * 0.99 ** i}, step=i - 50)
                if i % 3 == 0:
                    w.add_histogram("h", np.arange(10.0) * i, step=i)  # not a scalar
        assert len(w.files) > 10  # compared in the Reader's order (see _InOrder)
        x = tbx.SummaryWriter(str(tmp_path / "tbx"))
        for i in range(100):
            x.add_scalar("loss", rng.random(), i)
            x.add_scalars("pair", {"a": i, "b": -i}, i)
            x.add_text("note", "t", i)
        x.close()
        t = tb_writer.SummaryWriter(str(tmp_path / "torch"))
        for i in range(100):
            t.add_scalar("old", rng.random(), i)
            t.add_scalar("new", rng.random(), i, new_style=True)
        t.close()
        r = Reader(tmp_path)
        assert len(r.runs()) == 5  # slg, tbx, tbx's two sub-runs, torch
        assert_matches_tensorboard(str(tmp_path), r)

    def test_legacy_accumulator_agrees_on_simple_values(self, tmp_path, rng) -> None:
        with summarylog.Writer(tmp_path) as w:
            for i in range(200):
                w.add_scalar("x", rng.uniform(-5, 5), (1 << 53) + i, walltime=1e9 + i)
        r = Reader(tmp_path)
        (steps, walls, values), = tb_legacy_scalars(r.files(".")).values()
        assert_series(r.scalars(".", "x"), steps, walls, values)


# ---- events() ---------------------------------------------------------------------------

class TestEvents:
    def test_every_kind_the_writer_writes(self, tmp_path) -> None:
        img = (np.arange(3 * 4 * 5).reshape(3, 4, 5) * 3 % 256).astype(np.uint8)  # CHW
        batch = np.stack([img, 255 - img])  # NCHW
        hist = np.concatenate([np.linspace(-3, 3, 101), [np.inf, -np.inf, np.nan]])
        tensors = {"t16": np.arange(6, dtype=np.int16).reshape(2, 3),
                   "tc": np.array([1 + 2j, -3.5j], np.complex64),
                   "tu": np.array(["ab", "héllo"])}
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("s", 0.1, 1, walltime=11.0)
            w.add_histogram("h", hist, 2, bins=7, walltime=12.0)
            w.add_image("im", img, 3, walltime=13.0)
            w.add_images("ims", batch, 3, walltime=13.5)
            w.add_text("txt", "héllo **md**", 4, walltime=14.0)
            for k, (tag, arr) in enumerate(tensors.items()):
                w.add_tensor(tag, arr, 5 + k, walltime=15.0)
            w.add_hparams({"lr": 0.1, "opt": "sgd", "bn": True}, {"m": 0.5}, step=9, walltime=16.0)
        with summarylog.Writer(tmp_path, purge_step=3) as w2:
            w2.add_scalar("s", 2.0, 3, walltime=20.0)
        r = Reader(tmp_path)
        evs = list(r.events("."))
        kinds = [(e.kind, e.tag) for e in evs]
        assert kinds == [
            ("file_version", ""), ("scalar", "s"), ("histogram", "h"), ("image", "im"),
            ("image", "ims"), ("text", "txt"), ("tensor", "t16"), ("tensor", "tc"), ("tensor", "tu"),
            ("hparams", "_hparams_/session_start_info"), ("hparams", "_hparams_/session_end_info"),
            ("scalar", "m"),
            # the resumed run's file: header, then the purge marker, then data
            ("file_version", ""), ("file_version", ""), ("session_log", ""), ("scalar", "s")]
        by = {(e.kind, e.tag, e.step): e for e in evs}
        assert evs[0].value == "brain.Event:2" and abs(evs[0].wall_time - time.time()) < 600
        s = by["scalar", "s", 1]
        assert s.value == float(np.float32(0.1)) and s.wall_time == 11.0
        h = by["histogram", "h", 2].value
        ref = histogram_proto(hist, 7)
        assert h["limits"] == list(ref.bucket_limit) and h["counts"] == list(ref.bucket)
        assert (h["min"], h["max"], h["num"]) == (-3.0, 3.0, 104.0)
        assert sum(h["counts"]) == 103.0  # the NaN is only in num
        assert h["sum"] == ref.sum and h["sum_squares"] == ref.sum_squares
        im = by["image", "im", 3]
        hwc = np.transpose(img, (1, 2, 0))
        # written as the images plugin's tensor (TF2's form): the tensor comes along
        assert im.value["tensor"].tolist() == [b"5", b"4", encode_png(hwc)]
        assert {k: v for k, v in im.value.items() if k != "tensor"} == {
            "width": 5, "height": 4, "pngs": [encode_png(hwc)]}
        assert im.wall_time == 13.0
        ims = by["image", "ims", 3].value
        assert ims["pngs"] == [encode_png(np.transpose(b, (1, 2, 0))) for b in batch]
        assert by["text", "txt", 4].value == "héllo **md**"
        for k, (tag, arr) in enumerate(tensors.items()):
            got = by["tensor", tag, 5 + k].value
            if arr.dtype.kind == "U":
                assert got.tolist() == [x.encode() for x in arr.tolist()]
            else:
                assert got.dtype == arr.dtype and got.shape == arr.shape
                np.testing.assert_array_equal(got, arr)
        start = by["hparams", "_hparams_/session_start_info", 0].value["session_start_info"]
        assert start["hparams"] == {"lr": 0.1, "opt": "sgd", "bn": True}
        assert start["start_time_secs"] == 16.0
        end = by["hparams", "_hparams_/session_end_info", 0].value["session_end_info"]
        assert end == {"status": "STATUS_SUCCESS", "end_time_secs": 16.0}
        assert by["scalar", "m", 9].value == 0.5
        # the marker: file_version and SessionLog.START, both at the purge step
        assert [(e.kind, e.step, e.value) for e in evs[13:15]] == [
            ("file_version", 3, "brain.Event:2"),
            ("session_log", 3, {"status": "start", "checkpoint_path": "", "msg": ""})]
        assert r.tags(".") == {
            "_hparams_/session_end_info": "hparams", "_hparams_/session_start_info": "hparams",
            "h": "histogram", "im": "image", "ims": "image", "m": "scalar", "s": "scalar",
            "t16": "tensor", "tc": "tensor", "tu": "tensor", "txt": "text"}
        # events() does not apply the resume rule; scalars() does
        assert_series(r.scalars(".", "s"), [1, 3], [11.0, 20.0], [float(np.float32(0.1)), 2.0])

    def test_png_pixels(self, tmp_path) -> None:
        Image = require_module("PIL.Image")
        import io

        rgb = np.random.default_rng(0).integers(0, 256, (7, 9, 3), dtype=np.uint8)
        with summarylog.Writer(tmp_path) as w:
            w.add_image("im", rgb, 0, dataformats="HWC")
            w.add_image("f", rgb[..., 0] / 255.0, 0, dataformats="HW")
        evs = {e.tag: e for e in Reader(tmp_path).events(".") if e.kind == "image"}
        (png,) = evs["im"].value["pngs"]
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), rgb)
        (png,) = evs["f"].value["pngs"]
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))), rgb[..., 0])


# ---- the resume rule ------------------------------------------------------------------------------

def _tbx_writer(logdir, **kw):
    tbx = require_module("tensorboardX")
    # tensorboardX names files by the second only: distinct suffixes keep them apart
    _tbx_writer.n = getattr(_tbx_writer, "n", 0) + 1
    return tbx.SummaryWriter(str(logdir), filename_suffix=f".{_tbx_writer.n:04d}", **kw)


def _torch_writer(logdir, **kw):
    tb_writer = require_module("torch.utils.tensorboard")
    return tb_writer.SummaryWriter(str(logdir), **kw)


def _slg_writer(logdir, **kw):
    return summarylog.Writer(logdir, **kw)


WRITERS = {"summarylog": _slg_writer, "tensorboardX": _tbx_writer, "torch": _torch_writer}


def _log(w, step: int, value: float) -> None:
    w.add_scalar("a", value, step, walltime=1e9 + value)


class TestEventsOfTags:
    def test_only_those_tags_and_the_resume_markers(self, tmp_path) -> None:
        """events(run, tags=...) decodes only records holding those tags, the file version
        or a resume marker (a SessionLog START, with or without a message after its status)."""
        from summarylog.pb import tb
        start = tb.Event(step=3, wall_time=5.0)
        start.session_log.status = tb.SessionLog.START
        start_msg = tb.Event(step=1, wall_time=6.0)
        start_msg.session_log.status = tb.SessionLog.START
        start_msg.session_log.msg = "x" * 300  # a two-byte length before the status
        stop = tb.Event(step=2, wall_time=7.0)
        stop.session_log.status = tb.SessionLog.STOP
        write_records(str(tmp_path / "events.out.tfevents.1.h"), [
            header_event(), simple_event(0, 1.0, a=1.0, b=2.0), simple_event(1, 2.0, b=3.0),
            start.SerializeToString(), simple_event(2, 3.0, c=4.0), stop.SerializeToString(),
            start_msg.SerializeToString(), simple_event(3, 4.0, a=5.0)])
        r = Reader(tmp_path)
        got = [(e.kind, e.tag, e.step) for e in r.events(".", tags=["a"])]
        assert got == [("file_version", "", 0), ("scalar", "a", 0), ("session_log", "", 3),
                       ("session_log", "", 1), ("scalar", "a", 3)]
        assert [(e.kind, e.tag) for e in r.events(".", tags=["b"])] == [
            ("file_version", ""), ("scalar", "b"), ("scalar", "b"), ("session_log", ""),
            ("session_log", "")]
        assert [e.kind for e in r.events(".", tags=[])] == ["file_version", "session_log",
                                                            "session_log"]


class TestPurge:
    @pytest.mark.parametrize("kind", sorted(WRITERS))
    def test_restart_at_step_50(self, tmp_path, kind) -> None:
        make = WRITERS[kind]
        w = make(tmp_path)
        for i in range(100):
            _log(w, i, i)
        w.close()
        w = make(tmp_path, purge_step=50)
        for i in range(50, 80):
            _log(w, i, 1000 + i)
        w.close()
        r = Reader(tmp_path)
        assert len(r.files(".")) == 2
        expect = list(range(50)) + [1000 + i for i in range(50, 80)]
        assert_series(r.scalars(".", "a"), range(80), 1e9 + np.asarray(expect, float), expect)
        # TensorBoard's EventAccumulator drops the same points
        (steps, walls, values), = tb_legacy_scalars(r.files(".")).values()
        assert_series(r.scalars(".", "a"), steps, walls, values)
        # purge=False keeps everything, in file order
        keep = list(range(100)) + [1000 + i for i in range(50, 80)]
        assert_series(Reader(tmp_path, purge=False).scalars(".", "a"),
                      list(range(100)) + list(range(50, 80)), 1e9 + np.asarray(keep, float), keep)

    @pytest.mark.parametrize("kind", sorted(WRITERS))
    def test_multiple_restarts(self, tmp_path, kind) -> None:
        make = WRITERS[kind]
        expect: dict[int, float] = {}
        every: list[tuple[int, float]] = []
        plan = [(None, 0, 100), (50, 50, 80), (60, 60, 90), (10, 10, 20), (15, 15, 40)]
        for r_i, (purge, lo, hi) in enumerate(plan):
            w = make(tmp_path, purge_step=purge) if purge is not None else make(tmp_path)
            if purge is not None:
                expect = {s: v for s, v in expect.items() if s < purge}
            for s in range(lo, hi):
                v = 1000.0 * r_i + s
                _log(w, s, v)
                expect[s] = v
                every.append((s, v))
            w.close()
        r = Reader(tmp_path)
        assert len(r.files(".")) == len(plan)
        steps = sorted(expect)
        s = r.scalars(".", "a")
        assert_series(s, steps, [1e9 + expect[k] for k in steps], [expect[k] for k in steps])
        (tsteps, walls, values), = tb_legacy_scalars(r.files(".")).values()
        assert_series(s, tsteps, walls, values)
        assert_series(Reader(tmp_path, purge=False).scalars(".", "a"), [a for a, _ in every],
                      [1e9 + b for _, b in every], [b for _, b in every])

    def test_many_restarts_in_one_file(self, tmp_path) -> None:
        """More START markers than the C decoder's purge list holds per call."""
        payloads = [header_event()]
        expect: dict[int, float] = {}
        step = 0
        for restart in range(40):
            if restart:
                step -= 3
                payloads.append(pb()[0].Event(wall_time=2.0, step=step,
                                              file_version="brain.Event:2").SerializeToString())
                payloads.append(pb()[0].Event(wall_time=2.0, step=step,
                                              session_log={"status": 1}).SerializeToString())
                expect = {k: v for k, v in expect.items() if k < step}
            for j in range(5):
                payloads.append(simple_event(step, 3.0, a=restart * 100 + j))
                expect[step] = float(restart * 100 + j)
                step += 1
        write_records(os.path.join(tmp_path, "events.out.tfevents.1.h.1.0"), payloads)
        steps = sorted(expect)
        r = Reader(tmp_path)
        s = r.scalars(".", "a")
        assert_series(s, steps, [3.0] * len(steps), [expect[k] for k in steps])
        (tsteps, walls, values), = tb_legacy_scalars(r.files(".")).values()
        assert_series(s, tsteps, walls, values)

    def test_purge_applies_to_all_tags_of_the_run_only(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path / "run") as w:
            for i in range(10):
                w.log({"a": i, "b": -i}, step=i, walltime=1.0)
        with summarylog.Writer(tmp_path / "other") as w:
            for i in range(10):
                w.add_scalar("a", i, i, walltime=1.0)
        with summarylog.Writer(tmp_path / "run", purge_step=5) as w:
            w.add_scalar("a", 99, 5, walltime=2.0)
        r = Reader(tmp_path)
        assert_series(r.scalars("run", "a"), range(6), [1.0] * 5 + [2.0], [0, 1, 2, 3, 4, 99])
        assert_series(r.scalars("run", "b"), range(5), [1.0] * 5, [0, -1, -2, -3, -4])
        assert len(r.scalars("other", "a").step) == 10


# ---- damage ---------------------------------------------------------------------------------

class TestDamage:
    def test_flipped_payload_byte_and_zeroed_length(self, tmp_path) -> None:
        (bad,) = write_summarylog_run(tmp_path, n=10)
        (good,) = write_summarylog_run(tmp_path, n=5, tag="b")
        recs = records_of(bad)  # record 0 is the header, record k is step k-1
        off3, n3 = recs[3]
        with open(bad, "rb") as f:
            data = f.read()
        patch_file(bad, off3 + 12 + n3 // 2, bytes([data[off3 + 12 + n3 // 2] ^ 0x40]))
        off6, _ = recs[6]
        patch_file(bad, off6, bytes(8))  # a zeroed length
        r = Reader(tmp_path)
        rep = r.damage(".")
        assert list(rep) == [bad, good]
        assert isinstance(rep[bad], FileReport) and not rep[bad].ok
        assert [(d.kind, d.offset) for d in rep[bad].damage] == [("bad_data_crc", off3),
                                                               ("bad_length_crc", off6)]
        assert rep[bad].damage[0].length == 16 + n3
        assert rep[bad].records == 9 and rep[bad].tail is None and rep[bad].bad_events == 0
        assert rep[good].ok and rep[good].records == 6
        steps = [s for s in range(10) if s not in (2, 5)]
        assert_series(r.scalars(".", "a"), steps, 1000.0 + np.asarray(steps, float), steps)
        assert_series(r.scalars(".", "b"), range(5), 1000.0 + np.arange(5), range(5))
        assert [e.step for e in r.events(".") if e.tag == "a"] == steps
        assert r.damage() == rep  # the same for all runs

    def test_zero_filled_record(self, tmp_path) -> None:
        (path,) = write_summarylog_run(tmp_path, n=10)
        off, n = records_of(path)[4]
        patch_file(path, off, bytes(16 + n))
        r = Reader(tmp_path)
        (d,) = r.damage(".")[path].damage
        assert (d.kind, d.offset, d.length) == ("zero_fill", off, 16 + n)
        assert r.scalars(".", "a").step.tolist() == [0, 1, 2, 4, 5, 6, 7, 8, 9]

    def test_torn_tail(self, tmp_path) -> None:
        (path,) = write_summarylog_run(tmp_path, n=10)
        off, n = records_of(path)[-1]
        os.truncate(path, os.path.getsize(path) - 5)
        r = Reader(tmp_path)
        assert_series(r.scalars(".", "a"), range(9), 1000.0 + np.arange(9), range(9))
        rep = r.damage(".")[path]
        assert rep.tail == Tail(off, "torn", 16 + n - 5)
        assert rep.damage == [] and rep.ok  # not yet written is not damage
        assert [e.step for e in r.events(".") if e.tag] == list(range(9))

    def test_zero_tail(self, tmp_path) -> None:
        (path,) = write_summarylog_run(tmp_path, n=4)
        size = os.path.getsize(path)
        with open(path, "ab") as f:
            f.write(bytes(100))
        rep = Reader(tmp_path).damage(".")[path]
        assert rep.tail == Tail(size, "zero_tail", 100) and rep.ok

    def test_random_bytes_named_like_an_event_file(self, tmp_path, rng) -> None:
        (good,) = write_summarylog_run(tmp_path, n=5)
        junk = os.path.join(tmp_path, "events.out.tfevents.9999999999.junk.1.0")
        with open(junk, "wb") as f:
            f.write(bytes(rng.randrange(256) for _ in range(5000)))
        r = Reader(tmp_path)
        assert r.files(".") == [good, junk]
        assert_series(r.scalars(".", "a"), range(5), 1000.0 + np.arange(5), range(5))
        rep = r.damage(".")
        assert rep[good].ok
        assert rep[junk].damage and rep[junk].damage[0].offset == 0 and not rep[junk].ok
        assert sum(d.length for d in rep[junk].damage) <= 5000
        assert [e.step for e in r.events(".") if e.tag] == list(range(5))
        assert r.tags(".") == {"a": "scalar"}

    def test_records_that_are_not_events(self, tmp_path) -> None:
        path = os.path.join(tmp_path, "events.out.tfevents.1.h.1.0")
        write_records(path, [header_event(), simple_event(1, 1.0, a=1.0),
                             b"\x07not an event",  # wire type 7 does not exist
                             b"\xff\xff\xff",  # a varint that never ends
                             simple_event(2, 2.0, a=2.0)])
        r = Reader(tmp_path)
        assert_series(r.scalars(".", "a"), [1, 2], [1.0, 2.0], [1.0, 2.0])
        rep = r.damage(".")[path]
        assert rep.bad_events == 2 and rep.damage == [] and rep.records == 5 and not rep.ok
        assert [(e.tag, e.value) for e in r.events(".") if e.tag] == [("a", 1.0), ("a", 2.0)]

    def test_bad_events_counted_once(self, tmp_path) -> None:
        path = os.path.join(tmp_path, "events.out.tfevents.1.h.1.0")
        event_pb2, _, tensor_pb2, types_pb2 = pb()
        text = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"hi"])
        write_records(path, [header_event(), simple_event(1, 1.0, a=1.0), b"\x07",
                             tensor_event(1, 1.0, "t", text, "text")])
        r = Reader(tmp_path)
        r.scalars(".", "a")
        assert r.damage(".")[path].bad_events == 1
        list(r.events("."))
        assert r.damage(".")[path].bad_events == 1
        r.tags(".")
        r.tags(".")
        assert r.damage(".")[path].bad_events == 1


# ---- memory -------------------------------------------------------------------------------

N_BIG = 1_000_000


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> str:
    logdir = tmp_path_factory.mktemp("big")
    with summarylog.Writer(logdir) as w:
        add = w.add_scalar
        for i in range(N_BIG):
            add("loss", i * 0.5, i, 1e9 + i)
    return str(logdir)


def _peak_ratio(path: str) -> float:
    r = Reader(path)
    r.runs()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        s = r.scalars(".", "loss")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_series(s, range(N_BIG), 1e9 + np.arange(N_BIG), f32(np.arange(N_BIG) * 0.5))
    return peak / (s.step.nbytes + s.wall_time.nbytes + s.value.nbytes)


class TestMemory:
    def test_million_scalars_peak(self, big_run) -> None:
        ratio = _peak_ratio(big_run)
        print(f"Reader.scalars: tracemalloc peak / output nbytes = {ratio:.2f}")
        assert ratio <= 3.0

    def test_million_scalars_peak_zstd(self, big_run, tmp_path) -> None:
        """The same records as one zstd frame, padded with a skippable frame to
        a size that puts the Reader's last column doubling near the end (the
        compressed size of a real run falls anywhere; this one is chosen)."""
        zstandard = require_module("zstandard")
        (src,) = Reader(big_run).files(".")
        with open(src, "rb") as f:
            comp = zstandard.ZstdCompressor(level=3).compress(f.read())
        for k in (3, 2, 1):  # columns start at size//36 + 1024 and double: 0.95 * N_BIG after k
            size = (int(0.95 * N_BIG) // (1 << k) - 1024) * 36
            if size >= len(comp) + 8:
                break
        pad = size - len(comp) - 8
        dst = os.path.join(tmp_path, "events.out.zevents.1700000000.h.1.0.zst")
        with open(dst, "wb") as f:
            f.write(comp)
            f.write(struct.pack("<II", 0x184D2A50, pad) + bytes(pad))  # a skippable frame
        r = Reader(tmp_path)
        ratio = _peak_ratio(str(tmp_path))
        print(f"Reader.scalars (zstd, {size} bytes): tracemalloc peak / output nbytes = {ratio:.2f}")
        assert r.damage(".")[dst].ok
        assert ratio <= 3.0

    def test_zstd_values_past_the_size_estimate_come_whole_and_in_order(self, tmp_path) -> None:
        """A zstd file holds far more values than its compressed size suggests:
        the columns go on in new chunks, joined and grouped by tag at the end."""
        zstandard = require_module("zstandard")
        n = 300_000
        with summarylog.Writer(tmp_path / "plain") as w:
            for i in range(n):
                w.add_scalar("a" if i % 3 else "b", i * 0.5, i, walltime=1e9 + i)
        (src,) = Reader(tmp_path / "plain").files(".")
        os.makedirs(tmp_path / "z")
        dst = os.path.join(tmp_path, "z", "events.out.zevents.1700000000.h.1.0.zst")
        with open(src, "rb") as f, open(dst, "wb") as out:
            out.write(zstandard.ZstdCompressor(level=3).compress(f.read()))
        plain, z = Reader(tmp_path / "plain"), Reader(tmp_path / "z")
        for tag, steps in (("a", [i for i in range(n) if i % 3]), ("b", range(0, n, 3))):
            assert_series(z.scalars(".", tag), steps, 1e9 + np.asarray(steps),
                          f32(np.asarray(steps) * 0.5))
            assert all((x == y).all() for x, y in zip(z.scalars(".", tag), plain.scalars(".", tag)))
        print(f"{n} scalars in a {os.path.getsize(dst)}-byte zstd file "
              f"({os.path.getsize(src)} bytes plain): read whole, by tag, in order")
        assert z.damage(".")[dst].ok


# ---- follow() --------------------------------------------------------------------------------

class TestFollow:
    @pytest.mark.parametrize("compression", [None, "zstd"])
    def test_live_rotating_run(self, tmp_path, compression) -> None:
        if compression:
            require_module("zstandard")
        n = 1200
        errors: list[BaseException] = []
        files: list[str] = []

        def produce() -> None:
            try:
                with summarylog.Writer(tmp_path, max_file_size=2048, compression=compression,
                                       flush_secs=0.05) as w:
                    for i in range(n):
                        w.add_scalar("x", i * 0.25, i, walltime=1e9 + i)
                        if i % 7 == 6:
                            w.flush()
                            time.sleep(0.0005)
                        if i == n // 2:  # a run created while following
                            with summarylog.Writer(tmp_path / "late") as late:
                                for j in range(5):
                                    late.add_scalar("y", j, j, walltime=1.0)
                files.extend(w.files)  # after close: every segment
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        t = threading.Thread(target=produce, name="test-producer", daemon=True)
        got: dict[str, list[tuple[str, int, float, float]]] = {}
        deadline = time.monotonic() + 120  # a bound, not a timing assertion
        r = Reader(tmp_path)
        t.start()
        for run, ev in r.follow(poll_secs=0.02, idle_timeout=5.0):  # ends 5 s after the last value
            if ev.kind == "scalar":
                got.setdefault(run, []).append((ev.tag, ev.step, ev.wall_time, ev.value))
            assert time.monotonic() < deadline, "follow() did not end"
        t.join(60)
        assert not t.is_alive() and not errors, errors
        assert len(files) > 3  # it did rotate
        assert got["."] == [("x", i, 1e9 + i, i * 0.25) for i in range(n)]  # each once, in order
        assert got["late"] == [("y", j, 1.0, float(j)) for j in range(5)]
        # and a fresh read agrees
        assert_series(Reader(tmp_path).scalars(".", "x"), range(n), 1e9 + np.arange(n),
                      np.arange(n) * 0.25)

    def test_one_run_and_idle_end(self, tmp_path) -> None:
        write_summarylog_run(tmp_path / "a", n=3)
        write_summarylog_run(tmp_path / "b", n=4)
        out = list(Reader(tmp_path).follow("b", poll_secs=0.01, idle_timeout=0.2))
        assert {run for run, _ in out} == {"b"}
        assert [e.step for _, e in out if e.kind == "scalar"] == [0, 1, 2, 3]
        assert out[0][1].kind == "file_version"

    def test_from_end_yields_only_what_comes_later(self, tmp_path) -> None:
        write_summarylog_run(tmp_path / "a", n=3)
        r = Reader(tmp_path)
        rounds = []
        discover = r._discover

        def counted():  # the first round reads what is there when following starts
            rounds.append(1)
            return discover()

        r._discover = counted
        errors: list[BaseException] = []

        def append_later() -> None:
            try:
                while len(rounds) < 2:
                    time.sleep(0.005)
                with summarylog.Writer(tmp_path / "a", filename_suffix=".late") as w:
                    for i in range(10, 13):
                        w.add_scalar("a", i, i, walltime=2000.0 + i)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        t = threading.Thread(target=append_later, name="test-late-writer", daemon=True)
        t.start()
        out = list(r.follow(poll_secs=0.01, idle_timeout=1.0, from_end=True))
        t.join(60)
        assert not errors, errors
        steps = [e.step for _, e in out if e.kind == "scalar"]
        print(f"follow(from_end=True): {len(out)} events after {len(rounds)} rounds, "
              f"scalar steps {steps}")
        assert steps == [10, 11, 12]


# ---- to_pandas() -------------------------------------------------------------------------------

class TestToPandas:
    def test_rows_equal_scalars(self, tmp_path, rng) -> None:
        pd = require_module("pandas")
        for run, n in (("r1", 30), ("r2", 7)):
            with summarylog.Writer(tmp_path / run) as w:
                for i in range(n):
                    w.log({"loss": rng.random(), "acc": rng.random()}, step=i * 3 - 5,
                          walltime=1e9 + rng.random())
                w.add_text("note", "not a scalar", 0)
        r = Reader(tmp_path)
        df = r.to_pandas()
        assert list(df.columns) == ["run", "tag", "step", "wall_time", "value"]
        assert len(df) == 2 * (30 + 7)
        assert set(zip(df["run"], df["tag"])) == {(a, b) for a in ("r1", "r2") for b in ("acc", "loss")}
        for (run, tag), part in df.groupby(["run", "tag"], observed=True, sort=True):
            s = r.scalars(run, tag)
            np.testing.assert_array_equal(part["step"].to_numpy(), s.step)
            np.testing.assert_array_equal(part["wall_time"].to_numpy(), s.wall_time)
            np.testing.assert_array_equal(part["value"].to_numpy(), s.value)
        assert df["step"].dtype == np.int64 and df["value"].dtype == np.float64
        assert len(r.to_pandas(runs=[])) == 0 and len(r.to_pandas(tags=[])) == 0
        only = r.to_pandas(runs=["r2"], tags=["acc", "nope"])
        assert set(only["run"]) == {"r2"} and set(only["tag"]) == {"acc"} and len(only) == 7
        np.testing.assert_array_equal(only["value"].to_numpy(), r.scalars("r2", "acc").value)

    def test_empty(self, tmp_path) -> None:
        require_module("pandas")
        df = Reader(tmp_path).to_pandas()
        assert list(df.columns) == ["run", "tag", "step", "wall_time", "value"] and len(df) == 0
