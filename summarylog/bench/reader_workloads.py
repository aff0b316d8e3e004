"""Reader workloads of ``python -m summarylog.bench``: reading event files
back, summarylog.Reader against TensorBoard's own readers (EventAccumulator,
EventMultiplexer, the Rust data server) and tbparse, side by side.

Every file is written by summarylog.Writer (untimed) and read once before
any timing, so all candidates read from the page cache.  The slow Python
peers are timed on fewer events than we are and reported per second.  Each
workload checks that the peer returned the same steps and values as we did
before its figures are used; none asserts a time.
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import io
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

import numpy as np

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second, write_back
from .workloads import _tb_reader_kind, _unlink, _ver

__all__ = ["bench_read_scalars", "bench_read_scalars_tbparse", "bench_rust_server",
           "bench_rust_server_root",
           "bench_read_memory", "bench_inspect_many"]

TAG = "loss"
RUN = "run"


# --------------------------------------------------------------------------
# data: runs written by summarylog.Writer, shared between the benches


def _expected(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The steps and values _scalar_run writes (values as float32, as stored)."""
    steps = np.arange(n, dtype=np.int64)
    values = (1.0 / (1.0 + 1e-3 * steps)).astype(np.float32).astype(np.float64)
    return steps, values


def _warm(path: str) -> None:
    """Read every file under ``path`` once, so it is in the page cache."""
    for dirpath, _, names in os.walk(path):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 24):
                    pass


def _scalar_run(ctx: Context, n: int) -> str:
    """A logdir holding one run ``RUN`` of ``n`` scalar events of ``TAG``
    (step i, value 1/(1+i/1000)), written by summarylog.Writer; returns the
    run directory (its parent is the logdir).  Cached for the whole bench run."""
    key = f"reader-run-{n}"
    run_dir: str | None = ctx.cache.get(key)
    if run_dir is None:
        from ..writer import Writer

        logdir = tempfile.mkdtemp(prefix=f"reader-{n}-", dir=ctx.tmpdir)
        run_dir = os.path.join(logdir, RUN)
        w = Writer(run_dir, durability="none")
        add = w.add_scalar
        for i in range(n):
            add(TAG, 1.0 / (1.0 + 1e-3 * i), i)
        w.close()
        write_back()
        ctx.cache[key] = run_dir
    _warm(run_dir)
    return run_dir


def _check_ours(s: Any, n: int, what: str) -> None:
    steps, values = _expected(n)
    if not (np.array_equal(s.step, steps) and np.array_equal(s.value, values)):
        raise RuntimeError(f"{what}: Reader.scalars did not return the {n:,} points written")


