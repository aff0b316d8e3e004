"""Engine workloads of ``python -m summarylog.bench``: runs read through Ray Data
(:func:`summarylog.ray.read_events`, a local cluster of 2 worker CPUs) against the plain
Reader on one thread (issue 26 point 3).

The runs are written once per distinct run and hard-linked (so building 10^8 points
takes seconds, and the page cache holds one copy: both sides read from memory).  Each
timed round starts from the paths: the Reader's discovery and Ray's (on the driver) are
timed.  Ray's start-up (``ray.init`` and the first tiny dataset, which imports Ray Data,
pyarrow and summarylog in the workers) is reported as its own figure, not in the ratio.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from typing import Any, Iterator

import numpy as np

from .registry import Context, Row, bench, need_peer, per_second, write_back

__all__ = ["bench_ray_read"]

_TAGS = ("loss", "acc", "lr", "grad_norm")


def _root(ctx: Context, runs: int, distinct: int, steps: int) -> tuple[str, int]:
    """``runs`` runs of len(_TAGS) x ``steps`` scalars (one event per step, as log()
    writes), ``distinct`` of them written and the others hard links to them."""
    from ..writer import Writer

    root = ctx.path("engine_runs")
    names = []
    for k in range(distinct):
        d = os.path.join(root, f"run{k:04d}")
        with Writer(d, durability="none") as w:
            base = np.arange(steps, dtype=np.float64) * 1e-3 + k
            for i in range(steps):
                w.log({t: base[i] + j for j, t in enumerate(_TAGS)}, step=i)
        (name,) = os.listdir(d)
        names.append(os.path.join(d, name))
    for k in range(distinct, runs):
        d = os.path.join(root, f"run{k:04d}")
        os.mkdir(d)
        src = names[k % distinct]
        os.link(src, os.path.join(d, os.path.basename(src)))
    write_back()
    return root, runs * steps * len(_TAGS)


@contextlib.contextmanager
def _cluster(ray: Any) -> Iterator[float]:
    """A local Ray cluster of 2 CPUs for the bench (or the one already running); yields
    its start-up seconds (init and a first tiny dataset)."""
    if ray.is_initialized():
        yield 0.0
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # no ~/.ray/auth_token
    tmp = tempfile.mkdtemp(prefix="slray-", dir="/tmp")  # short: Ray's sockets live here
    here = os.getcwd()
    t0 = time.perf_counter()
    os.chdir(tmp)  # Ray puts the driver's directory on the workers' sys.path
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 _temp_dir=tmp)
    finally:
        os.chdir(here)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # a line per dataset otherwise
        ray.data.range(2, override_num_blocks=2).materialize()
        yield time.perf_counter() - t0
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def _block_sum(batch: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pa.table({"n": [batch.num_rows], "s": [pc.sum(batch.column("value")).as_py() or 0.0]})


def _ray_reduce(ray: Any, root: str, **options: Any) -> tuple[int, float, float]:
    """(rows, sum of values, seconds): each block summed in the worker that read it;
    ``options`` go to read_events."""
    from ..ray import read_events

    t0 = time.perf_counter()
    ds = read_events(root, **options).map_batches(_block_sum, batch_format="pyarrow",
                                                  batch_size=None)
    parts = ray.get(ds.to_arrow_refs())
    dt = time.perf_counter() - t0
    # Ray coalesces the one-row results into blocks: every row of every part counts
    return (sum(sum(p.column("n").to_pylist()) for p in parts),
            sum(sum(p.column("s").to_pylist()) for p in parts), dt)


def _ray_rows(root: str) -> tuple[int, float, float]:
    """(rows, sum, seconds): every block iterated in the driver."""
    import pyarrow.compute as pc

    from ..ray import read_events

    t0 = time.perf_counter()
    n, s = 0, 0.0
    for b in read_events(root).iter_batches(batch_size=None, batch_format="pyarrow"):
        n += b.num_rows
        s += pc.sum(b.column("value")).as_py() or 0.0
    return n, s, time.perf_counter() - t0


def _reader(root: str) -> tuple[int, float, float]:
    """(rows, sum, seconds): Reader(threads=1).scalars_all(), summed."""
    from ..reader import Reader

    t0 = time.perf_counter()
    n, s = 0, 0.0
    for tags in Reader(root, threads=1).scalars_all().values():
        for series in tags.values():
            n += len(series.value)
            s += float(series.value.sum())
    return n, s, time.perf_counter() - t0


@bench("ray_read", goal=1.6, unit="scalars/s", peer="Reader(threads=1)",
       description="scalars of 1 000 runs x 100 000 (10^8; 100 runs written, hard-linked x10) "
                   "read through Ray Data on 2 local workers, reduced in the workers, vs the "
                   "Reader on one thread; Ray's start-up reported apart")
def bench_ray_read(ctx: Context) -> list[Row]:
    ray = need_peer("ray", "pip install 'summarylog[ray]'")
    need_peer("ray.data", "pip install 'summarylog[ray]'")
    runs, distinct, steps = ctx.pick((1000, 100, 25_000), (20, 4, 2_500))
    root, n = _root(ctx, runs, distinct, steps)
    try:
        with _cluster(ray) as startup:
            want = _reader(root)
            for got in (_ray_reduce(ray, root), _ray_rows(root)):  # warm-up and check
                if got[0] != want[0] or not np.isclose(got[1], want[1], rtol=1e-9):
                    raise RuntimeError(f"Ray read {got[:2]}, the Reader {want[:2]}")
            # the one-thread Reader's rounds move most on a shared machine (its 2.4 GB of
            # columns): five paired rounds steady the median where three did not
            secs = ctx.rounds({"reduce": lambda: _ray_reduce(ray, root)[2],
                               "reserved": lambda: _ray_reduce(
                                   ray, root, op_resource_reservation=True)[2],
                               "rows": lambda: _ray_rows(root)[2],
                               "reader": lambda: _reader(root)[2]}, at_least=5)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cpus = os.cpu_count()
    note = (f"{runs} runs x {len(_TAGS) * steps:,} scalars ({distinct} written, the rest hard "
            f"links; page cache warm); Ray start-up {startup:.1f} s (init + first dataset), "
            f"not in the ratio; {cpus} CPUs shared by driver, raylet and 2 workers")
    ctx.log(f"ray_read: {note}")
    reader = per_second(n, secs["reader"])
    return [Row("ray_read", "read_events + sum in the workers (2 workers)", "Reader(threads=1)",
                "scalars/s", per_second(n, secs["reduce"]), reader, paired=True, note=note,
                extra={"ray_startup_s": startup, "scalars": n}),
            Row("ray_read", "read_events(op_resource_reservation=True) + sum",
                "Reader(threads=1)", "scalars/s", per_second(n, secs["reserved"]), reader,
                paired=True, primary=False,
                note="Ray Data's per-operator reservation kept: it runs one task until the "
                     "execution is granted the cluster's CPUs (about a second)"),
            Row("ray_read", "read_events, every block to the driver", "Reader(threads=1)",
                "scalars/s", per_second(n, secs["rows"]), reader, paired=True, primary=False,
                note="rows iterated in the driver (iter_batches)")]
