"""The Ray Data datasource behind :func:`summarylog.ray.read_events` (imports Ray: loaded
only when a read is asked for).  Runs are found once, on the driver; each read task
decodes its share of the runs in a worker with the C reader and yields Arrow tables."""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, Sequence

from ray.data import Datasource, ReadTask
from ray.data.block import BlockMetadata

from .arrow_tables import table_schema
from .engine_runs import ARROW_ROW_BYTES, RunJob, balance, read_run

__all__ = ["EventsDatasource"]

_DEFAULT_BLOCK = 128 << 20  # Ray's own default target_max_block_size
_FILE_BYTES_PER_VALUE = 24  # a multi-value event's bytes per scalar: the size estimate
log = logging.getLogger("summarylog.ray")


def _read_fn(group: list[RunJob], kind: str, verify: bool, purge: bool,
             tags: Sequence[str] | None, block_bytes: int,
             report: Callable[[list[dict[str, Any]]], None] | None
             ) -> Callable[[], Iterator[Any]]:
    def read() -> Iterator[Any]:
        for job in group:  # run by run: one run's columns in memory at a time, at most
            rows: list[dict[str, Any]] = []
            yield from read_run(job, kind, verify=verify, purge=purge, tags=tags,
                                block_bytes=block_bytes, damage=rows)
            if rows:
                if report is not None:
                    report(rows)
                else:  # forwarded to the driver's console by Ray (log_to_driver)
                    kinds = sorted({r["kind"] for r in rows})
                    log.warning("summarylog: run %r: %d damage rows (%s); pass "
                                "damage=summarylog.ray.DamageLog() to collect them",
                                job.run, len(rows), ", ".join(kinds))
    return read


class EventsDatasource(Datasource):
    """One kind of value (scalars, histograms, text, hparams) of summarylog / TensorBoard /
    MindSpore runs, one read task per group of runs of about equal bytes."""

    def __init__(self, jobs: list[RunJob], kind: str = "scalars", *, verify: bool = True,
                 purge: bool = True, tags: Sequence[str] | None = None,
                 report: Callable[[list[dict[str, Any]]], None] | None = None) -> None:
        super().__init__()
        self._jobs = list(jobs)
        self._kind = kind
        self._verify, self._purge = verify, purge
        self._tags = None if tags is None else list(tags)
        self._report = report

    def get_name(self) -> str:
        return "Summarylog"

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(j.size for j in self._jobs) * ARROW_ROW_BYTES // _FILE_BYTES_PER_VALUE

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        block = getattr(data_context, "target_max_block_size", None) or _DEFAULT_BLOCK
        tasks = []
        for group in balance(self._jobs, parallelism):
            size = sum(j.size for j in group) * ARROW_ROW_BYTES // _FILE_BYTES_PER_VALUE
            files = [f if j.url is None else f"{j.url}:{f}" for j in group for f, _ in j.files]
            meta = BlockMetadata(num_rows=None, size_bytes=int(size), input_files=files,
                                 exec_stats=None)
            tasks.append(ReadTask(_read_fn(group, self._kind, self._verify, self._purge,
                                           self._tags, int(block), self._report),
                                  meta, schema=table_schema(self._kind),
                                  per_task_row_limit=per_task_row_limit))
        return tasks