def _check_same(what: str, ours: Any, steps: Any, values: Any, walls: Any = None) -> None:
    """The peer's columns equal ours (exactly: both widen the stored float32)."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    if len(steps) != len(ours.step):
        raise RuntimeError(f"{what} returned {len(steps):,} points, Reader.scalars "
                           f"{len(ours.step):,}")
    if not np.array_equal(steps, ours.step):
        raise RuntimeError(f"{what} returned other steps than Reader.scalars")
    if not np.array_equal(values, ours.value):
        raise RuntimeError(f"{what} returned other values than Reader.scalars")
    if walls is not None and not np.array_equal(np.asarray(walls, np.float64), ours.wall_time):
        raise RuntimeError(f"{what} returned other wall times than Reader.scalars")


def _reading(read: Callable[[], Any], count: Callable[[Any], int], n: int,
             what: str) -> Callable[[], float]:
    """A candidate for Context.rounds: the timed ``read()``, then (untimed) a
    check that it returned ``n`` points."""

    def run() -> float:
        t0 = time.perf_counter()
        out = read()
        dt = time.perf_counter() - t0
        got = count(out)
        if got != n:
            raise RuntimeError(f"{what}: read {got:,} points, expected {n:,}")
        return dt

    return run


def _ours_read(path: str, run: str = ".") -> Callable[[], Any]:
    from ..reader import Reader

    def read() -> Any:
        return Reader(path).scalars(run, TAG)

    return read


def _n_points(s: Any) -> int:
    return len(s.step)


# --------------------------------------------------------------------------
# 1. scalars into numpy vs EventAccumulator


@bench("read_scalars", goal=100, unit="events/s", peer="tensorboard EventAccumulator",
       description="1,000,000 scalar events of one tag into numpy (file in page cache)")
def bench_read_scalars(ctx: Context) -> list[Row]:
    """Reader(run).scalars(".", tag) on a 1,000,000-event run vs TensorBoard's
    EventAccumulator (keep all scalars; Reload(); Scalars(tag)) on a
    100,000-event run of the same kind, as events/s."""
    n = ctx.pick(1_000_000, 20_000)
    n_peer = ctx.pick(100_000, 2_000)
    big, small = _scalar_run(ctx, n), _scalar_run(ctx, n_peer)
    _check_ours(_ours_read(big)(), n, "read_scalars")  # also the warm-up
    ours_small = _ours_read(small)()
    _check_ours(ours_small, n_peer, "read_scalars")

    candidates = {
        "ours": _reading(_ours_read(big), _n_points, n, "Reader.scalars"),
        "ours_small": _reading(_ours_read(small), _n_points, n_peer, "Reader.scalars"),
    }
    peer, status, tb_kind = "tensorboard EventAccumulator", "ok", ""
    try:
        mod = need_peer("tensorboard.backend.event_processing.event_accumulator")
        peer = f"tensorboard {_ver('tensorboard')} EventAccumulator"
        tb_kind = f"; tensorboard runs with {_tb_reader_kind()}"

        def tb() -> list[Any]:
            acc = mod.EventAccumulator(small, size_guidance={mod.SCALARS: 0})
            acc.Reload()
            return acc.Scalars(TAG)

        got = tb()
        _check_same("EventAccumulator.Scalars", ours_small, [e.step for e in got],
                    [e.value for e in got], [e.wall_time for e in got])
        candidates["peer"] = _reading(tb, len, n_peer, "EventAccumulator")
    except PeerMissing as exc:
        status = str(exc)

    ctx.log(f"read_scalars: {n:,}-event run (peer: {n_peer:,}), {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n_peer, res["peer"]) if "peer" in res else None
    return [
        Row("read_scalars", "read_scalars", peer, "events/s", per_second(n, res["ours"]),
            peer_runs, status,
            note=f"ours: Reader(run_dir).scalars('.', tag) -> numpy step/wall_time/value, "
                 f"{n:,} events (one tag, summarylog.Writer); peer: EventAccumulator("
                 f"size_guidance={{'scalars': 0}}).Reload().Scalars(tag) on {n_peer:,} events "
                 f"of the same kind, as events/s; same steps, values and wall times checked; "
                 f"page cache{tb_kind}"),
        Row("read_scalars", f"read_scalars, same {n_peer:,}-event run", peer, "events/s",
            per_second(n_peer, res["ours_small"]), peer_runs, status, primary=False,
            note="ours on exactly the peer's file"),
    ]


# --------------------------------------------------------------------------
# 2. scalars vs tbparse


@bench("read_scalars_tbparse", goal=100, unit="events/s", peer="tbparse SummaryReader",
       description="1,000,000 scalar events of one tag: Reader.scalars vs tbparse")
def bench_read_scalars_tbparse(ctx: Context) -> list[Row]:
    """Reader(run).scalars(".", tag) on a 1,000,000-event run vs tbparse's
    SummaryReader(run).scalars (a DataFrame) on a 100,000-event run."""
    from ..reader import Reader

    n = ctx.pick(1_000_000, 20_000)
    n_peer = ctx.pick(100_000, 2_000)
    big, small = _scalar_run(ctx, n), _scalar_run(ctx, n_peer)
    _check_ours(_ours_read(big)(), n, "read_scalars_tbparse")
    ours_small = _ours_read(small)()
    _check_ours(ours_small, n_peer, "read_scalars_tbparse")

    candidates = {
        "ours": _reading(_ours_read(big), _n_points, n, "Reader.scalars"),
        "ours_small": _reading(_ours_read(small), _n_points, n_peer, "Reader.scalars"),
    }
    have_pandas = True
    try:
        import pandas  # noqa: F401
    except ImportError:
        have_pandas = False
    if have_pandas:
        def ours_df() -> Any:
            return Reader(big).to_pandas()

        df = ours_df()
        _check_same("Reader.to_pandas", _ours_read(big)(), df["step"].to_numpy(),
                    df["value"].to_numpy(), df["wall_time"].to_numpy())
        candidates["ours_pandas"] = _reading(ours_df, len, n, "Reader.to_pandas")

    peer, status = "tbparse SummaryReader", "ok"
    try:
        tbparse = need_peer("tbparse")
        peer = f"tbparse {_ver('tbparse')} SummaryReader"

        def tbp() -> Any:
            return tbparse.SummaryReader(small).scalars

        got = tbp()
        if set(got["tag"]) != {TAG}:
            raise RuntimeError(f"tbparse returned tags {sorted(set(got['tag']))}, expected {TAG!r}")
        _check_same("tbparse SummaryReader.scalars", ours_small, got["step"].to_numpy(),
                    got["value"].to_numpy())
        candidates["peer"] = _reading(tbp, len, n_peer, "tbparse")
    except PeerMissing as exc:
        status = str(exc)

    ctx.log(f"read_scalars_tbparse: {n:,}-event run (peer: {n_peer:,}), {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n_peer, res["peer"]) if "peer" in res else None
    rows = [
        Row("read_scalars_tbparse", "read_scalars_tbparse", peer, "events/s",
            per_second(n, res["ours"]), peer_runs, status,
            note=f"ours: Reader(run_dir).scalars('.', tag) -> numpy, {n:,} events; peer: "
                 f"tbparse SummaryReader(run_dir).scalars (a DataFrame: step, tag, value) on "
                 f"{n_peer:,} events of the same kind, as events/s; same steps and values "
                 f"checked"),
        Row("read_scalars_tbparse", f"read_scalars_tbparse, same {n_peer:,}-event run", peer,
            "events/s", per_second(n_peer, res["ours_small"]), peer_runs, status,
            primary=False, note="ours on exactly the peer's file"),
    ]
    if "ours_pandas" in res:
        rows.append(Row("read_scalars_tbparse", "Reader.to_pandas()", peer, "events/s",
                        per_second(n, res["ours_pandas"]), peer_runs, status, primary=False,
                        note="like for like: a DataFrame on both sides (ours: run, tag, "
                             "step, wall_time, value)"))
    return rows


# --------------------------------------------------------------------------
# 3. TensorBoard's Rust data server (RustBoard)
#
# TensorBoard's start-up (a Python interpreter, its imports, then the data
# server) jitters by about a second, so the runs are made big enough that
# loading them dominates, and the start-up is measured the same way on a
# logdir of the same shape holding one point per run, several times, and
# subtracted (its median).

_POLL = 0.05  # least seconds between two requests while waiting for the server


class _ServeError(Exception):
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End tensorboard and its data server (its process group): SIGTERM (it
    removes its info file and closes the data server's stdin), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # the group may outlive its leader (the data server): make sure
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return


def _tail(path: str, limit: int = 300) -> str:
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return f" ({lines[-1][-limit:]})" if lines else ""


def _one_core() -> set[int] | None:
    """One CPU this process may run on (the last), or None where affinity
    cannot be set (not Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    return {max(os.sched_getaffinity(0))}


@contextlib.contextmanager
def _pinned(cpus: set[int] | None) -> Any:
    """The calling thread restricted to ``cpus`` (None: unchanged)."""
    if cpus is None:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def _served_after(ctx: Context, logdir: str, runs: list[str], last_step: int,
                  timeout: float, cpus: set[int] | None) -> tuple[float, list[Any]]:
    """Start ``tensorboard --load_fast=true`` on ``logdir`` (with its data
    server restricted to ``cpus``; None: all) and return the seconds from its
    start until the scalars endpoint serves ``last_step`` of every run in
    ``runs`` (asked one run at a time, so a poll is one request), and the last
    point served for each run."""
    port = _free_port()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    errpath = ctx.path("tensorboard-stderr")
    # TMPDIR: tensorboard's info file goes into the scratch directory
    env = dict(os.environ, TMPDIR=ctx.tmpdir)
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
           "--port", str(port), "--load_fast=true", "--reload_interval", "1"]
    last: list[Any] = []
    # a child inherits its parent thread's affinity, and so does the data server it starts
    with open(errpath, "wb") as err, _pinned(cpus):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env, start_new_session=True)
    try:
        while len(last) < len(runs):
            if proc.poll() is not None:
                raise _ServeError(f"tensorboard exited with status {proc.returncode}"
                                  f"{_tail(errpath)}")
            query = urllib.parse.urlencode({"run": runs[len(last)], "tag": TAG})
            url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?{query}"
            try:
                with opener.open(url, timeout=10) as resp:
                    points = json.loads(resp.read())
                if points and points[-1][1] == last_step:
                    last.append(points[-1])
                    continue  # the next run at once
            except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
                pass  # not up yet, or the run is not loaded yet
            if time.perf_counter() - t0 > timeout:
                raise _ServeError(f"step {last_step} of {runs[len(last)]}/{TAG} not served "
                                  f"after {timeout:.0f} s{_tail(errpath)}")
            # 1 % of the elapsed time at most: fine enough, and the polls (each a
            # request through tensorboard to its data server) steal little CPU from it
            time.sleep(max(_POLL, 0.01 * (time.perf_counter() - t0)))
        return time.perf_counter() - t0, last
    finally:
        _stop(proc)
        _unlink(errpath)


