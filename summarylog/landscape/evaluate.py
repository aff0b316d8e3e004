"""What every loss evaluator shares: the data taken once (``num_samples`` worth of
batches, as MindSpore's ``dataset.take(num_samples // batch_size)``), the checks of
what a loss function returns, and the numpy evaluator (a loss function of a
``{name: array}`` dict, point by point: the reference the others are tested against).

An evaluator has ``set_plane(plane)`` and ``losses(xs, ys) -> array``: the loss at the
points ``(xs[k], ys[k])`` of the plane, each the mean over the batches of the loss
function's value on one batch (MindSpore's ``Loss`` metric)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .directions import Plane

__all__ = ["LandscapeError", "take_batches", "batch_size_of", "loss_value", "NumpyEvaluator",
           "call_loss"]


class LandscapeError(RuntimeError):
    """The loss function failed, or returned no usable loss, at a point of the grid."""


def batch_size_of(batch: Any) -> int | None:
    """The leading dimension of the first array in ``batch`` (a tensor, an array, or
    a tuple/list/dict of them), or None when it holds none."""
    if isinstance(batch, Mapping):
        items: Iterable[Any] = batch.values()
    elif isinstance(batch, (tuple, list)):
        items = batch
    else:
        shape = getattr(batch, "shape", None)
        return int(shape[0]) if shape is not None and len(shape) > 0 else None
    for item in items:
        n = batch_size_of(item)
        if n is not None:
            return n
    return None


def take_batches(data: Any, num_samples: int | None, *, argument: str = "data") -> list[Any]:
    """The batches the landscape is computed over, taken from ``data`` once: all of them
    when ``num_samples`` is None, else the first ``num_samples // batch_size`` (the
    batch size is the first batch's leading dimension).  ValueError/TypeError name
    ``argument`` (or ``num_samples``)."""
    if data is None:
        return [None]
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise TypeError(f"{argument} must be an iterable of batches, got {type(data).__name__}")
    it = iter(data)
    if num_samples is None:
        out = list(it)
    else:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
        first = next(it, None)
        if first is None:
            raise ValueError(f"{argument} yielded no batch")
        size = batch_size_of(first) or 1
        count = num_samples // size
        if count == 0:
            raise ValueError(f"num_samples={num_samples} is less than one batch of {argument} "
                             f"({size} samples): no batch to compute the loss on")
        out = [first, *itertools.islice(it, count - 1)]
    if not out:
        raise ValueError(f"{argument} yielded no batch")
    return out


def loss_value(value: Any, where: str) -> float:
    """A loss function's result as a float; TypeError naming ``loss_fn`` otherwise."""
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value,
                         dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"loss_fn must return a number or a 0-d array, got "
                        f"{type(value).__name__} {where}") from None
    if arr.size != 1:
        raise TypeError(f"loss_fn must return one number, got shape {arr.shape} {where}")
    return float(arr.reshape(()))


def check_finite(losses: np.ndarray, xs: np.ndarray, ys: np.ndarray, allow: bool) -> None:
    """LandscapeError naming ``loss_fn`` when a loss is NaN or infinite (unless
    ``allow``): the landscape would not draw."""
    bad = np.flatnonzero(~np.isfinite(losses))
    if bad.size and not allow:
        k = int(bad[0])
        raise LandscapeError(f"loss_fn returned {losses[k]} at the point (x={xs[k]:.6g}, "
                             f"y={ys[k]:.6g}) and at {bad.size - 1} other points of this row: "
                             f"pass allow_nonfinite=True to keep such values")


#: what the copies of the moving parameters formed for one batched call may take
POINTS_BUDGET = 256 << 20


def points_per_call(requested: int | None, moving_bytes: int, count: int) -> int:
    """How many points one batched call forms: ``requested``, else as many as fit
    :data:`POINTS_BUDGET` (at least one, at most ``count``)."""
    if requested is not None:
        return max(1, min(requested, count))
    return max(1, min(count, POINTS_BUDGET // max(1, moving_bytes)))


def call_loss(fn: Callable[..., Any], *args: Any, where: str) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        raise LandscapeError(f"loss_fn raised {type(exc).__name__}: {exc} {where}") from exc


class NumpyEvaluator:
    """``loss_fn(params, batch)`` (or ``loss_fn(params)`` with no data) over
    ``{name: ndarray}`` parameters, one point at a time."""

    def __init__(self, loss_fn: Callable[..., Any], batches: list[Any]) -> None:
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.loss_fn, self.batches = loss_fn, batches
        self.plane: Plane | None = None

    def set_plane(self, plane: Plane) -> None:
        self.plane = plane

    def losses(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        assert self.plane is not None
        out = np.empty(len(xs))
        for k, (a, b) in enumerate(zip(xs, ys)):
            params = self.plane.point(a, b)
            where = f"at the point (x={a:.6g}, y={b:.6g})"
            vals = [loss_value(call_loss(self.loss_fn, params, *([] if batch is None else [batch]),
                                         where=where), where)
                    for batch in self.batches]
            out[k] = sum(vals) / len(vals)  # batch means averaged in order, as MindSpore's Loss
        return out
