"""The CLU MetricWriter's audio, videos and hparams, written through CLU's own
``clu.metric_writers.interface`` contract and read back with TensorBoard's backend:
the audio plugin's routes (tags, clips, each WAV decoded), the images plugin's GIF
frames, the HParams plugin's handlers.  CLU's TensorBoard writer runs on TensorFlow
(not installed here), so its facts are checked with TensorBoard's own pure-Python
``hparams_pb`` and CLU's own ``flatten_dict``."""

from __future__ import annotations

import inspect
import io
import json
import time
import wave
from typing import Any
from urllib.parse import parse_qsl

import numpy as np
import pytest

from conftest import require_module

require_module("jax")
require_module("clu")
require_module("tensorboard")
Image = require_module("PIL.Image")

from tensorboard import context as tb_context  # noqa: E402
from tensorboard import plugin_util  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.plugins.audio import audio_plugin  # noqa: E402
from tensorboard.plugins.hparams import api_pb2 as hp_api  # noqa: E402
from tensorboard.plugins.hparams import backend_context as hp_backend  # noqa: E402
from tensorboard.plugins.hparams import get_experiment as hp_get_experiment  # noqa: E402
from tensorboard.plugins.hparams import list_session_groups as hp_list_groups  # noqa: E402
from tensorboard.plugins.hparams import summary_v2 as hp_summary  # noqa: E402
from tensorboard.plugins.image import images_plugin  # noqa: E402
from werkzeug.test import Client  # noqa: E402

from summarylog.adapters.jax import MetricWriter, _clu_interface  # noqa: E402
from tb_server import plugin_context as _context  # noqa: E402


def _get(plugin: Any, route: str, **args: Any) -> Any:
    """One of the plugin's HTTP routes, as the dashboard calls it."""
    resp = Client(plugin.get_plugin_apps()[route]).get(route, query_string=args)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp


def _writer(logdir: Any) -> Any:
    """Our MetricWriter, used only through CLU's interface."""
    iface = _clu_interface()
    w = MetricWriter(logdir)
    assert isinstance(w, iface.MetricWriter)
    return w


def test_signatures_are_clus() -> None:
    """Each method takes the parameters of CLU's abstract interface, by the same names
    and kinds (sample_rate keyword-only)."""
    iface = _clu_interface()
    for name in ("write_audios", "write_videos", "write_hparams", "write_scalars",
                 "write_images", "write_texts", "write_histograms", "write_summaries"):
        ours = inspect.signature(getattr(MetricWriter, name)).parameters
        theirs = inspect.signature(getattr(iface.MetricWriter, name)).parameters
        assert [(p.name, p.kind) for p in ours.values()] == \
            [(p.name, p.kind) for p in theirs.values()], name


# TensorFlow's encode_wav, as facts: times 32768, rounded half away from zero, clamped
SAMPLES = [(-1.0, -32768), (1.0, 32767), (0.5, 16384), (-0.25, -8192), (2.0, 32767),
           (-3.0, -32768), (0.5 / 32768, 1), (-0.5 / 32768, -1), (0.49 / 32768, 0),
           (float("nan"), 0)]


def test_audio_clips_in_the_audio_tab(tmp_path: Any) -> None:
    """[N, T, C] clips under one tag: N samples at the step, each a 16-bit WAV of C
    channels at the rate, samples as TensorFlow's encode_wav makes them."""
    rng = np.random.default_rng(0)
    stereo = rng.uniform(-1, 1, (3, 400, 2)).astype(np.float32)
    stereo[0, :len(SAMPLES), 0] = [x for x, _ in SAMPLES]
    mono = rng.uniform(-1, 1, (1, 50, 1))  # float64, as numpy makes it
    w = _writer(tmp_path)
    w.write_audios(5, {"speech": stereo, "beep": mono}, sample_rate=16000)
    w.write_audios(6, {"speech": stereo * 0.5}, sample_rate=16000)
    stereo[:] = 0  # after the call: must not reach what was logged
    w.close()
    plugin = audio_plugin.AudioPlugin(_context(str(tmp_path)))
    tags = json.loads(_get(plugin, "/tags").get_data())
    assert {t: v["samples"] for t, v in tags["."].items()} == {"speech": 3, "beep": 1}
    rng = np.random.default_rng(0)
    want = rng.uniform(-1, 1, (3, 400, 2)).astype(np.float32)
    want[0, :len(SAMPLES), 0] = [x for x, _ in SAMPLES]
    decoded = 0
    for tag, clips, n_at_step in (("speech", want, {5: 3, 6: 3}), ("beep", mono, {5: 1})):
        for sample in range(len(clips)):
            listed = json.loads(_get(plugin, "/audio", run=".", tag=tag,
                                     sample=sample).get_data())
            steps = [e["step"] for e in listed]
            assert steps == [s for s, n in n_at_step.items() if n > sample], (tag, sample)
            for entry in listed:
                assert entry["contentType"] == "audio/wav"
                wav = _get(plugin, "/individualAudio",
                           **dict(parse_qsl(entry["query"])))
                with wave.open(io.BytesIO(wav.get_data())) as f:
                    assert (f.getnchannels(), f.getframerate(), f.getsampwidth()) == \
                        (clips.shape[2], 16000, 2)
                    got = np.frombuffer(f.readframes(f.getnframes()), "<i2")
                scale = 0.5 if entry["step"] == 6 else 1.0
                x = (clips[sample] * np.float32(scale)).astype(np.float32) * np.float32(32768)
                x = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))
                assert got.tolist() == np.clip(np.nan_to_num(x), -32768, 32767).astype(
                    int).ravel().tolist()
                decoded += 1
    got0 = _first_samples(tmp_path)
    assert got0 == [v for _, v in SAMPLES]
    print(f"{decoded} WAV clips decoded through the audio plugin's routes")


