"""summarylog.SummaryReader's audio frames, raw accessors and media helpers (issue 23).

Oracles: tbparse's own raw_tags / raw_events (TensorBoard's EventAccumulator, no
TensorFlow needed) field by field on torch-, tensorboardX- and summarylog-written files;
for audio (tbparse decodes it only with TensorFlow) the int16 samples the writers wrote,
read back with the standard library's ``wave``, and tbparse's own audio frames built with
a test-local ``tf.audio.decode_wav`` made of ``wave`` (so every option's columns, order
and dtypes are tbparse's)."""

from __future__ import annotations

import dataclasses
import glob
import io
import os
import pathlib
import struct
import time
import types
import warnings
import wave
import zlib

import numpy as np
import pytest
from conftest import require_module

AUDIO_EXTRAS = (None, {"content_type"}, {"length_frames", "sample_rate"},
                {"content_type", "length_frames", "sample_rate", "wall_time"},
                {"dir_name"}, {"file_name", "wall_time"},
                {"dir_name", "file_name", "wall_time", "content_type", "length_frames",
                 "sample_rate"})
RNG = np.random.default_rng(7)
MONO = [RNG.uniform(-1.2, 1.2, n).astype(np.float32) for n in (300, 300, 41)]
STEREO = RNG.uniform(-1, 1, (200, 2)).astype(np.float32)


def _pcm16(x: np.ndarray) -> np.ndarray:
    """The writers' rule (torch's and summarylog's): clipped, times 32767, truncated."""
    return (np.clip(x, -1, 1) * 32767).astype("<i2")


def _log_common(w, audio: bool) -> None:
    for i in range(4):
        w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_histogram("weights", np.linspace(-1, 1, 30) * (i + 1), i)
        w.add_text("note", f"step {i}", i)
        w.add_image("pic", np.full((3, 4, 5), 40 * i, np.uint8), i)
        if audio:
            w.add_audio("voice", MONO[i % 3], i, sample_rate=8000)
    w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hp/metric": 0.5})


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    torch_tb = require_module("torch.utils.tensorboard")
    tbx = require_module("tensorboardX")
    from summarylog import SummaryWriter
    root = tmp_path_factory.mktemp("media")
    w = torch_tb.SummaryWriter(str(root / "torch"))
    _log_common(w, audio=True)
    w.add_scalar("newstyle", 2.5, 0, new_style=True)
    w.close()
    w = tbx.SummaryWriter(str(root / "tbx"))  # tensorboardX's audio needs soundfile: not here
    _log_common(w, audio=False)
    w.close()
    w = SummaryWriter(str(root / "ours" / "a"))
    _log_common(w, audio=True)
    w.add_audio("stereo", STEREO, 5, sample_rate=22050)
    w.add_audio("stereo", STEREO[::-1].copy(), 6, sample_rate=22050)
    w.close()
    return str(root)


def _files(logdir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(logdir, "**", "events.*"), recursive=True))


def _tbparse():
    tbparse = require_module("tbparse")
    warnings.simplefilter("ignore")  # tbparse's and TensorBoard's deprecation noise
    return tbparse


def _plain(x):
    """A record as plain data: dataclasses as dicts, protobufs as their bytes."""
    if dataclasses.is_dataclass(x):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if hasattr(x, "SerializeToString"):
        return ("proto", x.SerializeToString())
    return x


# -- raw accessors against tbparse's ------------------------------------------------------
def test_raw_tags_and_events_equal_tbparse(logdir):
    tbparse = _tbparse()
    from summarylog.summary_reader import SummaryReader
    n_files = n_records = 0
    for path in _files(logdir):
        theirs, ours = tbparse.SummaryReader(path), SummaryReader(path)
        assert ours.raw_tags == theirs.raw_tags, path
        for kind in ("images", "audio", "histograms", "scalars", "tensors", "graph",
                     "meta_graph", "run_metadata", "hparams", "text"):
            assert ours.get_raw_tags(kind) == theirs.get_raw_tags(kind), (path, kind)
        t_all, o_all = theirs.raw_events, ours.raw_events
        assert list(o_all) == list(t_all)
        for kind, by_tag in t_all.items():
            assert list(o_all[kind]) == list(by_tag), (path, kind)
            for tag, records in by_tag.items():
                got = ours.get_raw_events(kind, tag)
                if kind == "hparams":  # the plugin content bytes
                    assert got == records == o_all[kind][tag]
                    continue
                assert [type(r).__name__ for r in got] == [type(r).__name__ for r in records]
                # field by field (names, order, values; tensors as their bytes)
                assert [_plain(r) for r in got] == [_plain(r) for r in records], (kind, tag)
                assert [_plain(r) for r in o_all[kind][tag]] == [_plain(r) for r in got]
                n_records += len(records)
        n_files += 1
    assert n_files >= 5 and n_records > 50
    print(f"raw_tags/raw_events: {n_files} files, {n_records} records equal to tbparse's")


