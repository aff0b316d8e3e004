"""The caller's-thread half of add_audio, add_video, add_figure and add_image_with_boxes:
arguments checked (errors name the peers' arguments) and private copies taken, so
nothing is logged from a call that fails and later changes by the caller don't reach
the background encoder."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import check_size
from ..values import to_numpy
from .media_prep import video_grid

__all__ = [
    "MAX_SAMPLE_RATE",
    "check_boxes",
    "check_figures",
    "check_labels",
    "check_positive",
    "check_samples",
    "check_video",
    "figure_size",
]

#: the WAV header keeps the byte rate (rate * channels * 2) in 32 bits
MAX_SAMPLE_RATE = (2**32 - 1) // 4
#: GIF keeps a frame's width and height in 16 bits
MAX_GIF_SIDE = 65535
#: matplotlib's Agg renderer refuses an image 2**23 pixels wide or high
MAX_AGG_SIDE = 2**23


def check_positive(value: Any, name: str, limit: float = math.inf) -> float:
    """A finite real number in (0, limit], as given (int stays int)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and 0 < value <= limit):
        bound = "" if limit == math.inf else f" and at most {limit}"
        raise ValueError(f"{name} must be a finite number > 0{bound}, got {value!r}")
    return value


def _numeric(x: Any, name: str) -> np.ndarray:
    arr = to_numpy(x, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    check_size(arr.nbytes, name)
    return arr


def check_samples(snd_tensor: Any, sample_rate: Any) -> tuple[np.ndarray, float]:
    """Sound samples as the peers take them: squeezed to (L,) mono (torch: (1, L),
    (L, 1) or (L,)) or (L, 2) stereo (tensorboardX's frames x channels); a copy."""
    arr = _numeric(snd_tensor, "snd_tensor")
    sq = np.squeeze(arr)
    if not (sq.ndim == 1 or (sq.ndim == 2 and sq.shape[1] == 2)):
        raise ValueError(f"snd_tensor must be (L,), (1, L), (L, 1) or (L, 2) stereo, "
                         f"got shape {arr.shape}")
    check_positive(sample_rate, "sample_rate", MAX_SAMPLE_RATE)
    if round(sample_rate) < 1:  # WAV keeps a whole number of frames per second
        raise ValueError(f"sample_rate must round to at least 1 Hz, got {sample_rate!r}")
    return np.array(sq, copy=True), sample_rate


def check_video(vid_tensor: Any, dataformats: Any) -> np.ndarray:
    """A video as an (N, T, C, H, W) copy; ``dataformats`` (tensorboardX's) a
    permutation of NTCHW; C of 1 (gray), 3 (RGB) or 4 (RGBA, alpha dropped as the
    peers' GIF drops it)."""
    if not isinstance(dataformats, str):
        raise TypeError(f"dataformats must be a str, got {type(dataformats).__name__}")
    fmt = dataformats.upper()
    if len(fmt) != 5 or set(fmt) != set("NTCHW"):
        raise ValueError(f"dataformats must be a permutation of NTCHW, got {dataformats!r}")
    arr = _numeric(vid_tensor, "vid_tensor")
    if arr.ndim != 5:
        raise ValueError(f"vid_tensor must have 5 dimensions ({fmt}), got shape {arr.shape}")
    ntchw = np.transpose(arr, [fmt.index(c) for c in "NTCHW"])
    if ntchw.shape[2] not in (1, 3, 4):
        raise ValueError(f"vid_tensor must have 1, 3 or 4 channels, got {ntchw.shape[2]} "
                         f"(shape {arr.shape}, dataformats {dataformats!r})")
    n, _, _, h, w = ntchw.shape
    rows, cols = video_grid(n)
    if max(rows * h, cols * w) > MAX_GIF_SIDE:
        raise ValueError(f"vid_tensor tiles into frames of {cols * w}x{rows * h} pixels; "
                         f"a GIF side is at most {MAX_GIF_SIDE}")
    return np.array(ntchw, copy=True)


def check_boxes(box_tensor: Any) -> np.ndarray:
    """Boxes (N, 4) of xmin, ymin, xmax, ymax in pixels, finite; a float64 copy."""
    arr = to_numpy(box_tensor, "box_tensor")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"box_tensor must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"box_tensor must be (N, 4) rows of xmin, ymin, xmax, ymax, "
                         f"got shape {arr.shape}")
    check_size(arr.nbytes, "box_tensor")
    boxes = np.array(arr, dtype=np.float64, copy=True)
    if not np.isfinite(boxes).all():
        raise ValueError("box_tensor must be finite (a NaN or inf coordinate)")
    return boxes


def check_labels(labels: Any, n_boxes: int) -> list[str] | None:
    """One label per box (a str alone is one label).  As the peers do, a count that
    differs from the boxes' drops the labels."""
    if labels is None:
        return None
    if isinstance(labels, str):
        labels = [labels]
    if isinstance(labels, np.ndarray) and labels.ndim == 1:
        labels = labels.tolist()
    if not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a list of str, got {type(labels).__name__}")
    for i, text in enumerate(labels):
        if not isinstance(text, str):
            raise TypeError(f"labels[{i}] must be a str, got {type(text).__name__}")
    return list(labels) if len(labels) == n_boxes else None


def check_figures(figure: Any) -> tuple[list[Any], bool]:
    """The matplotlib figures of add_figure and whether a list was given."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("add_figure needs matplotlib: pip install 'summarylog[figure]'") from None
    figures = list(figure) if isinstance(figure, (list, tuple)) else [figure]
    if not figures:
        raise ValueError("figure must be a matplotlib Figure or a non-empty list of them")
    for i, f in enumerate(figures):
        if not isinstance(f, Figure):
            where = f"figure[{i}]" if isinstance(figure, (list, tuple)) else "figure"
            raise TypeError(f"{where} must be a matplotlib.figure.Figure, got {type(f).__name__}")
    return figures, isinstance(figure, (list, tuple))


def figure_size(figure: Any) -> tuple[int, int]:
    """(width, height) in pixels of the figure as Agg draws it (its bbox, truncated),
    checked at the call: the drawing happens later, on the writer's thread."""
    width, height = (int(v) for v in figure.bbox.size)
    if not (0 < width < MAX_AGG_SIDE and 0 < height < MAX_AGG_SIDE):
        raise ValueError(f"figure is {width}x{height} pixels (figsize times dpi); Agg draws "
                         f"1 to {MAX_AGG_SIDE - 1} pixels a side")
    return width, height