def _scalar_root(ctx: Context, runs: int, n: int) -> str:
    """A root of ``runs`` runs ``run0000``... each holding a copy of the
    event file of an ``n``-event _scalar_run (one write, then file copies:
    fast even for millions of events).  Cached for the whole bench run."""
    key = f"reader-root-{runs}-{n}"
    root: str | None = ctx.cache.get(key)
    if root is None:
        src = _scalar_run(ctx, n)
        names = sorted(os.listdir(src))
        root = tempfile.mkdtemp(prefix=f"reader-root-{runs}-{n}-", dir=ctx.tmpdir)
        for r in range(runs):
            dst = os.path.join(root, f"run{r:04d}")
            os.mkdir(dst)
            for name in names:
                shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
        write_back()
        ctx.cache[key] = root
    _warm(root)
    return root


def _spread(xs: list[float], fmt: str = ".2f") -> str:
    """min / median / max of ``xs``."""
    s = sorted(xs)
    return f"{s[0]:{fmt}} / {statistics.median(s):{fmt}} / {s[-1]:{fmt}}"


def _rustboard(ctx: Context, workload: str, runs: int, n: int, cpus: set[int] | None,
               threads: int) -> list[Row]:
    """Reader.scalars of every run of a root of ``runs`` runs of ``n`` events
    against RustBoard serving the last step of every run, both restricted to
    ``cpus`` (None: all cores); ``threads``: passed to the Reader."""
    from ..reader import Reader

    timeout = 600.0
    if runs == 1:
        logdir = os.path.dirname(_scalar_run(ctx, n))
        tiny = os.path.dirname(_scalar_run(ctx, 1))
        names = [RUN]
    else:
        logdir, tiny = _scalar_root(ctx, runs, n), _scalar_root(ctx, runs, 1)
        names = [f"run{r:04d}" for r in range(runs)]
    _, values = _expected(n)
    def ours() -> list[Any]:
        r = Reader(logdir, threads=threads)
        r.load()  # every run's columns, on ``threads`` threads
        return [r.scalars(name, TAG) for name in names]

    def check(got: list[Any]) -> None:
        if len(got) != runs:
            raise RuntimeError(f"{workload}: Reader read {len(got)} runs, expected {runs}")
        for s in got:
            _check_ours(s, n, workload)

    with _pinned(cpus):
        check(ours())  # also the warm-up

    peer, status = "tensorboard Rust data server", "ok"
    failure: list[str] = []
    try:
        need_peer("tensorboard")
        need_peer("tensorboard_data_server")
        peer = (f"tensorboard {_ver('tensorboard')} --load_fast=true (data server "
                f"{_ver('tensorboard-data-server')})")
    except PeerMissing as exc:
        status = str(exc)

    def serve(where: str, step: int, value: float) -> float:
        t, last = _served_after(ctx, where, names, step, timeout, cpus)
        bad = [p for p in last if p[2] != value]
        if bad:
            raise _ServeError(f"served last point {bad[0]!r}, Reader.scalars has step {step} "
                              f"value {value!r}")
        return t

    # several start-ups per round: their median is subtracted from each full time
    per_round = ctx.pick(2, 1)
    ours_s: list[float] = []
    startup: list[float] = []
    full: list[float] = []
    rounds = ctx.round_count(at_least=5)  # the ratio is a median of paired rounds
    ctx.log(f"{workload}: {runs} run(s) of {n:,} events, {rounds} rounds "
            f"({'one core' if cpus else 'all cores'}; per round {per_round} tensorboard "
            f"start(s) on one point per run, one on the full logdir)")
    for k in range(rounds):
        gc.collect()
        steps: list[str] = ["ours", "peer"] if k % 2 == 0 else ["peer", "ours"]
        for what in steps:
            if what == "ours":
                with _pinned(cpus):
                    t0 = time.perf_counter()
                    got = ours()
                    ours_s.append(time.perf_counter() - t0)
                check(got)
                del got
            elif status == "ok" and not failure:
                try:
                    for _ in range(per_round):
                        startup.append(serve(tiny, 0, 1.0))
                    full.append(serve(logdir, n - 1, float(values[-1])))
                except _ServeError as exc:
                    failure.append(str(exc))

    total = runs * n
    peer_runs = None
    extra: dict[str, Any] = {"startup_seconds": startup, "full_seconds": full,
                             "ours_seconds": ours_s}
    if status == "ok" and failure:
        status = f"error: {failure[0]}"
    floored = 0
    if status == "ok" and full:
        base = statistics.median(startup)
        loads = [f - base for f in full]
        floored = sum(1 for x in loads if x < _POLL)
        loads = [max(x, _POLL) for x in loads]  # below what polling can resolve
        extra["load_seconds"] = loads
        peer_runs = per_second(total, loads)
    cores = (f"one core (CPU {min(cpus)}; tensorboard and its data server by affinity, ours "
             f"the reading thread)" if cpus else f"all {os.cpu_count()} cores")
    ours_how = f"Reader(root, threads={threads}).load()"
    note = (f"{runs} run(s) x {n:,} scalar events ({total:,}; summarylog.Writer, page cache), "
            f"{cores}; ours: {ours_how}.scalars(run, tag) of every run into numpy, "
            f"all points checked; peer: seconds from starting `tensorboard --load_fast=true "
            f"--reload_interval 1` until /data/plugin/scalars/scalars serves the last step of "
            f"every run (polled every {_POLL * 1e3:.0f} ms or 1 % of the time elapsed, "
            f"whichever is longer, one run at a time), minus the median start-up: the same "
            f"on a logdir of {runs} one-point run(s), "
            f"{per_round} per round; the server keeps a 1,000-point sample per tag but parses "
            f"every event; last values checked")
    if ours_s:
        note += f"; ours s min/median/max {_spread(ours_s, '.3f')}"
    if startup:
        note += f"; start-up s {_spread(startup)} ({len(startup)} starts)"
    if full:
        note += f"; full s {_spread(full)}"
    if "load_seconds" in extra:
        loads = extra["load_seconds"]
        note += f"; load s {_spread(loads)}"
        ratios = [lo / o for lo, o in zip(loads, ours_s)]
        note += f"; per-round ratio {_spread(ratios)}"
    if floored:
        note += (f"; load time below the polling resolution in {floored} round(s), "
                 f"counted as {_POLL * 1e3:.0f} ms")
    return [Row(workload, workload, peer, "events/s", per_second(total, ours_s), peer_runs,
                status, note=note, extra=extra, paired=True)]


