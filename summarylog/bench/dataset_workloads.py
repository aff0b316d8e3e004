"""The Parquet dataset (issue 26): exporting a root of runs against the Reader loading
it, the dataset's size against the event files', and a group-by over every point
through DuckDB on the dataset against the Reader loading everything into pandas."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import numpy as np

from .registry import Context, Row, bench, need_peer, per_second, write_back

_TAGS = ("loss", "acc", "lr", "grad")


def _root(ctx: Context, runs: int, steps: int, layout: str) -> tuple[str, int]:
    """A root of ``runs`` copies (distinct files) of one run of 4 tags x ``steps``
    float32 random walks: ``"add"`` one value per event (as add_scalar writes them),
    ``"log"`` the 4 tags in one event per step; returns (root, points)."""
    from ..writer import Writer

    key = f"root-{layout}-{runs}-{steps}"
    if key in ctx.cache:
        return ctx.cache[key]
    root = ctx.path(f"dataset_{layout}")
    first = os.path.join(root, "run0000")
    walk = np.cumsum(np.random.default_rng(0).normal(size=(steps, len(_TAGS))), axis=0)
    walk = walk.astype(np.float32).astype(np.float64)
    with Writer(first) as w:
        for i in range(steps):
            if layout == "add":
                for k, tag in enumerate(_TAGS):
                    w.add_scalar(tag, walk[i, k], i)
            else:
                w.log(dict(zip(_TAGS, walk[i].tolist())), step=i)
    (name,) = os.listdir(first)
    for k in range(1, runs):
        d = os.path.join(root, f"run{k:04d}")
        os.mkdir(d)
        shutil.copyfile(os.path.join(first, name), os.path.join(d, name))
    write_back()
    ctx.cache[key] = (root, runs * steps * len(_TAGS))
    return ctx.cache[key]


def _bytes(root: str, suffix: str | None = None) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
               if suffix is None or f.endswith(suffix))


def _export(root: str, dest: str, threads: int | None = None) -> float:
    from ..dataset import export_dataset

    shutil.rmtree(dest, ignore_errors=True)
    t0 = time.perf_counter()
    export_dataset(root, dest, threads=threads)
    return time.perf_counter() - t0


def _load(root: str, threads: int | None) -> float:
    from ..reader import Reader

    r = Reader(root, threads=threads)
    r.runs()  # discovery: not timed (the export's is, a small share)
    t0 = time.perf_counter()
    r.scalars_all()
    return time.perf_counter() - t0


@bench("export_parquet", goal=0.8, unit="scalars/s", peer="Reader.scalars_all()",
       description="export a root of runs to the Parquet dataset vs the Reader loading it")
def bench_export_parquet(ctx: Context) -> list[Row]:
    need_peer("pyarrow")
    from ..read_pool import thread_count

    runs, steps = ctx.pick((100, 25_000), (8, 2_000))
    root, n = _root(ctx, runs, steps, "add")
    outs = ctx.path("dataset_out")
    os.mkdir(outs)

    def export() -> float:
        # a new dataset each round, the earlier ones removed only at the end: deleting a
        # round's files just before the next round would time how the filesystem skips
        # recently freed inodes (ext4 without a journal does), which no export meets alone
        return _export(root, os.path.join(outs, str(len(os.listdir(outs)))))

    try:
        export()  # warm: page cache, imports
        # rounds are short: more of them steady the paired median on a shared machine
        secs = ctx.rounds({"export": export, "load": lambda: _load(root, None),
                           "load1": lambda: _load(root, 1)}, at_least=11)
        # CPU seconds (all threads): what a busy machine does not change
        c0 = time.process_time()
        export()
        c1 = time.process_time()
        _load(root, 1)
        c2 = time.process_time()
    finally:
        shutil.rmtree(outs, ignore_errors=True)
    note = (f"{runs} runs x {n // runs:,} scalars (one per event), "
            f"threads={thread_count(None)}; CPU s: export {c1 - c0:.2f}, Reader "
            f"{c2 - c1:.2f}; {os.cpu_count()} CPUs (shared: noisy)")
    return [Row("export_parquet", "export_dataset()", "Reader.scalars_all(), same threads",
                "scalars/s", per_second(n, secs["export"]), per_second(n, secs["load"]),
                paired=True, note=note),
            Row("export_parquet", "export_dataset()", "Reader.scalars_all(), threads=1",
                "scalars/s", per_second(n, secs["export"]), per_second(n, secs["load1"]),
                paired=True, primary=False, note=note)]


@bench("parquet_size", goal=8.0, unit="bytes", peer="the event files",
       description="the dataset's scalars against the event files' bytes (x smaller)")
def bench_parquet_size(ctx: Context) -> list[Row]:
    need_peer("pyarrow")
    rows = []
    for layout, label, primary in (("add", "one value per event (add_scalar)", True),
                                   ("log", "4 values per event (log)", False)):
        runs, steps = ctx.pick((20, 25_000), (4, 2_000))
        root, n = _root(ctx, runs, steps, layout)
        dest = ctx.path("dataset_size")
        try:
            _export(root, dest)
            events, parquet = _bytes(root), _bytes(dest, ".parquet")
        finally:
            shutil.rmtree(dest, ignore_errors=True)
        # the figure is bytes per point; "ours" is the event files' so the ratio reads
        # "x smaller" (the higher the better)
        rows.append(Row("parquet_size", f"parquet, {label}", "event files", "B/point",
                        [events / n], [parquet / n], primary=primary,
                        note=f"{n:,} float32 random walks kept as float64; zstd, "
                             f"BYTE_STREAM_SPLIT values, DELTA steps"))
    return rows


_QUERY = ("select run, tag, count(*) as n, avg(value) as mean, max(step) as last_step "
          "from read_parquet('{glob}', hive_partitioning=true, union_by_name=true, "
          "hive_types={{'run_key': VARCHAR}}) group by run, tag")


_DUCKDB_QUERIES = 3  # per paired round, each on a new connection


def _duckdb_round(dest: str) -> float:
    """A round's seconds per query: the mean of _DUCKDB_QUERIES.  One query is over in
    a small part of the pandas path's time, so on a shared machine a passing stall
    could decide the round; the pandas path is long enough to average stalls out."""
    return sum(_duckdb(dest)[0] for _ in range(_DUCKDB_QUERIES)) / _DUCKDB_QUERIES


def _duckdb(dest: str) -> tuple[float, Any]:
    duckdb = need_peer("duckdb")
    from ..dataset import table_glob

    con = duckdb.connect(config={"threads": os.cpu_count() or 1})
    t0 = time.perf_counter()
    out = con.sql(_QUERY.format(glob=table_glob(dest, "scalars"))).to_arrow_table()
    dt = time.perf_counter() - t0
    con.close()
    return dt, out


def _pandas(root: str) -> tuple[float, Any]:
    from ..reader import Reader

    r = Reader(root)
    r.runs()
    t0 = time.perf_counter()
    df = r.to_pandas()
    out = df.groupby(["run", "tag"], observed=True).agg(
        n=("value", "size"), mean=("value", "mean"), last_step=("step", "max"))
    dt = time.perf_counter() - t0
    del df
    return dt, out


@bench("groupby_duckdb", goal=10.0, unit="points/s", peer="Reader.to_pandas() + groupby",
       description="group by run, tag (count, mean, max step) over all 10^8 points: DuckDB "
                   "on the dataset vs the Reader into pandas")
def bench_groupby_duckdb(ctx: Context) -> list[Row]:
    need_peer("duckdb")
    need_peer("pandas")
    runs, steps = ctx.pick((1000, 25_000), (8, 2_000))  # 10^8 points, as issue 26 asks
    runs = int(os.environ.get("SUMMARYLOG_BENCH_GROUPBY_RUNS", runs))
    root, n = _root(ctx, runs, steps, "add")
    dest = ctx.path("dataset_groupby")
    try:
        _export(root, dest)
        write_back()
        (_, a), (_, b) = _duckdb(dest), _pandas(root)
        got = {(r["run"], r["tag"]): (r["n"], r["last_step"]) for r in a.to_pylist()}
        want = {k: (int(v.n), int(v.last_step)) for k, v in b.iterrows()}
        if got != want:
            raise RuntimeError("DuckDB and pandas disagree on the group-by")
        secs = ctx.rounds({"duckdb": lambda: _duckdb_round(dest),
                           "pandas": lambda: _pandas(root)[0]}, at_least=5)
        size = _bytes(dest, ".parquet")
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    return [Row("groupby_duckdb", "DuckDB on the dataset", "Reader.to_pandas() + groupby",
                "points/s", per_second(n, secs["duckdb"]), per_second(n, secs["pandas"]),
                paired=True, note=f"{runs} runs x {n // runs:,} points ({size / 1e6:.0f} MB of "
                                  f"Parquet), page cache warm; DuckDB: the mean of "
                                  f"{_DUCKDB_QUERIES} queries a round; {os.cpu_count()} CPUs "
                                  f"(shared)")]
