"""summarylog.SummaryWriter's add_audio, add_video, add_figure and add_image_with_boxes
against the peers, through TensorBoard's own backend: the same call on
torch.utils.tensorboard.SummaryWriter (add_video: tensorboardX's, see below) and on ours
gives the same runs, tags, steps, wall times and decoded values (WAV samples and
parameters, PNG/GIF pixels, frame counts and durations) in TensorBoard's
MultiplexerDataProvider blob sequences.  Also prints the caller's cost per call, ours
against the peers'.

add_video's oracle: torch's add_video imports ``moviepy.editor``, which moviepy 2 removed
(it then writes an image value with no picture); with moviepy 1.0.3 it runs but writes
GIF frames of 0 ms (imageio >= 2.28 takes the duration in ms).  tensorboardX's add_video
lays frames out as torch's (same grid and scaling) and works with moviepy 2, so it is
the oracle; torch's is compared too, on frames of at most 256 colours, when a moviepy
with ``moviepy.editor`` is importable.
"""

from __future__ import annotations

import importlib.util
import io
import statistics
import time
import wave
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from conftest import IN_CI, require_module

import summarylog

for _mod in ("tensorboard", "torch", "PIL", "matplotlib"):
    if importlib.util.find_spec(_mod) is None:
        if IN_CI:
            raise ImportError(f"{_mod} is required under CI but missing")
        pytest.skip(f"{_mod} not available", allow_module_level=True)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from tensorboard import context as tb_context  # noqa: E402
from tensorboard.backend.event_processing import data_provider as tb_data_provider  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_multiplexer  # noqa: E402
from tensorboard.data import provider as tb_provider  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

WALL = 1_750_000_000.25


# ---------------------------------------------------------------------------
# what TensorBoard's backend serves, decoded
# ---------------------------------------------------------------------------

def served(logdir: str) -> dict[tuple[str, str, str, int], Any]:
    """{(plugin, run, tag, step): (wall_time, decoded blobs)} of the images and audio
    plugins' blob sequences, read through TensorBoard's data provider."""
    mux = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=dict(plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE),
        max_reload_threads=1)
    mux.AddRunsFromDirectory(logdir)
    mux.Reload()
    provider = tb_data_provider.MultiplexerDataProvider(mux, logdir)
    ctx = tb_context.RequestContext()
    out: dict[tuple[str, str, str, int], Any] = {}
    for plugin in ("images", "audio"):
        listing = provider.list_blob_sequences(ctx, experiment_id="", plugin_name=plugin)
        for run, tags in listing.items():
            for tag in tags:
                data = provider.read_blob_sequences(
                    ctx, experiment_id="", plugin_name=plugin, downsample=10_000,
                    run_tag_filter=tb_provider.RunTagFilter([run], [tag]))
                for datum in data[run][tag]:
                    blobs = [provider.read_blob(ctx, blob_key=b.blob_key) for b in datum.values]
                    out[(plugin, run, tag, datum.step)] = (datum.wall_time,
                                                           decode(plugin, blobs))
    return out


def decode(plugin: str, blobs: list[bytes]) -> Any:
    if plugin == "audio":  # [WAV, label...]
        with wave.open(io.BytesIO(blobs[0])) as w:
            params = w.getparams()
            samples = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        return params, samples, blobs[1:]
    width, height, *pictures = blobs  # images: [width, height, picture...]
    return width, height, [frames_of(p) for p in pictures]


def frames_of(data: bytes) -> tuple[str, np.ndarray, list[Any]]:
    """(format, RGB frames (T, H, W, 3), each frame's duration) of a PNG or GIF."""
    im = Image.open(io.BytesIO(data))
    frames, durations = [], []
    for i in range(getattr(im, "n_frames", 1)):
        im.seek(i)
        frames.append(np.asarray(im.convert("RGB")))
        durations.append(im.info.get("duration"))
    return im.format, np.stack(frames), durations


