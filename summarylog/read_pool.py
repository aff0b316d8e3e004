"""Loading the scalar columns of many runs on several threads: the native open, scan
and decode release the GIL, so runs load side by side.  Each thread keeps its own
:class:`ColumnLoader` (its scratch buffers are not shared)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, NamedTuple

from .read_columns import LOCAL_FILES, ColumnLoader, FileGate, RunColumns
from .read_types import FileReport

__all__ = ["RunLoad", "load_runs", "read_order", "thread_count", "MAX_DEFAULT_THREADS"]

#: the default thread count's ceiling (past it, disks and memory bandwidth bind)
MAX_DEFAULT_THREADS = 8


def thread_count(threads: int | None) -> int:
    """``threads`` checked, or the default: min(CPUs this process may use, 8)."""
    if threads is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):  # not Linux
            cpus = os.cpu_count() or 1
        return max(1, min(cpus, MAX_DEFAULT_THREADS))
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int or None, got {type(threads).__name__}")
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    return threads


class RunLoad(NamedTuple):
    """What loading one run gave."""

    run: str
    columns: RunColumns | None  #: None when the run could not be read
    reports: dict[str, FileReport]  #: its files' reports (a failed run's: those made before)
    error: OSError | None


def _load_one(loader: ColumnLoader, run: str, files: list[str], purge: bool,
              gate: FileGate) -> RunLoad:
    reports: dict[str, FileReport] = {}
    try:
        return RunLoad(run, loader.load(files, purge, reports, gate), reports, None)
    except OSError as exc:  # this run only: the others go on
        return RunLoad(run, None, reports, exc)


def read_order(jobs: dict[str, list[str]], threads: int) -> list[str]:
    """The files of ``jobs`` in the order ``threads`` threads will want them: runs go
    ``threads`` at a time, so their files alternate (one file of each, then the next)."""
    runs = list(jobs.values())
    order: list[str] = []
    for w in range(0, len(runs), threads):
        wave = runs[w:w + threads]
        order += [f for k in range(max(map(len, wave))) for fs in wave if k < len(fs)
                  for f in (fs[k],)]
    return order


def load_runs(jobs: dict[str, list[str]], purge: bool, verify: bool, threads: int,
              gate: FileGate = LOCAL_FILES) -> Iterator[RunLoad]:
    """Each run's columns (``jobs``: run -> its files), on up to ``threads`` threads,
    yielded in ``jobs`` order; each file is read once ``gate`` says it is whole (a
    URL's are fetched meanwhile).  An OSError ends its run only; other errors
    propagate."""
    gate.expect(read_order(jobs, threads))
    if threads <= 1 or len(jobs) <= 1:
        loader = ColumnLoader(verify)
        for run, files in jobs.items():
            yield _load_one(loader, run, files, purge, gate)
        return
    local = threading.local()

    def task(run: str) -> RunLoad:
        loader = getattr(local, "loader", None)
        if loader is None:
            loader = local.loader = ColumnLoader(verify)
        return _load_one(loader, run, jobs[run], purge, gate)

    with ThreadPoolExecutor(min(threads, len(jobs)), thread_name_prefix="summarylog-read") as ex:
        yield from ex.map(task, jobs)
