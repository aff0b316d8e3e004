"""Writer workloads of ``python -m summarylog.bench``: the calls users make
in a training loop, summarylog.Writer against tensorboardX and
``torch.utils.tensorboard``, side by side in this process.

The slow peers are timed on fewer calls than we are and reported per second
(tensorboardX costs ~100 µs a call here: 200 000 calls would take 20 s a run).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from typing import Any, Callable

import numpy as np

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second
from .workloads import _ver

__all__ = ["bench_add_scalar", "bench_add_scalar_torch", "bench_log10", "bench_add_histogram",
           "bench_add_image"]


def _scratch(ctx: Context) -> str:
    return tempfile.mkdtemp(prefix="slg-bench-", dir=ctx.tmpdir)


def scalar_loop(ctx: Context, make: Callable[[str], Any], n: int) -> Callable[[], float]:
    """n add_scalar calls plus close() on a fresh writer from ``make(dir)``."""
    def run() -> float:
        d = _scratch(ctx)
        try:
            t0 = time.perf_counter()
            w = make(d)
            add = w.add_scalar
            for i in range(n):
                add("loss", 0.5, i)
            w.close()
            return time.perf_counter() - t0
        finally:
            shutil.rmtree(d, ignore_errors=True)

    return run


def _ours_scalar_loop(ctx: Context, n: int) -> Callable[[], float]:
    from ..writer import Writer

    return scalar_loop(ctx, lambda d: Writer(d), n)


def _scalar_rows(ctx: Context, name: str, peer_label: str, make: Callable[[str], Any] | None,
                 status: str) -> list[Row]:
    n = ctx.pick(200_000, 20_000)
    n_peer = ctx.pick(20_000, 2_000)
    candidates = {"ours": _ours_scalar_loop(ctx, n)}
    if make is not None:
        candidates["peer"] = scalar_loop(ctx, make, n_peer)
    ctx.log(f"{name}: {n:,} add_scalar calls (peer: {n_peer:,}), {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n_peer, res["peer"]) if "peer" in res else None
    ours = per_second(n, res["ours"])
    return [Row(name, name, peer_label, "calls/s", ours, peer_runs, status,
                note=f"add_scalar loop plus close(): ours {n:,} calls, peer {n_peer:,} calls "
                     f"(per second); median µs/call ours "
                     f"{1e6 / sorted(ours)[len(ours) // 2]:.2f}")]


@bench("add_scalar", goal=50, unit="calls/s", peer="tensorboardX SummaryWriter",
       description="add_scalar in a loop (200 000 calls, plus close)")
def bench_add_scalar(ctx: Context) -> list[Row]:
    """add_scalar loop + close: summarylog.Writer vs tensorboardX."""
    label, make, status = "tensorboardX SummaryWriter", None, "ok"
    try:
        tbx = need_peer("tensorboardX")
        label = f"tensorboardX {_ver('tensorboardX')} SummaryWriter"
        make = lambda d: tbx.SummaryWriter(d)  # noqa: E731
    except PeerMissing as exc:
        status = str(exc)
    return _scalar_rows(ctx, "add_scalar", label, make, status)


@bench("add_scalar_torch", goal=40, unit="calls/s", peer="torch.utils.tensorboard",
       description="add_scalar in a loop (200 000 calls, plus close)")
def bench_add_scalar_torch(ctx: Context) -> list[Row]:
    """add_scalar loop + close: summarylog.Writer vs torch.utils.tensorboard."""
    label, make, status = "torch.utils.tensorboard", None, "ok"
    try:
        tut = need_peer("torch.utils.tensorboard")
        label = f"torch {_ver('torch')} utils.tensorboard"
        make = lambda d: tut.SummaryWriter(d)  # noqa: E731
    except PeerMissing as exc:
        status = str(exc)
    return _scalar_rows(ctx, "add_scalar_torch", label, make, status)


@bench("log10", goal=0.5, unit="calls/s", peer="summarylog add_scalar",
       description="log() of 10 scalars vs one add_scalar (goal: at most 2x the cost)")
def bench_log10(ctx: Context) -> list[Row]:
    """Writer.log({10 tags}) calls/s against Writer.add_scalar calls/s."""
    from ..writer import Writer

    n = ctx.pick(100_000, 10_000)
    values = {f"metric/{k}": 0.5 for k in range(10)}

    def log_loop() -> float:
        d = _scratch(ctx)
        try:
            t0 = time.perf_counter()
            w = Writer(d)
            log = w.log
            for i in range(n):
                log(values, i)
            w.close()
            return time.perf_counter() - t0
        finally:
            shutil.rmtree(d, ignore_errors=True)

    res = ctx.rounds({"ours": log_loop, "peer": _ours_scalar_loop(ctx, n)})
    return [Row("log10", "log10", "summarylog add_scalar (1 tag)", "calls/s",
                per_second(n, res["ours"]), per_second(n, res["peer"]),
                note="ratio = log() calls/s / add_scalar calls/s, loop plus close(); "
                     ">= 0.5 means a 10-tag log() costs at most two add_scalar calls")]


def caller_cost(ctx: Context, make: Callable[[str], Any], call: Callable[[Any, int], None],
                 n: int) -> Callable[[], float]:
    """Seconds the caller spends in n calls (close() untimed: the work the
    writer does later on its own thread is not the caller's)."""
    def run() -> float:
        d = _scratch(ctx)
        try:
            w = make(d)
            call(w, -1)  # warm-up: imports, first file
            t0 = time.perf_counter()
            for i in range(n):
                call(w, i)
            dt = time.perf_counter() - t0
            w.close()
            return dt
        finally:
            shutil.rmtree(d, ignore_errors=True)

    return run


def _heavy_rows(ctx: Context, name: str, what: str, call: Callable[[Any, int], None],
                n: int) -> list[Row]:
    from ..writer import Writer

    candidates = {"ours": caller_cost(ctx, lambda d: Writer(d), call, n)}
    label, status = "tensorboardX SummaryWriter", "ok"
    try:
        tbx = need_peer("tensorboardX")
        label = f"tensorboardX {_ver('tensorboardX')} SummaryWriter"
        candidates["peer"] = caller_cost(ctx, lambda d: tbx.SummaryWriter(d), call, n)
    except PeerMissing as exc:
        status = str(exc)
    ctx.log(f"{name}: {n} calls of {what}, {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n, res["peer"]) if "peer" in res else None
    return [Row(name, name, label, "calls/s", per_second(n, res["ours"]), peer_runs, status,
                note=f"{what}: the caller's time only (ours bins/encodes on the writer's "
                     f"thread, async_heavy=True); close() untimed")]


@bench("add_histogram", goal=4, unit="calls/s", peer="tensorboardX SummaryWriter",
       description="add_histogram of 100 000 float32, the caller's cost")
def bench_add_histogram(ctx: Context) -> list[Row]:
    """add_histogram(float32[100 000]): caller's time, ours vs tensorboardX."""
    values = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
    return _heavy_rows(ctx, "add_histogram", "float32[100 000]",
                       lambda w, i: w.add_histogram("h", values, max(i, 0)), ctx.pick(200, 20))


@bench("add_image", goal=20, unit="calls/s", peer="tensorboardX SummaryWriter",
       description="add_image of a 3x256x256 uint8 image, the caller's cost")
def bench_add_image(ctx: Context) -> list[Row]:
    """add_image(uint8 3x256x256 noise): caller's time, ours vs tensorboardX."""
    img = np.random.default_rng(0).integers(0, 256, (3, 256, 256), dtype=np.uint8)
    return _heavy_rows(ctx, "add_image", "uint8 3x256x256 (noise)",
                       lambda w, i: w.add_image("img", img, max(i, 0)), ctx.pick(100, 10))
