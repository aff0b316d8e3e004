"""The bench registry: the ``@bench`` decorator, the per-run :class:`Context`
handed to each bench function, and the :class:`Row` each one returns.

A bench function is named ``bench_<name>``, takes a :class:`Context` and
returns a list of :class:`Row`: one row per (summarylog figure, peer figure)
pair.  Rows with ``primary=True`` are judged against the registered goal;
the others are informational.  Figures are throughputs (higher is better);
the ratio is always summarylog / peer.  Nothing here asserts a time.
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = [
    "BENCH_HINT",
    "REGISTRY",
    "BenchSpec",
    "Context",
    "PeerMissing",
    "Row",
    "bench",
    "iter_specs",
    "need_peer",
    "per_second",
    "timed",
]

#: What to tell the user when a peer is not installed.
BENCH_HINT = "pip install summarylog[bench]"

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class PeerMissing(Exception):
    """A peer package is not installed; ``str(exc)`` is what the table shows."""


def need_peer(module: str, hint: str = BENCH_HINT) -> Any:
    """Import a peer module, or raise :class:`PeerMissing` naming the install hint."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise PeerMissing(f"missing ({hint})") from None


@dataclass(frozen=True)
class BenchSpec:
    """One registered workload."""

    name: str
    func: Callable[["Context"], list["Row"]]
    goal: float  #: minimum ratio summarylog / peer on the primary rows
    unit: str  #: unit of the figures ("GB/s", "MiB/s", "records/s")
    peer: str  #: short description of the peer
    description: str


#: Registered benches, by name, in registration order.
REGISTRY: dict[str, BenchSpec] = {}


