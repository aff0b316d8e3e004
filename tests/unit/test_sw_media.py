"""SummaryWriter's add_audio, add_video, add_figure and add_image_with_boxes without
TensorBoard: bad input refused with the peers' argument named and nothing logged,
encoding on the writer's thread, private copies, the peers' sample and pixel layout,
one-line ImportErrors naming the extras, hostile coordinates and sizes."""

from __future__ import annotations

import io
import os
import sys
import threading
import wave

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog.pb import tb
from summarylog.records import RecordReader
from summarylog.summary_writer import media as media_mod
from summarylog.summary_writer.media_prep import pcm16, video_frames


def events_of(logdir: str) -> list:
    """Every Event of every file in logdir, parsed with summarylog's own class."""
    out = []
    for name in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, name)
        if os.path.isfile(path):
            with RecordReader(path) as r:
                out.extend(tb.Event.FromString(p) for p in r)
    return out


def values_of(logdir: str) -> list:
    return [(ev.step, v) for ev in events_of(logdir) for v in ev.summary.value]


def wav_of(value) -> tuple[wave._wave_params, np.ndarray]:
    with wave.open(io.BytesIO(value.audio.encoded_audio_string)) as w:
        return w.getparams(), np.frombuffer(w.readframes(w.getnframes()), "<i2")


def picture_of(value) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(value.image.encoded_image_string)).convert("RGB"))


# ---------------------------------------------------------------------------
# bad input: an error naming the argument, and nothing logged
# ---------------------------------------------------------------------------

class _NotAFigure:
    pass


IMG = np.zeros((3, 8, 8), np.float32)
BOXES = np.array([[1, 1, 5, 5]], np.float32)
VID = np.zeros((1, 2, 3, 4, 4), np.float32)

BAD = [
    ("add_audio", ("a", np.zeros((2, 3, 4))), {}, ValueError, "snd_tensor"),
    ("add_audio", ("a", np.zeros((3, 5))), {}, ValueError, "snd_tensor"),
    ("add_audio", ("a", np.array([], np.float32)), {}, ValueError, "snd_tensor"),
    ("add_audio", ("a", np.array(["x", "y"])), {}, TypeError, "snd_tensor"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": 0}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": -8000}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": float("nan")}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": 2 ** 40}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": "44100"}, TypeError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"sample_rate": 0.2}, ValueError, "sample_rate"),
    ("add_audio", ("a", np.zeros(4)), {"global_step": 1.5}, TypeError, "step"),
    ("add_video", ("v", np.zeros((2, 3, 4, 4))), {}, ValueError, "vid_tensor"),
    ("add_video", ("v", np.zeros((1, 2, 2, 4, 4))), {}, ValueError, "vid_tensor"),
    ("add_video", ("v", np.zeros((1, 0, 3, 4, 4))), {}, ValueError, "vid_tensor"),
    ("add_video", ("v", np.zeros((1, 2, 3, 4, 4), complex)), {}, TypeError, "vid_tensor"),
    ("add_video", ("v", np.zeros((1, 1, 1, 1, 70_000), np.uint8)), {}, ValueError,
     "vid_tensor"),  # wider than a GIF can be
    ("add_video", ("v", np.zeros((9, 1, 1, 1, 20_000), np.uint8)), {}, ValueError,
     "vid_tensor"),  # 9 clips pad to 16, 2 rows of 8: 160 000 px wide
    ("add_video", ("v", VID), {"fps": 0}, ValueError, "fps"),
    ("add_video", ("v", VID), {"fps": -4}, ValueError, "fps"),
    ("add_video", ("v", VID), {"fps": float("inf")}, ValueError, "fps"),
    ("add_video", ("v", VID), {"fps": None}, TypeError, "fps"),
    ("add_video", ("v", VID), {"dataformats": "NTCH"}, ValueError, "dataformats"),
    ("add_video", ("v", VID), {"dataformats": "NTCHH"}, ValueError, "dataformats"),
    ("add_video", ("v", VID), {"dataformats": 5}, TypeError, "dataformats"),
    ("add_figure", ("f", _NotAFigure()), {}, TypeError, "figure"),
    ("add_figure", ("f", []), {}, ValueError, "figure"),
    ("add_figure", ("f", np.zeros((3, 4, 4))), {}, TypeError, "figure"),
    ("add_image_with_boxes", ("b", IMG, np.zeros((2, 3))), {}, ValueError, "box_tensor"),
    ("add_image_with_boxes", ("b", IMG, np.zeros(4)), {}, ValueError, "box_tensor"),
    ("add_image_with_boxes", ("b", IMG, np.array([[0, 0, np.nan, 1]])), {}, ValueError,
     "box_tensor"),
    ("add_image_with_boxes", ("b", IMG, np.array([["a"] * 4])), {}, TypeError, "box_tensor"),
    ("add_image_with_boxes", ("b", np.zeros((2, 8, 8)), BOXES), {}, ValueError, "img_tensor"),
    ("add_image_with_boxes", ("b", np.zeros((8, 8)), BOXES), {}, ValueError, "img_tensor"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"labels": [3]}, TypeError, "labels"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"labels": 3}, TypeError, "labels"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"rescale": 0}, ValueError, "rescale"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"rescale": 0.01}, ValueError, "rescale"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"rescale": 1e9}, ValueError, "rescaled"),
    ("add_image_with_boxes", ("b", IMG, BOXES), {"colour": "red"}, TypeError, "colour"),
    ("add_image_with_boxes", (None, IMG, BOXES), {}, TypeError, "tag"),
]