def test_raw_errors_as_tbparse(logdir):
    tbparse = _tbparse()
    from summarylog.summary_reader import SummaryReader
    path = _files(logdir)[0]
    for reader in (tbparse.SummaryReader, SummaryReader):
        d = reader(logdir)
        for call in (lambda r: r.raw_tags, lambda r: r.get_raw_tags("scalars"),
                     lambda r: r.raw_events, lambda r: r.get_raw_events("scalars")):
            with pytest.raises(ValueError, match="Not an event file"):
                call(d)
        f = reader(path)
        with pytest.raises(ValueError):
            f.get_raw_tags("movies")
        with pytest.raises(KeyError):
            f.get_raw_events("movies")
        with pytest.raises(KeyError):
            f.get_raw_events("graph")
        with pytest.raises(ValueError):
            f.get_raw_events(None, "loss")
        with pytest.raises(KeyError):
            f.get_raw_events("scalars", "no such tag")


def _event_file(path: str, events: list) -> None:
    from summarylog.records import RecordWriter
    with RecordWriter(path) as rw:
        for ev in events:
            rw.write(ev if isinstance(ev, bytes) else ev.SerializeToString())


@pytest.mark.parametrize("version", ["brain.Event:2", None])
def test_raw_purge_as_tbparse(tmp_path, version):
    """A restart inside one file: with a file version, SessionLog START at step 3 drops
    every scalar/histogram/image/audio value of step >= 3 (tensors stay); without one, an
    out-of-order step drops its tags' later values only."""
    tbparse = _tbparse()
    pb = require_module("tensorboard.compat.proto.event_pb2")
    spb = require_module("tensorboard.compat.proto.summary_pb2")
    tpb = require_module("tensorboard.compat.proto.tensor_pb2")
    from summarylog.summary_reader import SummaryReader

    def ev(step, **values):
        vals = [spb.Summary.Value(tag="a", simple_value=values.get("a", step)),
                spb.Summary.Value(tag="t", tensor=tpb.TensorProto(dtype=1, float_val=[step]))]
        if "b" in values:
            vals.append(spb.Summary.Value(tag="b", simple_value=values["b"]))
        return pb.Event(step=step, wall_time=100.0 + step, summary=spb.Summary(value=vals))

    events = [pb.Event(wall_time=1.0, file_version=version)] if version else []
    events += [ev(i, b=float(i)) for i in range(6)]
    events += [pb.Event(step=3, wall_time=200.0, session_log=pb.SessionLog(status=1)),
               ev(2, a=-1.0), ev(7, b=7.0)]
    path = str(tmp_path / "events.out.tfevents.1.purge")
    _event_file(path, events)
    theirs, ours = tbparse.SummaryReader(path), SummaryReader(path)
    assert ours.raw_tags == theirs.raw_tags
    for kind in ("scalars", "tensors"):
        t, o = theirs.get_raw_events(kind), ours.get_raw_events(kind)
        assert {k: [_plain(r) for r in v] for k, v in o.items()} == \
            {k: [_plain(r) for r in v] for k, v in t.items()}, kind
    steps = {k: [r.step for r in v] for k, v in ours.get_raw_events("scalars").items()}
    print(f"purge (file_version={version}): scalar steps {steps}, equal to tbparse's")


