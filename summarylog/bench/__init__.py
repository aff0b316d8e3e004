"""Side-by-side benchmarks of summarylog against its peers; run them with
``python -m summarylog.bench`` (``--quick``, ``--json PATH``, ``--only NAME``,
``--repeat N``).

Workloads register with :func:`bench` on functions named ``bench_<name>``
(see :mod:`summarylog.bench.workloads`); each returns :class:`Row` objects
with summarylog's and one peer's figures.  Peers are imported only when a
workload runs, and a missing one is reported, never fatal.  Nothing here
asserts a time.
"""

from __future__ import annotations

from .registry import (
    BENCH_HINT,
    REGISTRY,
    BenchSpec,
    Context,
    PeerMissing,
    Row,
    bench,
    need_peer,
    per_second,
    timed,
)

__all__ = [
    "BENCH_HINT",
    "REGISTRY",
    "BenchSpec",
    "Context",
    "PeerMissing",
    "Row",
    "bench",
    "need_peer",
    "per_second",
    "run",
    "timed",
]


def run(*args, **kwargs):  # type: ignore[no-untyped-def]
    """Run the registered benches; see :func:`summarylog.bench.runner.run`."""
    from .runner import run as _run

    return _run(*args, **kwargs)