@pytest.mark.parametrize("method,args,kwargs,exc,name", BAD,
                         ids=[f"{m}-{n}-{i}" for i, (m, _, _, _, n) in enumerate(BAD)])
def test_bad_input_names_the_argument_and_logs_nothing(tmp_path, method, args, kwargs, exc,
                                                       name):
    if method == "add_figure":
        require_module("matplotlib")
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_scalar("before", 1.0, 0)
        with pytest.raises(exc, match=name) as info:
            getattr(w, method)(*args, **kwargs)
        w.add_scalar("after", 2.0, 1)
    print(f"{method}{kwargs or ''}: {type(info.value).__name__}: {info.value}")
    tags = [v.tag for _, v in values_of(str(tmp_path))]
    assert tags == ["before", "after"]  # nothing of the refused call, nothing lost


def test_labels_of_another_count_are_dropped_as_the_peers_do(tmp_path):
    require_module("PIL")
    img = np.full((3, 24, 32), 0.5, np.float32)
    boxes = np.array([[2, 2, 20, 20], [5, 6, 30, 22]])
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("plain", img, boxes)
        w.add_image_with_boxes("mismatched", img, boxes, labels=["only one"])
        w.add_image_with_boxes("one", img, boxes[:1], labels="cat")  # a str is one label
        w.add_image_with_boxes("one_plain", img, boxes[:1])
    got = {v.tag: picture_of(v) for _, v in values_of(str(tmp_path))}
    assert np.array_equal(got["plain"], got["mismatched"])
    assert not np.array_equal(got["one"], got["one_plain"])  # the label is drawn


# ---------------------------------------------------------------------------
# encoding happens on the writer's thread; the caller's values are copied
# ---------------------------------------------------------------------------

def test_drawing_and_encoding_run_on_the_writer_thread(tmp_path, monkeypatch):
    require_module("PIL")
    plt = require_module("matplotlib.pyplot")
    threads: dict[str, set[str]] = {}

    def spy(name, fn):
        def wrapped(*a, **k):
            threads.setdefault(name, set()).add(threading.current_thread().name)
            return fn(*a, **k)
        return wrapped

    from summarylog.summary_writer import images as images_mod

    for name in ("encode_wav", "encode_gif", "encode_png", "draw_boxes", "pcm16",
                 "video_frames"):
        monkeypatch.setattr(media_mod, name, spy(name, getattr(media_mod, name)))
    # add_figure's PNG is encoded by summary_writer.images.png_payloads
    monkeypatch.setattr(images_mod, "encode_png", spy("figure png", images_mod.encode_png))
    caller = threading.current_thread().name
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_audio("a", np.zeros(100, np.float32), 0)
        w.add_video("v", np.zeros((1, 2, 3, 4, 4), np.float32), 0)
        w.add_image_with_boxes("b", IMG, BOXES, 0)
        fig = plt.figure(figsize=(1, 1))
        w.add_figure("f", fig, 0)
    print({k: sorted(v) for k, v in threads.items()}, "caller:", caller)
    assert set(threads) == {"encode_wav", "encode_gif", "encode_png", "draw_boxes", "pcm16",
                            "video_frames", "figure png"}
    assert all(caller not in names for names in threads.values())


