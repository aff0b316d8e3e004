"""An encoded image's pixels as tbparse gives them: TensorFlow's ``tf.image.decode_image``
(uint8), decoded here with Pillow.

TensorFlow's rules, where Pillow's defaults differ: a PNG keeps its channels (gray 1,
gray+alpha 2, RGB 3, RGBA 4; a palette expands to RGB, or RGBA with a tRNS chunk; a
colour-key tRNS of a gray or RGB PNG is ignored); 16-bit samples keep their high byte;
1-bit gray is 0 or 255.  A GIF is every frame, (frames, height, width, 3), each frame
drawn over the previous one (its transparent pixels keep the previous frame's, black in
the first), whatever the frame's disposal method says."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

__all__ = ["decode_image"]

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_GRAY_ALPHA = 4  # PNG colour type


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("SummaryReader.images needs Pillow: pip install pillow") from None
    return Image


def _png_header(data: bytes) -> tuple[int, int] | None:
    """(bit depth, colour type) from a PNG's IHDR, None when not a PNG."""
    if data[:8] != _PNG_MAGIC or data[12:16] != b"IHDR" or len(data) < 26:
        return None
    return data[24], data[25]


def _still(im: Any, header: tuple[int, int] | None) -> np.ndarray:
    if header is not None and header[1] == _GRAY_ALPHA and im.mode == "RGBA":
        # Pillow widens 16-bit gray+alpha to RGBA (high bytes): back to 2 channels
        return np.asarray(im, dtype=np.uint8)[:, :, [0, 3]]
    if im.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        arr = np.asarray(im)
        if header is not None and header[0] == 16:
            return (arr.astype(np.uint32) >> 8).astype(np.uint8)  # the high byte
        return np.clip(arr, 0, 255).astype(np.uint8)
    if im.mode == "1":
        im = im.convert("L")  # 0 or 255
    elif im.mode in ("P", "PA"):
        im = im.convert("RGBA" if im.mode == "PA" or "transparency" in im.info else "RGB")
    elif im.mode not in ("L", "LA", "RGB", "RGBA"):
        im = im.convert("RGB")
    return np.asarray(im, dtype=np.uint8)


def _gif(im: Any, image: Any) -> np.ndarray:
    """Every frame, drawn as TensorFlow's GIF decoder draws them.  Frames x pixels is
    capped as Pillow caps one image's pixels (its decompression-bomb error), before any
    frame is decoded."""
    from PIL import ImageSequence
    w, h = im.size
    n = getattr(im, "n_frames", 1)
    if image.MAX_IMAGE_PIXELS and n * w * h > 2 * image.MAX_IMAGE_PIXELS:
        raise image.DecompressionBombError(
            f"GIF of {n} frames of {w}x{h} pixels exceeds the limit of "
            f"{2 * image.MAX_IMAGE_PIXELS} pixels")
    out: list[np.ndarray] = []
    for frame in ImageSequence.Iterator(im):
        rgba = np.asarray(frame.convert("RGBA"), dtype=np.uint8)
        rgb = rgba[:, :, :3].copy()
        clear = rgba[:, :, 3] == 0
        rgb[clear] = 0 if not out else out[-1][clear]
        out.append(rgb)
    return np.stack(out)


def decode_image(data: bytes) -> np.ndarray:
    """``data`` (PNG, GIF, BMP, JPEG...) as uint8 height x width x channels, a GIF as
    frames x height x width x 3.  JPEG pixels are Pillow's (TensorFlow's faster inverse
    DCT rounds some pixels a few levels apart).  Raises what Pillow raises on data that
    does not decode."""
    image = _pillow()
    with image.open(io.BytesIO(data)) as im:
        if im.format == "GIF":
            return _gif(im, image)
        arr = _still(im, _png_header(data))
    return arr[:, :, None] if arr.ndim == 2 else arr
