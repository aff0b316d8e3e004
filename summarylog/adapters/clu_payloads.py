"""What CLU's TensorBoard writer (``clu.metric_writers.SummaryWriter``, over
``tf.summary``) writes, as summarylog event payloads: hyperparameters flattened with
dots into one session start record, and audio clips as the audio plugin's rows of
[16-bit WAV, label]; and videos, which CLU's writers skip, as torch's add_video writes
them (an animated GIF).  The checks run on the caller's thread; the encoders on the
writer's."""

from __future__ import annotations

import hashlib
import json
import numbers
from typing import Any, Mapping

import numpy as np

from ..checks import check_size, check_tag
from ..dialects.tb_plugins import SESSION_START_TAG
from ..dialects.tensorboard import hparam_value, plugin_metadata, value_event
from ..pb import POOL, tb
from ..values import to_numpy

__all__ = ["flatten_hparams", "hparams_values", "hparams_session_payload", "check_clips",
           "check_sample_rate", "audio_payload", "pcm16_tf", "check_clip_video",
           "video_payload", "VIDEO_FPS"]

#: frames a second of a CLU video (CLU's interface has no rate): torch's add_video default
VIDEO_FPS = 4.0

_WAV = POOL.FindEnumTypeByName(
    "summarylog.tb.AudioPluginData.Encoding").values_by_name["WAV"].number
_DT_FLOAT = tb.DataType.values_by_name["DT_FLOAT"].number
_DT_STRING = tb.DataType.values_by_name["DT_STRING"].number


def flatten_hparams(hparams: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, Any]]:
    """``(dotted key, value)`` pairs, as CLU flattens hparams for TensorBoard: mappings
    (and objects with ``items()``, e.g. ml_collections' ConfigDict) and lists/tuples
    (keys their indices) are opened; None becomes ``""``."""
    out: list[tuple[str, Any]] = []
    for k, v in hparams.items():
        key = prefix + (str(k),)
        if isinstance(v, Mapping) or hasattr(v, "items"):
            out += flatten_hparams(v, key)
        elif isinstance(v, (list, tuple)):
            out += flatten_hparams({str(i): x for i, x in enumerate(v)}, key)
        else:
            out.append((".".join(key), "" if v is None else v))
    return out


def _plain(key: str, v: Any) -> bool | int | float | str:
    """One flattened value as TensorBoard's hparams summary takes it: bool, int, float
    or str (numpy scalars and 0-d arrays as their Python value)."""
    if isinstance(v, np.generic) or (hasattr(v, "shape") and tuple(v.shape) == ()
                                     and hasattr(v, "dtype")):
        v = to_numpy(v, f"hparams[{key!r}]").item()
    if isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"hparams[{key!r}] must be bool, int, float or str (after flattening), "
                    f"got {type(v).__name__}")


def hparams_values(hparams: Any) -> dict[str, bool | int | float | str]:
    """``hparams`` flattened and checked: TypeError naming a key whose value
    TensorBoard cannot show, ValueError for two entries flattening to one key."""
    if not (isinstance(hparams, Mapping) or hasattr(hparams, "items")):
        raise TypeError(f"hparams must be a mapping, got {type(hparams).__name__}")
    out: dict[str, bool | int | float | str] = {}
    for key, v in flatten_hparams(hparams):
        check_tag(key, "hparams key")
        if key in out:
            raise ValueError(f"hparams: two entries flatten to the key {key!r}")
        out[key] = _plain(key, v)
    return out


def hparams_session_payload(wall_time: float, values: Mapping[str, Any]) -> bytes:
    """The one record tf.summary's ``hparams`` writes at step 0: the session start
    with the values, named (group) by the SHA-256 of their sorted JSON, so runs with
    equal hparams are one group in the HParams tab."""
    group = hashlib.sha256(json.dumps(dict(values), sort_keys=True, separators=(",", ":"))
                           .encode("utf-8")).hexdigest()
    start = tb.SessionStartInfo(group_name=group, start_time_secs=wall_time)
    for name in sorted(values):
        start.hparams[name].CopyFrom(hparam_value(name, values[name]))
    content = tb.HParamsPluginData(version=0, session_start_info=start).SerializeToString()
    return value_event(wall_time, 0, tag=SESSION_START_TAG,
                       metadata=plugin_metadata("hparams", content),
                       tensor={"dtype": _DT_FLOAT, "tensor_shape": {"dim": [{"size": 0}]}})