def test_values_are_copied_before_the_call_returns(tmp_path, monkeypatch):
    require_module("PIL")
    gate = threading.Event()
    real = media_mod.pcm16, media_mod.video_frames, media_mod.draw_boxes

    def held(fn):
        def wrapped(*a, **k):
            assert gate.wait(60)  # the caller changes its arrays first
            return fn(*a, **k)
        return wrapped

    for name, fn in zip(("pcm16", "video_frames", "draw_boxes"), real):
        monkeypatch.setattr(media_mod, name, held(fn))
    snd = np.full(50, 0.5, np.float32)
    vid = np.full((1, 2, 3, 4, 4), 0.5, np.float32)
    img = np.full((3, 8, 8), 0.5, np.float32)
    boxes = np.array([[1.0, 1.0, 6.0, 6.0]])
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_audio("a", snd, 0)
        w.add_video("v", vid, 0)
        w.add_image_with_boxes("b", img, boxes, 0)
        for arr in (snd, vid, img, boxes):
            arr[...] = 0
        gate.set()
    got = {v.tag: v for _, v in values_of(str(tmp_path))}
    assert (wav_of(got["a"])[1] == 16383).all()
    assert picture_of(got["b"])[1, 1].tolist() == [255, 0, 0]  # the box is still there
    assert picture_of(got["b"])[4, 4].tolist() == [127, 127, 127]
    from PIL import Image

    gif = Image.open(io.BytesIO(got["v"].image.encoded_image_string))
    assert np.asarray(gif.convert("RGB"))[0, 0].tolist() == [127, 127, 127]


# ---------------------------------------------------------------------------
# the peers' samples and pixels
# ---------------------------------------------------------------------------

def test_audio_is_16bit_pcm_truncated_and_clipped_as_the_peers(tmp_path):
    x = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -3.0, 1e-5, np.inf, -np.inf, np.nan],
                 np.float32)
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_audio("mono", x[None], 3, sample_rate=22050.4)
        w.add_audio("stereo", np.stack([x, -x], 1), 4, sample_rate=8000)
        w.add_audio("ints", np.array([0, 1, -1, 5]), 5)
        w.add_audio("half", np.array([0.5, 1.0], np.float16), 6)
    got = {v.tag: (step, v) for step, v in values_of(str(tmp_path))}
    step, mono = got["mono"]
    params, pcm = wav_of(mono)
    assert step == 3 and params.nchannels == 1 and params.sampwidth == 2
    assert params.framerate == 22050 and mono.audio.sample_rate == pytest.approx(22050.4)
    assert mono.audio.length_frames == 11 and mono.audio.content_type == "audio/wav"
    assert pcm.tolist() == [0, 16383, -16383, 32767, -32767, 32767, -32767, 0, 32767,
                            -32767, 0]
    params, pcm = wav_of(got["stereo"][1])
    assert params.nchannels == 2 and got["stereo"][1].audio.num_channels == 2
    assert pcm.reshape(-1, 2)[:, 0].tolist() == [0, 16383, -16383, 32767, -32767, 32767,
                                                 -32767, 0, 32767, -32767, 0]
    assert (pcm.reshape(-1, 2)[:, 1] == -pcm.reshape(-1, 2)[:, 0]).all()
    assert wav_of(got["ints"][1])[1].tolist() == [0, 32767, -32767, 32767]
    assert wav_of(got["half"][1])[1].tolist() == [16383, 32767]  # not float16's overflow


def test_pcm16_matches_the_peers_arithmetic_on_random_samples():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        x = rng.uniform(-1.5, 1.5, 100_000).astype(dtype)
        ref = (x.clip(-1, 1) * np.iinfo(np.int16).max).astype("<i2")  # torch's arithmetic
        assert np.array_equal(pcm16(x), ref)


@pytest.mark.parametrize("n,rows,cols", [(1, 1, 1), (2, 1, 2), (3, 1, 4), (4, 2, 2),
                                         (5, 2, 4), (8, 2, 4), (16, 4, 4), (17, 4, 8)])
def test_video_batch_tiled_as_the_peers_tile_it(n, rows, cols):
    t, c, h, w = 2, 3, 2, 3
    vid = np.zeros((n, t, c, h, w), np.uint8)
    for i in range(n):
        vid[i] = i + 1
    frames = video_frames(vid)
    assert frames.shape == (t, rows * h, cols * w, 3)
    for i in range(rows * cols):
        r, k = divmod(i, cols)
        tile = frames[:, r * h:(r + 1) * h, k * w:(k + 1) * w]
        assert (tile == (i + 1 if i < n else 0)).all()  # padding is black


def test_video_channels_and_scaling():
    gray = np.linspace(0, 1, 16, dtype=np.float32).reshape(1, 1, 1, 4, 4)
    f = video_frames(gray)
    assert f.shape == (1, 4, 4, 3) and (f[..., 0] == f[..., 2]).all()
    assert f[0, 0, 0, 0] == 0 and f[0, 3, 3, 0] == 255 and f[0, 0, 1, 0] == 17
    rgba = np.zeros((1, 1, 4, 2, 2), np.uint8)
    rgba[:, :, 3] = 255
    assert (video_frames(rgba) == 0).all()  # alpha dropped, as the peers' GIF drops it
    odd = np.array([np.nan, np.inf, -np.inf, 2.0], np.float32).reshape(1, 1, 1, 2, 2)
    assert video_frames(odd)[0, :, :, 0].ravel().tolist() == [0, 255, 0, 255]


