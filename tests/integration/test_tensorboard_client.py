"""TensorBoard itself reads what summarylog.Writer writes.

Two readers, both TensorBoard's own code:

* in process: TensorBoard's event accumulators / multiplexer (the Python
  loading path behind ``--load_fast=false``) and its hparams plugin backend;
* the real server, ``python -m tensorboard.main`` with ``--load_fast=false``
  (Python multiplexer) and ``--load_fast=true`` (the Rust data server of
  ``tensorboard_data_server``), queried through its HTTP data API on
  127.0.0.1, as the dashboard queries it.

One log directory (runs ``train``, ``eval`` and ``nested/run_c``) is written
once per module with explicit wall times, and every value, step, wall time and
tag TensorBoard returns is compared exactly with what was logged (scalars and
histogram edges as float32, which is what TensorBoard keeps).  Loading is
asynchronous in the server, so every read polls (bounded) until the expected
number of points is there; nothing asserts on timing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import math
import os
import struct
import warnings
import zlib
from typing import Any

import numpy as np
import pytest

from conftest import IN_CI, require

import summarylog

if importlib.util.find_spec("tensorboard") is None:  # require(), at module level
    if IN_CI:
        raise ImportError("tensorboard is required under CI but missing")
    pytest.skip("tensorboard not available", allow_module_level=True)

from tensorboard.backend.event_processing import event_accumulator as tb_accumulator  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_multiplexer  # noqa: E402
from tensorboard.compat.proto import summary_pb2  # noqa: E402
from tensorboard.plugins.distribution import compressor  # noqa: E402
from tensorboard.plugins.hparams import api_pb2 as hp_api  # noqa: E402
from tensorboard.plugins.hparams import metadata as hp_metadata  # noqa: E402
from tensorboard.plugins.text import text_plugin  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from tb_server import (  # noqa: E402  (the server start/poll code, shared)
    Server,
    _children,
    _data_server_usable,
    _start_server,
    _stop,
    hparams_tab_in_process,
)

RUNS = ("train", "eval", "nested/run_c")
T0 = 1_750_000_000.123456  # wall times are explicit, so they compare exactly


# ---------------------------------------------------------------------------
# what is written, and what TensorBoard should show for it
# ---------------------------------------------------------------------------

def f32(x: float) -> float:
    """The float32 TensorBoard keeps for a scalar, as a Python float."""
    return float(np.float32(x))


def same_number(a: Any, b: float) -> bool:
    """Exact equality; NaN equals NaN; TensorBoard's JSON may spell the
    non-finite values as strings."""
    a = _json_number(a)
    if math.isnan(b):
        return math.isnan(a)
    return a == b


def _json_number(x: Any) -> float:
    if isinstance(x, str):  # tensorboard's json_util.Cleanse: "NaN", "Infinity", "-Infinity"
        return float(x.replace("Infinity", "inf"))
    return float(x)


@dataclasses.dataclass
class Written:
    logdir: str
    # (run, tag) -> [(wall_time, step, float32 value)]
    scalars: dict[tuple[str, str], list[tuple[float, int, float]]]
    # (run, tag) -> [(wall_time, step, values, bins)]
    histograms: dict[tuple[str, str], list[tuple[float, int, np.ndarray, int]]]
    # (run, tag) -> [(wall_time, step, [expected uint8 HWC image per sample])]
    images: dict[tuple[str, str], list[tuple[float, int, list[np.ndarray]]]]
    texts: dict[tuple[str, str], list[tuple[float, int, str]]]
    tensors: dict[tuple[str, str], list[tuple[float, int, np.ndarray]]]
    # run -> (hparams, metrics, step, wall_time)
    hparams: dict[str, tuple[dict[str, Any], dict[str, float], int, float]]
    files: dict[str, list[str]]


class _Recorder:
    """Logs through summarylog.Writer and records what TensorBoard must show."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.k = 0
        self.out = Written(logdir, {}, {}, {}, {}, {}, {}, {})

    def wall(self) -> float:
        self.k += 1
        return T0 + self.k * 0.731 + self.k * 1e-7

    def writer(self, run: str) -> summarylog.Writer:
        return summarylog.Writer(os.path.join(self.logdir, run))

    def scalar(self, w: summarylog.Writer, run: str, tag: str, value: Any, step: int | None) -> None:
        wt = self.wall()
        w.add_scalar(tag, value, step, walltime=wt)
        self.out.scalars.setdefault((run, tag), []).append((wt, step or 0, f32(value)))

    def log(self, w: summarylog.Writer, run: str, values: dict[str, Any], step: int) -> None:
        wt = self.wall()
        w.log(values, step, walltime=wt)
        for tag, v in values.items():
            self.out.scalars.setdefault((run, tag), []).append((wt, step, f32(v)))

    def histogram(self, w: summarylog.Writer, run: str, tag: str, values: np.ndarray, step: int,
                  bins: int = 64) -> None:
        wt = self.wall()
        w.add_histogram(tag, values, step, bins=bins, walltime=wt)
        self.out.histograms.setdefault((run, tag), []).append((wt, step, np.array(values), bins))

    def image(self, w: summarylog.Writer, run: str, tag: str, img: np.ndarray, step: int,
              dataformats: str, expected_hwc: np.ndarray) -> None:
        wt = self.wall()
        w.add_image(tag, img, step, walltime=wt, dataformats=dataformats)
        self.out.images.setdefault((run, tag), []).append((wt, step, [expected_hwc]))

    def images(self, w: summarylog.Writer, run: str, tag: str, imgs: np.ndarray, step: int,
               dataformats: str, expected_nhwc: np.ndarray) -> None:
        wt = self.wall()
        w.add_images(tag, imgs, step, walltime=wt, dataformats=dataformats)
        self.out.images.setdefault((run, tag), []).append((wt, step, list(expected_nhwc)))

    def text(self, w: summarylog.Writer, run: str, tag: str, text: str, step: int) -> None:
        wt = self.wall()
        w.add_text(tag, text, step, walltime=wt)
        self.out.texts.setdefault((run, tag), []).append((wt, step, text))

    def tensor(self, w: summarylog.Writer, run: str, tag: str, arr: np.ndarray, step: int) -> None:
        wt = self.wall()
        w.add_tensor(tag, arr, step, walltime=wt)
        self.out.tensors.setdefault((run, tag), []).append((wt, step, np.array(arr)))

    def hparams(self, w: summarylog.Writer, run: str, hp: dict[str, Any], metrics: dict[str, float],
                step: int) -> None:
        wt = self.wall()
        w.add_hparams(hp, metrics, step, walltime=wt)
        self.out.hparams[run] = (hp, metrics, step, wt)
        for tag, v in metrics.items():
            self.out.scalars.setdefault((run, tag), []).append((wt, step, f32(v)))