def _restart_file(tmp_path) -> str:
    """Steps 0-5, then a SessionLog START at step 3 (a writer appending after a restart)
    and steps 3-4 again, in one brain.Event:2 file: scalars (simple and new-style),
    histograms, text and audio; "late" is a histogram tag only at steps 4-5."""
    pb = require_module("tensorboard.compat.proto.event_pb2")
    spb = require_module("tensorboard.compat.proto.summary_pb2")
    ts = require_module("torch.utils.tensorboard.summary")
    wav = _wav(_pcm16(MONO[2]))

    def ev(step: int, x: float, late: bool = False):
        s = spb.Summary()
        for part in (ts.scalar("a", x), ts.scalar("n", x, new_style=True),
                     ts.histogram("h", np.arange(5.0) * x, "auto"), ts.text("t", f"x{x}"),
                     _audio_event(step, wav).summary):
            s.value.extend(part.value)
        if late:  # a tag whose every value is purged: listed, but no pivot column
            s.value.extend(ts.histogram("late", np.arange(3.0), "auto").value)
        return pb.Event(step=step, wall_time=10.0 + step, summary=s)

    events = [pb.Event(wall_time=1.0, file_version="brain.Event:2")]
    events += [ev(i, float(i), late=i >= 4) for i in range(6)]
    events += [pb.Event(step=3, wall_time=30.0, session_log=pb.SessionLog(status=1)),
               ev(3, 99.0), ev(4, 98.0)]
    path = str(tmp_path / "events.out.tfevents.1.restart")
    _event_file(path, events)
    return path


# all the kinds at once: tbparse keeps only the last tensor of a tag (text too) when
# "tensors" is not among event_types
_RESTART_KINDS = {"scalars", "tensors", "histograms", "text", "audio"}


def _restart_frames_equal(path: str, tbparse, kind: str) -> list:
    pd = require_module("pandas")
    from summarylog.summary_reader import SummaryReader
    for pivot in (False, True):
        kw = {"event_types": _RESTART_KINDS, "extra_columns": {"wall_time"}, "pivot": pivot}
        theirs = getattr(tbparse.SummaryReader(path, **kw), kind)
        pd.testing.assert_frame_equal(getattr(SummaryReader(path, **kw), kind), theirs)
    return list(theirs["step"])


def test_restart_inside_a_file_frames_as_tbparse(tmp_path, tbparse_with_wave):
    """After a restart inside one file, histograms and audio of steps >= 3 read before
    the START are dropped, text kept, as tbparse's (EventAccumulator's) frames."""
    from summarylog.summary_reader import SummaryReader
    path = _restart_file(tmp_path)
    steps = {kind: _restart_frames_equal(path, tbparse_with_wave, kind)
             for kind in ("scalars", "histograms", "text", "audio")}
    assert SummaryReader(path, event_types=_RESTART_KINDS).get_tags() == \
        tbparse_with_wave.SummaryReader(path, event_types=_RESTART_KINDS).get_tags()
    assert SummaryReader(path).get_tags("histograms") == ["h", "late"]
    assert steps["histograms"] == steps["audio"] == [0, 1, 2, 3, 4]
    print(f"restart inside a file: steps {steps}, frames equal to tbparse's")


def test_restart_inside_a_file_keeps_tensors_as_tbparse(tmp_path, tbparse_with_wave):
    steps = _restart_frames_equal(_restart_file(tmp_path), tbparse_with_wave, "tensors")
    print(f"restart inside a file: tensors steps {steps}, equal to tbparse's")


# -- audio frames ---------------------------------------------------------------------------
def _wave_decode(data: bytes):
    """The test's own decode_wav: the standard library's reader, int16 / 32768."""
    with wave.open(io.BytesIO(data)) as w:
        assert w.getsampwidth() == 2
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, w.getnchannels())
        rate = w.getframerate()
    return pcm.astype(np.float32) / np.float32(32768), rate


class _Numpy:
    def __init__(self, value) -> None:
        self.value = value

    def numpy(self):
        return self.value


def _stub_decode_wav(data: bytes):
    samples, rate = _wave_decode(data)
    return _Numpy(samples), _Numpy(np.int32(rate))  # TensorFlow's rate is an int32 scalar


@pytest.fixture
def tbparse_with_wave(monkeypatch):
    """tbparse whose TensorFlow is a stub holding only audio.decode_wav (the wave module)."""
    tbparse = _tbparse()
    stub = types.SimpleNamespace(audio=types.SimpleNamespace(
        decode_wav=lambda b: _stub_decode_wav(b)))
    monkeypatch.setattr(tbparse.summary_reader, "tensorflow", stub)
    return tbparse