def test_video_keeps_every_frame_and_the_frame_rate(tmp_path):
    require_module("PIL")
    from PIL import Image

    vid = np.random.default_rng(1).random((1, 7, 3, 6, 6)).astype(np.float32)
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_video("v", vid, 0, fps=7)  # moviepy drops the last frame of this one
        w.add_video("slow", vid[:, :2], 0, fps=0.5)
    got = {v.tag: v for _, v in values_of(str(tmp_path))}
    gif = Image.open(io.BytesIO(got["v"].image.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 7 and gif.info["loop"] == 0
    assert gif.info["duration"] == 140  # GIF keeps hundredths: 1000/7 ms -> 140
    assert (got["v"].image.width, got["v"].image.height) == (6, 6)
    assert Image.open(io.BytesIO(got["slow"].image.encoded_image_string)).info["duration"] == 2000
    gif.seek(6)
    assert np.abs(np.asarray(gif.convert("RGB")).astype(int)
                  - video_frames(vid)[6]).max() <= 8  # palette of one frame's colours


def test_hostile_box_coordinates_are_drawn_clipped(tmp_path):
    require_module("PIL")
    img = np.full((16, 16, 3), 200, np.uint8)
    with summarylog.SummaryWriter(tmp_path) as w:
        # a box around everything (its edges off the image) and one far outside
        w.add_image_with_boxes("huge", img, np.array([[-1e300, -1e300, 1e300, 1e300],
                                                      [1e30, 1e30, 2e30, 2e30]]),
                               dataformats="HWC", labels=["x" * 1000, "far"])
        w.add_image_with_boxes("none", img, np.zeros((0, 4)), dataformats="HWC")
    got = {v.tag: picture_of(v) for _, v in values_of(str(tmp_path))}
    print("boxes at +-1e300 and 1e30: image unchanged outside the clipped edges")
    assert (got["none"] == 200).all()
    assert (got["huge"] == 200).all()


def test_rescale_resizes_and_records_the_real_size(tmp_path):
    require_module("PIL")
    img = np.random.default_rng(2).random((3, 20, 30)).astype(np.float32)
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("half", img, BOXES, rescale=0.5)
        w.add_image_with_boxes("grid", np.stack([img] * 3), BOXES, dataformats="NCHW",
                               rescale=2)
    got = {v.tag: v for _, v in values_of(str(tmp_path))}
    assert (got["half"].image.width, got["half"].image.height) == (15, 10)
    assert picture_of(got["half"]).shape == (10, 15, 3)
    assert picture_of(got["grid"]).shape == (40, 180, 3)


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------

def test_figure_close_and_list(tmp_path):
    plt = require_module("matplotlib.pyplot")
    figs = [plt.figure(figsize=(2, 1), dpi=50) for _ in range(3)]
    kept = plt.figure(figsize=(2, 1), dpi=50)
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_figure("list", figs, 1)
        w.add_figure("kept", kept, 2, close=False)
        with pytest.raises(ValueError, match="figure"):
            w.add_figure("sizes", [plt.figure(figsize=(1, 1)), plt.figure(figsize=(2, 1))])
    assert not any(plt.fignum_exists(f.number) for f in figs)
    assert plt.fignum_exists(kept.number)
    plt.close("all")
    got = {v.tag: v for _, v in values_of(str(tmp_path))}
    assert set(got) == {"list", "kept"}
    assert picture_of(got["list"]).shape == (50, 300, 3)
    assert picture_of(got["kept"]).shape == (50, 100, 3)


# ---------------------------------------------------------------------------
# optional packages: one line naming the extra
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("blocked,method,extra", [
    ("PIL.Image", "add_video", "video"),
    ("PIL.Image", "add_image_with_boxes", "image"),
    ("matplotlib.figure", "add_figure", "figure"),
])
def test_missing_package_names_the_extra(tmp_path, monkeypatch, blocked, method, extra):
    monkeypatch.setitem(sys.modules, blocked, None)  # import of it raises ImportError
    args = {"add_video": ("v", VID), "add_image_with_boxes": ("b", IMG, BOXES),
            "add_figure": ("f", object())}[method]
    with summarylog.SummaryWriter(tmp_path) as w, pytest.raises(ImportError) as info:
        getattr(w, method)(*args)
    msg = str(info.value)
    print(msg)
    assert "\n" not in msg and f"summarylog[{extra}]" in msg and method in msg
    assert values_of(str(tmp_path)) == []
