"""Media laid out as torch.utils.tensorboard and tensorboardX lay them out, before
encoding (on the background thread): 16-bit PCM samples, a video's batch tiled into
one grid per frame, boxes and labels drawn on an image.  (Figures: figure_snapshot.)"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..media_codecs import require_pillow

__all__ = ["draw_boxes", "pcm16", "video_frames", "video_grid"]


def pcm16(samples: np.ndarray) -> np.ndarray:
    """int16 samples of values in [-1, 1] (outside clipped), scaled by 32767 and
    truncated as the peers do; NaN is silence (the peers write an undefined value)."""
    a = samples
    if a.dtype.kind in "biu" or a.dtype == np.float16:  # float16 * 32767 loses the top
        a = a.astype(np.float32)
    a = np.clip(np.nan_to_num(a, nan=0.0), -1, 1)
    return (a * 32767).astype("<i2")


def _frame_u8(x: np.ndarray) -> np.ndarray:
    """The peers' pixels of video values: float32 times 255, clipped, truncated."""
    scaled = np.nan_to_num(x.astype(np.float32) * 255, nan=0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def video_grid(n: int) -> tuple[int, int]:
    """(rows, columns) of the peers' grid of n clips: n padded to a power of two,
    2**((bits(n)-1)//2) rows."""
    rows = 2 ** ((n.bit_length() - 1) // 2)
    return rows, (1 << (n - 1).bit_length()) // rows


def video_frames(ntchw: np.ndarray) -> np.ndarray:
    """(T, H', W', 3) uint8 frames of an (N, T, C, H, W) video: the batch padded with
    black to a power of two and tiled into 2**((bits(N)-1)//2) rows, as the peers do;
    uint8 taken as value/255 first; gray made RGB, alpha dropped."""
    n, t, c, h, w = ntchw.shape
    rows, cols = video_grid(n)
    out = np.zeros((t, rows * h, cols * w, 3), np.uint8)
    for i in range(n):  # one clip at a time: no float copy of the whole video
        x = ntchw[i].astype(np.float32) / 255.0 if ntchw.dtype == np.uint8 else ntchw[i]
        r, k = divmod(i, cols)
        clip = _frame_u8(np.transpose(x, (0, 2, 3, 1)))  # T, H, W, C
        out[:, r * h:(r + 1) * h, k * w:(k + 1) * w, :] = clip[..., :3] if c != 1 else clip
    return out


def draw_boxes(hwc: np.ndarray, boxes: np.ndarray, labels: Sequence[str] | None,
               rescale: float) -> np.ndarray:
    """``hwc`` (uint8 RGB or RGBA) with each box drawn as the peers draw it: a red
    outline 2 px wide, its label in black on a red band along the box's bottom left;
    then resized by ``rescale`` (Lanczos)."""
    image = require_pillow("add_image_with_boxes", "image")
    from PIL import ImageDraw, ImageFont

    picture = image.fromarray(hwc)
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default()
    texts = list(labels) if labels is not None else [""] * len(boxes)
    extents = [font.getbbox(t) if t else (0, 0, 0, 0) for t in texts]
    # coordinates clamped just past where anything drawn could reach the image (its
    # side plus the widest label): edges are axis-aligned, so the pixels are the same,
    # and Pillow's C integers never see a coordinate like 1e300
    reach = max(hwc.shape[:2]) + max((max(r - left, b - top) for left, top, r, b in extents),
                                     default=0) + 64
    for (x0, y0, x1, y1), text, (left, top, right, bottom) in zip(
            np.clip(boxes, -reach, reach).tolist(), texts, extents):
        draw.line([(x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0)], width=2, fill="Red")
        if text:
            tw, th = right - left, bottom - top
            margin = math.ceil(0.05 * th)
            draw.rectangle([(x0, y1 - th - 2 * margin), (x0 + tw, y1)], fill="Red")
            draw.text((x0 + margin, y1 - th - margin), text, fill="black", font=font)
    h, w = hwc.shape[:2]
    size = (int(w * rescale), int(h * rescale))
    if size != (w, h):
        picture = picture.resize(size, image.Resampling.LANCZOS)
    return np.asarray(picture)
