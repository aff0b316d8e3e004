"""A loss landscape drawn as a contour image (numpy only, no plotting library): the
loss as colour over the (x, y) plane, iso-loss lines, a colour bar, and the
training path on top.  Deterministic: the same landscape gives the same pixels on
every machine, so tests can pin them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["contour_image", "loss_colors", "NAN_COLOR", "PATH_COLOR", "START_COLOR",
           "END_COLOR", "LEVELS", "MAX_PATH"]

#: colour stops, low loss (dark blue) to high loss (yellow)
_STOPS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
_RGB = np.array([(13, 8, 135), (33, 102, 172), (32, 164, 134), (170, 210, 60),
                 (250, 230, 35)], np.float64)
NAN_COLOR = (128, 128, 128)  #: a point whose loss is NaN or infinite
PATH_COLOR = (230, 30, 30)  #: the training path
START_COLOR = (255, 255, 255)  #: its first checkpoint
END_COLOR = (0, 0, 0)  #: its last checkpoint / the convergence point
LEVELS = 12  #: iso-loss lines split the finite loss range into this many bands
_MARGIN, _BAR = 8, 14


def unit_loss(z: np.ndarray) -> np.ndarray:
    """The loss scaled to [0, 1] over its finite values (NaN where not finite;
    0.5 everywhere when they are all equal)."""
    z = np.asarray(z, np.float64)
    finite = np.isfinite(z)
    out = np.full(z.shape, np.nan)
    if finite.any():
        lo, hi = float(z[finite].min()), float(z[finite].max())
        with np.errstate(over="ignore", invalid="ignore"):
            span = hi - lo
            out[finite] = (z[finite] - lo) / span if span > 0 and np.isfinite(span) else 0.5
    return out


def loss_colors(t: np.ndarray) -> np.ndarray:
    """uint8 RGB of unit losses ``t`` (:func:`unit_loss`), NAN_COLOR for NaN."""
    t = np.asarray(t, np.float64)
    rgb = np.empty(t.shape + (3,), np.uint8)
    ok = np.isfinite(t)
    tc = np.clip(t[ok], 0.0, 1.0)
    rgb[ok] = np.stack([np.interp(tc, _STOPS, _RGB[:, k]) for k in range(3)], -1).round()
    rgb[~ok] = NAN_COLOR
    return rgb


def _sample(t: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Bilinear samples of the grid ``t`` at fractional (row, col) indices; NaN
    where a corner is NaN (no colour is made up next to a diverged point)."""
    ny, nx = t.shape
    r0 = np.clip(np.floor(rows).astype(np.int64), 0, max(ny - 2, 0))
    c0 = np.clip(np.floor(cols).astype(np.int64), 0, max(nx - 2, 0))
    r1, c1 = np.minimum(r0 + 1, ny - 1), np.minimum(c0 + 1, nx - 1)
    fr, fc = (rows - r0)[:, None], (cols - c0)[None, :]
    r0, r1, c0, c1 = r0[:, None], r1[:, None], c0[None, :], c1[None, :]
    return ((t[r0, c0] * (1 - fc) + t[r0, c1] * fc) * (1 - fr)
            + (t[r1, c0] * (1 - fc) + t[r1, c1] * fc) * fr)