@bench("rust_server", goal=3.0, unit="events/s", peer="tensorboard Rust data server",
       description="10,000,000 scalar events of one run on one core: Reader.scalars vs "
                   "tensorboard --load_fast=true")
def bench_rust_server(ctx: Context) -> list[Row]:
    """Reader.scalars on a 10,000,000-event run vs TensorBoard's Rust data
    server loading it, both on one core: time from start until the scalars
    endpoint serves the last step, minus the same on a one-point run."""
    return _rustboard(ctx, "rust_server", 1, ctx.pick(10_000_000, 20_000), _one_core(), 1)


@bench("rust_server_root", goal=1.0, unit="events/s", peer="tensorboard Rust data server",
       description="a root of 100 runs x 100,000 scalar events, all cores: Reader vs "
                   "tensorboard --load_fast=true (loads runs in parallel)")
def bench_rust_server_root(ctx: Context) -> list[Row]:
    """Reader.scalars of every run of a 100-run root vs TensorBoard's Rust data
    server loading it (in parallel), both on all cores: time until the last
    step of every run is served, minus the same on a root of one-point runs."""
    runs, n = ctx.pick(100, 4), ctx.pick(100_000, 2_000)
    return _rustboard(ctx, "rust_server_root", runs, n, None, os.cpu_count() or 1)


