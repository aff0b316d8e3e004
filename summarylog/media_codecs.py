"""WAV and GIF bytes of samples and frames already laid out: WAV (16-bit PCM) with the
standard library's ``wave``, animated GIF with Pillow (an optional package: the extra
named in the error when it is missing).  Called on the writer's background thread."""

from __future__ import annotations

import importlib
import io
import wave
from types import ModuleType

import numpy as np

__all__ = ["encode_gif", "encode_wav", "require_pillow"]


def require_pillow(method: str, extra: str) -> ModuleType:
    """The ``PIL.Image`` module, or an ImportError of one line naming the extra."""
    try:
        return importlib.import_module("PIL.Image")
    except ImportError:
        raise ImportError(f"{method} needs Pillow: pip install 'summarylog[{extra}]'") from None


def encode_wav(pcm: np.ndarray, sample_rate: int) -> bytes:
    """A WAV file of int16 samples, shape (frames,) mono or (frames, channels)."""
    if pcm.dtype != np.int16 or pcm.ndim not in (1, 2):
        raise ValueError(f"encode_wav wants int16 (frames,) or (frames, channels), "
                         f"got {pcm.dtype} {pcm.shape}")
    channels = 1 if pcm.ndim == 1 else pcm.shape[1]
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        # WAV is little-endian; a C-ordered (frames, channels) array is interleaved
        w.writeframes(np.ascontiguousarray(pcm, dtype="<i2").tobytes())
    return out.getvalue()


def encode_gif(frames: np.ndarray, fps: float) -> bytes:
    """An animated GIF looping forever of uint8 RGB frames (T, H, W, 3), shown ``fps``
    frames a second; each frame gets its own adaptive palette (Pillow's default, which
    is also what moviepy >= 2 writes through imageio)."""
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3 or not len(frames):
        raise ValueError(f"encode_gif wants uint8 (T, H, W, 3), got {frames.dtype} {frames.shape}")
    image = require_pillow("add_video", "video")
    pictures = [image.fromarray(f) for f in frames]
    out = io.BytesIO()
    pictures[0].save(out, format="GIF", save_all=True, append_images=pictures[1:],
                     duration=1000.0 / fps, loop=0)
    return out.getvalue()
