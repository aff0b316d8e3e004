"""frames_pixels.decode_image follows TensorFlow's decode_image where Pillow's defaults
differ (measured against TensorFlow 2.21 in tests/integration/test_summary_reader_tf.py;
here without TensorFlow): 1-bit and 16-bit gray, 16-bit gray+alpha, GIF frames drawn over
each other; and a GIF whose frames x pixels would be a decompression bomb is refused
before any frame is decoded."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zlib

import numpy as np
import pytest
from conftest import require_module

from summarylog.frames_pixels import decode_image


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(w: int, h: int, depth: int, ctype: int, rows: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(rows))
            + _chunk(b"IEND", b""))


def test_png_channels_and_depths_as_tensorflow():
    require_module("PIL")
    rng = np.random.default_rng(0)
    # 1-bit gray: one channel of 0 or 255 (Pillow's mode "1" would go to RGB)
    bits = rng.integers(0, 2, (3, 8)).astype(np.uint8)
    rows = b"".join(b"\x00" + bytes([int("".join(map(str, r)), 2)]) for r in bits)
    got = decode_image(_png(8, 3, 1, 0, rows))
    assert got.shape == (3, 8, 1) and got.dtype == np.uint8
    np.testing.assert_array_equal(got[:, :, 0], bits * 255)
    # 16-bit gray: the high byte, one channel
    g16 = rng.integers(0, 65536, (4, 5)).astype(">u2")
    got = decode_image(_png(5, 4, 16, 0, b"".join(b"\x00" + r.tobytes() for r in g16)))
    assert got.shape == (4, 5, 1)
    np.testing.assert_array_equal(got[:, :, 0], (g16.astype(np.int64) >> 8).astype(np.uint8))
    # 16-bit gray+alpha: two channels (Pillow widens it to RGBA)
    la = rng.integers(0, 65536, (4, 10)).astype(">u2")
    got = decode_image(_png(5, 4, 16, 4, b"".join(b"\x00" + r.tobytes() for r in la)))
    assert got.shape == (4, 5, 2)
    np.testing.assert_array_equal(got, (la.astype(np.int64) >> 8).astype(np.uint8).reshape(4, 5, 2))
    print("PNG 1-bit gray, 16-bit gray and gray+alpha: TensorFlow's channels and bytes")


def test_gif_frames_drawn_over_each_other():
    image = require_module("PIL.Image")
    rng = np.random.default_rng(1)
    frames = [(rng.integers(0, 4, (5, 7)) * 60).astype(np.uint8) for _ in range(3)]
    pics = [image.fromarray(np.asarray(f, np.uint8)).convert("P") for f in frames]
    b = io.BytesIO()
    # index 0 transparent, disposal 2: Pillow clears each frame; TensorFlow ignores that
    pics[0].save(b, "GIF", save_all=True, append_images=pics[1:], transparency=0, disposal=2)
    got = decode_image(b.getvalue())
    assert got.shape == (3, 5, 7, 3) and got.dtype == np.uint8
    want = []
    for f in frames:
        gray = np.where(f == 0, want[-1] if want else 0, f) if want else f
        want.append(gray)
    np.testing.assert_array_equal(got, np.repeat(np.stack(want)[..., None], 3, axis=-1))
    print(f"GIF of {len(frames)} frames with transparency and disposal 2: drawn as TensorFlow")


def _gif_bomb(frames: int, side: int) -> bytes:
    """A GIF of ``frames`` 1x1 frames on a ``side`` x ``side`` screen: tiny on disk, each
    decoded frame the full screen."""
    out = b"GIF89a" + struct.pack("<HH", side, side) + b"\x80\x00\x00" + b"\x00" * 3 + b"\xff" * 3
    for _ in range(frames):
        out += b"\x2c" + struct.pack("<HHHH", 0, 0, 1, 1) + b"\x00" + b"\x02\x02\x44\x01\x00"
    return out + b"\x3b"


def test_gif_bomb_refused_before_decoding():
    image = require_module("PIL.Image")
    data = _gif_bomb(400, 1000)  # 400 M pixels, 1.2 GB of RGB frames
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(image.DecompressionBombError):
        decode_image(data)
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 << 20
    small = decode_image(_gif_bomb(3, 20))
    assert small.shape == (3, 20, 20, 3)
    print(f"GIF bomb of {len(data)} bytes (400 frames of 1000x1000): refused in {took:.2f} s, "
          f"{peak / 2**20:.1f} MiB peak")
