"""Reading at scale: a root of many runs read on the Reader's default thread count
against one thread (issue 23 point 3).  The runs are distinct files, big enough that
the native scan and decode, not per-run start-up, take the time."""

from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np

from .registry import Context, Row, bench, per_second


def _root_of_runs(ctx: Context, runs: int, steps: int) -> tuple[str, int]:
    """A root of ``runs`` copies of one run (two tags, one scalar per event, as
    add_scalar writes); returns (root, scalars in all)."""
    from ..writer import Writer

    root = ctx.path("many_runs")
    first = os.path.join(root, "run0000")
    with Writer(first) as w:
        for i in range(steps):
            w.log({"loss": 1.0 / (i + 1)}, step=i)
            w.log({"lr": 0.1 * (i % 7)}, step=i)
    (name,) = os.listdir(first)
    for k in range(1, runs):
        d = os.path.join(root, f"run{k:04d}")
        os.mkdir(d)
        shutil.copyfile(os.path.join(first, name), os.path.join(d, name))  # distinct files
    return root, runs * steps * 2


def _read(root: str, threads: int | None) -> tuple[Any, float]:
    import time

    from ..reader import Reader

    r = Reader(root, threads=threads)
    r.runs()  # discovery is the same walk on any thread count: not timed
    t0 = time.perf_counter()
    out = r.scalars_all()
    dt = time.perf_counter() - t0
    if r.run_errors:
        raise RuntimeError(f"runs not read: {r.run_errors}")
    return out, dt


def _same(a: dict, b: dict) -> None:
    if list(a) != list(b) or any(list(a[r]) != list(b[r]) for r in a):
        raise RuntimeError("threads=1 and the default read other runs or tags")
    for run, tags in a.items():
        for tag, s in tags.items():
            if not all(np.array_equal(x, y) for x, y in zip(s, b[run][tag])):
                raise RuntimeError(f"threads=1 and the default differ on {run}/{tag}")


@bench("read_many_runs", goal=1.7, unit="scalars/s", peer="Reader(threads=1)",
       description="a root of 1 000 runs: Reader.scalars_all() on the default threads vs one")
def bench_read_many_runs(ctx: Context) -> list[Row]:
    from ..read_pool import thread_count

    runs, steps = ctx.pick((1000, 10_000), (40, 2_000))
    root, n = _root_of_runs(ctx, runs, steps)
    default = thread_count(None)
    try:
        one, _ = _read(root, 1)
        many, _ = _read(root, None)
        _same(one, many)
        del one, many
        secs = ctx.rounds({"default": lambda: _read(root, None)[1],
                           "one": lambda: _read(root, 1)[1]}, at_least=3)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return [Row("read_many_runs", f"scalars_all(), threads={default}", "Reader(threads=1)",
                "scalars/s", per_second(n, secs["default"]), per_second(n, secs["one"]),
                paired=True,
                note=f"{runs} runs x {2 * steps:,} scalars, page cache warm; "
                     f"{os.cpu_count()} CPUs (shared: noisy)")]
