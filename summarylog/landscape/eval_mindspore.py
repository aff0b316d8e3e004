"""Loss evaluation for MindSpore, with the callback contract of MindSpore's
``SummaryLandscape``: ``callback_fn()`` returns ``(model, network, dataset, metrics)``
and the loss at a point is ``metrics["Loss"]`` after a pass of ``model.train_network``
(train mode, as MindSpore) over ``num_samples // batch_size`` batches of ``dataset``.

Faster than MindSpore's own loop, with the same numbers: the batches are taken from
the dataset once and reused at every point (MindSpore restarts the dataset pipeline at
each one), the parameters are set in place by name (no ``load_param_into_net`` and
its checks at each point), and nothing is printed per point."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .directions import Plane
from .evaluate import LandscapeError

__all__ = ["MindSporeEvaluator", "set_device"]


def set_device(device_id: int) -> None:
    """A worker's device, as MindSpore's ``_set_context``.  A forked worker whose device
    is already in effect keeps it (MindSpore then fails to switch as well, silently)."""
    from mindspore import context

    try:
        context.set_context(device_id=device_id)
    except (TypeError, RuntimeError, ValueError):
        pass


class MindSporeEvaluator:
    """The evaluator (see :mod:`.evaluate`) of what ``callback_fn()`` returns."""

    def __init__(self, callback_fn: Callable[[], Any], num_samples: int) -> None:
        try:
            got = callback_fn()
        except Exception as exc:
            raise LandscapeError(f"callback_fn raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            raise TypeError("callback_fn must return (model, network, dataset, metrics), got "
                            f"{type(got).__name__}")
        model, network, dataset, metrics = got
        if not isinstance(metrics, Mapping) or "Loss" not in metrics:
            raise ValueError("callback_fn's metrics must be a dict with a 'Loss' entry "
                             "(mindspore.train.Loss()), as MindSpore's SummaryLandscape reads "
                             "metrics['Loss']")
        for what, obj, attr in (("model", model, "train_network"),
                                ("network", network, "get_parameters"),
                                ("dataset", dataset, "get_batch_size")):
            if not hasattr(obj, attr):
                raise TypeError(f"callback_fn's {what} has no {attr}: expected MindSpore's "
                                f"(model, network, dataset, metrics)")
        size = dataset.get_batch_size()
        count = num_samples // size
        if count <= 0:
            raise ValueError(f"num_samples={num_samples} is less than one batch of the "
                             f"callback's dataset ({size} samples)")
        self.batches = [tuple(b) for b in dataset.take(count).create_tuple_iterator(num_epochs=1)]
        if not self.batches:
            raise ValueError("callback_fn's dataset yielded no batch")
        self.net = model.train_network
        self.metrics = dict(metrics)
        self.params = {p.name: p for p in network.get_parameters()}
        self.plane: Plane | None = None

    def set_plane(self, plane: Plane) -> None:
        self.plane = plane
        # MindSpore's load_param_into_net: checkpoint tensors the network lacks are skipped
        self.names = [n for n in plane.origin if n in self.params]
        self.moving = set(plane.selected)

    def _load(self, a: float, b: float) -> None:
        from mindspore import Tensor

        assert self.plane is not None
        for n in self.names:
            o = self.plane.origin[n]
            if n in self.moving:
                val = o + np.float32(a) * self.plane.v[n] + np.float32(b) * self.plane.w[n]
            else:  # reset: train mode may have moved it (batch norm's moving statistics)
                val = o
            self.params[n].set_data(Tensor(np.asarray(val, np.float32 if np.issubdtype(
                o.dtype, np.floating) else o.dtype)))

    def _loss(self) -> float:
        for m in self.metrics.values():
            m.clear()
        self.net.set_train(True)
        self.net.phase = "train"
        for batch in self.batches:
            out = self.net(*batch)
            if not isinstance(out, tuple):
                out = (out,)
            for m in self.metrics.values():
                m.update(out[0])
        return float(self.metrics["Loss"].eval())

    def losses(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        out = np.empty(len(xs))
        for k, (a, b) in enumerate(zip(xs, ys)):
            self._load(a, b)
            try:
                out[k] = self._loss()
            except Exception as exc:
                raise LandscapeError(f"the callback's network or metrics raised "
                                     f"{type(exc).__name__}: {exc} at the point (x={a:.6g}, "
                                     f"y={b:.6g})") from exc
        return out
