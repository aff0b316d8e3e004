"""The collectors' one fast path: a lane (:class:`summarylog.binner.Lane`) over the same tensors.

From its second collection on, a collector mostly collects the loss and the same parameters
again: one native call on the training thread copies them into a ring of private buffers and
queues the collection on the writer's low-priority binner.  Everything else (the first
collection, input images, summary operators, tensors, a lane busy or not possible) takes the
record's queue.  Framework-neutral: an adapter views its tensors through a :class:`LaneSource`.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, Sequence

import numpy as np

from .summary_record import SummaryRecord

__all__ = ["LaneSource", "CollectorLane"]

_RETRY_EVERY = 10  # collections between tries after a lane that had to go


class LaneSource(Protocol):
    """What a framework adapter tells the lane about its tensors."""

    def views(self, params: Sequence[Any]) -> list[np.ndarray] | None:
        """Host numpy arrays viewing the parameters' memory (C-contiguous
        float32/float64), or None when a lane can't copy them."""

    def still(self, params: Sequence[Any], views: list[np.ndarray]) -> bool:
        """Whether ``views``, made by :meth:`views` from ``params``, still are
        their memory (not after ``p.data = ...`` or a move)."""

    def scalar(self, loss: Any) -> float | None:
        """The loss read now when that costs no device sync, else None."""

    def ready(self) -> bool:
        """False while values wait that only the record's queue takes."""


class _Run:
    __slots__ = ("lane", "scalar", "params", "views")

    def __init__(self, lane: Any, scalar: bool, params: list[Any], views: list[np.ndarray]) -> None:
        self.lane, self.scalar, self.params, self.views = lane, scalar, params, views


class CollectorLane:
    """A collector's lane into its record, opened and replaced as needed."""

    def __init__(self, record: SummaryRecord, source: LaneSource) -> None:
        self.record, self.source = record, source
        self.run: _Run | None = None
        self._wait = 0  # collections to let pass before trying again

    @property
    def lane(self) -> Any:
        return self.run.lane if self.run is not None else None

    def collect(self, step: int, scalar_tag: str, loss: Any, params: list[Any],
                specs: list[tuple[str, str]]) -> bool:
        """Take a collection of ``loss`` (None: none) and the histograms
        ``specs`` of ``params``; False: the caller takes the record's queue."""
        if not self.source.ready():
            return False
        run = self.run
        if (run is None or (loss is not None) != run.scalar or len(params) != len(run.params)
                or any(a is not b for a, b in zip(params, run.params))
                or not self.source.still(params, run.views)):
            run = self.run = self._open(scalar_tag if loss is not None else None, params, specs)
            if run is None:
                return False
        if not self.record.lane_ready():
            return False
        value = None
        if loss is not None:
            value = self.source.scalar(loss)
            if value is None:
                return False
        if not run.lane.collect(value, step, time.time()):
            return False
        self.record.took_lane(step, scalar_tag if loss is not None else None, specs)
        return True

    def _open(self, scalar_tag: str | None, params: list[Any],
              specs: list[tuple[str, str]]) -> _Run | None:
        """A lane for these parameters, if the record opens one (once its
        file exists); after a lane that had to go, tried every
        ``_RETRY_EVERY`` collections (the parameters moved to a GPU, say)."""
        old, self.run = self.run, None
        if old is not None:
            self.record.retire_lane(old.lane)
        elif self._wait:
            self._wait -= 1
            return None
        run = None
        if params and self.record.lanes_possible and all(p == "histogram" for p, _ in specs):
            views = self.source.views(params)
            lane = None if views is None else self.record.open_lane(
                scalar_tag, [(tag, v) for (_, tag), v in zip(specs, views)])
            if lane is not None:
                run = _Run(lane, scalar_tag is not None, list(params), views)
        if run is None and old is not None:
            self._wait = _RETRY_EVERY
        return run
