"""Loss landscapes among a run's decoded events, by tag: what
:meth:`summarylog.Reader.landscapes` returns.  Both dialects decode a landscape to
the same :class:`~summarylog.landscape.Landscape` (MindSpore's LossLandscape, or the
TensorBoard dialect's exact copy of it), so the rules here are the Reader's: with
``purge``, TensorBoard's resume markers and MindInsight's one value per step."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .events import Event
from .read_columns import last_per_step_index, resume_kept

__all__ = ["landscapes_of_events"]


def landscapes_of_events(events: Iterable[Event], purge: bool,
                         mindspore: bool) -> dict[str, list[tuple[int, Any]]]:
    """tag -> ``[(step, Landscape), ...]`` (tags sorted, each in file order, or in step
    order under MindSpore's rule) of the ``landscape`` events in ``events``."""
    by_tag: dict[str, list[Event]] = {}
    for ev in resume_kept(events, ("landscape",), purge):
        by_tag.setdefault(ev.tag, []).append(ev)
    out = {}
    for tag in sorted(by_tag):
        evs = by_tag[tag]
        if purge and mindspore:
            evs = [evs[i] for i in last_per_step_index(np.array([e.step for e in evs], np.int64))]
        out[tag] = [(int(ev.step), ev.value) for ev in evs]
    return out
