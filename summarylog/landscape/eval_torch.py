"""Loss evaluation for a PyTorch model: ``loss_fn(model, batch)`` (or ``loss_fn(model)``
without data) at many points of the plane at once.

The points of a row go through ``torch.func.vmap`` over ``torch.func.functional_call``:
one call per data batch evaluates them all, with the parameters formed on the device
(``origin + a*v + b*w``) and never loaded into the model.  A loss function vmap cannot
batch (``.item()``, data-dependent Python control flow) is evaluated point by point,
still through functional_call, after a warning.

Mode: the model is put in ``train`` mode (the default, as MindSpore evaluates in train
mode: dropout active, batch norm on the batch's statistics) or eval mode for the
computation, and its modes restored after.  Buffers (batch norm's running statistics)
start from the checkpoint's values at every point (the model's current ones when the
checkpoint holds parameters only); the model's own tensors are never changed."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .directions import Plane
from .evaluate import call_loss, loss_value, points_per_call

__all__ = ["TorchEvaluator", "torch_selected"]


def torch_selected(model: Any) -> list[str]:
    """The tensors a torch model's landscape moves: its floating-point parameters
    (trainable or not), not its buffers."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return [n for n, p in model.named_parameters() if p.is_floating_point()]


def _to_device(batch: Any, device: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    def move(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            x = torch.as_tensor(x)
        return x.to(device) if isinstance(x, torch.Tensor) else x

    return tree_map(move, batch)


class TorchEvaluator:
    """The evaluator (see :mod:`.evaluate`) of ``loss_fn`` on ``model`` over ``batches``.
    ``points_per_call`` caps the points one vmap call forms (memory: that many copies
    of the moving parameters); default: a whole row, or fewer points when their copies
    would pass 256 MiB."""

    def __init__(self, model: Any, loss_fn: Callable[..., Any], batches: list[Any], *,
                 train: bool = True, points_per_call: int | None = None,
                 vectorize: bool = True) -> None:
        import torch

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not callable(loss_fn):
            raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
        self.model, self.loss_fn, self.train = model, loss_fn, bool(train)
        first = next(iter(model.parameters()), None)
        self.device = first.device if first is not None else torch.device("cpu")
        self.batches = [_to_device(b, self.device) for b in batches]
        self.points_per_call = points_per_call
        self.vectorize = vectorize
        self.state = dict(model.named_parameters())
        self.buffers = dict(model.named_buffers())
        self.bound = _bound(model, loss_fn)

    def set_plane(self, plane: Plane) -> None:
        import torch

        # buffers a checkpoint of parameters only lacks stay the model's own
        missing = [n for n in self.state if n not in plane.origin]
        if missing:
            raise ValueError(f"the checkpoint has no tensor {missing[0]!r} of the model "
                             f"({len(missing)} missing): model and checkpoints do not match")

        def dev(n: str, arr: np.ndarray) -> Any:
            ref = self.state.get(n, self.buffers.get(n))
            if tuple(arr.shape) != tuple(ref.shape):
                raise ValueError(f"tensor {n!r}: the checkpoint's shape {arr.shape} is not the "
                                 f"model's {tuple(ref.shape)}")
            return torch.as_tensor(np.ascontiguousarray(arr)).to(self.device, ref.dtype)

        self.origin = {n: dev(n, plane.origin[n]) for n in self.state}
        for n, buf in self.buffers.items():
            self.origin[n] = dev(n, plane.origin[n]) if n in plane.origin else buf.detach().clone()
        moving = set(plane.selected)
        self.moving = [n for n in self.state if n in moving and self.origin[n].is_floating_point()]
        self.v = {n: dev(n, plane.v[n]) for n in self.moving}
        self.w = {n: dev(n, plane.w[n]) for n in self.moving}
        self.fixed = {n: t for n, t in self.origin.items()
                      if n not in moving and n not in self.buffers}

    def _call(self, tensors: dict[str, Any], batch: Any) -> Any:
        from torch.func import functional_call

        args = () if batch is None else (batch,)
        return functional_call(self.bound, {f"model.{n}": t for n, t in tensors.items()}, args,
                               strict=False)

    def _formed(self, a: Any, b: Any) -> dict[str, Any]:
        out = {}
        for n in self.moving:
            o = self.origin[n]
            shape = (-1,) + (1,) * o.dim()
            a_, b_ = a.view(shape).to(o.dtype), b.view(shape).to(o.dtype)
            out[n] = o + a_ * self.v[n] + b_ * self.w[n]
        return out

    def _vmapped(self, a: Any, b: Any) -> np.ndarray:
        import torch
        from torch.func import vmap

        moving = self._formed(a, b)
        k = a.shape[0]
        bufs = {n: t.expand(k, *t.shape).clone() for n, t in self.origin.items()
                if n in self.buffers}

        def one(mov: dict[str, Any], buf: dict[str, Any], batch: Any) -> Any:
            return self._call({**self.fixed, **mov, **buf}, batch)

        total = None
        for batch in self.batches:
            out = vmap(one, in_dims=(0, 0, None), randomness="different")(moving, bufs, batch)
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != (k,):
                shape = (tuple(out.shape[1:]) if isinstance(out, torch.Tensor)
                         else type(out).__name__)
                raise TypeError(f"loss_fn must return a scalar tensor, got {shape} per point")
            total = out.double() if total is None else total + out.double()
        assert total is not None
        return (total / len(self.batches)).cpu().numpy()

    def _looped(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        import torch

        out = np.empty(len(xs))
        for k, (a, b) in enumerate(zip(xs, ys)):
            where = f"at the point (x={a:.6g}, y={b:.6g})"
            mov = self._formed(torch.tensor([a], dtype=torch.float32, device=self.device),
                               torch.tensor([b], dtype=torch.float32, device=self.device))
            mov = {n: t[0] for n, t in mov.items()}
            bufs = {n: t.clone() for n, t in self.origin.items() if n in self.buffers}
            vals = [loss_value(call_loss(self._call, {**self.fixed, **mov, **bufs}, batch,
                                         where=where), where) for batch in self.batches]
            out[k] = sum(vals) / len(vals)
        return out

    def losses(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        import torch

        modes = [m.training for m in self.model.modules()]
        self.model.train(self.train)
        try:
            with torch.no_grad():
                size = sum(self.origin[n].numel() * self.origin[n].element_size()
                           for n in self.moving)
                step = points_per_call(self.points_per_call, size, len(xs))
                parts = [self._chunk(xs[i:i + step], ys[i:i + step])
                         for i in range(0, len(xs), step)]
        finally:
            for m, mode in zip(self.model.modules(), modes):
                m.training = mode
        return np.concatenate(parts)

    def _chunk(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        import torch

        if self.vectorize:
            a = torch.as_tensor(np.asarray(xs, np.float32), device=self.device)
            b = torch.as_tensor(np.asarray(ys, np.float32), device=self.device)
            try:
                return self._vmapped(a, b)
            except TypeError:
                raise
            except Exception as exc:
                # point by point: either it works (vmap could not batch this loss_fn)
                # or it raises the loss function's own error, named as such
                vals = self._looped(xs, ys)
                self.vectorize = False
                warnings.warn(f"loss_fn could not be vectorized with torch.func.vmap "
                              f"({type(exc).__name__}: {str(exc)[:200]}); evaluating the "
                              f"landscape point by point", RuntimeWarning, stacklevel=4)
                return vals
        return self._looped(xs, ys)


def _bound(model: Any, loss_fn: Callable[..., Any]) -> Any:
    """``loss_fn`` bound to ``model`` as a module functional_call can reparametrise: the
    model is its only submodule (tensor names ``model.<name>``), its forward is the loss."""
    import torch

    class Bound(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *batch: Any) -> Any:
            return loss_fn(self.model, *batch)

    return Bound()
