"""The ranks of a run: per-rank files (``Writer(rank=…)``, or ``RANK`` and friends) told
apart by name, and the Reader's ``ranks=`` choice of how to merge them.

A rank comes from the file name summarylog's writers give: TensorBoard
``events.out.tfevents.<sec>.<host>.<pid>.<seq>.<rank><suffix>`` (the third dotted
number after the host; a host whose name ends in ``.<digits>`` and writes no rank is
read as if it did), MindSpore ``<prefix>.out.events.summary.<sec>.<rank>.<host>…``.
A file without a rank is rank 0 (a single process is rank 0).

``ranks``:
- None (the default): every file of the run as one series, in name order (as before
  ranks existed; with several ranks their points follow each other);
- an int k: only rank k's files, for every kind of value;
- ``"all"``: scalars of every rank, :class:`RankedScalars` (a ``rank`` column);
- ``"mean"``, ``"min"``, ``"max"``: per step, over the ranks that logged that step (each
  rank's last value of the step), with the latest wall time of those ranks.
With ``"all"`` and the reductions, values other than scalars (histograms, images,
events, landscapes...) are the lowest rank's.
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

import numpy as np

from .read_types import Scalars

__all__ = ["RankedScalars", "RANK_MODES", "check_ranks", "rank_of", "by_rank", "RankColumns"]

RANK_MODES = ("all", "mean", "min", "max")
_TB = re.compile(r"(?:tf|z)events\.\d+\..+\.\d+\.\d+\.(\d+)(?!\d)")
_MS = re.compile(r"\.summary\.\d+\.(\d+)\.")


class RankedScalars(NamedTuple):
    """Scalars of every rank (``ranks="all"``): rank by rank, each in file order."""

    step: np.ndarray  #: int64
    wall_time: np.ndarray  #: float64
    value: np.ndarray  #: float64
    rank: np.ndarray  #: int64


def check_ranks(ranks: Any) -> Any:
    if ranks is None or ranks in RANK_MODES:
        return ranks
    if isinstance(ranks, bool) or not isinstance(ranks, (int, str)):
        raise TypeError(f"ranks must be None, an int or one of {RANK_MODES}, got {ranks!r}")
    if isinstance(ranks, str) or ranks < 0:
        raise ValueError(f"ranks must be None, a rank >= 0 or one of {RANK_MODES}, got {ranks!r}")
    return ranks


def rank_of(path: str) -> int:
    """The rank in a file's name (0 when it has none)."""
    base = path.rsplit("/", 1)[-1]
    m = _TB.search(base) or _MS.search(base)
    return int(m.group(1)) if m else 0


def by_rank(files: list[str]) -> dict[int, list[str]]:
    """rank -> its files (in the given order), ranks sorted."""
    out: dict[int, list[str]] = {}
    for f in files:
        out.setdefault(rank_of(f), []).append(f)
    return dict(sorted(out.items()))


class RankColumns:
    """The per-rank scalar columns of runs, for ``ranks="all"`` and the reductions."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._cols: dict[str, dict[int, Any]] = {}  # run -> rank -> RunColumns

    def clear(self) -> None:
        self._cols.clear()

    def columns(self, run: str, files: list[str], load: Callable[[list[str]], Any]
                ) -> dict[int, Any]:
        if run not in self._cols:
            self._cols[run] = {r: load(fs) for r, fs in by_rank(files).items()}
        return self._cols[run]

    def tags(self, cols: dict[int, Any]) -> list[str]:
        return sorted({t for c in cols.values() for t in c.series})

    def series(self, cols: dict[int, Any], tag: str) -> Scalars | RankedScalars:
        per = {r: c.series[tag] for r, c in cols.items() if tag in c.series}
        if self.mode == "all":
            return stack(per)
        return reduce(per, self.mode)


def stack(per: dict[int, Scalars]) -> RankedScalars:
    if not per:
        e = np.empty(0)
        return RankedScalars(e.astype(np.int64), e, e.copy(), e.astype(np.int64))
    ranks = np.concatenate([np.full(len(s.step), r, np.int64) for r, s in per.items()])
    return RankedScalars(np.concatenate([s.step for s in per.values()]),
                         np.concatenate([s.wall_time for s in per.values()]),
                         np.concatenate([s.value for s in per.values()]), ranks)


def _last_per_step(s: Scalars) -> Scalars:
    """One point per step: the last one written."""
    rev = s.step[::-1]
    _, first = np.unique(rev, return_index=True)
    keep = len(rev) - 1 - first
    return Scalars(s.step[keep], s.wall_time[keep], s.value[keep])


def reduce(per: dict[int, Scalars], how: str) -> Scalars:
    """Per step over the ranks that logged it: mean, min or max (NaN propagates), the
    latest wall time; steps sorted."""
    parts = [_last_per_step(s) for s in per.values()]
    if not parts:
        e = np.empty(0)
        return Scalars(e.astype(np.int64), e, e.copy())
    step = np.concatenate([p.step for p in parts])
    wall = np.concatenate([p.wall_time for p in parts])
    value = np.concatenate([p.value for p in parts])
    order = np.argsort(step, kind="stable")
    step, wall, value = step[order], wall[order], value[order]
    steps, starts, counts = np.unique(step, return_index=True, return_counts=True)
    if how == "mean":
        out = np.add.reduceat(value, starts) / counts
    else:
        out = (np.minimum if how == "min" else np.maximum).reduceat(value, starts)
    return Scalars(steps.astype(np.int64), np.maximum.reduceat(wall, starts), out)

