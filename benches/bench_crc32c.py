"""CRC32C of an 8 MiB buffer: summarylog vs the crc32c and google-crc32c
packages, and our portable fallback."""

from __future__ import annotations

import os

import pytest

from summarylog.records import crc32c, crc32c_impls
from summarylog.records.crc import _impl_crc

SIZE = 8 << 20
DATA = os.urandom(SIZE)
EXPECTED = crc32c(DATA)

pytestmark = pytest.mark.benchmark(group="crc32c-8MiB")


def _run(benchmark, fn) -> None:  # type: ignore[no-untyped-def]
    benchmark.extra_info["bytes"] = SIZE
    assert benchmark(fn, DATA) == EXPECTED


def test_crc32c_summarylog(benchmark) -> None:  # type: ignore[no-untyped-def]
    _run(benchmark, crc32c)


def test_crc32c_summarylog_portable(benchmark) -> None:  # type: ignore[no-untyped-def]
    if "portable" not in crc32c_impls():
        pytest.skip("this build has no portable CRC32C")
    _run(benchmark, lambda d: _impl_crc("portable", d))


def test_crc32c_peer_crc32c_package(benchmark) -> None:  # type: ignore[no-untyped-def]
    pkg = pytest.importorskip("crc32c", reason="pip install summarylog[bench]")
    _run(benchmark, pkg.crc32c)


def test_crc32c_peer_google_crc32c(benchmark) -> None:  # type: ignore[no-untyped-def]
    g = pytest.importorskip("google_crc32c", reason="pip install google-crc32c")
    _run(benchmark, g.value)