def check_sample_rate(sample_rate: Any) -> int:
    """A WAV sample rate: a positive whole number of frames a second."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Real):
        raise TypeError(f"sample_rate must be an int, got {type(sample_rate).__name__}")
    if sample_rate != int(sample_rate) or not 1 <= sample_rate < (1 << 31):
        raise ValueError(f"sample_rate must be a whole number in [1, 2**31), got {sample_rate!r}")
    return int(sample_rate)


def check_clips(key: str, value: Any) -> np.ndarray:
    """A private float32 copy of CLU audio ``[N, T, C]`` (floats in [-1, 1])."""
    name = f"audios[{key!r}]"
    arr = to_numpy(value, name)
    if arr.ndim != 3:
        raise ValueError(f"{name} must have shape [N, T, C], got {arr.shape}")
    if arr.dtype.kind != "f":
        raise TypeError(f"{name} must hold floats in [-1, 1], got dtype {arr.dtype}")
    if arr.shape[2] < 1 or arr.shape[2] > 0xFFFF:
        raise ValueError(f"{name} must have 1 to 65535 channels, got {arr.shape[2]}")
    check_size(arr.size * 2, name)  # the WAV's samples
    return np.array(arr, dtype=np.float32, copy=True)


def pcm16_tf(clip: np.ndarray) -> np.ndarray:
    """16-bit samples as TensorFlow's ``encode_wav`` makes them: times 32768, rounded
    half away from zero, clamped to int16 (NaN: silence)."""
    x = np.nan_to_num(clip.astype(np.float32), nan=0.0) * np.float32(32768.0)
    r = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))
    return np.clip(r, -32768, 32767).astype("<i2")


def audio_payload(wall_time: float, step: int, tag: str, clips: np.ndarray,
                  sample_rate: int) -> list[bytes]:
    """The audio event tf.summary.audio writes: a [N, 2] string tensor of (WAV, "")
    rows under the audio plugin's metadata (WAV encoding)."""
    from ..media_codecs import encode_wav

    rows: list[bytes] = []
    for clip in clips:
        rows += [encode_wav(pcm16_tf(clip), sample_rate), b""]
    md = plugin_metadata("audio", tb.AudioPluginData(version=0, encoding=_WAV).SerializeToString())
    tensor = tb.TensorProto(dtype=_DT_STRING, string_val=rows)
    tensor.tensor_shape.dim.add(size=len(clips))
    tensor.tensor_shape.dim.add(size=2)
    return [value_event(wall_time, step, tag=tag, metadata=md, tensor=tensor)]


def check_clip_video(key: str, value: Any) -> np.ndarray:
    """A private (N, T, C, H, W) copy of a CLU video, ``[N, T, H, W, C]`` or
    ``[T, H, W, C]`` (uint8, or floats in [0, 1]; 1, 3 or 4 channels)."""
    from ..summary_writer.media_checks import check_video

    name = f"videos[{key!r}]"
    arr = to_numpy(value, name)
    if arr.ndim == 4:
        arr = arr[None]
    if arr.ndim != 5:
        raise ValueError(f"{name} must have shape [N, T, H, W, C] or [T, H, W, C], "
                         f"got {arr.shape}")
    try:
        ntchw = check_video(arr, "NTHWC")
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None
    return ntchw


def video_payload(wall_time: float, step: int, tag: str, ntchw: np.ndarray,
                  fps: float) -> list[bytes]:
    """An animated GIF of the clips tiled into one grid per frame, in the Images tab,
    as torch's ``add_video`` writes it."""
    from ..dialects.tb_media import encoded_image_payload
    from ..media_codecs import encode_gif
    from ..summary_writer.media_prep import video_frames

    frames = video_frames(ntchw)
    _, h, w, c = frames.shape
    return [encoded_image_payload(wall_time, step, tag, encode_gif(frames, fps), h, w, c)]
