"""Images as torch.utils.tensorboard and tensorboardX turn them into pixels: the layout
made HWC (a batch tiled into a grid of up to 8 columns), one channel repeated to RGB,
uint8 kept, anything else scaled by 255, clipped and truncated.  Checked on the
caller's thread; converted and PNG-encoded on the background thread."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import check_size
from ..dialects.tb_media import legacy_image_payload
from ..png import encode_png
from ..values import to_numpy

__all__ = ["check_image_tensor", "to_hwc_uint8", "grid", "png_payloads"]

GRID_COLUMNS = 8


def check_image_tensor(img_tensor: Any, dataformats: Any, ndims: tuple[int, ...],
                       name: str = "img_tensor") -> tuple[np.ndarray, str]:
    """A private numpy copy of an image tensor and its layout (upper case), checked:
    ``dataformats`` a permutation of N, C, H, W with as many letters as the array has
    dimensions (``ndims`` the allowed counts), 1, 3 or 4 channels, no empty side."""
    if not isinstance(dataformats, str):
        raise TypeError(f"dataformats must be a str, got {type(dataformats).__name__}")
    fmt = dataformats.upper()
    if (len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW") or len(fmt) not in ndims
            or not {"H", "W"} <= set(fmt)):
        raise ValueError(f"dataformats must be {' or '.join(map(str, ndims))} distinct letters "
                         f"of NCHW including H and W, got {dataformats!r}")
    arr = to_numpy(img_tensor, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != len(fmt):
        raise ValueError(f"{name} has shape {arr.shape} but dataformats {dataformats!r} "
                         f"has {len(fmt)} dimensions")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if "C" in fmt and arr.shape[fmt.index("C")] not in (1, 3, 4):
        raise ValueError(f"{name} must have 1, 3 or 4 channels, got {arr.shape[fmt.index('C')]} "
                         f"(shape {arr.shape}, dataformats {dataformats!r})")
    check_size(arr.nbytes, name)
    return np.array(arr, copy=True), fmt  # later changes by the caller don't reach us


def grid(nchw: np.ndarray, columns: int = GRID_COLUMNS) -> np.ndarray:
    """A batch (N, C, H, W) tiled row by row into one (C, H*rows, W*cols) image."""
    n, c, h, w = nchw.shape
    cols = min(n, columns)
    rows = -(-n // cols)
    canvas = np.zeros((c, h * rows, w * cols), nchw.dtype)
    for i in range(n):
        y, x = divmod(i, cols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = nchw[i]
    return canvas


def to_hwc_uint8(arr: np.ndarray, fmt: str) -> np.ndarray:
    """The peers' pixels of an image of layout ``fmt``: (H, W, 3 or 4) uint8."""
    if "N" in fmt:  # a batch: one grid image, as the peers make it
        nchw = np.transpose(arr, [fmt.index(c) for c in "NCHW"]) if "C" in fmt else \
            np.transpose(arr, [fmt.index(c) for c in "NHW"])[:, None]
        if nchw.shape[1] == 1:
            nchw = np.repeat(nchw, 3, axis=1)
        hwc = np.transpose(grid(nchw), (1, 2, 0))
    elif "C" in fmt:
        hwc = np.transpose(arr, [fmt.index(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.repeat(hwc, 3, axis=2)
    else:
        hwc = np.repeat(np.transpose(arr, [fmt.index(c) for c in "HW"])[:, :, None], 3, axis=2)
    if hwc.dtype == np.uint8:
        return np.ascontiguousarray(hwc)
    scaled = np.nan_to_num(hwc.astype(np.float32) * 255.0, nan=0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def png_payloads(wall: float, step: int, tag: str, hwc: np.ndarray) -> list[bytes]:
    """One PNG of uint8 ``hwc`` pixels as torch's writer logs it (a Summary.Image)."""
    h, w, c = hwc.shape
    return [legacy_image_payload(wall, step, tag, encode_png(hwc), h, w, c)]