@pytest.mark.parametrize("source", ["torch", "ours", "."])
@pytest.mark.parametrize("pivot", [False, True])
def test_audio_frames_equal_tbparse_on_wave(logdir, tbparse_with_wave, source, pivot):
    pd = require_module("pandas")
    from summarylog.summary_reader import SummaryReader
    path = os.path.join(logdir, source)
    for extra in AUDIO_EXTRAS:
        kw = {"pivot": pivot, "extra_columns": extra, "event_types": {"audio"}}
        theirs = tbparse_with_wave.SummaryReader(path, **kw).audio
        ours = SummaryReader(path, **kw).audio
        pd.testing.assert_frame_equal(ours, theirs)
        assert ours.shape[0] > 0
    print(f"audio {source} pivot={pivot}: {ours.shape[0]} rows x {ours.shape[1]} columns, "
          f"equal to tbparse's (decode_wav of wave) for {len(AUDIO_EXTRAS)} column sets")


def test_audio_values_are_the_written_samples(logdir):
    """Each value is exactly the writer's int16 samples / 32768, float32, frames x
    channels; the extra columns are the Audio proto's."""
    from summarylog.summary_reader import SummaryReader
    extra = {"content_type", "length_frames", "sample_rate"}
    df = SummaryReader(os.path.join(logdir, "ours"), event_types={"audio"},
                       extra_columns=extra).audio
    voice = df[df["tag"] == "voice"]
    assert list(voice["step"]) == [0, 1, 2, 3]
    for (_, row), i in zip(voice.iterrows(), range(4)):
        want = _pcm16(MONO[i % 3]).astype(np.float32)[:, None] / np.float32(32768)
        assert row["value"].dtype == np.float32 and row["value"].shape == (len(MONO[i % 3]), 1)
        assert np.array_equal(row["value"], want)
        assert (row["content_type"], row["length_frames"], row["sample_rate"]) == \
            ("audio/wav", len(MONO[i % 3]), 8000.0)
    stereo = df[df["tag"] == "stereo"]
    for value, clip in zip(stereo["value"], (STEREO, STEREO[::-1])):
        assert value.shape == (200, 2)
        assert np.array_equal(value, _pcm16(clip).astype(np.float32) / np.float32(32768))
    torch_df = SummaryReader(os.path.join(logdir, "torch"), event_types={"audio"}).audio
    for value, i in zip(torch_df["value"], range(4)):
        assert np.array_equal(value[:, 0], _pcm16(MONO[i % 3]) / np.float32(32768))
    print(f"audio: {len(df) + len(torch_df)} values equal to the written int16 / 32768")


def test_tensorboardx_audio_mono_and_stereo(tmp_path, tbparse_with_wave):
    """tensorboardX's add_audio (soundfile's WAV, mono and stereo): frames equal tbparse's
    on wave for every option, raw records equal tbparse's."""
    pd = require_module("pandas")
    tbx = require_module("tensorboardX")
    require_module("soundfile")
    from summarylog.summary_reader import SummaryReader
    w = tbx.SummaryWriter(str(tmp_path / "run"))
    for i in range(3):
        w.add_audio("mono", MONO[i], i, sample_rate=16000)
        w.add_audio("stereo", STEREO * (i + 1) / 3, i, sample_rate=44100)
    w.close()
    for pivot in (False, True):
        for extra in AUDIO_EXTRAS:
            kw = {"pivot": pivot, "extra_columns": extra, "event_types": {"audio"}}
            theirs = tbparse_with_wave.SummaryReader(str(tmp_path), **kw).audio
            pd.testing.assert_frame_equal(SummaryReader(str(tmp_path), **kw).audio, theirs)
    (path,) = glob.glob(str(tmp_path / "run" / "events.*"))
    ours = SummaryReader(path, event_types={"audio"})
    theirs = tbparse_with_wave.SummaryReader(path, event_types={"audio"})
    for tag in ("mono", "stereo"):
        assert [_plain(r) for r in ours.get_raw_events("audio", tag)] == \
            [_plain(r) for r in theirs.get_raw_events("audio", tag)]
    shapes = sorted({v.shape for v in ours.audio["value"]})
    print(f"tensorboardX audio: 6 values, shapes {shapes}, equal to tbparse's on wave")