def _float_image(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Floats in [0, 1] whose x*255 is never close to a .5 tie (so the 8-bit
    value is unambiguous), plus exact k/255 values and out-of-range values
    (clipped)."""
    x = rng.random(shape).astype(np.float32)
    frac = (x.astype(np.float64) * 255.0) % 1.0
    x = np.where(np.abs(frac - 0.5) < 0.01, x + np.float32(0.02 / 255), x).astype(np.float32)
    flat = x.reshape(-1)
    flat[:4] = np.array([0.0, 1.0, 1.0 / 255, 254.0 / 255], np.float32)
    flat[4:6] = np.array([-0.25, 1.5], np.float32)  # clipped to 0 and 255
    return x


def _expected_u8(x: np.ndarray) -> np.ndarray:
    """round(x * 255) on [0, 1]-clipped floats, computed in float64."""
    return np.rint(np.clip(x.astype(np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)


EDGE_HISTOGRAMS: dict[str, list[float]] = {
    "edge/nan_inf": [math.nan, math.inf, -math.inf, 1.0, 2.0, 3.0, 2.5],
    "edge/all_nan": [math.nan, math.nan, math.nan],
    "edge/all_inf": [math.inf, -math.inf, math.inf],
    "edge/pos_inf_only": [math.inf, math.inf],
    "edge/constant": [5.0] * 10,
    "edge/constant_and_inf": [5.0, 5.0, math.inf],
    "edge/zeros": [0.0] * 7,
}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    logdir = str(tmp_path_factory.mktemp("tb_logdir"))
    rec = _Recorder(logdir)
    rng = np.random.default_rng(20240601)

    # -- train: every kind ----------------------------------------------------
    with rec.writer("train") as w:
        steps = [0, 1, 2, 5, 10, 100, 1000, 123456]
        values: list[Any] = [0.1, 1 / 3, 3, np.float64(-2.5e-7), np.float32(0.3), 1e30,
                             -123456.789, 1e-40]
        for s, v in zip(steps, values):
            rec.scalar(w, "train", "loss", v, s)
        rec.scalar(w, "train", "bias", 0.5, None)  # step None is step 0
        for s in range(8):
            rec.log(w, "train", {"acc": s / 7, "lr": 0.01 * 0.9 ** s, "metrics/f1": 1 - 1 / (s + 2)}, s)
        for s, v in enumerate([math.nan, math.inf, -math.inf]):
            rec.scalar(w, "train", "nonfinite", v, s)

        for s in (0, 10, 20):
            rec.histogram(w, "train", "weights", rng.normal(s / 10, 1.0, size=1000), s)
        rec.histogram(w, "train", "ints", np.arange(-5, 6, dtype=np.int64), 3, bins=11)
        rec.histogram(w, "train", "uniform", rng.random((30, 20), dtype=np.float32), 4, bins=7)
        for tag, vals in EDGE_HISTOGRAMS.items():
            rec.histogram(w, "train", tag, np.array(vals, dtype=np.float64), 5, bins=4)

        gray = rng.integers(0, 256, size=(5, 7), dtype=np.uint8)
        rec.image(w, "train", "img/gray", gray, 0, "HW", gray[..., None])
        rgb = rng.integers(0, 256, size=(3, 5, 7), dtype=np.uint8)
        rec.image(w, "train", "img/rgb", rgb, 1, "CHW", np.transpose(rgb, (1, 2, 0)))
        rgba = rng.integers(0, 256, size=(6, 4, 4), dtype=np.uint8)
        rec.image(w, "train", "img/rgba", rgba, 2, "HWC", rgba)
        gray_alpha = rng.integers(0, 256, size=(2, 3, 3), dtype=np.uint8)
        rec.image(w, "train", "img/gray_alpha", gray_alpha, 3, "CHW",
                  np.transpose(gray_alpha, (1, 2, 0)))
        fimg = _float_image(rng, (3, 4, 6))
        rec.image(w, "train", "img/float", fimg, 4, "CHW", _expected_u8(np.transpose(fimg, (1, 2, 0))))
        batch = rng.integers(0, 256, size=(4, 3, 5, 6), dtype=np.uint8)
        rec.images(w, "train", "img/batch", batch, 5, "NCHW", np.transpose(batch, (0, 2, 3, 1)))
        batch2 = rng.integers(0, 256, size=(4, 3, 5, 6), dtype=np.uint8)
        rec.images(w, "train", "img/batch", batch2, 6, "NCHW", np.transpose(batch2, (0, 2, 3, 1)))
        fbatch = _float_image(rng, (2, 4, 3, 1))
        rec.images(w, "train", "img/float_batch", fbatch, 7, "NHWC", _expected_u8(fbatch))

        rec.text(w, "train", "notes", "hello world 42", 0)
        rec.text(w, "train", "notes", "**bold** and `code`\n\n* item one\n* item two", 3)
        rec.text(w, "train", "unicode", "héllo ✓ — 日本語 <b>not html</b>", 1)

        rec.tensor(w, "train", "tensor/f32", rng.normal(size=(2, 3)).astype(np.float32), 0)
        rec.tensor(w, "train", "tensor/f64_scalar", np.float64(math.pi), 1)
        rec.tensor(w, "train", "tensor/i64", np.array([-(1 << 62), -1, 0, 5, 1 << 62], np.int64), 2)
        rec.tensor(w, "train", "tensor/i32", np.arange(24, dtype=np.int32).reshape(2, 3, 4), 3)
        rec.tensor(w, "train", "tensor/u8", rng.integers(0, 256, size=(3, 2), dtype=np.uint8), 4)
        rec.tensor(w, "train", "tensor/bool", np.array([[True, False], [False, True]]), 5)
        rec.tensor(w, "train", "tensor/f16", np.array([0.5, -1.25, 65504.0], np.float16), 6)
        rec.tensor(w, "train", "tensor/bytes", np.array([b"ab", b"", b"\x00\xff"]), 7)

        rec.hparams(w, "train", {"lr": 0.001, "optimizer": "adam", "batch_norm": True, "layers": 4},
                    {"hp/accuracy": 0.875, "hp/loss": 0.3}, 19)

    rec.out.files["train"] = w.files

    # -- eval: the same hparams keys with other values; tags that train has too
    with rec.writer("eval") as w:
        for s in range(0, 50, 10):
            rec.scalar(w, "eval", "loss", 2.0 / (s + 1), s)
        rec.histogram(w, "eval", "weights", rng.normal(size=64), 7, bins=8)
        rec.hparams(w, "eval", {"lr": 0.01, "optimizer": "sgd", "batch_norm": False, "layers": 2},
                    {"hp/accuracy": 0.5, "hp/loss": 0.7}, 40)

    rec.out.files["eval"] = w.files

    # -- a nested run ----------------------------------------------------------
    with rec.writer("nested/run_c") as w:
        for s in range(3):
            rec.scalar(w, "nested/run_c", "loss", 10.0 - s, s)
        for s in (0, (1 << 31) - 1, 1 << 31, 1 << 40, (1 << 53) + 1):  # int64 steps
            rec.scalar(w, "nested/run_c", "big_step", float(s), s)
    rec.out.files["nested/run_c"] = w.files

    for run, files in rec.out.files.items():
        assert len(files) == 1 and os.path.basename(files[0]).startswith("events.out.tfevents."), files
    return rec.out


# ---------------------------------------------------------------------------
# helpers: expected histograms, a small PNG decoder
# ---------------------------------------------------------------------------

def expected_histogram_buckets(values: np.ndarray, bins: int,
                               dtype: type = np.float32) -> np.ndarray:
    """The [left, right, count] rows TensorBoard shows for a histogram of
    finite, non-constant ``values``: ``bins`` equal-width buckets from min to
    max (TensorBoard takes the outer edges from min and max).  The Python
    loader converts them to float32 (data_compat), the Rust data server keeps
    doubles."""
    v = np.asarray(values, dtype=np.float64).ravel()
    assert np.isfinite(v).all() and v.min() < v.max()
    counts, edges = np.histogram(v, bins=bins, range=(v.min(), v.max()))
    lefts = np.concatenate([[v.min()], edges[1:-1]])
    rights = np.concatenate([edges[1:-1], [v.max()]])
    return np.array([lefts, rights, counts], dtype=dtype).T


def check_displayable_buckets(buckets: np.ndarray | list[list[Any]], values: list[float]) -> None:
    """What any histogram must satisfy to be drawn: counts add up to the
    non-NaN values, no bucket runs backwards (left > right), buckets do not
    overlap."""
    rows = [[_json_number(x) for x in row]
            for row in (buckets.tolist() if isinstance(buckets, np.ndarray) else buckets)]
    n = sum(1 for x in values if not math.isnan(x))
    assert sum(r[2] for r in rows) == n, rows
    for r in rows:
        assert not (math.isnan(r[0]) or math.isnan(r[1])), rows
        assert r[0] <= r[1], f"bucket runs backwards (left > right): {r} in {rows}"
    for a, b in zip(rows, rows[1:]):
        assert a[1] <= b[0], f"buckets overlap: {a}, {b} in {rows}"


def check_distribution(points: list[Any], values: list[float] | np.ndarray) -> None:
    """The Distributions view of one histogram step (value at each basis
    point).  With a finite value in the data: numbers, non-decreasing, inside
    the finite values' range (±inf are counted in the edge buckets).  With
    none, only that the view answers: no finite curve exists for it."""
    got = [(_json_number(bp), _json_number(v)) for bp, v in points]
    assert [bp for bp, _ in got] == list(compressor.NORMAL_HISTOGRAM_BPS), got
    finite = [float(x) for x in np.ravel(values) if math.isfinite(x)]
    if not finite:
        return
    vs = [v for _, v in got]
    assert not any(math.isnan(v) for v in vs), f"NaN in the distribution: {got}"
    assert vs == sorted(vs), f"distribution not non-decreasing: {got}"
    lo, hi = min(finite), max(finite)  # the Python loader keeps float32 edges: allow that rounding
    assert min(lo, f32(lo)) <= vs[0] and vs[-1] <= max(hi, f32(hi)), (got, lo, hi)


_PNG_SIG = b"\x89PNG\r\n\x1a\n"
_PNG_CHANNELS = {0: 1, 4: 2, 2: 3, 6: 4}


def decode_png(data: bytes) -> np.ndarray:
    """A small PNG decoder (8-bit gray/gray+alpha/RGB/RGBA, not interlaced,
    all five filters): returns uint8 HWC.  Chunk CRCs are checked."""
    assert data[:8] == _PNG_SIG, data[:8]
    pos, ihdr, idat, seen_end = 8, None, [], False
    while not seen_end:
        assert pos + 12 <= len(data), "PNG ends before IEND"
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        pos += 12 + n
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            seen_end = True
    assert pos == len(data), "bytes after IEND"
    assert ihdr is not None
    w, h, depth, ctype, comp, filt, interlace = ihdr
    assert (depth, comp, filt, interlace) == (8, 0, 0, 0) and ctype in _PNG_CHANNELS, ihdr
    c = _PNG_CHANNELS[ctype]
    stride = w * c
    raw = zlib.decompress(b"".join(idat))
    assert len(raw) == h * (stride + 1)
    out = bytearray(h * stride)
    prev = bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        cur = bytearray(stride)
        for i in range(stride):
            a = cur[i - c] if i >= c else 0
            b = prev[i]
            cc = prev[i - c] if i >= c else 0
            if ft == 0:
                pred = 0
            elif ft == 1:
                pred = a
            elif ft == 2:
                pred = b
            elif ft == 3:
                pred = (a + b) // 2
            elif ft == 4:
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
            else:
                raise AssertionError(f"bad PNG filter type {ft}")
            cur[i] = (line[i] + pred) & 0xFF
        out[y * stride:(y + 1) * stride] = cur
        prev = cur
    return np.frombuffer(bytes(out), np.uint8).reshape(h, w, c)


def check_png(png: bytes, expected_hwc: np.ndarray) -> None:
    img = decode_png(png)
    assert img.shape == expected_hwc.shape
    np.testing.assert_array_equal(img, expected_hwc)
    if importlib.util.find_spec("PIL") is not None:  # a second, independent decoder
        from PIL import Image

        with Image.open(io.BytesIO(png)) as im:
            arr = np.asarray(im)
        np.testing.assert_array_equal(arr.reshape(expected_hwc.shape), expected_hwc)


def test_png_decoder_filters() -> None:
    """The test's own PNG decoder, on all five filter types (summarylog only
    emits "Up"), checked against a hand-filtered image."""
    img = np.array([[[10, 200, 30], [250, 5, 128], [0, 255, 77]],
                    [[1, 2, 3], [255, 254, 253], [100, 100, 100]],
                    [[9, 8, 7], [6, 5, 4], [3, 2, 1]],
                    [[77, 88, 99], [11, 22, 33], [44, 55, 66]],
                    [[128, 0, 255], [64, 32, 16], [8, 4, 2]]], np.uint8)
    h, w, c = img.shape
    rows = img.reshape(h, w * c).astype(np.int64)
    raw = b""
    prev = np.zeros(w * c, np.int64)
    for y in range(h):
        ft = y % 5
        cur = rows[y]
        enc = np.zeros_like(cur)
        for i in range(w * c):
            a = cur[i - c] if i >= c else 0
            b = prev[i]
            cc = prev[i - c] if i >= c else 0
            p = a + b - cc
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
            paeth = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
            pred = [0, a, b, (a + b) // 2, paeth][ft]
            enc[i] = (cur[i] - pred) & 0xFF
        raw += bytes([ft]) + enc.astype(np.uint8).tobytes()
        prev = cur

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (_PNG_SIG + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    check_png(png, img)


# ---------------------------------------------------------------------------
# 1. in process: TensorBoard's accumulators, multiplexer and plugin backends
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def legacy_acc(written: Written) -> dict[str, Any]:
    """event_accumulator.EventAccumulator per run, keeping everything."""
    guidance = {k: 0 for k in tb_accumulator.DEFAULT_SIZE_GUIDANCE}
    accs = {}
    for run in RUNS:
        acc = tb_accumulator.EventAccumulator(os.path.join(written.logdir, run), size_guidance=guidance)
        with warnings.catch_warnings():
            # this legacy accumulator also compresses every histogram for the
            # distributions view (the compressor warns on infinite edges);
            # that view is tested on its own below
            warnings.simplefilter("ignore", RuntimeWarning)
            acc.Reload()
        accs[run] = acc
    return accs


@pytest.fixture(scope="module")
def mux(written: Written) -> plugin_event_multiplexer.EventMultiplexer:
    """The plugin event multiplexer the --load_fast=false server uses,
    keeping everything (size guidance 0)."""
    m = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=dict(plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE),
        tensor_size_guidance={},
        max_reload_threads=1,
    )
    m.AddRunsFromDirectory(written.logdir)
    m.Reload()
    return m


def test_runs_are_the_subdirectories(written: Written, mux: Any) -> None:
    assert set(mux.Runs()) == set(RUNS)
    for run in RUNS:
        scalar_tags = {tag for (r, tag) in written.scalars if r == run}
        got = set(mux.PluginRunToTagToContent("scalars").get(run, {}))
        assert got == scalar_tags, run


def test_legacy_accumulator_scalars(written: Written, legacy_acc: dict[str, Any]) -> None:
    for run in RUNS:
        acc = legacy_acc[run]
        tags = {tag for (r, tag) in written.scalars if r == run}
        assert set(acc.Tags()["scalars"]) == tags
        for tag in tags:
            got = [(e.wall_time, e.step, e.value) for e in acc.Scalars(tag)]
            want = written.scalars[(run, tag)]
            assert [(w, s) for w, s, _ in got] == [(w, s) for w, s, _ in want], (run, tag)
            for (_, _, g), (_, _, v) in zip(got, want):
                assert same_number(g, v), (run, tag, g, v)


def test_multiplexer_scalars(written: Written, mux: Any) -> None:
    for (run, tag), want in written.scalars.items():
        md = mux.SummaryMetadata(run, tag)
        assert md.plugin_data.plugin_name == "scalars"
        events = mux.Tensors(run, tag)
        assert [(e.wall_time, e.step) for e in events] == [(w, s) for w, s, _ in want], (run, tag)
        for e, (_, _, v) in zip(events, want):
            arr = tensor_util.make_ndarray(e.tensor_proto)
            assert arr.shape == () and arr.dtype == np.float32, (run, tag, arr.dtype, arr.shape)
            assert same_number(float(arr), v), (run, tag, float(arr), v)


def test_log_dict_is_one_event_per_step(written: Written, legacy_acc: dict[str, Any]) -> None:
    # log({...}, step) puts its tags in one event: same wall time and step
    acc = legacy_acc["train"]
    for tag in ("acc", "lr", "metrics/f1"):
        assert [e.wall_time for e in acc.Scalars(tag)] == [e.wall_time for e in acc.Scalars("acc")]


def test_legacy_accumulator_histogram_protos(written: Written, legacy_acc: dict[str, Any]) -> None:
    for (run, tag), want in written.histograms.items():
        acc = legacy_acc[run]
        assert tag in acc.Tags()["histograms"]
        got = acc.Histograms(tag)
        assert [(e.wall_time, e.step) for e in got] == [(w, s) for w, s, _, _ in want], (run, tag)
        for e, (_, _, values, bins) in zip(got, want):
            h = e.histogram_value
            v = np.asarray(values, dtype=np.float64).ravel()
            finite = v[np.isfinite(v)]
            assert h.num == v.size
            assert sum(h.bucket) == np.count_nonzero(~np.isnan(v)), (run, tag)
            assert len(h.bucket) == len(h.bucket_limit)
            assert list(h.bucket_limit) == sorted(h.bucket_limit), (run, tag)
            if finite.size:
                assert (h.min, h.max) == (finite.min(), finite.max()), (run, tag)
                assert h.sum == pytest.approx(finite.sum(), rel=1e-12, abs=1e-300)
                assert h.sum_squares == pytest.approx(np.dot(finite, finite), rel=1e-12, abs=1e-300)
            if np.isfinite(v).all() and v.min() < v.max():
                counts, edges = np.histogram(v, bins=bins, range=(v.min(), v.max()))
                assert list(h.bucket) == counts.astype(float).tolist(), (run, tag)
                assert list(h.bucket_limit) == edges[1:].tolist(), (run, tag)


def _regular_histograms(written: Written) -> list[tuple[str, str]]:
    return [key for key in written.histograms if not key[1].startswith("edge/")]


def test_multiplexer_histograms(written: Written, mux: Any) -> None:
    for run, tag in _regular_histograms(written):
        want = written.histograms[(run, tag)]
        assert mux.SummaryMetadata(run, tag).plugin_data.plugin_name == "histograms"
        events = mux.Tensors(run, tag)
        assert [(e.wall_time, e.step) for e in events] == [(w, s) for w, s, _, _ in want]
        for e, (_, _, values, bins) in zip(events, want):
            got = tensor_util.make_ndarray(e.tensor_proto)
            exp = expected_histogram_buckets(values, bins)
            assert got.dtype == np.float32 and got.shape == exp.shape == (bins, 3), (run, tag, got.shape)
            np.testing.assert_array_equal(got, exp)
            assert got[:, 2].sum() == np.asarray(values).size


@pytest.mark.parametrize("tag", sorted(EDGE_HISTOGRAMS))
def test_multiplexer_histograms_nan_inf(written: Written, mux: Any, tag: str) -> None:
    (event,) = mux.Tensors("train", tag)
    assert event.step == 5 and event.wall_time == written.histograms[("train", tag)][0][0]
    check_displayable_buckets(tensor_util.make_ndarray(event.tensor_proto), EDGE_HISTOGRAMS[tag])


def _check_mux_distributions(written: Written, mux: Any, run: str, tag: str) -> None:
    # the Distributions view compresses the histograms' buckets with this
    # function (distributions_plugin._compress)
    want = written.histograms[(run, tag)]
    events = mux.Tensors(run, tag)
    assert len(events) == len(want)
    for e, (_, _, values, _) in zip(events, want):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # asserted on instead
            points = compressor.compress_histogram(tensor_util.make_ndarray(e.tensor_proto))
        check_distribution(points, values)


def test_multiplexer_distributions(written: Written, mux: Any) -> None:
    for run, tag in _regular_histograms(written):
        _check_mux_distributions(written, mux, run, tag)


@pytest.mark.parametrize("tag", sorted(EDGE_HISTOGRAMS))
def test_multiplexer_distributions_nan_inf(written: Written, mux: Any, tag: str) -> None:
    _check_mux_distributions(written, mux, "train", tag)


def _blob_tensor_images(mux: Any, run: str, tag: str) -> list[tuple[float, int, np.ndarray]]:
    md = mux.SummaryMetadata(run, tag)
    assert md.plugin_data.plugin_name == "images"
    assert md.data_class == summary_pb2.DATA_CLASS_BLOB_SEQUENCE
    return [(e.wall_time, e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in mux.Tensors(run, tag)]


def test_multiplexer_images(written: Written, mux: Any) -> None:
    assert set(mux.PluginRunToTagToContent("images")["train"]) == {t for (_, t) in written.images}
    for (run, tag), want in written.images.items():
        got = _blob_tensor_images(mux, run, tag)
        assert [(w, s) for w, s, _ in got] == [(w, s) for w, s, _ in want], (run, tag)
        for (_, _, blobs), (_, _, imgs) in zip(got, want):
            h, w = imgs[0].shape[:2]
            assert blobs.shape == (2 + len(imgs),)
            assert (blobs[0], blobs[1]) == (str(w).encode(), str(h).encode()), (run, tag)
            for png, img in zip(blobs[2:], imgs):
                check_png(png, img)


def test_multiplexer_text(written: Written, mux: Any) -> None:
    assert set(mux.PluginRunToTagToContent("text")["train"]) == {t for (_, t) in written.texts}
    for (run, tag), want in written.texts.items():
        events = mux.Tensors(run, tag)
        assert [(e.wall_time, e.step) for e in events] == [(w, s) for w, s, _ in want]
        for e, (_, _, text) in zip(events, want):
            arr = tensor_util.make_ndarray(e.tensor_proto)
            assert arr.shape == () and arr.item().decode("utf-8") == text


def test_multiplexer_tensors(written: Written, mux: Any, legacy_acc: dict[str, Any]) -> None:
    assert {t for t in legacy_acc["train"].Tags()["tensors"] if t.startswith("tensor/")} == \
        {t for (_, t) in written.tensors}
    for (run, tag), want in written.tensors.items():
        events = mux.Tensors(run, tag)
        assert [(e.wall_time, e.step) for e in events] == [(w, s) for w, s, _ in want]
        for e, (_, _, arr) in zip(events, want):
            got = tensor_util.make_ndarray(e.tensor_proto)
            assert got.shape == arr.shape, tag
            if arr.dtype.kind == "S":
                assert got.ravel().tolist() == arr.ravel().tolist(), tag
            else:
                assert got.dtype == arr.dtype, tag
                np.testing.assert_array_equal(got, arr)


def _hparams_value(v: Any) -> Any:
    return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


def test_multiplexer_hparams_summary_metadata(written: Written, mux: Any) -> None:
    content = mux.PluginRunToTagToContent(hp_metadata.PLUGIN_NAME)
    assert set(content) == set(written.hparams)
    for run, (hp, metrics, _step, wall) in written.hparams.items():
        tags = content[run]
        if hp_metadata.EXPERIMENT_TAG in tags:  # optional: TensorBoard can derive it from the sessions
            exp = hp_metadata.parse_experiment_plugin_data(tags[hp_metadata.EXPERIMENT_TAG])
            assert {i.name for i in exp.hparam_infos} == set(hp)
            assert {(m.name.group, m.name.tag) for m in exp.metric_infos} == {("", t) for t in metrics}
        start = hp_metadata.parse_session_start_info_plugin_data(tags[hp_metadata.SESSION_START_INFO_TAG])
        got = {k: getattr(v, v.WhichOneof("kind")) for k, v in start.hparams.items()}
        assert got == {k: _hparams_value(v) for k, v in hp.items()}
        assert start.start_time_secs == wall
        end = hp_metadata.parse_session_end_info_plugin_data(tags[hp_metadata.SESSION_END_INFO_TAG])
        assert end.status == hp_api.STATUS_SUCCESS


def _check_hparams_tab(written_hparams: dict[str, Any], exp_json: dict[str, Any],
                       groups_json: dict[str, Any]) -> None:
    """The HParams tab's two requests, as JSON: every hparam is a column,
    every metric a column (TensorBoard may add the runs' other scalars as
    metric columns), and each run's session shows its hparams and its
    metrics' last values (float32, at the logged step and wall time)."""
    all_hp = set().union(*(hp for hp, _, _, _ in written_hparams.values()))
    all_metrics = set().union(*(m for _, m, _, _ in written_hparams.values()))
    assert {i["name"] for i in exp_json.get("hparamInfos", [])} == all_hp
    metric_cols = {(i["name"].get("group", ""), i["name"]["tag"]) for i in exp_json.get("metricInfos", [])}
    assert {("", t) for t in all_metrics} <= metric_cols, metric_cols
    sessions = {s["name"]: (g, s) for g in groups_json.get("sessionGroups", []) for s in g["sessions"]}
    assert set(sessions) == set(written_hparams)
    for run, (hp, metrics, step, wall) in written_hparams.items():
        group, session = sessions[run]
        assert group["hparams"] == {k: _hparams_value(v) for k, v in hp.items()}, run
        assert session["status"] == "STATUS_SUCCESS"
        assert session["startTimeSecs"] == wall and session["endTimeSecs"] == wall
        got = {mv["name"]["tag"]: mv for mv in session.get("metricValues", [])
               if mv["name"].get("group", "") == ""}
        assert set(metrics) <= set(got), (run, session.get("metricValues"))
        for tag, v in metrics.items():
            assert same_number(got[tag]["value"], f32(v)), (run, tag)
            assert int(got[tag]["trainingStep"]) == step
            assert got[tag]["wallTimeSecs"] == wall