def _first_samples(logdir: Any) -> list[int]:
    ctx = _context(str(logdir))
    provider = ctx.data_provider
    rctx = tb_context.RequestContext()
    seqs = provider.read_blob_sequences(rctx, experiment_id="", plugin_name="audio",
                                        downsample=100)
    first = seqs["."]["speech"][0]
    with wave.open(io.BytesIO(provider.read_blob(rctx, blob_key=first.values[0].blob_key))) as f:
        frames = np.frombuffer(f.readframes(len(SAMPLES)), "<i2").reshape(-1, 2)
    return frames[:, 0].tolist()


def test_bad_audio_is_refused_naming_it(tmp_path: Any) -> None:
    w = _writer(tmp_path)
    with pytest.raises(ValueError, match=r"audios\['a'\].*\[N, T, C\]"):
        w.write_audios(1, {"a": np.zeros((10, 1))}, sample_rate=8000)
    with pytest.raises(TypeError, match=r"audios\['a'\].*floats"):
        w.write_audios(1, {"a": np.zeros((1, 10, 1), np.int16)}, sample_rate=8000)
    with pytest.raises(ValueError, match="sample_rate"):
        w.write_audios(1, {"a": np.zeros((1, 10, 1))}, sample_rate=0)
    with pytest.raises(TypeError, match="sample_rate"):
        w.write_audios(1, {"a": np.zeros((1, 10, 1))}, sample_rate="8k")
    with pytest.raises(ValueError, match=r"audios\['b'\]"):  # nothing written: all checked first
        w.write_audios(1, {"a": np.zeros((1, 10, 1)), "b": np.zeros(3)}, sample_rate=8000)
    w.close()
    assert audio_plugin.AudioPlugin(_context(str(tmp_path)))._index_impl(
        tb_context.RequestContext(), "") == {}


def _gif_frames(data: bytes) -> list[np.ndarray]:
    im = Image.open(io.BytesIO(data))
    frames = []
    for i in range(im.n_frames):
        im.seek(i)
        frames.append(np.asarray(im.convert("RGB")))
    return frames


def test_videos_as_gifs_in_the_images_tab(tmp_path: Any) -> None:
    """[N, T, H, W, C] (and [T, H, W, C]) as torch's add_video: the clips tiled into
    one grid per frame, an animated GIF of T frames."""
    t, h, wd = 3, 4, 5
    colors = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255]], np.uint8)
    batch = np.zeros((2, t, h, wd, 3), np.uint8)
    for k in range(t):
        batch[0, k] = colors[k]
        batch[1, k] = colors[(k + 1) % 3]
    single = np.zeros((t, h, wd, 1), np.float32)
    single[1] = 1.0  # gray, in [0, 1]: the middle frame white
    w = _writer(tmp_path)
    w.write_videos(2, {"batch": batch, "single": single})
    w.close()
    ctx = _context(str(tmp_path))
    plugin = images_plugin.ImagesPlugin(ctx)
    tags = json.loads(_get(plugin, "/tags").get_data())
    assert set(tags["."]) == {"batch", "single"}
    for tag, grid in (("batch", np.concatenate([batch[0], batch[1]], axis=2)),
                      ("single", np.repeat((single * 255).astype(np.uint8), 3, axis=3))):
        (entry,) = json.loads(_get(plugin, "/images", run=".", tag=tag).get_data())
        assert entry["step"] == 2
        blob = _get(plugin, "/individualImage",
                    **dict(parse_qsl(entry["query"]))).get_data()
        frames = _gif_frames(blob)
        assert len(frames) == t
        for k in range(t):
            assert frames[k].shape == grid[k].shape
            assert np.array_equal(frames[k], grid[k]), (tag, k)
    print(f"2 videos read back as GIFs of {t} frames, pixels exact")


