"""pytest-benchmark suite: summarylog and its peers, paired in one group per
workload so the table shows them side by side.

Run with ``pytest benches/`` (``--benchmark-group-by=group`` is the default
grouping).  benches/ is outside the default testpaths; files are named
``bench_*.py`` and collected by the hook below.  Sizes are small (the whole
suite takes well under two minutes); ``python -m summarylog.bench`` runs the
full-size workloads and prints ratios against the goals.  No time is asserted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from summarylog.bench.machine import default_tmpdir


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # bench_*.py do not match the default python_files; a path given on the
    # command line is collected by pytest itself, so leave those alone.
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_")
            and not parent.session.isinitpath(file_path)):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def scratch() -> Iterator[Path]:
    """A scratch directory on a disk (not tmpfs): the write benches measure
    the disk the user would log to."""
    base = default_tmpdir()
    path = Path(tempfile.mkdtemp(prefix="summarylog-benches-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fresh_path(scratch: Path) -> Iterator[object]:
    """A callable returning a new, not yet existing file path on each call;
    the files are removed after the test."""
    made: list[Path] = []

    def make(stem: str = "f") -> str:
        p = scratch / f"{stem}-{os.getpid()}-{len(made)}"
        made.append(p)
        return str(p)

    yield make
    for p in made:
        p.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def payloads() -> list[bytes]:
    """100,000 distinct random 40-byte payloads."""
    n, size = 100_000, 40
    blob = os.urandom(n * size)
    return [blob[i : i + size] for i in range(0, n * size, size)]
