"""The plain Python form of a logged value, shared by the readers."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Event"]


@dataclasses.dataclass(frozen=True)
class Event:
    """One logged value (or a run marker), as plain Python objects; ``value``
    by ``kind``: ``"scalar"`` float; ``"histogram"`` dict with ``limits``
    (right edges), ``counts``, ``min``, ``max``, ``num``, ``sum``,
    ``sum_squares``; ``"image"`` dict with ``width``, ``height``, ``pngs``
    (list of bytes); ``"text"`` str; ``"tensor"`` numpy array; ``"hparams"``
    dict (the plugin record, e.g. ``{"session_start_info": {"hparams": ...}}``);
    ``"file_version"`` str; ``"session_log"`` dict (``status``, ...);
    a histogram or image written as a plugin tensor (TF2) also holds ``tensor``,
    the tensor as written (numpy);
    ``"graph"`` bytes; ``"other"`` the raw ``Summary.Value`` bytes."""

    kind: str
    tag: str
    step: int
    wall_time: float
    value: Any
