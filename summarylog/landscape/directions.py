"""The plane a loss landscape is drawn on, computed as MindSpore 2.10's SummaryLandscape
computes it (numpy only, no framework):

- :func:`pca_plane`: the training-process landscape of one interval.  The trajectory's
  points minus the last one, each column centred by its own mean, exact SVD, MindSpore's
  sign rule (each singular vector's largest entry positive), the first two components
  normalised tensor by tensor to the final parameters' norms (``normalization="filter"``:
  filter by filter, as Li et al.'s filter normalisation, for tensors of 2+
  dimensions), the path projected on them by least squares, and the axes spanning the path plus 20 % on each side.
- :func:`random_plane`: the result landscape.  Two Gaussian directions over every
  tensor (then normalised the same way), axes ``linspace(-1, 1, N)``.

Only the ``selected`` tensors get a direction (the others stay at the final
parameters); which ones is the caller's choice (:func:`mindspore_rule` for MindSpore
checkpoints).  MindSpore switches to a randomized, unseeded SVD when an interval has
more than 13 points and more than 500 parameters, so its directions then differ from
run to run; this module always takes the exact SVD (identical to MindSpore's below
that size)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Plane", "mindspore_rule", "floating_names", "pca_plane", "random_plane",
           "random_source", "PROZ"]

#: the margin around the training path, as a fraction of its extent (MindSpore's ``proz``)
PROZ = 0.2


def mindspore_rule(name: str) -> bool:
    """MindSpore's choice of tensors that get a direction: the name holds ``weight`` or
    ``bias`` and not ``moment``."""
    return ("weight" in name or "bias" in name) and "moment" not in name


def floating_names(named: Mapping[str, Any]) -> list[str]:
    """The names of the floating-point arrays of ``named``, in its order."""
    return [n for n, a in named.items() if np.issubdtype(np.asarray(a).dtype, np.floating)]


@dataclass
class Plane:
    """The final parameters (``origin``), the two directions ``v`` and ``w`` (float32,
    zero for the tensors not selected), the axes, and for a PCA plane the path
    coefficients ``path`` (T x 2: where each checkpoint of the interval projects)."""

    origin: dict[str, np.ndarray]
    v: dict[str, np.ndarray]
    w: dict[str, np.ndarray]
    x: np.ndarray
    y: np.ndarray
    path: np.ndarray | None = None

    @property
    def selected(self) -> list[str]:
        """The tensors that move on the plane (a non-zero direction)."""
        return [n for n in self.origin if np.any(self.v[n]) or np.any(self.w[n])]

    def point(self, a: float, b: float) -> dict[str, np.ndarray]:
        """The parameters at ``(a, b)``, as MindSpore forms them: ``origin + a*v + b*w``
        in float32 for the floating tensors; the others as they are."""
        out = {}
        for n, t in self.origin.items():
            if np.issubdtype(t.dtype, np.floating):
                out[n] = (t + np.float32(a) * self.v[n] + np.float32(b) * self.w[n]).astype(
                    np.float32, copy=False)
            else:
                out[n] = t
        return out


def _check_points(points: Sequence[Mapping[str, Any]], selected: Sequence[str]) -> None:
    final = points[-1]
    for n in selected:
        if n not in final:
            raise ValueError(f"selected tensor {n!r} is not in the final checkpoint")
    for i, p in enumerate(points[:-1]):
        for n in selected:
            if n not in p:
                raise ValueError(f"checkpoint {i} of the interval has no tensor {n!r}")
            if np.shape(p[n]) != np.shape(final[n]):
                raise ValueError(f"checkpoint {i} of the interval: tensor {n!r} has shape "
                                 f"{np.shape(p[n])}, the final one {np.shape(final[n])}")


def _flat(named: Mapping[str, Any], names: Sequence[str], dtype: Any) -> np.ndarray:
    if not names:
        return np.zeros(0, dtype)
    return np.concatenate([np.asarray(named[n], dtype).ravel() for n in names])


def _scaled(seg: np.ndarray, ref: np.ndarray, per_filter: bool) -> np.ndarray:
    """``seg`` scaled to ``ref``'s norm: the whole tensor's (MindSpore), or each filter's
    (each slice along the first axis, Li et al.) for tensors of 2 or more dimensions."""
    ref = np.asarray(ref, np.float32)
    if per_filter and seg.ndim >= 2:
        axes = tuple(range(1, seg.ndim))
        r = np.sqrt(np.sum(np.square(ref), axis=axes, keepdims=True))
        norm = np.sqrt(np.sum(np.square(seg), axis=axes, keepdims=True))
        return np.where(norm > 0, seg * (r / np.where(norm > 0, norm, 1)), 0).astype(np.float32)
    r, norm = np.linalg.norm(ref), np.linalg.norm(seg)
    # a zero piece stays zero (MindSpore would divide by zero and write NaN)
    return seg * (r / norm) if norm > 0 else np.zeros_like(seg)


def _normalised(final: Mapping[str, np.ndarray], flat_dir: np.ndarray | None,
                selected: set[str], per_all: bool,
                per_filter: bool = False) -> dict[str, np.ndarray]:
    """A flat direction cut into the shapes of ``final`` (over the selected tensors, or
    over all when ``per_all``), each piece scaled to its tensor's Frobenius norm (or
    filter by filter when ``per_filter``)."""
    out, i = {}, 0
    for n, t in final.items():
        take = per_all or n in selected
        if take and flat_dir is not None:
            seg = flat_dir[i:i + t.size].reshape(t.shape).astype(np.float32)
            i += t.size
        else:
            seg = None
        if n in selected and seg is not None:
            out[n] = _scaled(seg, t, per_filter)
        else:
            out[n] = np.zeros(t.shape, np.float32)
    return out


def _axis(c: np.ndarray, size: int) -> np.ndarray:
    lo, hi = np.float32(c.min()), np.float32(c.max())
    span = float(np.float32(hi - lo))  # MindSpore: the extent in float32, the margin in float64
    return np.linspace(float(lo) - PROZ * span, float(hi) + PROZ * span, size)


def _per_filter(normalization: str) -> bool:
    if normalization not in ("layer", "filter"):
        raise ValueError(f"normalization must be 'layer' (MindSpore's: each tensor to its "
                         f"norm) or 'filter' (Li et al.: each filter), got {normalization!r}")
    return normalization == "filter"


def pca_plane(points: Sequence[Mapping[str, Any]], selected: Sequence[str],
              size: int, normalization: str = "layer") -> Plane:
    """The PCA plane of an interval's checkpoints ``points`` (in order, the last one is
    the origin; at least 3), over the ``selected`` tensor names, with ``size`` grid
    points per axis.  ValueError when the checkpoints do not fit together or do not
    move at all."""
    if len(points) < 3:
        raise ValueError(f"an interval needs at least 3 checkpoints, got {len(points)}")
    if not selected:
        raise ValueError("no tensor is selected for the directions (no floating parameter?)")
    _check_points(points, selected)
    final = {n: np.asarray(a) for n, a in points[-1].items()}
    flats = [_flat(p, selected, np.float64) for p in points]
    m = np.stack([f - flats[-1] for f in flats[:-1]], axis=1)
    if not np.all(np.isfinite(m)):
        raise ValueError("the interval's checkpoints hold NaN or infinite parameters")
    if not np.any(m):
        raise ValueError("the interval's checkpoints are all equal: the training did not "
                         "move, there is no trajectory to decompose")
    m -= m.mean(axis=0)  # each column by its own mean over the coordinates, as MindSpore
    u, s, _ = np.linalg.svd(m, full_matrices=False)
    cols = np.arange(u.shape[1])
    u *= np.sign(u[np.argmax(np.abs(u), axis=0), cols])  # largest entry positive
    s = np.where(s == 0, 1e-19, s)
    sel = set(selected)
    f = _per_filter(normalization)
    v = _normalised(final, u[:, 0] * s[0], sel, per_all=False, per_filter=f)
    w = _normalised(final, u[:, 1] * s[1], sel, per_all=False, per_filter=f)
    a = np.stack([_flat(v, selected, np.float32), _flat(w, selected, np.float32)], axis=1)
    coefs = np.stack([np.linalg.lstsq(a, (f - flats[-1]).astype(np.float32), rcond=None)[0]
                      for f in flats])
    return Plane(final, v, w, _axis(coefs[:, 0], size), _axis(coefs[:, 1], size),
                 coefs.astype(np.float32))


class _Seeded:
    """A seeded source with the global RNG's ``normal``: ``seed=s`` draws what
    ``np.random.seed(s)`` followed by MindSpore's draws would."""

    def __init__(self, seed: int) -> None:
        self._rs = np.random.RandomState(seed)

    def normal(self, size: int) -> np.ndarray:
        return self._rs.normal(size=size)