# -- static helpers -------------------------------------------------------------------------
def test_media_helpers(logdir, tbparse_with_wave):
    tbparse = tbparse_with_wave
    require_module("PIL")
    from summarylog.summary_reader import SummaryReader
    (path,) = glob.glob(os.path.join(logdir, "ours", "a", "events.*"))
    raw = SummaryReader(path)
    wavs = [e.encoded_audio_string for e in raw.get_raw_events("audio", "stereo")]
    for tensor in (np.array([[wavs[0], b""]], dtype=object),
                   np.array([[w, b""] for w in wavs], dtype=object)):
        ours = SummaryReader.tensor_to_audio(tensor)
        theirs = tbparse.SummaryReader.tensor_to_audio(tensor)
        assert list(ours) == list(theirs)
        for key in ours:
            assert np.asarray(ours[key]).dtype == np.asarray(theirs[key]).dtype, key
            np.testing.assert_array_equal(ours[key], theirs[key])
    with pytest.raises(ValueError, match="labels"):
        SummaryReader.tensor_to_audio(np.array([[wavs[0], b"x"]], dtype=object))
    with pytest.raises(ValueError):
        SummaryReader.tensor_to_audio(np.array([[b"garbage", b""]], dtype=object))
    # an image-plugin tensor (width, height, PNG), made of the image the writer logged
    ev = raw.get_raw_events("images", "pic")[2]
    one = np.array([str(ev.width).encode(), str(ev.height).encode(), ev.encoded_image_string],
                   dtype=object)
    assert list(one[:2]) == [b"5", b"4"]
    for tensor in (one, np.concatenate([one, one[2:]])):
        got = SummaryReader.tensor_to_image(tensor)
        assert (got["width"], got["height"]) == (5, 4)
        want = np.full((4, 5, 3), 80, np.uint8)
        assert np.array_equal(got["image"], want if len(tensor) == 3 else np.stack([want] * 2))
    t = np.array([[0.0, 1.0, 3.0], [1.0, 2.5, 4.0]])
    ours_h = SummaryReader.buckets_to_histogram_dict(t)
    theirs_h = tbparse.SummaryReader.buckets_to_histogram_dict(t)
    assert list(ours_h) == list(theirs_h)
    for key in ours_h:
        np.testing.assert_array_equal(ours_h[key], theirs_h[key])


# -- hostile input --------------------------------------------------------------------------
def _audio_event(step: int, wav: bytes):
    pb = require_module("tensorboard.compat.proto.event_pb2")
    spb = require_module("tensorboard.compat.proto.summary_pb2")
    audio = spb.Summary.Audio(sample_rate=8000, num_channels=1, length_frames=3,
                              encoded_audio_string=wav, content_type="audio/wav")
    return pb.Event(step=step, wall_time=50.0 + step,
                    summary=spb.Summary(value=[spb.Summary.Value(tag="snd", audio=audio)]))