def same(a: dict, b: dict, skip_size: bool = False, durations: bool = True) -> None:
    """The two servings are equal value for value (GIF frame durations too, unless
    ``durations=False``: moviepy 1.0.3, which torch's add_video needs, writes none)."""
    assert sorted(a) == sorted(b)
    for key, (wall_a, va) in a.items():
        wall_b, vb = b[key]
        assert wall_a == wall_b, key
        if key[0] == "audio":
            assert va[0] == vb[0], key
            assert np.array_equal(va[1], vb[1]), key
            assert va[2] == vb[2], key
            continue
        if not skip_size:
            assert va[:2] == vb[:2], key
        assert len(va[2]) == len(vb[2]), key
        for (fa, pa, da), (fb, pb, db) in zip(va[2], vb[2]):
            assert fa == fb and (da == db or not durations), key
            assert pa.shape == pb.shape, key
            assert np.array_equal(pa, pb), (key, int(np.abs(pa.astype(int) - pb).max()))


def write_both(tmp_path, log: Callable[[Any, str], None], peer: Any = TorchWriter):
    """Run ``log(writer, side)`` on the peer's writer and on ours; their servings."""
    out = []
    for name, cls in (("peer", peer), ("ours", summarylog.SummaryWriter)):
        d = str(tmp_path / name)
        w = cls(d)
        log(w, name)
        w.close()
        out.append(served(d))
    return out


# ---------------------------------------------------------------------------
# add_audio
# ---------------------------------------------------------------------------

def test_add_audio_same_as_torch(tmp_path):
    rng = np.random.default_rng(0)
    one_by_l = rng.uniform(-1, 1, (1, 4410)).astype(np.float32)
    loud = rng.uniform(-1.5, 1.5, 8000)  # float64, clipped
    l_by_one = rng.uniform(-1, 1, (3000, 1)).astype(np.float32)

    def log(w, side):
        w.add_audio("mono/1xL", torch.from_numpy(one_by_l), 1, walltime=WALL)
        w.add_audio("mono/L", loud, 2, sample_rate=8000, walltime=WALL)
        w.add_audio("mono/Lx1", l_by_one, 3, sample_rate=16000.0, walltime=WALL + 1)
        w.add_audio("mono/ints", np.array([0, 1, -1, 7, -7, 0]), 4, walltime=WALL)
        for step in range(3):
            w.add_audio("series", np.sin(np.arange(2205) * (step + 1) / 10), step,
                        sample_rate=22050, walltime=WALL + step)

    torch_side, ours = write_both(tmp_path, log)
    print(f"audio: {len(ours)} WAVs equal to torch's (params and samples)")
    same(torch_side, ours)
    params, samples, _ = ours[("audio", ".", "mono/L", 2)][1]
    assert params.framerate == 8000 and samples.size == 8000


def test_add_audio_stereo_as_tensorboardx_lays_it_out(tmp_path):
    """tensorboardX takes (L, 2) as stereo, through soundfile: libsndfile scales by
    32768 and rounds where torch scales by 32767 and truncates, so samples agree
    within 2 (ours keep torch's arithmetic) and the channels are interleaved alike."""
    tbx = require_module("tensorboardX")
    if importlib.util.find_spec("soundfile") is None:
        pytest.skip("tensorboardX's add_audio needs soundfile")  # an oracle, not ours
    x = np.random.default_rng(1).uniform(-1, 1, (1000, 2)).astype(np.float32)
    peer, ours = write_both(tmp_path, lambda w, s: w.add_audio("st", x, 0, walltime=WALL),
                            tbx.SummaryWriter)
    (pa, sa, _), (pb, sb, _) = peer[("audio", ".", "st", 0)][1], ours[("audio", ".", "st", 0)][1]
    assert pa == pb and pb.nchannels == 2
    assert np.abs(sa.astype(int) - sb).max() <= 2
    assert np.array_equal(sb.reshape(-1, 2), (x * 32767).astype(np.int16))


