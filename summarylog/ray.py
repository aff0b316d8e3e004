"""Event files as a Ray Data dataset: ``summarylog.ray.read_events(paths)``.

Runs are found once on the driver (local roots, run directories, event files, or
fsspec URLs); read tasks, balanced by bytes, decode their runs in Ray's workers with
the C reader into Arrow blocks (:func:`summarylog.arrow_tables.scalar_schema`).  A
URL's files are fetched by the worker that reads them.

Memory: a worker holds one run at a time, and a run whose decoded columns could
outgrow Ray's ``DataContext.target_max_block_size`` is streamed in tables of at
most that size; so a worker's memory follows the block size, not the number or size
of runs.  Damage (damaged regions, unfinished tails, malformed events, unreadable
files) is never dropped: pass ``damage=DamageLog()`` to collect it as rows, else each
worker logs a warning with counts that Ray forwards to the driver's console.

Needs ``pip install 'summarylog[ray]'``; ``import summarylog`` never imports Ray.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from .engine_runs import TABLES

__all__ = ["read_events", "DamageLog"]

KINDS = TABLES  #: what read_events reads, one kind per dataset (one schema)
# Event-file bytes a read task takes on before another is added: Ray Data is slow to
# start a task after one ends while others run, so a task should decode for much longer
# than that gap (measured in docs/datasets.md, "Tasks").
_TASK_BYTES = 256 << 20


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise ImportError("summarylog.ray needs Ray Data: pip install 'summarylog[ray]'") from None
    return ray


class _Rows:
    """The actor behind a DamageLog: the damage rows workers sent, in arrival order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, rows: list[dict[str, Any]]) -> int:
        self.rows += rows
        return len(self.rows)

    def get(self) -> list[dict[str, Any]]:
        return list(self.rows)


class DamageLog:
    """Where the read tasks of :func:`read_events` send the damage they find: a small
    Ray actor (no CPU reserved) owned by this handle.  After the dataset is consumed,
    :meth:`rows` / :meth:`table` hold one row per damaged region, unfinished tail,
    count of malformed events or values, unreadable file or unlisted path:
    ``run, file, offset, length, kind, detail``."""

    def __init__(self) -> None:
        ray = _ray()
        self._actor = ray.remote(num_cpus=0)(_Rows).remote()

    def add(self, rows: list[dict[str, Any]]) -> None:
        """Record ``rows`` (called in the workers; waits until they are recorded, so a
        finished read task's damage is never lost)."""
        _ray().get(self._actor.add.remote(list(rows)))

    def rows(self) -> list[dict[str, Any]]:
        return _ray().get(self._actor.get.remote())

    def table(self) -> Any:
        """:meth:`rows` as a pyarrow Table (:func:`summarylog.arrow_tables.damage_schema`)."""
        from .arrow_tables import require_pyarrow
        from .arrow_tables import damage_schema

        return require_pyarrow().Table.from_pylist(self.rows(), schema=damage_schema())

    def __len__(self) -> int:
        return len(self.rows())