def bench(name: str, *, goal: float, unit: str, peer: str,
          description: str = "") -> Callable[[Callable[["Context"], list["Row"]]],
                                             Callable[["Context"], list["Row"]]]:
    """Register ``bench_<name>`` as the workload ``name``.

    Raises ValueError at import time if the function is not named
    ``bench_<name>``, if ``name`` is not a lowercase identifier, if the goal
    is not a positive number, or if another function already took the name.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"bench name must be a lowercase identifier, got {name!r}")
    if isinstance(goal, bool) or not isinstance(goal, (int, float)) or not goal > 0:
        raise ValueError(f"goal must be a positive number (a ratio), got {goal!r}")

    def register(func: Callable[["Context"], list["Row"]]) -> Callable[["Context"], list["Row"]]:
        expected = f"bench_{name}"
        fname = getattr(func, "__name__", "")
        if not fname.startswith("bench_"):
            raise ValueError(f"bench functions must be named bench_*, got {fname!r}")
        if fname != expected:
            raise ValueError(f"bench {name!r} must be registered on a function named "
                             f"{expected!r}, not {fname!r}")
        old = REGISTRY.get(name)
        if old is not None and old.func.__qualname__ != func.__qualname__:
            raise ValueError(f"bench {name!r} is already registered by {old.func.__module__}")
        REGISTRY[name] = BenchSpec(name, func, float(goal), unit, peer,
                                   description or (func.__doc__ or "").strip().split("\n")[0])
        return func

    return register


def _median(xs: list[float] | None) -> float | None:
    return statistics.median(xs) if xs else None


@dataclass
class Row:
    """One line of the table: summarylog's figures against one peer's.

    ``ours`` and ``peer_runs`` hold one figure per run (throughput in
    ``unit``); the table shows their medians.
    """

    workload: str
    label: str  #: what the line measures, e.g. "write_many" or "write() loop"
    peer: str  #: who the peer is, e.g. "tensorboardX 2.6.5 RecordWriter"
    unit: str
    ours: list[float]
    peer_runs: list[float] | None = None
    peer_status: str = "ok"  #: "ok", "missing (...)" or "error: ..."
    primary: bool = True  #: judged against the goal; False: informational
    goal: float | None = None  #: filled in from the BenchSpec for primary rows
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``ours[i]`` and ``peer_runs[i]`` ran side by side in round i: the
    #: ratio is the median of the rounds' ratios (drift between rounds, a
    #: noisy neighbour's slow minute, then cancels), not the medians' ratio
    paired: bool = False

    @property
    def ours_value(self) -> float | None:
        return _median(self.ours)

    @property
    def peer_value(self) -> float | None:
        return _median(self.peer_runs) if self.peer_status == "ok" else None

    @property
    def ratio(self) -> float | None:
        o, p = self.ours_value, self.peer_value
        if o is None or p is None or p <= 0:
            return None
        if self.paired and self.peer_runs and len(self.ours) == len(self.peer_runs):
            return statistics.median(a / b for a, b in zip(self.ours, self.peer_runs) if b > 0)
        return o / p

    @property
    def met(self) -> bool | None:
        """True/False for a primary row with both figures, else None."""
        r = self.ratio
        if not self.primary or self.goal is None or r is None:
            return None
        return r >= self.goal

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "label": self.label,
            "peer": self.peer,
            "unit": self.unit,
            "primary": self.primary,
            "peer_status": self.peer_status,
            "peer_value": self.peer_value,
            "ours_value": self.ours_value,
            "ratio": self.ratio,
            "goal": self.goal if self.primary else None,
            "met": self.met,
            "peer_runs": list(self.peer_runs) if self.peer_runs else [],
            "ours_runs": list(self.ours),
            "note": self.note,
            **({"extra": self.extra} if self.extra else {}),
        }


@dataclass
class Context:
    """What a bench function gets: sizes, repeat count, a scratch directory
    on the benchmarked disk, and the timing helpers."""

    quick: bool
    repeat: int
    tmpdir: str
    log: Callable[[str], None] = lambda msg: None
    #: shared between benches of one run (e.g. generated payloads)
    cache: dict[str, Any] = field(default_factory=dict)
    _seq: int = 0

    def pick(self, full: Any, quick: Any) -> Any:
        """``quick`` in --quick mode, else ``full``."""
        return quick if self.quick else full

    def path(self, stem: str) -> str:
        """A fresh, not yet existing file path in the scratch directory."""
        self._seq += 1
        return os.path.join(self.tmpdir, f"{stem}-{self._seq}")

    def round_count(self, at_least: int = 1) -> int:
        """``repeat``, raised to ``at_least`` outside --quick."""
        return self.repeat if self.quick else max(self.repeat, at_least)

    def rounds(self, candidates: dict[str, Callable[[], float]],
               at_least: int = 1, collect: bool = True) -> dict[str, list[float]]:
        """Run each candidate once per round, :meth:`round_count` rounds,
        rotating the order each round so drift (page-cache writeback, CPU
        boost, a noisy neighbour) does not always favour the same one.  A
        candidate does its own untimed setup and returns the seconds of its
        timed part.  ``collect``: a full ``gc.collect()`` before each run
        (default True; not for candidates that continue one long-lived
        loop, whose own garbage is part of what is timed)."""
        names = list(candidates)
        out: dict[str, list[float]] = {n: [] for n in names}
        for r in range(self.round_count(at_least)):
            k = r % len(names) if names else 0
            for n in names[k:] + names[:k]:
                if collect:
                    gc.collect()
                out[n].append(candidates[n]())
        return out


def timed(body: Callable[[], Any], setup: Callable[[], Any] | None = None,
          teardown: Callable[[], Any] | None = None) -> Callable[[], float]:
    """A candidate for :meth:`Context.rounds`: untimed ``setup``, timed
    ``body`` (time.perf_counter), untimed ``teardown``."""

    def run() -> float:
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        body()
        dt = time.perf_counter() - t0
        if teardown is not None:
            teardown()
        return dt

    return run


def write_back() -> None:
    """Write back every dirty page (untimed): a setup's or one candidate's writeback
    would otherwise land in the timed rounds that follow (the kernel starts it about
    30 s after the writes, in the middle of them)."""
    if hasattr(os, "sync"):
        os.sync()


def per_second(work: float, seconds: list[float]) -> list[float]:
    """Throughput figures (work / s) for each run."""
    return [work / s for s in seconds]


def iter_specs(only: list[str] | None = None) -> Iterator[BenchSpec]:
    """Registered specs, filtered by name (in registration order)."""
    for name, spec in REGISTRY.items():
        if only is None or name in only:
            yield spec