def test_hparams_plugin_backend(written: Written, mux: Any) -> None:
    from tensorboard import plugin_util

    exp, groups = hparams_tab_in_process(mux, written.logdir)
    _check_hparams_tab(written.hparams, json.loads(plugin_util.proto_to_json(exp)),
                       json.loads(plugin_util.proto_to_json(groups)))


def test_hparams_runs_with_different_keys_and_metrics(tmp_path: Any) -> None:
    """Runs of one experiment need not share hparam keys or metric tags
    (a sweep adds a knob; one run logs an extra metric).  The HParams tab
    must still show every run's hparams and metrics."""
    from tensorboard import plugin_util

    hps = {
        "a": ({"lr": 0.1, "optimizer": "adam"}, {"hp/acc": 0.5}, 3, T0 + 1),
        "b": ({"lr": 0.2, "dropout": 0.25}, {"hp/acc": 0.75, "hp/extra": 0.125}, 4, T0 + 2),
    }
    for run, (hp, metrics, step, wall) in hps.items():
        with summarylog.Writer(tmp_path / run) as w:
            w.add_hparams(hp, metrics, step, walltime=wall)
    m = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=dict(plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE),
        max_reload_threads=1)
    m.AddRunsFromDirectory(str(tmp_path))
    m.Reload()
    exp, groups = hparams_tab_in_process(m, str(tmp_path))
    _check_hparams_tab(hps, json.loads(plugin_util.proto_to_json(exp)),
                       json.loads(plugin_util.proto_to_json(groups)))