def _task_count(ray: Any, total_bytes: int, runs: int) -> int:
    """Read tasks when the caller does not say: two per CPU, more when each would read
    over _TASK_BYTES; never more than runs.  (Ray's own default, 200 blocks at least,
    spends more on starting small tasks than on reading them.)"""
    cpus = (ray.cluster_resources().get("CPU", 1) if ray.is_initialized()
            else os.cpu_count() or 1)
    return max(1, min(runs, max(2 * int(cpus), -(-total_bytes // _TASK_BYTES))))


def read_events(paths: Any, *, runs: Sequence[str] | None = None,
                tags: Sequence[str] | None = None, kinds: Sequence[str] = ("scalars",),
                override_num_blocks: int | None = None, verify: bool = True,
                purge: bool = True, storage_options: Mapping[str, Any] | None = None,
                remote_options: Any = None, damage: DamageLog | None = None,
                ray_remote_args: Mapping[str, Any] | None = None,
                op_resource_reservation: bool = False) -> Any:
    """A ``ray.data.Dataset`` of the scalars under ``paths``: rows ``run, tag, step,
    wall_time, value`` (run and tag dictionary-encoded), as :class:`summarylog.Reader`
    reads them (``verify``: data CRCs; ``purge``: the resume rules); or of another
    kind, in the schema of the export's table of that name
    (:func:`summarylog.arrow_tables.table_schema`).

    Args:
      paths: a path or URL (root of runs, run directory, event file), or a list of
        them; with several, runs are named ``<path>/<run>``.
      runs / tags: only these run names / tag names (None: all).
      kinds: one of ``("scalars",)``, ``("histograms",)``, ``("text",)``,
        ``("hparams",)`` (a dataset has one schema).  Scalars of a big run are streamed;
        a run's values of another kind are decoded at once, then cut into blocks.
      override_num_blocks: read tasks (Ray's argument; default: two per CPU of the
        cluster, or one per 256 MiB of event files if more, at most one per run).
        Runs are split across tasks by bytes; a run is never split.
      storage_options: fsspec options for URLs (sent to the workers that fetch).
      remote_options: for URLs, the deadline, retries and bounds of the listing and of
        the workers' fetching, as :class:`summarylog.Reader` takes them (not
        ``cache_dir``: each run is fetched into a private directory, removed once read).
      damage: a :class:`DamageLog` to collect what reading found wrong; None: each
        worker logs a warning with counts (forwarded to the driver by Ray).
      op_resource_reservation: Ray Data's per-operator resource reservation for this
        dataset's executions.  Off by default, in the dataset's own DataContext (a copy
        Ray makes per read: ``DataContext.get_current()`` and other datasets keep
        theirs): Ray 2.60's reservation runs one read task until the cluster's size is
        known, about a second into each execution, and starts the next task well after
        one ends (docs/datasets.md).  True keeps the current DataContext's setting, for
        pipelines whose later operators need CPUs or GPUs held for them.

    Raises TypeError / ValueError for bad arguments (an unknown run or kind),
    FileNotFoundError for a missing path, ImportError when Ray is not installed.
    """
    from .arrow_tables import table_schema
    from .engine_runs import check_names, damage_row, find_runs

    if isinstance(kinds, str) or not all(isinstance(k, str) for k in kinds):
        raise TypeError("kinds must be a sequence of str, e.g. ('scalars',)")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds: {unknown or '()'} cannot be read through Ray yet "
                         f"(readable: {list(KINDS)})")
    if len(kinds) > 1:
        raise ValueError(f"kinds: one kind per dataset (a Ray dataset has one schema), "
                         f"got {list(kinds)}: call read_events once per kind")
    (kind,) = kinds
    tags = check_names("tags", tags)
    if override_num_blocks is not None and (isinstance(override_num_blocks, bool) or not
                                            isinstance(override_num_blocks, int) or
                                            override_num_blocks < 1):
        raise ValueError(f"override_num_blocks must be a positive int or None, "
                         f"got {override_num_blocks!r}")
    if not isinstance(op_resource_reservation, bool):
        raise TypeError(f"op_resource_reservation must be a bool, "
                        f"got {type(op_resource_reservation).__name__}")
    if damage is not None and not isinstance(damage, DamageLog):
        raise TypeError(f"damage must be a summarylog.ray.DamageLog or None, "
                        f"got {type(damage).__name__}")
    ray = _ray()
    jobs, errors = find_runs(paths, runs, storage_options, remote_options)
    if errors:  # the driver found them: it says so itself
        rows = [damage_row("", e.filename or "", None, None, "unlisted", str(e))
                for e in errors]
        if damage is not None:
            damage.add(rows)
        warnings.warn(f"summarylog.ray: {len(errors)} paths could not be listed, e.g. "
                      f"{errors[0]}", RuntimeWarning, stacklevel=2)
    if not jobs:  # Ray wants at least one read task
        return ray.data.from_arrow(table_schema(kind).empty_table())
    from .ray_source import EventsDatasource

    source = EventsDatasource(jobs, kind, verify=verify, purge=purge, tags=tags,
                              report=damage.add if damage is not None else None)
    args: dict[str, Any] = {"override_num_blocks": override_num_blocks or
                            _task_count(ray, sum(j.size for j in jobs), len(jobs))}
    if ray_remote_args:
        args["ray_remote_args"] = dict(ray_remote_args)
    ds = ray.data.read_datasource(source, **args)
    if not op_resource_reservation:  # ds.context is this read's own copy
        ds.context.op_resource_reservation_enabled = False
    return ds
