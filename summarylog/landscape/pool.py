"""Worker processes for landscape grids, started once per computation and reused for
every landscape of it: each worker runs its setup (e.g. its device), builds its
evaluator at the first plane it gets and keeps it (a MindSpore worker compiles its
network once), and streams each finished row back.  A worker that raises reports the
error, and one that dies is noticed within half a second: the caller gets an
exception, never a hang."""

from __future__ import annotations

import multiprocessing
import queue as queue_mod
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from .directions import Plane
from .evaluate import LandscapeError
from .parallel import limit_threads, run_tasks

__all__ = ["WorkerPool"]

_POLL = 0.5  # seconds between liveness checks of the workers


def _serve(make: Callable[[], Any], inbox: Any, out: Any, processes: int,
           setup: Callable[[], None] | None) -> None:
    try:
        if setup is not None:
            setup()
        limit_threads(processes)
        ev = None
        while True:
            job = inbox.get()
            if job is None:
                return
            plane, tasks, allow_nonfinite = job
            if ev is None:
                ev = make()
            ev.set_plane(plane)
            run_tasks(ev, tasks, allow_nonfinite, lambda k, i, v: out.put((k, i, v)))
            out.put(("done", 0, None))
    except BaseException as exc:  # reported to the parent, which raises it
        out.put(("error", 0, (type(exc).__name__, str(exc), traceback.format_exc(),
                              isinstance(exc, LandscapeError))))


def _raise(vals: tuple) -> None:
    name, msg, tb, ours = vals
    if ours:
        raise LandscapeError(msg)
    if name in ("TypeError", "ValueError"):  # a check that names its argument
        raise {"TypeError": TypeError, "ValueError": ValueError}[name](msg)
    raise LandscapeError(f"a landscape worker failed: {name}: {msg}\n{tb}")


class WorkerPool:
    """``size`` worker processes, each making its evaluator with ``make()``.  Started
    by fork on Linux (the evaluator's inputs are shared, not pickled) unless JAX is
    loaded here (it is multithreaded and a fork may deadlock) or ``start_method``
    says otherwise; spawned workers need ``make`` to pickle."""

    def __init__(self, make: Callable[[], Any], size: int, start_method: str | None = None,
                 setups: list[Callable[[], None] | None] | None = None) -> None:
        method = start_method or ("fork" if sys.platform.startswith("linux")
                                  and "jax" not in sys.modules else "spawn")
        ctx = multiprocessing.get_context(method)
        self.size = size
        self.out = ctx.Queue()
        self.inboxes = [ctx.Queue() for _ in range(size)]
        self.workers = []
        try:
            for k in range(size):
                setup = setups[k] if setups and k < len(setups) else None
                p = ctx.Process(target=_serve, daemon=True,
                                args=(make, self.inboxes[k], self.out, size, setup))
                p.start()
                self.workers.append(p)
        except BaseException:
            self.close()
            raise

    def run(self, plane: Plane, work: list[list[tuple]], allow_nonfinite: bool,
            store: Callable[[str, int, np.ndarray], None],
            advance: Callable[[int], None]) -> None:
        """Hand worker k the tasks ``work[k]`` on ``plane``; ``store`` each result as it
        comes (and ``advance`` the progress by its points) until all are done."""
        for inbox, tasks in zip(self.inboxes, work):
            inbox.put((plane, tasks, allow_nonfinite))
        finished = 0
        while finished < self.size:
            try:
                kind, index, vals = self.out.get(timeout=_POLL)
            except queue_mod.Empty:
                dead = [p for p in self.workers if p.exitcode is not None]
                if dead:
                    raise LandscapeError(f"a landscape worker process died (exit code "
                                         f"{dead[0].exitcode}) before finishing its rows")
                continue
            if kind == "done":
                finished += 1
            elif kind == "error":
                _raise(vals)
            else:
                store(kind, index, vals)
                advance(len(vals))

    def close(self) -> None:
        """Stop the workers (a polite stop, then terminate after 10 s)."""
        for inbox, p in zip(self.inboxes, self.workers):
            if p.is_alive():
                try:
                    inbox.put(None)
                except (OSError, ValueError):
                    pass
        for p in self.workers:
            p.join(10)
            if p.is_alive():
                p.terminate()
                p.join(5)
        for q in [self.out, *self.inboxes]:
            q.close()
            q.cancel_join_thread()