def _wav(pcm: np.ndarray, bits: int = 16) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(bits // 8)
        w.setframerate(8000)
        w.writeframes(pcm.tobytes())
    return out.getvalue()


def test_hostile_audio_values_left_out_and_reported(tmp_path):
    """Garbage bytes, a data chunk longer than the bytes, 8-bit samples, a chunk of
    4 GiB claimed, an empty string and a record that is not an Event: the good values
    read, the bad ones left out of the frame and counted in damage(), raw records equal
    tbparse's (it keeps WAV bytes undecoded)."""
    tbparse = _tbparse()
    pb = require_module("tensorboard.compat.proto.event_pb2")
    from summarylog.summary_reader import SummaryReader
    good = _wav(np.array([1, -2, 32767], "<i2"))
    long_data = good[:-6] + b"\x00\x00"  # the data chunk claims 6 bytes, 2 are left
    huge = good[:40] + (0xFFFFFFF0).to_bytes(4, "little") + good[44:]
    bad = [os.urandom(300), long_data, _wav(np.array([1, 2, 3], np.uint8), bits=8), huge, b""]
    events = [pb.Event(wall_time=1.0, file_version="brain.Event:2"), _audio_event(0, good)]
    events += [_audio_event(i + 1, b) for i, b in enumerate(bad)]
    events += [_audio_event(9, good)]
    path = str(tmp_path / "events.out.tfevents.1.hostile")
    _event_file(path, events)
    ours = SummaryReader(path, event_types={"audio"})
    df = ours.audio
    assert list(df["step"]) == [0, 9]
    assert np.array_equal(df["value"][0][:, 0], np.array([1, -2, 32767]) / np.float32(32768))
    (rep,) = ours.damage().values()
    assert rep.bad_values == len(bad)
    theirs = tbparse.SummaryReader(path)
    assert [_plain(r) for r in ours.get_raw_events("audio", "snd")] == \
        [_plain(r) for r in theirs.get_raw_events("audio", "snd")]
    from summarylog.frames_media import WavError, decode_wav
    for b in bad:
        with pytest.raises(WavError):
            decode_wav(b)
    with pytest.raises(TypeError):
        decode_wav("RIFF")  # type: ignore[arg-type]
    print(f"hostile audio: 2 good values read, {rep.bad_values} bad WAVs left out and reported")


def test_hostile_images_left_out_and_reported(tmp_path):
    """Images that are not images (random bytes, a PNG cut short, a PNG claiming
    2^30 x 2^30 pixels): left out of the frame and counted in damage(), the good ones
    read (tbparse with TensorFlow raises on the first)."""
    pb = require_module("tensorboard.compat.proto.event_pb2")
    spb = require_module("tensorboard.compat.proto.summary_pb2")
    Image = require_module("PIL.Image")
    from summarylog.summary_reader import SummaryReader
    out = io.BytesIO()
    Image.fromarray(np.full((2, 3, 3), 9, np.uint8)).save(out, format="PNG")
    good = out.getvalue()
    ihdr = struct.pack(">IIBBBBB", 1 << 30, 1 << 30, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + \
        struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)) + good[33:]
    bad = [os.urandom(200), good[: len(good) // 2], bomb]

    def image_event(step: int, png: bytes):
        img = spb.Summary.Image(height=2, width=3, colorspace=3, encoded_image_string=png)
        return pb.Event(step=step, wall_time=float(step),
                        summary=spb.Summary(value=[spb.Summary.Value(tag="pic", image=img)]))

    events = [pb.Event(wall_time=0.0, file_version="brain.Event:2"), image_event(0, good)]
    events += [image_event(i + 1, b) for i, b in enumerate(bad)] + [image_event(9, good)]
    path = str(tmp_path / "events.out.tfevents.1.images")
    _event_file(path, events)
    r = SummaryReader(path, event_types={"images"}, pivot=True)
    df = r.images
    assert list(df["step"]) == [0, 9] and np.array_equal(df["pic"][0], np.full((2, 3, 3), 9))
    (rep,) = r.damage().values()
    assert rep.bad_values == len(bad)
    print(f"hostile images: 2 good images read, {rep.bad_values} bad ones left out and reported")


def test_raw_on_garbage_records_and_files(tmp_path):
    """A record with a valid CRC that is not an Event (tbparse raises DecodeError on it)
    and a file of random bytes named like an event file: the raw accessors read the rest,
    the bad record is reported by damage(), the random file holds no tags."""
    pb = require_module("tensorboard.compat.proto.event_pb2")
    from summarylog.summary_reader import SummaryReader
    path = str(tmp_path / "events.out.tfevents.1.badrecord")
    events = [pb.Event(wall_time=1.0, file_version="brain.Event:2"),
              _audio_event(0, _wav(np.array([5, 6], "<i2"))), b"\xff\xff\xff",
              _audio_event(1, _wav(np.array([7, 8], "<i2")))]
    _event_file(path, events)
    r = SummaryReader(path, event_types={"audio"})
    assert [e.step for e in r.get_raw_events("audio", "snd")] == [0, 1]
    assert list(r.audio["step"]) == [0, 1]
    (rep,) = r.damage().values()
    assert rep.bad_events == 1
    junk = tmp_path / "events.out.tfevents.2.random"
    junk.write_bytes(np.random.default_rng(3).bytes(1 << 16))
    tags = SummaryReader(str(junk)).raw_tags
    assert not any(tags.values())
    print(f"garbage record: 2 audio records read around it, {rep.bad_events} bad event "
          f"reported; random file: {len(tags)} empty tag lists")


def test_decode_wav_fuzz(rng):
    """Every cut and thousands of byte flips of valid WAVs (mono, stereo, an 18-byte
    format chunk, an extra chunk, a JUNK chunk before the format): decoded or WavError,
    never another exception, never more samples than the bytes hold."""
    from summarylog.frames_media import WavError, decode_wav
    base = _wav(np.arange(-50, 50, dtype="<i2") * 300)
    stereo = base[:22] + b"\x02\x00" + base[24:28] + (32000).to_bytes(4, "little") + \
        b"\x04\x00" + base[34:]
    ext = base[:16] + b"\x12\x00\x00\x00" + base[20:36] + b"\x00\x00" + \
        b"LIST\x04\x00\x00\x00abcd" + base[36:]
    junk = base[:12] + b"JUNK\x06\x00\x00\x00123456" + base[12:]  # skipped, as decode_wav does
    seeds = [base, stereo, ext, junk]
    for s in seeds:
        samples, rate = decode_wav(s)
        assert rate == 8000 and samples.size == 100
    assert decode_wav(stereo)[0].shape == (50, 2)
    with pytest.raises(WavError, match="before the format chunk"):
        decode_wav(base[:12] + b"LIST\x00\x00\x00\x00" + base[12:])
    outcomes = {"decoded": 0, "WavError": 0}
    t0 = time.perf_counter()
    cases = [s[:n] for s in seeds for n in range(len(s))]
    for _ in range(3000):
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(min(len(b), 60))] = rng.randrange(256)
        cases.append(bytes(b))
    for b in cases:
        try:
            samples, _ = decode_wav(b)
        except WavError:
            outcomes["WavError"] += 1
            continue
        assert samples.dtype == np.float32 and 2 * samples.size <= len(b)
        outcomes["decoded"] += 1
    print(f"decode_wav fuzz: {len(cases)} inputs in {time.perf_counter() - t0:.2f} s: "
          f"{outcomes}")


def test_truncated_file_read_up_to_the_cut(tmp_path):
    """An event file cut inside a record: raw records equal tbparse's (both read up to the
    cut), audio frames of the intact values, the tail reported; in a subprocess with a
    generous timeout (no hang)."""
    import subprocess
    import sys
    import textwrap
    tbparse = _tbparse()
    torch_tb = require_module("torch.utils.tensorboard")
    from summarylog.summary_reader import SummaryReader
    w = torch_tb.SummaryWriter(str(tmp_path))
    for i in range(60):
        w.add_scalar("loss", float(i), i)
        w.add_audio("snd", MONO[i % 3], i, sample_rate=8000)
    w.close()
    (path,) = glob.glob(str(tmp_path / "events.*"))
    data = pathlib.Path(path).read_bytes()
    with open(path, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    theirs, ours = tbparse.SummaryReader(path), SummaryReader(path)
    assert ours.raw_tags == theirs.raw_tags
    t_events, o_events = theirs.raw_events, ours.raw_events
    for kind in ("scalars", "audio"):
        assert [_plain(r) for r in o_events[kind]["snd" if kind == "audio" else "loss"]] == \
            [_plain(r) for r in t_events[kind]["snd" if kind == "audio" else "loss"]]
    n_raw = len(o_events["audio"]["snd"])
    code = textwrap.dedent(f"""
        from summarylog.summary_reader import SummaryReader
        r = SummaryReader({path!r}, event_types={{"audio", "scalars"}})
        (rep,) = r.damage().values()
        print(len(r.audio), len(r.scalars), rep.tail is not None, rep.bad_values)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=60, env={**os.environ, "PYTHONSAFEPATH": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    n_audio, n_scalars, tail, bad = out.stdout.split()
    assert int(n_audio) == n_raw and 20 < n_raw < 60 and tail == "True" and bad == "0"
    print(f"truncated file: {n_audio} audio and {n_scalars} scalars of 60 read, tail reported")


def test_raw_speed_vs_tbparse(tmp_path):
    """Figures only (printed): raw_events on a 40 000-scalar file."""
    tbparse = _tbparse()
    from summarylog import SummaryWriter
    from summarylog.summary_reader import SummaryReader
    w = SummaryWriter(str(tmp_path))
    for i in range(10_000):
        for t in ("a", "b", "c", "d"):
            w.add_scalar(t, i * 0.5, i)
    w.close()
    (path,) = glob.glob(str(tmp_path / "events.*"))
    t0 = time.perf_counter()
    theirs = tbparse.SummaryReader(path).raw_events
    t1 = time.perf_counter()
    ours = SummaryReader(path).raw_events
    t2 = time.perf_counter()
    assert sum(map(len, ours["scalars"].values())) == 40_000
    assert [_plain(r) for r in ours["scalars"]["c"]] == [_plain(r) for r in theirs["scalars"]["c"]]
    print(f"raw_events on 40k scalars: {t2 - t1:.2f} s, tbparse {t1 - t0:.2f} s")