# ---------------------------------------------------------------------------
# 2. the real server, over HTTP
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["false", "true"], ids=["load_fast=false", "load_fast=true"])
def server(request: pytest.FixtureRequest, written: Written,
           tmp_path_factory: pytest.TempPathFactory) -> Any:
    load_fast = request.param
    if load_fast == "true":
        ok, why = _data_server_usable()
        require(ok, f"TensorBoard's data server (tensorboard_data_server) for --load_fast=true: {why}")
    log_path = str(tmp_path_factory.mktemp(f"tb_server_{load_fast}") / "tensorboard.log")
    srv = _start_server(written.logdir, load_fast, log_path)
    try:
        if load_fast == "true" and os.path.isdir("/proc/self"):
            ok, binary = _data_server_usable()
            kids = _children(srv.proc.pid)
            assert any(exe == os.path.realpath(binary) for _, exe in kids), \
                f"--load_fast=true but no data server child process: {kids}\n{srv.log()}"
        yield srv
    finally:
        _stop(srv.proc)


def _wait_runs(server: Server) -> None:
    runs = server.eventually(lambda: server.json("/data/runs"), lambda r: set(RUNS) <= set(r))
    assert sorted(runs) == sorted(RUNS)


def test_server_runs_and_plugins(server: Server) -> None:
    _wait_runs(server)
    listing = server.eventually(
        lambda: server.json("/data/plugins_listing"),
        lambda p: all(p.get(k, {}).get("enabled") for k in ("scalars", "histograms", "images", "text",
                                                             "hparams")))
    for plugin in ("scalars", "histograms", "distributions", "images", "text", "hparams"):
        assert listing[plugin]["enabled"], (plugin, server.log())


