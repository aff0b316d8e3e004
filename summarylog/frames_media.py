"""Audio for SummaryReader without TensorFlow: WAV bytes decoded by the rules of
TensorFlow's ``tf.audio.decode_wav`` (what tbparse calls), and the audio fields of a
``Summary.Value`` the Reader passes on undecoded (kind ``"other"``)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .pb import message_class

__all__ = ["WavError", "audio_of_value", "decode_wav"]

_SCALE = np.float32(1.0 / 32768)  # a power of two: int16 / 32768 is exact in float32
_U32 = 0xFFFFFFFF
_INT32_MAX = 0x7FFFFFFF
# the chunks decode_wav skips between "WAVE" and "fmt " (others there: not a WAV)
_BEFORE_FMT = {b"JUNK", b"bext", b"iXML", b"qlty", b"mext", b"levl", b"link", b"axml"}
_VALUE: Any = None  # summarylog.tb.Summary.Value, built on first use


class WavError(ValueError):
    """Bytes that are not a WAV decode_wav reads (16-bit PCM), with why."""


class _Cursor:
    """Little-endian reads that never run past the end of the bytes."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str, what: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise WavError(f"WAV truncated in {what} at byte {self.pos} of {len(self.data)}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def expect(self, text: bytes, what: str) -> None:
        if self.take(f"{len(text)}s", what) != text:
            raise WavError(f"not a WAV: {what} is not {text!r}")


def decode_wav(data: bytes) -> tuple[np.ndarray, int]:
    """The samples of a 16-bit PCM WAV as float32 (frames x channels, int16 / 32768) and
    its sample rate, as ``tf.audio.decode_wav`` gives them; :class:`WavError` (a
    ValueError) for anything else.  No size read from the bytes is trusted."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"decode_wav wants bytes, not {type(data).__name__}")
    data = bytes(data)
    c = _Cursor(data)
    c.expect(b"RIFF", "the RIFF id")
    c.take("<I", "the RIFF size")  # not checked: decode_wav ignores it too
    c.expect(b"WAVE", "the WAVE id")
    chunk = c.take("4s", "the format chunk id")
    while chunk != b"fmt ":  # padding and broadcast-WAV chunks may come first
        if chunk not in _BEFORE_FMT:
            raise WavError(f"not a WAV: chunk {chunk!r} before the format chunk")
        size = c.take("<I", f"the size of chunk {chunk!r}")
        if c.pos + size > len(data):
            raise WavError(f"WAV chunk {chunk!r} of {size} bytes but {len(data) - c.pos} left")
        c.pos += size
        chunk = c.take("4s", "the format chunk id")
    fmt_size = c.take("<I", "the format chunk size")
    if fmt_size not in (16, 18):
        raise WavError(f"WAV format chunk of {fmt_size} bytes (16 or 18 expected)")
    audio_format = c.take("<H", "the audio format")
    if audio_format != 1:
        raise WavError(f"WAV audio format {audio_format}: only 1 (PCM) is read")
    channels = c.take("<H", "the channel count")
    if channels < 1:
        raise WavError("WAV of 0 channels")
    rate = c.take("<I", "the sample rate")
    byte_rate = c.take("<I", "the byte rate")
    block = c.take("<H", "the block size")
    bits = c.take("<H", "the bits per sample")
    if bits != 16:
        raise WavError(f"WAV of {bits}-bit samples: only 16-bit is read")
    if block != 2 * channels:
        raise WavError(f"WAV block size {block} for {channels} channel(s) of 16 bits")
    if byte_rate != (block * rate) & _U32:
        raise WavError(f"WAV byte rate {byte_rate} is not {block} x {rate}")
    if fmt_size == 18:
        c.take("<H", "the format extension size")
    samples: np.ndarray | None = None
    while c.pos < len(data):
        chunk = c.take("4s", "a chunk id")
        size = c.take("<I", "a chunk size")
        if size > _INT32_MAX:
            raise WavError(f"WAV chunk {chunk!r} of {size} bytes")
        if chunk != b"data":
            c.pos += size
            continue
        if samples is not None:
            raise WavError("WAV with more than one data chunk")
        count = size // block * channels
        if c.pos + 2 * count > len(data):
            raise WavError(f"WAV data chunk of {size} bytes but {len(data) - c.pos} left")
        samples = np.frombuffer(data, "<i2", count, c.pos)
        c.pos += 2 * count
    if samples is None:
        raise WavError("WAV without a data chunk")
    return (samples.astype(np.float32) * _SCALE).reshape(-1, channels), rate


def audio_of_value(value: bytes) -> dict[str, Any] | None:
    """The ``audio`` fields of a serialized ``Summary.Value`` (``encoded_audio_string``,
    ``content_type``, ``sample_rate``, ``length_frames``, as EventAccumulator keeps
    them), or None when the value holds no audio."""
    global _VALUE
    if _VALUE is None:
        _VALUE = message_class("summarylog.tb.Summary.Value")
    v = _VALUE.FromString(value)
    if v.WhichOneof("value") != "audio":
        return None
    a = v.audio
    return {"encoded_audio_string": a.encoded_audio_string, "content_type": a.content_type,
            "sample_rate": a.sample_rate, "length_frames": a.length_frames}