# ---------------------------------------------------------------------------
# add_image_with_boxes
# ---------------------------------------------------------------------------

def test_add_image_with_boxes_same_as_torch(tmp_path):
    rng = np.random.default_rng(2)
    img_f = rng.random((3, 60, 80)).astype(np.float32)
    img_u8 = (rng.random((60, 80, 3)) * 255).astype(np.uint8)
    img_rgba = rng.random((4, 40, 50)).astype(np.float32)
    gray = rng.random((30, 40)).astype(np.float64) * 1.4 - 0.2  # clipped to [0, 1]
    boxes = np.array([[5, 5, 40, 30], [10.5, 20.25, 70, 55], [60, 2, 90, 70]], np.float32)
    batch = rng.random((3, 3, 20, 24)).astype(np.float32)

    def log(w, side):
        w.add_image_with_boxes("chw", img_f, boxes, 1, walltime=WALL)
        w.add_image_with_boxes("labels", torch.from_numpy(img_f), torch.from_numpy(boxes), 2,
                               labels=["cat", "a dog", ""], walltime=WALL)
        w.add_image_with_boxes("hwc_u8", img_u8, boxes.astype(np.int64), 3, dataformats="HWC",
                               labels=("x", "y", "z"), walltime=WALL)
        w.add_image_with_boxes("one_label", img_f, boxes[:1], 4, labels="only", walltime=WALL)
        w.add_image_with_boxes("mismatch", img_f, boxes, 5, labels=["a"], walltime=WALL)
        w.add_image_with_boxes("rgba", img_rgba, boxes, 6, labels=np.array(["p", "q", "r"]),
                               walltime=WALL)
        w.add_image_with_boxes("gray", gray, boxes, 7, dataformats="HW", walltime=WALL)
        w.add_image_with_boxes("none", img_f, np.zeros((0, 4)), 8, walltime=WALL)
        w.add_image_with_boxes("outside", img_f, np.array([[-50, -50, 500, 500.0]]), 9,
                               labels=["big"], walltime=WALL)
        w.add_image_with_boxes("grid", batch, boxes, 10, dataformats="NCHW", walltime=WALL)

    peer, ours = write_both(tmp_path, log)
    print(f"image_with_boxes: {len(ours)} images pixel-equal to torch's")
    same(peer, ours)


def test_add_image_with_boxes_rescaled_same_pixels_as_torch(tmp_path):
    """The pixels are torch's; the size recorded is the picture's (torch records the
    size before rescaling, TensorBoard shows the picture)."""
    img = np.random.default_rng(3).random((3, 41, 57)).astype(np.float32)
    boxes = np.array([[3, 4, 30, 33]], np.float32)

    def log(w, side):
        for step, r in enumerate((0.5, 0.73, 1.6, 2)):
            w.add_image_with_boxes("r", img, boxes, step, rescale=r, labels=["lbl"],
                                   walltime=WALL)

    peer, ours = write_both(tmp_path, log)
    same(peer, ours, skip_size=True)
    for _, (width, height, pics) in ours.values():
        assert (int(height), int(width)) == pics[0][1].shape[1:3]


# ---------------------------------------------------------------------------
# add_figure
# ---------------------------------------------------------------------------

def _figure(k: int, size=(4, 3), dpi=60) -> Any:
    fig = plt.figure(figsize=size, dpi=dpi)
    ax = fig.add_subplot()
    ax.plot(np.arange(20), np.sin(np.arange(20) / (k + 1)), label=f"k={k}")
    ax.set_title(f"figure {k}")
    ax.legend()
    return fig


def test_add_figure_same_as_torch(tmp_path):
    def log(w, side):
        w.add_figure("one", _figure(0), 1, walltime=WALL)
        w.add_figure("list", [_figure(k) for k in range(3)], 2, walltime=WALL)
        w.add_figure("many", [_figure(k, (2, 1), 40) for k in range(10)], 3, walltime=WALL)
        f = _figure(5)
        w.add_figure("kept", f, 4, close=False, walltime=WALL)
        assert plt.fignum_exists(f.number)
        plt.close(f)

    peer, ours = write_both(tmp_path, log)
    print(f"figures: {len(ours)} images pixel-equal to torch's")
    same(peer, ours)
    assert not plt.get_fignums()