def test_bad_videos_are_refused_naming_them(tmp_path: Any) -> None:
    w = _writer(tmp_path)
    with pytest.raises(ValueError, match=r"videos\['v'\].*\[N, T, H, W, C\]"):
        w.write_videos(1, {"v": np.zeros((4, 4, 3))})
    with pytest.raises(ValueError, match=r"videos\['v'\].*channels"):
        w.write_videos(1, {"v": np.zeros((1, 2, 4, 4, 2))})
    w.close()


NESTED = {"model": {"depth": 4, "act": "gelu", "dropout": None, "widths": [32, 64]},
          "optim": {"lr": np.float32(0.5), "nesterov": True, "betas": (0.9, 0.99)},
          "seed": np.int64(7)}


def test_hparams_flattened_as_clu_flattens_them() -> None:
    from clu.internal import utils as clu_utils
    from ml_collections import ConfigDict

    from summarylog.adapters.clu_payloads import flatten_hparams

    for hp in (NESTED, ConfigDict({"a": {"b": 1, "c": [1, {"d": 2}]}, "e": None})):
        assert flatten_hparams(hp) == clu_utils.flatten_dict(hp)


def test_hparams_record_is_tf_summarys(tmp_path: Any) -> None:
    """The one record tf.summary's hparams writes (TensorBoard's own pure-Python
    hparams_pb of CLU's flattened dict): same values, same group name, step 0."""
    from clu.internal import utils as clu_utils

    before = time.time()
    w = _writer(tmp_path)
    w.write_hparams(NESTED)
    w.close()
    from tensorboard.backend.event_processing import event_file_loader

    (path,) = list(tmp_path.iterdir())

    events = [event_pb2.Event.FromString(raw)  # as written, before the loader's migrations
              for raw in event_file_loader.RawEventFileLoader(str(path)).Load()]
    (ev,) = [e for e in events if e.HasField("summary")]
    assert ev.step == 0 and before <= ev.wall_time <= time.time()
    from tensorboard.plugins.hparams import metadata as hp_metadata

    start = hp_metadata.parse_session_start_info_plugin_data(
        ev.summary.value[0].metadata.plugin_data.content)
    assert start.start_time_secs == ev.wall_time
    want = hp_summary.hparams_pb(dict(clu_utils.flatten_dict(NESTED)),
                                 start_time_secs=start.start_time_secs)
    (got_v,), (want_v,) = ev.summary.value, want.value
    assert (got_v.tag, got_v.tensor, got_v.metadata.plugin_data.plugin_name) == \
        (want_v.tag, want_v.tensor, want_v.metadata.plugin_data.plugin_name)
    # the content compared parsed: a map's entries may be serialized in any order
    assert start == hp_metadata.parse_session_start_info_plugin_data(
        want_v.metadata.plugin_data.content)
    assert len(start.group_name) == 64 and len(start.hparams) == 10


def test_hparams_tab_lists_the_flattened_keys_and_groups_equal_runs(tmp_path: Any) -> None:
    for run, seed in (("a", 7), ("b", 7), ("c", 8)):
        w = _writer(tmp_path / run)
        w.write_hparams({**NESTED, "seed": seed})
        w.write_scalars(10, {"acc": 0.5 + seed / 100})
        w.close()
    ctx = _context(str(tmp_path))
    bctx = hp_backend.Context(ctx)
    rctx = tb_context.RequestContext()
    exp = hp_get_experiment.Handler(rctx, bctx, "",
                                    hp_api.GetExperimentRequest(include_metrics=True)).run()
    assert sorted(i.name for i in exp.hparam_infos) == sorted(
        ["model.depth", "model.act", "model.dropout", "model.widths.0", "model.widths.1",
         "optim.lr", "optim.nesterov", "optim.betas.0", "optim.betas.1", "seed"])
    req = hp_api.ListSessionGroupsRequest(
        allowed_statuses=[hp_api.STATUS_UNKNOWN, hp_api.STATUS_SUCCESS],
        col_params=[hp_api.ColParams(hparam="seed", include_in_result=True)],
        start_index=0, slice_size=100, include_metrics=True)
    groups = json.loads(plugin_util.proto_to_json(
        hp_list_groups.Handler(rctx, bctx, "", req).run()))["sessionGroups"]
    by_seed = {g["hparams"]["seed"]: sorted(s["name"] for s in g["sessions"]) for g in groups}
    assert by_seed == {7.0: ["a", "b"], 8.0: ["c"]}  # equal hparams: one group, as tf.summary


