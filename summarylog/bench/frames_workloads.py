"""Bench: summarylog.SummaryReader against tbparse.SummaryReader, the DataFrames of a
run's scalars and of its histograms.  tbparse parses every event in Python, so it reads a
run a tenth the size of ours; both are reported per second, and before any figure is used
both frames of the peer's run are checked equal (pandas.testing.assert_frame_equal)."""

from __future__ import annotations

import tempfile
import time
import warnings
from typing import Any, Callable

import numpy as np

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second
from .workloads import _ver

__all__ = ["bench_summary_reader_scalars", "bench_summary_reader_histograms"]

_TAGS = ("loss", "acc", "lr", "grad_norm")


def _run(ctx: Context, kind: str, steps: int) -> str:
    """A run of ``steps`` steps of the four tags, written by summarylog.SummaryWriter
    (as torch's writer would): scalars, or histograms of 1,000 values in torch's
    default buckets (a varying number per histogram, empty ones trimmed); cached."""
    key = f"frames-{kind}-{steps}"
    if key not in ctx.cache:
        from ..summary_writer import SummaryWriter

        run = tempfile.mkdtemp(prefix=f"frames-{kind}-{steps}-", dir=ctx.tmpdir)
        rng = np.random.default_rng(0)
        base = rng.normal(size=1000)
        with SummaryWriter(run, durability="none") as w:
            for s in range(steps):
                for k, tag in enumerate(_TAGS):
                    if kind == "scalars":
                        w.add_scalar(tag, 1.0 / (1 + s + k), s)
                    else:
                        w.add_histogram(tag, base * (1 + k) * (1 + s % 7) + rng.normal(), s)
        ctx.cache[key] = run
    return ctx.cache[key]


def _timed(read: Callable[[], Any], rows: int, what: str) -> Callable[[], float]:
    def run() -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tbparse's own deprecation warnings
            t0 = time.perf_counter()
            df = read()
            dt = time.perf_counter() - t0
        if len(df) != rows:
            raise RuntimeError(f"{what}: {len(df):,} rows, expected {rows:,}")
        return dt
    return run


def _frames(ctx: Context, workload: str, kind: str, steps: int, steps_peer: int) -> list[Row]:
    from ..summary_reader import SummaryReader

    big, small = _run(ctx, kind, steps), _run(ctx, kind, steps_peer)
    n, n_peer = steps * len(_TAGS), steps_peer * len(_TAGS)

    def ours(path: str) -> Callable[[], Any]:
        return lambda: getattr(SummaryReader(path), kind)

    candidates = {"ours": _timed(ours(big), n, "SummaryReader"),
                  "ours_small": _timed(ours(small), n_peer, "SummaryReader")}
    peer, status = "tbparse SummaryReader", "ok"
    try:
        tbparse = need_peer("tbparse")
        import pandas

        peer = f"tbparse {_ver('tbparse')} SummaryReader"

        def theirs() -> Any:
            return getattr(tbparse.SummaryReader(small), kind)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pandas.testing.assert_frame_equal(ours(small)(), theirs())
        candidates["peer"] = _timed(theirs, n_peer, "tbparse")
    except PeerMissing as exc:
        status = str(exc)
    ctx.log(f"{workload}: {n:,} {kind} (peer: {n_peer:,}), {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n_peer, res["peer"]) if "peer" in res else None
    what = "histograms (torch's buckets)" if kind == "histograms" else "scalars"
    note = (f"ours: summarylog.SummaryReader(run).{kind} (a DataFrame) on {n:,} {what} of "
            f"4 tags interleaved; peer: tbparse SummaryReader(run).{kind} on {n_peer:,} of "
            f"the same kind, as rows/s; frames of the peer's run checked equal first")
    return [Row(workload, workload, peer, "rows/s", per_second(n, res["ours"]), peer_runs,
                status, note=note),
            Row(workload, f"{workload}, same {n_peer:,}-row run", peer, "rows/s",
                per_second(n_peer, res["ours_small"]), peer_runs, status, primary=False,
                note="ours on exactly the peer's run")]


@bench("summary_reader_scalars", goal=100, unit="rows/s", peer="tbparse SummaryReader",
       description="400,000 scalars of 4 tags: SummaryReader(run).scalars vs tbparse")
def bench_summary_reader_scalars(ctx: Context) -> list[Row]:
    """summarylog.SummaryReader(run).scalars on 400,000 scalars vs tbparse on 40,000."""
    return _frames(ctx, "summary_reader_scalars", "scalars", ctx.pick(100_000, 5_000),
                   ctx.pick(10_000, 500))


@bench("summary_reader_histograms", goal=100, unit="rows/s", peer="tbparse SummaryReader",
       description="40,000 histograms of 4 tags: SummaryReader(run).histograms vs tbparse")
def bench_summary_reader_histograms(ctx: Context) -> list[Row]:
    """summarylog.SummaryReader(run).histograms on 40,000 histograms vs tbparse on 4,000."""
    return _frames(ctx, "summary_reader_histograms", "histograms", ctx.pick(10_000, 500),
                   ctx.pick(1_000, 50))

