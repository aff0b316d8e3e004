"""A small PNG encoder (stdlib zlib, no PIL) of uint8 HWC images, gray to RGBA; rows use
PNG's "Up" filter, which suits photos and plots."""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["encode_png"]

_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(img: np.ndarray, level: int = 6) -> bytes:
    """PNG bytes of a uint8 array of shape (H, W, C), C in 1..4."""
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] not in _COLOR_TYPE:
        raise ValueError(
            f"encode_png wants uint8 HWC with 1-4 channels, got {img.dtype} {img.shape}")
    h, w, c = img.shape
    rows = img.reshape(h, w * c)
    raw = np.full((h, w * c + 1), 2, np.uint8)  # each row: filter type "Up", then its bytes
    raw[:, 1:] = rows
    raw[1:, 1:] -= rows[:-1]  # wraps mod 256, as the filter requires
    ihdr = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(raw.tobytes(), level)) + _chunk(b"IEND", b""))