# --------------------------------------------------------------------------
# 4. peak memory of Reader.scalars


def _traced_peak(fn: Callable[[], Any]) -> tuple[Any, int]:
    """``fn()`` and the peak of tracemalloc-traced memory (Python objects and
    numpy buffers) allocated during the call, in bytes."""
    gc.collect()
    already = tracemalloc.is_tracing()
    if already:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    else:
        tracemalloc.start()
        base = 0
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not already:
            tracemalloc.stop()
    return out, peak


@bench("read_memory", goal=1.0, unit="bytes", peer="tracemalloc peak (budget: 3x output)",
       description="peak memory of Reader.scalars on 1,000,000 events: at most 3x its output")
def bench_read_memory(ctx: Context) -> list[Row]:
    """Peak traced memory of Reader(run).scalars on a 1,000,000-event run
    against a budget of three times the bytes of the arrays it returns."""
    n = ctx.pick(1_000_000, 20_000)
    n_peer = ctx.pick(10_000, 1_000)
    run_dir, small = _scalar_run(ctx, n), _scalar_run(ctx, n_peer)
    read, read_small = _ours_read(run_dir), _ours_read(small)
    _check_ours(read(), n, "read_memory")  # warm-up: imports, first-call costs
    _check_ours(read_small(), n_peer, "read_memory")

    budget: list[float] = []
    peaks: list[float] = []
    per_mib: list[float] = []
    ctx.log(f"read_memory: {n:,}-event run, {ctx.repeat} runs under tracemalloc")
    for _ in range(ctx.repeat):
        s, peak = _traced_peak(read)
        _check_ours(s, n, "read_memory")
        out_bytes = s.step.nbytes + s.wall_time.nbytes + s.value.nbytes
        del s
        budget.append(3.0 * out_bytes)
        peaks.append(float(max(peak, 1)))
        s, peak = _traced_peak(read_small)
        _check_ours(s, n_peer, "read_memory")
        del s
        per_mib.append(n_peer / (max(peak, 1) / (1 << 20)))

    rows = [Row("read_memory", "read_memory", "tracemalloc peak of Reader.scalars", "bytes",
                budget, peaks,
                note=f"figures in bytes: 'summarylog' = 3 x the bytes of the returned step, "
                     f"wall_time and value arrays ({n:,} events, {budget[0] / 3:,.0f} bytes), "
                     f"'peer figure' = peak of tracemalloc-traced memory during "
                     f"Reader(run_dir).scalars('.', tag) (Python objects and numpy buffers; "
                     f"malloc in the C core is not traced); ratio >= 1 means the peak is at "
                     f"most 3x the output; peak / output = "
                     f"{sorted(peaks)[len(peaks) // 2] / (budget[0] / 3):.2f}")]

    # for information: memory per event against EventAccumulator (slow under
    # tracemalloc: measured once, on a small run)
    peer, status, peer_per_mib = "tensorboard EventAccumulator", "ok", None
    try:
        mod = need_peer("tensorboard.backend.event_processing.event_accumulator")
        peer = f"tensorboard {_ver('tensorboard')} EventAccumulator"

        def tb() -> list[Any]:
            acc = mod.EventAccumulator(small, size_guidance={mod.SCALARS: 0})
            acc.Reload()
            return acc.Scalars(TAG)

        tb()  # warm-up
        got, peak = _traced_peak(tb)
        if len(got) != n_peer:
            raise RuntimeError(f"EventAccumulator read {len(got):,} points, expected {n_peer:,}")
        del got
        peer_per_mib = [n_peer / (max(peak, 1) / (1 << 20))]
    except PeerMissing as exc:
        status = str(exc)
    rows.append(Row("read_memory", f"events per MiB of peak, same {n_peer:,}-event run", peer,
                    "events/MiB", per_mib, peer_per_mib, status, primary=False,
                    note=f"events read per MiB of traced peak memory, both on the same "
                         f"{n_peer:,}-event run (fixed costs included on both sides): "
                         f"Reader.scalars vs EventAccumulator keeping all scalars (measured "
                         f"once: tracemalloc slows it ~15x)"))
    return rows


