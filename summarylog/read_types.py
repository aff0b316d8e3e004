"""The plain results of reading: a scalar series and a per-file report."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from .records.reader import Damage, Tail

__all__ = ["Scalars", "FileReport"]


class Scalars(NamedTuple):
    """One scalar series: three aligned numpy arrays."""

    step: np.ndarray  #: int64
    wall_time: np.ndarray  #: float64, seconds since the epoch
    value: np.ndarray  #: float64


@dataclasses.dataclass
class FileReport:
    """What reading one file found."""

    path: str
    records: int = 0
    damage: list[Damage] = dataclasses.field(default_factory=list)
    tail: Tail | None = None
    bad_events: int = 0  #: records with valid CRCs that are not Events
    size: int | None = None  #: the file's size when it was opened for this report (bytes)
    bad_values: int = 0  #: values not decoded, or kept despite a defect (a non-UTF-8 tag)

    @property
    def ok(self) -> bool:
        return not self.damage and not self.bad_events and not self.bad_values