# ---------------------------------------------------------------------------
# add_video
# ---------------------------------------------------------------------------

VIDEOS = [  # (shape N, T, C, H, W; fps; dtype) where moviepy keeps every frame
    ((2, 3, 3, 8, 8), 4, np.float32),
    ((3, 5, 3, 8, 10), 3, np.float32),
    ((5, 6, 3, 16, 16), 10, np.uint8),
    ((1, 4, 4, 8, 8), 4, np.float32),
    ((1, 5, 1, 12, 12), 5, np.float64),
    ((16, 2, 3, 6, 6), 2, np.float32),
    ((1, 9, 3, 4, 4), 0.5, np.float32),
    ((1, 1, 3, 30, 40), 4, np.float32),
]


def _video(shape, dtype, seed):
    x = np.random.default_rng(seed).random(shape)
    return (x * 255).astype(np.uint8) if dtype == np.uint8 else x.astype(dtype)


def test_add_video_same_as_tensorboardx(tmp_path):
    tbx = require_module("tensorboardX")
    require_module("moviepy")
    vids = [_video(s, dt, i) for i, (s, _, dt) in enumerate(VIDEOS)]
    ntchw = vids[0]
    nthwc = np.ascontiguousarray(np.transpose(ntchw, (0, 1, 3, 4, 2)))

    def log(w, side):
        for i, ((shape, fps, _), v) in enumerate(zip(VIDEOS, vids)):
            w.add_video(f"v{i}", v, i, fps=fps, walltime=WALL + i)
        w.add_video("nthwc", nthwc, 0, dataformats="NTHWC", walltime=WALL)

    peer, ours = write_both(tmp_path, log, tbx.SummaryWriter)
    print(f"video: {len(ours)} GIFs frame- and pixel-equal to tensorboardX's")
    same(peer, ours, durations=False)
    for i, (_, fps, _) in enumerate(VIDEOS):  # each frame shown 1/fps s, as moviepy 2 writes
        (_, _, frame_ms), = ours[("images", ".", f"v{i}", i)][1][2]
        # (a GIF keeps centiseconds)
        assert frame_ms == [round(1000 / fps) // 10 * 10] * len(frame_ms), (i, frame_ms)
    assert ours[("images", ".", "nthwc", 0)][1][2][0][1].shape == (3, 8, 16, 3)
    assert ours[("images", ".", "v2", 2)][1][2][0][2] == [100] * 6  # fps=10: 100 ms


def test_add_video_same_frames_as_torch_when_its_moviepy_runs(tmp_path):
    require_module("moviepy.editor")  # torch's add_video imports it: moviepy 1.x
    # few colours: every GIF quantizer keeps them, whichever moviepy/imageio writes
    vid = (np.random.default_rng(5).integers(0, 4, (3, 4, 3, 8, 8)) * 85).astype(np.uint8)
    peer, ours = write_both(tmp_path, lambda w, s: w.add_video("v", vid, 0, walltime=WALL))
    key = ("images", ".", "v", 0)
    assert sorted(peer) == sorted(ours) == [key]
    (_, peer_frames, _), = peer[key][1][2]
    (_, our_frames, durations), = ours[key][1][2]
    assert np.array_equal(peer_frames, our_frames)  # (torch's durations are 0 ms there)
    assert durations == [250] * 4


# ---------------------------------------------------------------------------
# the caller's cost (printed for the lead's bench; no timing assert)
# ---------------------------------------------------------------------------

def _per_call(fn: Callable[[int], None], n: int,
              settle: Callable[[], None] = lambda: None) -> float:
    """Median seconds of one ``fn(i)``; ``settle()`` (untimed) runs after each."""
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
        settle()
    return statistics.median(times)


def test_print_caller_cost_against_the_peers(tmp_path):
    tbx = require_module("tensorboardX")
    rng = np.random.default_rng(6)
    snd = rng.uniform(-1, 1, 44100).astype(np.float32)
    snd10 = rng.uniform(-1, 1, 441000).astype(np.float32)
    vid = rng.random((4, 16, 3, 64, 64)).astype(np.float32)
    img = rng.random((3, 480, 640)).astype(np.float32)
    boxes = np.array([[10 + 40 * i, 10 + 30 * i, 80 + 40 * i, 90 + 30 * i] for i in range(10)],
                     np.float32)
    labels = [f"obj {i}" for i in range(10)]
    has_moviepy = importlib.util.find_spec("moviepy") is not None
    calls = {
        "add_audio 1 s 44.1 kHz": lambda w, i: w.add_audio("a", snd, i),
        "add_audio 10 s 44.1 kHz": lambda w, i: w.add_audio("a", snd10, i),
        "add_image_with_boxes 640x480 10 boxes": lambda w, i: w.add_image_with_boxes(
            "b", img, boxes, i, labels=labels),
        "add_figure 640x480": lambda w, i: w.add_figure("f", figs.pop(), i),
        "add_figure 640x480 close=False": lambda w, i: w.add_figure("f", figs.pop(), i,
                                                                    close=False),
    }
    if has_moviepy:
        calls["add_video 4x16x3x64x64 (peer: tensorboardX)"] = lambda w, i: w.add_video(
            "v", vid, i)
    rows = []
    for what, call in calls.items():
        peer_cls = tbx.SummaryWriter if "add_video" in what else TorchWriter
        n = 3 if "video" in what else 5
        costs = {}
        for side, cls in (("peer", peer_cls), ("ours", summarylog.SummaryWriter)):
            for mode in ("idle", "busy"):  # idle: flush() (untimed) after each call
                figs = [_figure(k, (6.4, 4.8), 100) for k in range(n + 1)]  # made untimed
                w = cls(str(tmp_path / side / mode / what.split()[0]))
                call(w, 0)  # warm-up: imports, fonts, first file
                w.flush()
                costs[side, mode] = _per_call(lambda i, call=call, w=w: call(w, i + 1), n,
                                              w.flush if mode == "idle" else lambda: None)
                w.close()
                plt.close("all")  # close=False leaves the logged figures open
        rows.append((what, costs))
    # add_figure: how its cost splits between the caller's thread and the writer's
    import pickle

    from summarylog.png import encode_png
    from summarylog.summary_writer.figure_snapshot import rasterise, snapshot

    fig = _figure(0, (6.4, 4.8), 100)
    snap = _per_call(lambda i: snapshot(fig), 10)
    blob = snapshot(fig).data
    load = _per_call(lambda i: pickle.loads(blob), 10)
    draw = _per_call(lambda i: rasterise(pickle.loads(blob)), 10) - load
    rgba = rasterise(fig)
    png = _per_call(lambda i: encode_png(np.ascontiguousarray(rgba[:, :, :3])), 10)
    plt.close(fig)
    for what, c in rows:
        for mode, how in (("idle", "writer idle at each call"),
                          ("busy", "back to back, the writer still encoding")):
            peer, ours = c["peer", mode], c["ours", mode]
            print(f"caller cost per call, {what}, {how}: peer {peer * 1e3:.2f} ms, ours "
                  f"{ours * 1e3:.3f} ms ({ours / peer:.3f} of the peer's)")
    print(f"add_figure 640x480 split: pickling {snap * 1e3:.2f} ms ({len(blob)} bytes) on the "
          f"caller's thread; unpickling {load * 1e3:.2f} ms, Agg drawing {draw * 1e3:.2f} ms, "
          f"PNG encoding {png * 1e3:.2f} ms on the writer's")
    assert not plt.get_fignums()