def test_server_scalars(written: Written, server: Server) -> None:
    want_tags: dict[str, set[str]] = {}
    for run, tag in written.scalars:
        want_tags.setdefault(run, set()).add(tag)
    tags = server.eventually(
        lambda: server.json("/data/plugin/scalars/tags"),
        lambda t: {r: set(v) for r, v in t.items()} == want_tags)
    assert {r: set(v) for r, v in tags.items()} == want_tags
    for (run, tag), want in written.scalars.items():
        got = server.eventually(
            lambda: server.json("/data/plugin/scalars/scalars", {"run": run, "tag": tag}),
            lambda g: isinstance(g, list) and len(g) >= len(want))
        assert [(w, s) for w, s, _ in got] == [(w, s) for w, s, _ in want], (run, tag)
        for (_, _, g), (_, _, v) in zip(got, want):
            assert same_number(g, v), (run, tag, g, v)


def _server_histograms(server: Server, run: str, tag: str, n: int) -> list[Any]:
    got = server.eventually(
        lambda: server.json("/data/plugin/histograms/histograms", {"run": run, "tag": tag}),
        lambda g: isinstance(g, list) and len(g) >= n)
    assert isinstance(got, list) and len(got) == n, (run, tag, got)
    return got


def test_server_histograms(written: Written, server: Server) -> None:
    want_tags: dict[str, set[str]] = {}
    for run, tag in written.histograms:
        want_tags.setdefault(run, set()).add(tag)
    tags = server.eventually(
        lambda: server.json("/data/plugin/histograms/tags"),
        lambda t: {r: set(v) for r, v in t.items()} == want_tags)
    assert {r: set(v) for r, v in tags.items()} == want_tags
    for run, tag in _regular_histograms(written):
        want = written.histograms[(run, tag)]
        got = _server_histograms(server, run, tag, len(want))
        for (wall, step, buckets), (w, s, values, bins) in zip(got, want):
            assert (wall, step) == (w, s), (run, tag)
            dtype = np.float64 if server.load_fast == "true" else np.float32
            assert buckets == expected_histogram_buckets(values, bins, dtype).astype(np.float64).tolist(), \
                (run, tag)


