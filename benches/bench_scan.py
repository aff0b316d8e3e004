"""Scanning a 20,000-record file (40-byte payloads, in page cache):
list(RecordReader(path)) vs tensorboard's RawEventFileLoader."""

from __future__ import annotations

from pathlib import Path

import pytest

from summarylog.records import RecordReader, RecordWriter

N = 20_000

pytestmark = pytest.mark.benchmark(group="scan-20k-records-40B")


@pytest.fixture(scope="module")
def event_file(scratch: Path, payloads: list[bytes]) -> tuple[str, list[bytes]]:
    want = payloads[:N]
    path = str(scratch / "scan-20k")
    with RecordWriter(path) as w:
        w.write_many(want)
    with open(path, "rb") as f:  # into the page cache
        f.read()
    return path, want


def test_scan_summarylog(benchmark, event_file) -> None:  # type: ignore[no-untyped-def]
    path, want = event_file

    def read() -> list[bytes]:
        with RecordReader(path) as r:
            return list(r)

    benchmark.extra_info["records"] = N
    assert benchmark(read) == want


def test_scan_summarylog_no_verify(benchmark, event_file) -> None:  # type: ignore[no-untyped-def]
    path, want = event_file

    def read() -> list[bytes]:
        with RecordReader(path, verify=False) as r:
            return list(r)

    benchmark.extra_info["records"] = N
    assert benchmark(read) == want


def test_scan_peer_tensorboard(benchmark, event_file) -> None:  # type: ignore[no-untyped-def]
    mod = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader",
                              reason="pip install summarylog[bench]")
    path, want = event_file

    def read() -> list[bytes]:
        return list(mod.RawEventFileLoader(path).Load())

    benchmark.extra_info["records"] = N
    assert benchmark.pedantic(read, rounds=5, iterations=1) == want
