"""The loss over a plane's grid (and its path), on this process or split across worker
processes: each worker makes its own evaluator and takes a contiguous block of grid
rows (and of path points), as MindSpore splits them across devices.  Every row is
evaluated the same way wherever it runs, so the result does not depend on the number
of processes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .directions import Plane
from .evaluate import check_finite
from .progress import Progress

__all__ = ["evaluate_plane", "check_processes", "split", "run_tasks", "limit_threads"]


def check_processes(processes: Any) -> int:
    if isinstance(processes, bool) or not isinstance(processes, int):
        raise TypeError(f"processes must be an int, got {type(processes).__name__}")
    if processes < 1:
        raise ValueError(f"processes must be >= 1, got {processes}")
    return processes


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous blocks of ``range(n)``, the last one taking the remainder
    (MindSpore's split)."""
    per = n // parts
    out, start = [], 0
    for i in range(parts):
        end = n if i == parts - 1 else start + per
        out.append((start, end))
        start = end
    return out


def _tasks(plane: Plane, rows: tuple[int, int], path: tuple[int, int] | None) -> list[tuple]:
    out: list[tuple] = []
    if path is not None and plane.path is not None and path[1] > path[0]:
        p = plane.path[path[0]:path[1]]
        out.append(("path", path[0], p[:, 0].astype(np.float64), p[:, 1].astype(np.float64)))
    for i in range(*rows):
        out.append(("row", i, plane.x, np.full(plane.x.size, plane.y[i])))
    return out


def run_tasks(evaluator: Any, tasks: list[tuple], allow_nonfinite: bool,
               emit: Callable[[str, int, np.ndarray], None]) -> None:
    for kind, index, xs, ys in tasks:
        vals = np.asarray(evaluator.losses(xs, ys), np.float64)
        check_finite(vals, xs, ys, allow_nonfinite)
        emit(kind, index, vals)


def limit_threads(processes: int) -> None:
    """Share the cores between the workers (a framework's own thread pool in each
    would oversubscribe them)."""
    threads = max(1, (os.cpu_count() or 1) // processes)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def evaluate_plane(make: Callable[[], Any], plane: Plane, *, processes: int = 1,
                   progress: bool = True, desc: str = "landscape",
                   allow_nonfinite: bool = False, start_method: str | None = None,
                   worker_setups: list[Callable[[], None] | None] | None = None,
                   evaluator: Any = None, pool: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(z, path_z)``: the loss at every grid point (``z[i, j]`` at ``x[j], y[i]``) and
    at the path's points.  ``make()`` builds an evaluator (in each worker when
    ``processes > 1``; ``evaluator`` reuses one already built in this process);
    ``worker_setups[k]`` runs first in worker k (e.g. choosing its device); ``pool``
    (a :class:`.pool.WorkerPool`) reuses workers started for an earlier plane."""
    n_rows = plane.y.size
    n_path = 0 if plane.path is None else len(plane.path)
    z = np.full((n_rows, plane.x.size), np.nan)
    path_z = None if plane.path is None else np.full(n_path, np.nan)

    def store(kind: str, index: int, vals: np.ndarray) -> None:
        if kind == "row":
            z[index] = vals
        else:
            assert path_z is not None
            path_z[index:index + len(vals)] = vals

    total = z.size + n_path
    procs = min(processes, n_rows)
    with Progress(total, desc, progress) as bar:
        if procs <= 1:
            ev = evaluator if evaluator is not None else make()
            ev.set_plane(plane)

            def emit(kind: str, index: int, vals: np.ndarray) -> None:
                store(kind, index, vals)
                bar.update(len(vals))

            run_tasks(ev, _tasks(plane, (0, n_rows), (0, n_path)), allow_nonfinite, emit)
            return z, path_z
        from .pool import WorkerPool

        own = pool is None
        if own:
            pool = WorkerPool(make, procs, start_method, worker_setups)
        try:
            work = [_tasks(plane, rows, path) for rows, path in
                    zip(split(n_rows, pool.size), split(n_path, pool.size))]
            pool.run(plane, work, allow_nonfinite, store, bar.update)
        finally:
            if own:
                pool.close()
    return z, path_z