def _index(axis: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Fractional grid indices of axis values (clamped to the grid); an axis that
    is not increasing is taken as evenly spaced from its first to last value."""
    n = axis.size
    if n < 2:
        return np.zeros(np.shape(values))
    if np.all(np.diff(axis) > 0):
        return np.interp(values, axis, np.arange(n, dtype=np.float64))
    lo, hi = float(axis[0]), float(axis[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (np.asarray(values, np.float64) - lo) / (hi - lo) if hi != lo else 0.0 * values
    return np.clip(np.nan_to_num(f) * (n - 1), 0, n - 1)


MAX_PATH = 500  #: a longer path is drawn through every k-th point (first and last kept)


def _dots(img: np.ndarray, rows: np.ndarray, cols: np.ndarray, radius: int, color: Any) -> None:
    """Squares of side 2·radius + 1 at the (rounded) pixels, clipped to the image."""
    h, w, _ = img.shape
    ri, ci = np.rint(rows).astype(np.int64), np.rint(cols).astype(np.int64)
    for dr in range(-radius, radius + 1):
        for dc in range(-radius, radius + 1):
            r, c = ri + dr, ci + dc
            ok = (r >= 0) & (r < h) & (c >= 0) & (c < w)
            img[r[ok], c[ok]] = color


def _dot(img: np.ndarray, r: float, c: float, radius: int, color: Any) -> None:
    _dots(img, np.array([r]), np.array([c]), radius, color)


def _polyline(img: np.ndarray, pts: list[tuple[float, float]], radius: int, color: Any) -> None:
    """Segments between consecutive points, sampled twice per pixel of their length."""
    if len(pts) < 2:
        return
    p = np.array(pts, np.float64)
    a, b = p[:-1], p[1:]
    n = (np.abs(b - a).max(axis=1) * 2).astype(np.int64) + 2  # samples per segment
    seg = np.repeat(np.arange(len(a)), n)
    s = np.arange(seg.size) - np.repeat(np.cumsum(n) - n, n)  # 0..n-1 within each segment
    t = (s / np.repeat(n - 1, n))[:, None]
    xy = a[seg] + (b[seg] - a[seg]) * t
    _dots(img, xy[:, 0], xy[:, 1], radius, color)


def contour_image(ls: Any, size: int = 320) -> np.ndarray:
    """An (H, W, 3) uint8 image of a :class:`~summarylog.landscape.Landscape`
    with at least one point: a ``size`` x ``size`` plot (x to the right, y up),
    iso-loss lines between :data:`LEVELS` equal bands of the finite loss range,
    a colour bar (low loss at the bottom) on the right; the path in PATH_COLOR
    from START_COLOR to END_COLOR, or the convergence point in END_COLOR."""
    z = np.asarray(ls.z, np.float64)
    ny, nx = z.shape
    t = unit_loss(z)
    rows = np.linspace(ny - 1, 0, size) if ny > 1 else np.zeros(size)  # image row 0: top = max y
    cols = np.linspace(0, nx - 1, size) if nx > 1 else np.zeros(size)
    field = _sample(t, rows, cols)
    plot = loss_colors(field)
    band = np.where(np.isfinite(field), np.minimum(np.nan_to_num(field) * LEVELS, LEVELS - 1),
                    -1).astype(np.int64)
    edge = np.zeros(band.shape, bool)  # a pixel whose band differs from its right or lower one
    edge[:, :-1] |= band[:, :-1] != band[:, 1:]
    edge[:-1, :] |= band[:-1, :] != band[1:, :]
    plot[edge] = (plot[edge] * 0.45).astype(np.uint8)

    def pixel(px: np.ndarray, py: np.ndarray) -> list[tuple[float, float]]:
        ci = _index(ls.x, px) / max(nx - 1, 1) * (size - 1)
        ri = (1 - _index(ls.y, py) / max(ny - 1, 1)) * (size - 1)
        return [(float(r), float(c)) for r, c in zip(ri, ci) if np.isfinite(r) and np.isfinite(c)]

    if ls.path_x is not None and ls.path_x.size:
        keep = np.arange(ls.path_x.size)
        if keep.size > MAX_PATH:
            step = -(-(keep.size - 1) // (MAX_PATH - 1))
            keep = np.unique(np.append(keep[::step], keep[-1]))
        pts = pixel(ls.path_x[keep], ls.path_y[keep])
        _polyline(plot, pts, 2, START_COLOR)
        _polyline(plot, pts, 1, PATH_COLOR)
        if pts:
            _dots(plot, *np.array(pts).T, 2, PATH_COLOR)
        if pts:
            _dot(plot, *pts[0], 3, START_COLOR)
            _dot(plot, *pts[-1], 3, END_COLOR)
    else:
        cx, cy, _ = ls.convergence_point
        for r, c in pixel(np.array([cx]), np.array([cy])):
            _dot(plot, r, c, 3, END_COLOR)

    m, bar = _MARGIN, _BAR
    img = np.full((size + 2 * m, size + 3 * m + bar, 3), 255, np.uint8)
    img[m:m + size, m:m + size] = plot
    img[m:m + size, 2 * m + size:2 * m + size + bar] = loss_colors(
        np.linspace(1.0, 0.0, size))[:, None, :]
    return img
