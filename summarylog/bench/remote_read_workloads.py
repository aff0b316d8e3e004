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
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

import numpy as np

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second

__all__ = ["bench_read_remote"]

_LINE = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) ([^ ]+) HTTP/1\.[01]" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Moto:
    """moto's S3 server in a subprocess, logging one line per request."""

    def __init__(self, tmpdir: str) -> None:
        need_peer("moto.server", "pip install 'moto[server]'")
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(tmpdir, "moto.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(self.port)], stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                if time.monotonic() > end or self.proc.poll() is not None:
                    self.stop()
                    raise PeerMissing("error: the S3 emulator did not start") from None
                time.sleep(0.05)
        req = urllib.request.Request(f"{self.endpoint}/bkt", method="PUT")
        urllib.request.urlopen(req, timeout=10).read()

    def options(self) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, "key": "bench", "secret": "bench",
                "client_kwargs": {"region_name": "us-east-1"}}

    def requests(self) -> list[tuple[str, str, int]]:
        time.sleep(0.2)  # the server logs a request after answering it
        with open(self.log_path, "rb") as f:
            text = _ANSI.sub("", f.read().decode("latin1"))
        return [(m, t, int(s)) for m, t, s in _LINE.findall(text)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


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
    srv = _Moto(ctx.tmpdir)
    try:
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
