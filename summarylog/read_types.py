"""The plain results of reading: a scalar series and a per-file report."""

from __future__ import annotations

import dataclasses
from typing import Iterable, NamedTuple

import numpy as np

from .records.reader import DAMAGE_CAP, Damage, Tail

__all__ = ["Scalars", "FileReport", "DAMAGE_CAP"]



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
    damage_past_cap: int = 0  #: damaged regions after the first DAMAGE_CAP, counted, not listed

    @property
    def damage_count(self) -> int:
        """Every damaged region found, listed or not."""
        return len(self.damage) + self.damage_past_cap

    def add_damage(self, d: Damage) -> None:
        """List ``d``, or count it once DAMAGE_CAP regions are listed."""
        if len(self.damage) < DAMAGE_CAP:
            self.damage.append(d)
        else:
            self.damage_past_cap += 1

    def set_damage(self, found: Iterable[Damage], past_cap: int = 0) -> None:
        """Replace the damage with a full pass's ``found`` (capped) and the regions it
        only counted (``past_cap``)."""
        self.damage, self.damage_past_cap = [], past_cap
        for d in found:
            self.add_damage(d)

    @property
    def ok(self) -> bool:
        return not self.damage and not self.bad_events and not self.bad_values