@pytest.mark.parametrize("tag", sorted(EDGE_HISTOGRAMS))
def test_server_histograms_nan_inf(written: Written, server: Server, tag: str) -> None:
    ((wall, step, buckets),) = _server_histograms(server, "train", tag, 1)
    assert (wall, step) == written.histograms[("train", tag)][0][:2]
    check_displayable_buckets(buckets, EDGE_HISTOGRAMS[tag])


def _check_server_distributions(written: Written, server: Server, run: str, tag: str) -> None:
    want = written.histograms[(run, tag)]
    got = server.eventually(
        lambda: server.json("/data/plugin/distributions/distributions", {"run": run, "tag": tag}),
        lambda g: isinstance(g, list) and len(g) >= len(want))
    assert [(w, s) for w, s, _ in got] == [(w, s) for w, s, _, _ in want], (run, tag)
    for (_, _, points), (_, _, values, _) in zip(got, want):
        check_distribution(points, values)


def test_server_distributions(written: Written, server: Server) -> None:
    for run, tag in _regular_histograms(written):
        _check_server_distributions(written, server, run, tag)


@pytest.mark.parametrize("tag", sorted(EDGE_HISTOGRAMS))
def test_server_distributions_nan_inf(written: Written, server: Server, tag: str) -> None:
    _check_server_distributions(written, server, "train", tag)