# --------------------------------------------------------------------------
# 5. inspecting a root of many small runs

_TAGS = ("loss", "accuracy", "lr")
_STEPS = 20


def _many_runs(ctx: Context, runs: int) -> str:
    key = f"reader-many-{runs}"
    root: str | None = ctx.cache.get(key)
    if root is None:
        from ..writer import Writer

        root = tempfile.mkdtemp(prefix=f"reader-many-{runs}-", dir=ctx.tmpdir)
        for r in range(runs):
            w = Writer(os.path.join(root, f"run{r:04d}"), durability="none")
            for step in range(_STEPS):
                for k, tag in enumerate(_TAGS):
                    w.add_scalar(tag, (k + 1) / (step + 1), step)
            w.close()
        write_back()
        ctx.cache[key] = root
    _warm(root)
    return root


def _cli_main() -> Callable[[list[str]], int] | None:
    try:
        from .. import cli
    except ImportError:
        return None
    main = getattr(cli, "main", None)
    return main if callable(main) else None


def _check_inspect(doc: dict[str, Any], runs: int) -> None:
    got = doc.get("runs", {})
    if len(got) != runs:
        raise RuntimeError(f"summarylog inspect found {len(got)} runs, expected {runs}")
    for name, info in got.items():
        tags = info["tags"]
        if sorted(tags) != sorted(_TAGS) or any(
                t["kind"] != "scalar" or t["count"] != _STEPS or t["last_step"] != _STEPS - 1
                for t in tags.values()):
            raise RuntimeError(f"summarylog inspect: run {name}: unexpected tags {tags!r}")
        if not all(f["ok"] and f["tail"] is None for f in info["files"]):
            raise RuntimeError(f"summarylog inspect: run {name}: damage reported")