def test_bad_hparams_are_refused_naming_the_key(tmp_path: Any) -> None:
    w = _writer(tmp_path)
    with pytest.raises(TypeError, match=r"hparams\['model.fn'\]"):
        w.write_hparams({"model": {"fn": object()}})
    with pytest.raises(ValueError, match="'a.b'"):
        w.write_hparams({"a.b": 1, "a": {"b": 2}})
    w.close()


def test_encoding_runs_on_the_writers_thread(tmp_path: Any, monkeypatch: Any) -> None:
    """WAV and GIF encoding never run on the caller's thread: it checks and copies
    (the arrays may change right after the call), the writer's thread encodes."""
    import threading

    import summarylog.adapters.clu_payloads as codecs

    threads: dict[str, list[str]] = {"wav": [], "gif": []}
    spent = {"wav": 0.0, "gif": 0.0}
    for kind, name in (("wav", "audio_payload"), ("gif", "video_payload")):
        orig = getattr(codecs, name)

        def spy(*a: Any, _orig: Any = orig, _kind: str = kind) -> Any:
            threads[_kind].append(threading.current_thread().name)
            t0 = time.perf_counter()
            try:
                return _orig(*a)
            finally:
                spent[_kind] += time.perf_counter() - t0

        monkeypatch.setattr(codecs, name, spy)
    audio = np.random.default_rng(1).uniform(-1, 1, (8, 48000, 2)).astype(np.float32)
    video = np.random.default_rng(2).integers(0, 255, (4, 16, 64, 64, 3), dtype=np.uint8)
    w = _writer(tmp_path)
    t0 = time.perf_counter()
    w.write_audios(1, {"a": audio}, sample_rate=48000)
    caller_audio = time.perf_counter() - t0
    t0 = time.perf_counter()
    w.write_videos(1, {"v": video})
    caller_video = time.perf_counter() - t0
    audio[:] = 0
    video[:] = 0
    w.close()
    me = threading.current_thread().name
    assert len(threads["wav"]) == 1 and me not in threads["wav"]
    assert len(threads["gif"]) == 1 and me not in threads["gif"]
    seqs = _context(str(tmp_path)).data_provider
    rctx = tb_context.RequestContext()
    (clip0,) = seqs.read_blob_sequences(rctx, experiment_id="", plugin_name="audio",
                                        downsample=10)["."]["a"][:1]
    with wave.open(io.BytesIO(seqs.read_blob(rctx, blob_key=clip0.values[0].blob_key))) as f:
        assert np.frombuffer(f.readframes(10), "<i2").any()  # the values at the call, not 0s
    print(f"write_audios of 8 x 1 s stereo 48 kHz: caller {caller_audio * 1e3:.1f} ms, "
          f"encoding 8 WAVs {spent['wav'] * 1e3:.1f} ms on {threads['wav'][0]!r}; "
          f"write_videos of 4 x 16 frames 64x64: caller {caller_video * 1e3:.1f} ms, "
          f"GIF encoding {spent['gif'] * 1e3:.1f} ms")


def test_huge_media_refused_before_any_copy(tmp_path: Any) -> None:
    """A clip or video no event could carry is refused naming it, before it is copied
    (broadcast views: gigabytes claimed, a few bytes held)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w = _writer(tmp_path)
    huge_audio = np.broadcast_to(np.float32(0.5), (1, 600_000_000, 2))
    with pytest.raises(ValueError, match=r"audios\['a'\].*nothing was logged"):
        w.write_audios(1, {"a": huge_audio}, sample_rate=8000)
    huge_video = np.broadcast_to(np.uint8(7), (1, 100_000, 200, 200, 3))
    with pytest.raises(ValueError, match=r"videos\['v'\].*nothing was logged"):
        w.write_videos(1, {"v": huge_video})
    w.close()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 200 * 1024, grown  # KiB: no copy of the 2.4 GB / 12 GB views
    print(f"2.4 GB audio and 12 GB video views refused; peak RSS grew {grown / 1024:.1f} MiB")


def test_videos_without_pillow_name_the_extra(tmp_path: Any, monkeypatch: Any) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "PIL.Image", None)  # import fails as if not installed
    w = _writer(tmp_path)
    with pytest.raises(ImportError, match=r"write_videos needs Pillow: pip install "
                                          r"'summarylog\[video\]'"):
        w.write_videos(1, {"v": np.zeros((2, 4, 4, 3), np.uint8)})
    w.write_scalars(1, {"still": 1.0})  # the writer goes on
    w.close()