def test_server_images(written: Written, server: Server, mux: Any) -> None:
    want_tags = {tag: max(len(imgs) for _, _, imgs in v) for (_, tag), v in written.images.items()}
    tags = server.eventually(
        lambda: server.json("/data/plugin/images/tags"),
        lambda t: set(t.get("train", {})) == set(want_tags))
    assert set(tags) == {"train"}
    assert {t: v["samples"] for t, v in tags["train"].items()} == want_tags
    for (run, tag), want in written.images.items():
        for sample in range(want_tags[tag]):
            entries = server.eventually(
                lambda: server.json("/data/plugin/images/images", {"run": run, "tag": tag,
                                                                   "sample": sample}),
                lambda g: isinstance(g, list) and len(g) >= len(want))
            assert [(e["wall_time"], e["step"]) for e in entries] == [(w, s) for w, s, _ in want]
            stored = _blob_tensor_images(mux, run, tag)  # the PNG bytes in the event file
            for entry, (_, _, imgs), (_, _, blobs) in zip(entries, want, stored):
                png = server.get("/data/plugin/images/individualImage?" + entry["query"])
                assert png == blobs[2 + sample], (run, tag, sample)
                check_png(png, imgs[sample])


def test_server_text(written: Written, server: Server) -> None:
    want_tags = {t for (_, t) in written.texts}
    tags = server.eventually(lambda: server.json("/data/plugin/text/tags"),
                             lambda t: set(t.get("train", [])) == want_tags)
    assert {r: set(v) for r, v in tags.items()} == {"train": want_tags}
    for (run, tag), want in written.texts.items():
        got = server.eventually(
            lambda: server.json("/data/plugin/text/text", {"run": run, "tag": tag}),
            lambda g: isinstance(g, list) and len(g) >= len(want))
        assert [(e["wall_time"], e["step"]) for e in got] == [(w, s) for w, s, _ in want]
        for entry, (_, _, text) in zip(got, want):
            html = text_plugin.text_array_to_html(np.array(text.encode("utf-8"), dtype=object), True)
            assert entry["text"] == html, (tag, entry["text"])
    plain = server.json("/data/plugin/text/text", {"run": "train", "tag": "notes"})[0]
    assert plain["text"] == "<p>hello world 42</p>"


def test_server_hparams(written: Written, server: Server) -> None:

    def complete(r: Any) -> bool:
        if not isinstance(r, tuple):
            return False
        sessions = [s for g in r[1].get("sessionGroups", []) for s in g["sessions"]]
        return (len(sessions) >= len(written.hparams)
                and all(len(s.get("metricValues", [])) >= len(written.hparams[s["name"]][1])
                        for s in sessions if s["name"] in written.hparams))

    got = server.eventually(server.hparams_tab, complete)
    assert isinstance(got, tuple), got
    _check_hparams_tab(written.hparams, *got)