@bench("inspect_many", goal=20, unit="runs/s", peer="tensorboard EventMultiplexer",
       description="inspect a root of 1,000 small runs (3 tags x 20 steps each)")
def bench_inspect_many(ctx: Context) -> list[Row]:
    """``summarylog inspect ROOT --json`` (in-process) on a root of 1,000 small
    runs vs TensorBoard's EventMultiplexer().AddRunsFromDirectory(root).Reload()."""
    from ..reader import Reader

    runs = ctx.pick(1000, 50)
    root = _many_runs(ctx, runs)
    main = _cli_main()

    def ours_reader() -> int:
        r = Reader(root)
        names = r.runs()
        for run in names:
            r.tags(run)
            for tag in r.scalar_tags(run):
                r.scalars(run, tag)
            r.damage(run)
        return len(names)

    def check_reader() -> None:
        r = Reader(root)
        if len(r.runs()) != runs:
            raise RuntimeError(f"Reader found {len(r.runs())} runs, expected {runs}")
        for run in r.runs():
            if r.tags(run) != {t: "scalar" for t in sorted(_TAGS)} or any(
                    len(r.scalars(run, t).step) != _STEPS for t in _TAGS):
                raise RuntimeError(f"Reader: run {run}: unexpected tags")
            if not all(rep.ok and rep.tail is None for rep in r.damage(run).values()):
                raise RuntimeError(f"Reader: run {run}: damage reported")

    def reader_candidate() -> float:
        t0 = time.perf_counter()
        got = ours_reader()
        dt = time.perf_counter() - t0
        if got != runs:
            raise RuntimeError(f"Reader found {got} runs, expected {runs}")
        return dt

    check_reader()
    ours_reader()  # warm-up
    candidates: dict[str, Callable[[], float]] = {}
    if main is not None:
        argv = ["inspect", root, "--json"]

        def cli_once() -> tuple[float, str]:
            out, err = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
            dt = time.perf_counter() - t0
            if rc != 0:
                raise RuntimeError(f"summarylog inspect exited {rc}: {err.getvalue().strip()}")
            return dt, out.getvalue()

        _check_inspect(json.loads(cli_once()[1]), runs)  # also the warm-up

        def cli_candidate() -> float:
            dt, text = cli_once()
            if len(json.loads(text).get("runs", {})) != runs:
                raise RuntimeError("summarylog inspect: wrong number of runs")
            return dt

        candidates["ours"] = cli_candidate
        candidates["reader"] = reader_candidate
        ours_label = "summarylog inspect ROOT --json (in-process, summarylog.cli.main)"
    else:
        candidates["ours"] = reader_candidate
        ours_label = ("summarylog.Reader per run: tags(), scalars() of each scalar tag, "
                      "damage() (no summarylog.cli.main here)")

    peer, status = "tensorboard EventMultiplexer", "ok"
    try:
        mod = need_peer("tensorboard.backend.event_processing.event_multiplexer")
        peer = f"tensorboard {_ver('tensorboard')} EventMultiplexer"

        def tb() -> Any:
            mux = mod.EventMultiplexer().AddRunsFromDirectory(root)
            mux.Reload()
            return mux

        mux = tb()  # warm-up and check
        got = mux.Runs()
        if len(got) != runs:
            raise RuntimeError(f"EventMultiplexer found {len(got)} runs, expected {runs}")
        for name, tags in got.items():
            if sorted(tags["scalars"]) != sorted(_TAGS) or any(
                    len(mux.Scalars(name, t)) != _STEPS for t in _TAGS):
                raise RuntimeError(f"EventMultiplexer: run {name}: unexpected scalars")
        del mux

        def tb_candidate() -> float:
            t0 = time.perf_counter()
            m = tb()
            dt = time.perf_counter() - t0
            if len(m.Runs()) != runs:
                raise RuntimeError("EventMultiplexer: wrong number of runs")
            return dt

        candidates["peer"] = tb_candidate
    except PeerMissing as exc:
        status = str(exc)

    ctx.log(f"inspect_many: {runs} runs of {len(_TAGS)} tags x {_STEPS} steps, "
            f"{ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(runs, res["peer"]) if "peer" in res else None
    what = (f"{runs} runs, each one file of {len(_TAGS)} tags x {_STEPS} steps "
            f"(summarylog.Writer, one scalar per event); page cache")
    rows = [Row("inspect_many", "inspect_many", peer, "runs/s", per_second(runs, res["ours"]),
                peer_runs, status,
                note=f"ours: {ours_label}; peer: EventMultiplexer().AddRunsFromDirectory(root)"
                     f".Reload() (default size guidance, one reload thread); {what}; same "
                     f"runs, tags and counts checked")]
    if "reader" in res:
        rows.append(Row("inspect_many", "Reader only (no CLI, no JSON)", peer, "runs/s",
                        per_second(runs, res["reader"]), peer_runs, status, primary=False,
                        note="summarylog.Reader per run: tags(), scalars() of each scalar "
                             "tag, damage(); what inspect does minus formatting"))
    return rows