def random_source(seed: Any) -> Any:
    """Where random directions come from: numpy's global RNG for ``None`` (as
    MindSpore: unseeded unless the caller seeds ``np.random``), else a fresh
    ``RandomState(seed)``.  TypeError/ValueError name ``seed``."""
    if seed is None:
        return np.random
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if not 0 <= int(seed) < 2 ** 32:
        raise ValueError(f"seed must be between 0 and 2**32 - 1, got {seed}")
    return _Seeded(int(seed))


def random_plane(final: Mapping[str, Any], selected: Sequence[str], size: int,
                 rng: Any = None, normalization: str = "layer") -> Plane:
    """The result plane around ``final``: two Gaussian vectors drawn over every tensor
    of ``final`` in its order (as MindSpore draws them, so a seeded ``np.random`` gives
    MindSpore's directions), the unselected tensors then zeroed, each selected piece
    normalised; axes ``linspace(-1, 1, size)``.  ``rng``: see :func:`random_source`."""
    if not selected:
        raise ValueError("no tensor is selected for the directions (no floating parameter?)")
    rng = np.random if rng is None else rng
    final = {n: np.asarray(a) for n, a in final.items()}
    for n in selected:
        if n not in final:
            raise ValueError(f"selected tensor {n!r} is not in the final checkpoint")
    total = sum(int(t.size) for t in final.values())
    dv, dw = rng.normal(size=total), rng.normal(size=total)
    sel = set(selected)
    f = _per_filter(normalization)
    v = _normalised(final, dv, sel, per_all=True, per_filter=f)
    w = _normalised(final, dw, sel, per_all=True, per_filter=f)
    axis = np.linspace(-PROZ * 5, PROZ * 5, size)
    return Plane(final, v, w, axis, axis.copy(), None)


def select(named: Mapping[str, Any], rule: Callable[[str], bool] | Sequence[str]) -> list[str]:
    """The names of ``named`` a rule (a predicate on names, or a list of names) selects,
    keeping only floating-point tensors, in ``named``'s order."""
    floats = floating_names(named)
    if callable(rule):
        return [n for n in floats if rule(n)]
    wanted = set(rule)
    missing = wanted - set(named)
    if missing:
        raise ValueError(f"directions_for names tensors the checkpoint lacks: {sorted(missing)}")
    return [n for n in floats if n in wanted]
