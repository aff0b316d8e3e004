"""Remote-read workloads of ``python -m summarylog.bench``: a run read from the S3
emulator (moto's server, started here on 127.0.0.1) through the Reader's mirror,
against the same run read from local files, and the requests each poll costs.

The run is written by summarylog.Writer (untimed) and uploaded once; each timed round
reads it from scratch (a fresh Reader, so a fresh mirror: listing, every byte fetched,
scalars decoded) while the local candidate reads the same files from the page cache.
The request counts come from the emulator's own request log.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from .moto import Moto, make_bucket
from .registry import Context, Row, bench, need_peer, per_second

__all__ = ["bench_read_remote"]

def _write_runs(root: str, runs: int, files: int, n: int) -> int:
    """``runs`` runs of ``files`` files of ``n`` scalars each; their total bytes."""
    from ..writer import Writer

    for f in range(runs * files):
        w = Writer(os.path.join(root, f"run{f % runs}"), durability="none")
        steps = np.arange(f * n, (f + 1) * n, dtype=np.int64)
        for i in steps.tolist():
            w.add_scalar("loss", 1.0 / (1.0 + i), i)
        w.close()
    return sum(os.path.getsize(os.path.join(d, x)) for d, _, xs in os.walk(root) for x in xs)


def _split(reqs: list[tuple[str, str, int]]) -> tuple[int, int]:
    lists = sum(1 for m, t, _ in reqs if m == "GET" and "list-type" in t)
    return lists, sum(1 for m, _, _ in reqs if m == "GET") - lists


@bench("read_remote", goal=0.5, unit="MB/s", peer="summarylog.Reader, local files",
       description="a run read from the S3 emulator (mirror, parallel ranged reads) vs local")
def bench_read_remote(ctx: Context) -> list[Row]:
    """Reader("s3://…").scalars_all() from moto's S3 server on 127.0.0.1, a fresh
    Reader each round (listing, every byte fetched in parallel ranged reads, decoded),
    against Reader(local dir).scalars_all() on the same files, as MB of event files
    per second; then the requests of an idle poll and of a poll with one new file."""
    from ..reader import Reader
    from ..remote.urls import filesystem

    need_peer("s3fs", "pip install 'summarylog[remote]'")
    runs, files, n = ctx.pick((4, 4, 300_000), (2, 2, 20_000))
    local = tempfile.mkdtemp(prefix="remote-read-", dir=ctx.tmpdir)
    size = _write_runs(local, runs, files, n)
    srv = Moto(ctx.tmpdir)
    try:
        make_bucket(srv.endpoint, "bkt")
        so = srv.options()
        fs = filesystem("s3://bkt", so)[0]
        fs.put(local, "bkt/bench", recursive=True)
        want = {r: len(s["loss"].step) for r, s in Reader(local).scalars_all().items()}

        def remote() -> float:
            t0 = time.perf_counter()
            with Reader("s3://bkt/bench", storage_options=so) as r:
                got = {k: len(s["loss"].step) for k, s in r.scalars_all().items()}
            dt = time.perf_counter() - t0
            if got != want:
                raise AssertionError(f"remote read gave {got}, local {want}")
            return dt

        def here() -> float:
            t0 = time.perf_counter()
            Reader(local).scalars_all()
            return time.perf_counter() - t0

        remote()  # warm-up: imports, the emulator's first answers
        times = ctx.rounds({"remote": remote, "local": here}, at_least=3)
        # requests per poll: they grow with new data, not with the number of files
        r = Reader("s3://bkt/bench", storage_options=so)
        r.runs()  # the first poll's discovery
        assert not r.discovery_errors  # (and its fetching over)
        first = len(srv.requests())
        r.refresh()
        r.runs()
        assert not r.discovery_errors
        idle = _split(srv.requests()[first:])
        extra = os.path.join(local, "new")
        _write_runs(extra, 1, 1, 1000)
        (name,) = os.listdir(os.path.join(extra, "run0"))
        with open(os.path.join(extra, "run0", name), "rb") as f:
            fs.pipe_file(f"bkt/bench/run0/{name}", f.read())
        first = len(srv.requests())
        r.refresh()
        r.runs()
        assert not r.discovery_errors
        grown = _split(srv.requests()[first:])
        r.close()
    finally:
        srv.stop()
    mb = size / 1e6
    note = (f"{runs * files} files, {mb:.0f} MB; polls: idle {idle[0]} listing + "
            f"{idle[1]} GETs, one new file {grown[0]} listing + {grown[1]} GETs")
    ctx.log(f"read_remote: {note}")
    return [Row("read_remote", "Reader(s3://…).scalars_all()", "Reader(local).scalars_all()",
                "MB/s", per_second(mb, times["remote"]), per_second(mb, times["local"]),
                note=note, paired=True,
                extra={"files": runs * files, "bytes": size, "idle_poll": list(idle),
                       "poll_one_new_file": list(grown)})]
