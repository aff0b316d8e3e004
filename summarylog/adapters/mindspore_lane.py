"""How the collectors' lane (summarylog.collector_lane) sees a MindSpore collector's
parameters: on the CPU a Parameter's ``asnumpy()`` is a view of the memory its
optimizer updates in place, so the lane copies it at each collection in one native
call, as it does PyTorch's; elsewhere (a device, a moved parameter) collections take
the record's path."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from mindspore import Parameter, Tensor, get_context

__all__ = ["MindSporeLaneSource", "freeze_values", "summary_ops_waiting"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def summary_ops_waiting() -> bool:
    """Whether summary operators (``ops.ScalarSummary`` and friends) left values that
    only a recorded step takes (MindSpore's graph-mode cache, or PyNative's)."""
    try:
        from mindspore.ops.operations import debug_ops
        from mindspore.train.summary import summary_record as msr
    except ImportError:  # pragma: no cover - MindSpore without summary support
        return False
    return bool(getattr(msr, "SUMMARY_TENSOR_CACHE", None)
                or getattr(debug_ops, "SUMMARY_TENSOR_CACHE", None))


class MindSporeLaneSource:
    """A :class:`~summarylog.collector_lane.LaneSource` over MindSpore Parameters."""

    def views(self, params: Sequence[Any]) -> list[np.ndarray] | None:
        if get_context("device_target") != "CPU":
            return None
        out = []
        for p in params:
            if not isinstance(p, Parameter):
                return None
            v = p.asnumpy()
            # the view must be the parameter's own memory, not a copy made for the host
            if v.dtype not in _FLOATS or not v.flags.c_contiguous or v.ctypes.data != p.data_ptr():
                return None
            out.append(v)
        return out

    def still(self, params: Sequence[Any], views: list[np.ndarray]) -> bool:
        return all(p.data_ptr() == v.ctypes.data for p, v in zip(params, views))

    def scalar(self, loss: Any) -> float | None:
        # (asked only of an open lane, which views() opened on the CPU: no device to wait for)
        if isinstance(loss, Tensor) and loss.shape == ():
            return float(loss.asnumpy())
        return None

    def ready(self) -> bool:
        return not summary_ops_waiting()


def freeze_values(values: list[Any]) -> tuple[list[Any], int]:
    """A collection's private copies, made at the step: a Parameter (updated in place
    right after) copied to the host now; a step's output tensor kept as it is (never
    changed later) and read on summarylog's thread."""
    out: list[Any] = []
    total = 0
    for v in values:
        if isinstance(v, Parameter):
            v = np.array(v.asnumpy(), copy=True)
            total += v.nbytes
        elif isinstance(v, Tensor):
            total += int(v.nbytes)
        out.append(v)
    return out, total
