"""Writing: 100,000 small records open to close (summarylog write_many and
write() vs tensorboardX's RecordWriter), and 32 MiB of 1 MiB records with
durability="fsync" vs dd conv=fsync."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Callable

import pytest

from summarylog.records import RecordWriter

N_SMALL = 100_000
SMALL_FILE = N_SMALL * (40 + 16)
FSYNC_MIB = 32
ROUNDS = 5


def _pedantic(benchmark, fresh_path, write: Callable[[str], None], size: int) -> None:  # type: ignore[no-untyped-def]
    """Time write(path) on a fresh path per round (setup untimed); check the size."""
    paths: list[str] = []

    def setup():  # type: ignore[no-untyped-def]
        if hasattr(os, "sync"):
            os.sync()  # earlier rounds' writeback stays out of this one
        paths.append(fresh_path())
        return (paths[-1],), {}

    benchmark.pedantic(write, setup=setup, rounds=ROUNDS, iterations=1)
    for p in paths:
        assert os.path.getsize(p) == size


@pytest.mark.benchmark(group="write-100k-records-40B")
class TestWriteSmall:
    def test_write_many_summarylog(self, benchmark, fresh_path, payloads) -> None:  # type: ignore[no-untyped-def]
        def write(path: str) -> None:
            w = RecordWriter(path)
            w.write_many(payloads)
            w.close()

        benchmark.extra_info["records"] = N_SMALL
        _pedantic(benchmark, fresh_path, write, SMALL_FILE)

    def test_write_loop_summarylog(self, benchmark, fresh_path, payloads) -> None:  # type: ignore[no-untyped-def]
        def write(path: str) -> None:
            w = RecordWriter(path)
            wr = w.write
            for p in payloads:
                wr(p)
            w.close()

        benchmark.extra_info["records"] = N_SMALL
        _pedantic(benchmark, fresh_path, write, SMALL_FILE)

    def test_write_loop_peer_tensorboardx(self, benchmark, fresh_path, payloads) -> None:  # type: ignore[no-untyped-def]
        rw = pytest.importorskip("tensorboardX.record_writer",
                                 reason="pip install summarylog[bench]")

        def write(path: str) -> None:
            w = rw.RecordWriter(path)
            wr = w.write
            for p in payloads:
                wr(p)
            w.close()

        benchmark.extra_info["records"] = N_SMALL
        _pedantic(benchmark, fresh_path, write, SMALL_FILE)


@pytest.mark.benchmark(group="fsync-32MiB-as-1MiB-records")
class TestFsync:
    def test_fsync_summarylog(self, benchmark, fresh_path) -> None:  # type: ignore[no-untyped-def]
        payload = os.urandom(1 << 20)

        def write(path: str) -> None:
            w = RecordWriter(path, durability="fsync")
            for _ in range(FSYNC_MIB):
                w.write(payload)
            w.close()

        benchmark.extra_info["mib"] = FSYNC_MIB
        _pedantic(benchmark, fresh_path, write, FSYNC_MIB * ((1 << 20) + 16))

    def test_fsync_peer_dd(self, benchmark, fresh_path) -> None:  # type: ignore[no-untyped-def]
        dd = shutil.which("dd")
        if dd is None:
            pytest.skip("dd not found in PATH")

        def write(path: str) -> None:
            subprocess.run([dd, "if=/dev/zero", f"of={path}", "bs=1M", f"count={FSYNC_MIB}",
                            "conv=fsync"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)

        benchmark.extra_info["mib"] = FSYNC_MIB
        benchmark.extra_info["includes"] = "dd process spawn (~1 ms)"
        _pedantic(benchmark, fresh_path, write, FSYNC_MIB << 20)
