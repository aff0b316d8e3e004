"""Loss evaluation for JAX: ``loss_fn(params, batch)`` (or ``loss_fn(params)`` without
data), with ``params`` a pytree shaped like the given template, at many points at once:
one ``jax.jit(jax.vmap(...))`` call per data batch evaluates a whole row, the
parameters formed on the device (``origin + a*v + b*w``).  Chunks of points have one
fixed size (the last one padded), so the function compiles once per batch shape.

JAX has no train/eval mode: the loss function decides (MindSpore evaluates in train
mode, so for dropout or batch norm pass the training forward pass, its RNG fixed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .checkpoints import flatten_pytree
from .directions import Plane
from .evaluate import LandscapeError, points_per_call

__all__ = ["JaxEvaluator", "jax_selected"]


def jax_selected(template: Any) -> list[str]:
    """The tensors a JAX landscape moves: the floating-point leaves of the params."""
    return [n for n, leaf in flatten_pytree(template).items()
            if np.issubdtype(np.asarray(leaf).dtype, np.floating)]


class JaxEvaluator:
    """The evaluator (see :mod:`.evaluate`) of ``loss_fn`` over ``batches``, the
    parameters shaped like ``template``.  ``points_per_call`` caps the points one call
    forms (memory); default: a whole row, or fewer points when their copies would pass
    256 MiB."""

    def __init__(self, loss_fn: Callable[..., Any], template: Any, batches: list[Any], *,
                 points_per_call: int | None = None) -> None:
        import jax

        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.loss_fn, self.batches = loss_fn, batches
        self.names = list(flatten_pytree(template))
        self.treedef = jax.tree_util.tree_structure(template)
        self.points_per_call = points_per_call
        self._fn: Any = None

    def set_plane(self, plane: Plane) -> None:
        import jax
        import jax.numpy as jnp

        missing = [n for n in self.names if n not in plane.origin]
        if missing:
            raise ValueError(f"the checkpoint has no leaf {missing[0]!r} of params "
                             f"({len(missing)} missing): params and checkpoints do not match")
        moving = set(plane.selected)
        origin = [jnp.asarray(plane.origin[n]) for n in self.names]
        mask = [n in moving and jnp.issubdtype(o.dtype, jnp.floating)
                for n, o in zip(self.names, origin)]
        v = [jnp.asarray(plane.v[n], o.dtype) if m else None
             for n, o, m in zip(self.names, origin, mask)]
        w = [jnp.asarray(plane.w[n], o.dtype) if m else None
             for n, o, m in zip(self.names, origin, mask)]
        loss_fn, treedef = self.loss_fn, self.treedef

        # the tensors are arguments, not constants folded into the compiled function
        def point(a: Any, b: Any, origin: Any, v: Any, w: Any, *batch: Any) -> Any:
            leaves = [o + a.astype(o.dtype) * vv + b.astype(o.dtype) * ww if m else o
                      for o, vv, ww, m in zip(origin, v, w, mask)]
            return loss_fn(jax.tree_util.tree_unflatten(treedef, leaves), *batch)

        axes = (0, 0, None, None, None) + (None,) * (self.batches[0] is not None)
        self._fn = jax.jit(jax.vmap(point, in_axes=axes))
        self._tensors = (origin, v, w)
        self._moving_bytes = sum(int(o.size) * o.dtype.itemsize for o, m in zip(origin, mask) if m)

    def _chunk(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        total = None
        for batch in self.batches:
            args = (a, b, *self._tensors) + (() if batch is None else (batch,))
            try:
                out = np.asarray(self._fn(*args), np.float64)
            except Exception as exc:
                raise LandscapeError(f"loss_fn raised {type(exc).__name__}: {exc} "
                                     f"(evaluated under jax.jit and jax.vmap)") from exc
            if out.shape != (len(a),):
                raise TypeError(f"loss_fn must return a scalar, got shape {out.shape[1:]} "
                                f"per point")
            total = out if total is None else total + out
        assert total is not None
        return total / len(self.batches)

    def losses(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        step = points_per_call(self.points_per_call, self._moving_bytes, len(xs))
        parts = []
        for i in range(0, len(xs), step):
            a = np.zeros(step, np.float32)
            b = np.zeros(step, np.float32)
            n = min(step, len(xs) - i)
            a[:n], b[:n] = xs[i:i + n], ys[i:i + n]  # padded: one compiled shape
            parts.append(self._chunk(a, b)[:n])
        return np.concatenate(parts)
