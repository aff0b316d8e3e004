"""Runs for the engines (Ray Data, DuckDB): found once where the caller is, then read
anywhere, one run at a time, as Arrow tables of bounded size, with what reading found
wrong as rows of a ``damage`` table.  No engine is imported here.

A run whose decoded columns could outgrow ``block_bytes`` is streamed
(:func:`summarylog.read_stream.iter_scalars`) in tables of at most ``block_bytes``;
smaller runs are decoded whole by the C column loader and yield one table (a batch
per tag).
A URL's files are fetched by whoever reads the run (a Ray worker), into a private
temporary directory that is removed once the run is read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .arrow_tables import (arrow_text, report_damage, require_pyarrow, scalar_schema,
                           scalar_tables)
from .dataset.collect import UNIT_TABLES, read_unit
from .discovery import is_event_file, natural_key
from .read_types import FileReport

__all__ = ["RunJob", "find_runs", "balance", "read_run", "TABLES", "damage_rows",
           "damage_row", "check_names",
           "ARROW_ROW_BYTES"]

ARROW_ROW_BYTES = 32  #: a scalar row in Arrow: step, wall_time, value (8 B) + run, tag codes (4 B)
# the fewest file bytes a decoded scalar can come from, for the in-memory estimate of a
# run (a multi-value event spends about 24 B per value; a torch-style event about 47)
_MIN_EVENT_BYTES_PER_VALUE = 12
_LOADER_BYTES_PER_VALUE = 28  # the column loader's id, step, wall, value columns


@dataclasses.dataclass(frozen=True)
class RunJob:
    """One run to read: its exact name and its event files (local paths, or paths
    inside ``url``'s filesystem) with their sizes, in reading order."""

    run: str
    files: tuple[tuple[str, int], ...]
    url: str | None = None  #: the root URL the files are under (None: local files)
    storage_options: Mapping[str, Any] | None = None
    remote_options: Any = None  #: the mirror's deadline, retries and bounds (MirrorOptions)

    @property
    def size(self) -> int:
        return sum(s for _, s in self.files)


def check_names(name: str, values: Any) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str) or not isinstance(values, (list, tuple, set, frozenset)):
        raise TypeError(f"{name} must be a list of str or None, got {type(values).__name__}")
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must hold only str")
    return list(values)


def find_runs(paths: Any, runs: Any = None,
              storage_options: Mapping[str, Any] | None = None, remote_options: Any = None
              ) -> tuple[list[RunJob], list[OSError]]:
    """The runs under ``paths`` (a path or URL, or a list of them: roots, run directories
    or event files) and what could not be listed.  With one path, runs are named as
    :meth:`summarylog.Reader.runs` names them; with several, ``<path>/<run>`` (the path
    itself for its run ``"."``), so runs of different roots never merge.  ``runs``: only
    these names (ValueError for a name not found)."""
    from .remote.urls import is_url

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, (list, tuple)) or not paths:
        raise TypeError("paths must be a path or URL, or a non-empty list of them")
    wanted = check_names("runs", runs)
    jobs: list[RunJob] = []
    errors: list[OSError] = []
    for p in paths:
        p = os.fspath(p) if isinstance(p, os.PathLike) else p
        if not isinstance(p, str) or not p:
            raise TypeError(f"paths must hold non-empty str or PathLike, got {p!r}")
        found = (_url_runs(p, storage_options, remote_options, errors) if is_url(p)
                 else _local_runs(p, errors))
        if len(paths) > 1:
            found = [RunJob(p.rstrip("/") if j.run == "." else f"{p.rstrip('/')}/{j.run}",
                            j.files, j.url, j.storage_options, j.remote_options)
                     for j in found]
        jobs += found
    names = [j.run for j in jobs]
    if len(set(names)) < len(names):
        raise ValueError("paths hold the same run twice (a path given twice, or one inside "
                         "another)")
    if wanted is not None:
        missing = sorted(set(wanted) - set(names))
        if missing:
            raise ValueError(f"runs: {missing} not found (runs: {sorted(names)[:20]})")
        jobs = [j for j in jobs if j.run in set(wanted)]
    return sorted(jobs, key=lambda j: j.run), errors


def _local_runs(path: str, errors: list[OSError]) -> list[RunJob]:
    from .reader import Reader

    reader = Reader(path)  # FileNotFoundError for a missing path
    jobs = []
    for run in reader.runs():
        files = []
        for f in reader.files(run):
            try:
                files.append((f, os.path.getsize(f)))
            except OSError as exc:  # gone since the listing: its run reports it when read
                errors.append(exc)
                files.append((f, 0))
        jobs.append(RunJob(run, tuple(files)))
    errors += reader.discovery_errors
    return jobs


def _url_runs(url: str, storage_options: Mapping[str, Any] | None, remote_options: Any,
              errors: list[OSError]) -> list[RunJob]:
    """One listing of ``url`` through the mirror's (its deadline and retries, its
    refusal of hostile names, its ``max_objects``): event files grouped by directory,
    hidden parts (a writer's live tails) left out.  Nothing is fetched here."""
    from .remote.mirror import Mirror, MirrorOptions
    from .remote.urls import check_dir_or_url

    url = check_dir_or_url("paths", url)
    # each reader of a run fetches into a private directory of its own: a shared
    # cache_dir would make the workers of one machine wait on each other's lock
    options = dataclasses.replace(MirrorOptions.of(remote_options), cache_dir=None)
    mirror = Mirror(url, storage_options, options)
    try:
        listing = mirror.list_objects()
    finally:
        mirror.close()
    errors += listing.errors
    if not listing.files and not listing.hidden:
        raise FileNotFoundError(2, "no event files under this URL", url)
    by_run: dict[str, list[tuple[str, int]]] = {}
    for path, (parts, size) in listing.files.items():
        if is_event_file(parts[-1]):
            by_run.setdefault("/".join(parts[:-1]) or ".", []).append((path, size))
    return [RunJob(run, tuple(sorted(files, key=lambda f: natural_key(f[0]))), url,
                   dict(storage_options or {}), mirror.options)
            for run, files in sorted(by_run.items())]


def balance(jobs: Sequence[RunJob], tasks: int) -> list[list[RunJob]]:
    """``jobs`` split into at most ``tasks`` groups of about equal bytes (largest run
    first onto the lightest group); a run is never split (its files are read in order:
    the resume rule spans them)."""
    k = max(1, min(tasks, len(jobs)))
    groups: list[list[RunJob]] = [[] for _ in range(k)]
    load = [0] * k
    for job in sorted(jobs, key=lambda j: (-j.size, j.run)):
        i = load.index(min(load))
        groups[i].append(job)
        load[i] += job.size
    return [g for g in groups if g]


@contextlib.contextmanager
def _local_files(job: RunJob) -> Iterator[tuple[list[str], dict[str, str], list[OSError]]]:
    """The run's files as local paths, local path -> the name to report, and what could
    not be fetched fully (a URL's files are mirrored, within the mirror's deadline and
    retries, into a private directory removed afterwards)."""
    if job.url is None:
        paths = [f for f, _ in job.files]
        yield paths, {p: p for p in paths}, []
        return
    from .remote.mirror import Mirror

    mirror = Mirror(job.url, job.storage_options, job.remote_options)
    try:
        local = mirror.fetch(job.files)
        yield local, {p: mirror.url_of(p) for p in local}, list(mirror.errors)
    finally:
        mirror.close()


def _streamed(job: RunJob, block_bytes: int) -> bool:
    values = job.size // _MIN_EVENT_BYTES_PER_VALUE + 1
    return values * _LOADER_BYTES_PER_VALUE > block_bytes


TABLES = UNIT_TABLES  #: what the engines read from event files: what the export reads of a run


def read_run(job: RunJob, table: str = "scalars", *, verify: bool = True,
             purge: bool = True, tags: Sequence[str] | None = None,
             block_bytes: int = 128 << 20,
             damage: list[dict[str, Any]] | None = None) -> Iterator[Any]:
    """The run's rows of ``table``, one of :data:`TABLES`, as Arrow tables in the
    export's schema (:func:`summarylog.arrow_tables.table_schema`), none larger than
    about ``block_bytes``; what reading found wrong is appended to ``damage`` as rows
    (:func:`damage_rows`).  Scalars of a big run are streamed; a run's values of another
    kind are read as the export reads them, decoded at once, then sliced.  A run that
    cannot be read at all (a file gone) becomes one ``unreadable`` row, not an exception;
    a URL's file not fetched fully is read up to where its fetching stopped, and is an
    ``unreadable`` row too."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {list(TABLES)}, got {table!r}")
    reports: dict[str, FileReport] = {}
    names: dict[str, str] = {}
    try:
        with _local_files(job) as (files, names, fetch_errors):
            if fetch_errors:
                if damage is None:
                    raise fetch_errors[0]
                damage += [damage_row(job.run, os.fsdecode(e.filename or job.run), None, None,
                                      "unreadable", str(e)) for e in fetch_errors]
            if table == "scalars":
                yield from _scalar_tables(job, files, verify, purge, tags, block_bytes, reports)
            else:
                yield from _kind_tables(job.run, table, files, verify, purge, tags, block_bytes,
                                        reports)
    except OSError as exc:
        if damage is not None:
            where = os.fsdecode(exc.filename) if exc.filename is not None else job.run
            damage.append(damage_row(job.run, names.get(where, where), None, None,
                                     "unreadable", str(exc)))
        else:
            raise
    if damage is not None:
        damage += damage_rows(job.run, reports, names)


def _scalar_tables(job: RunJob, files: list[str], verify: bool, purge: bool,
                   tags: Sequence[str] | None, block_bytes: int,
                   reports: dict[str, FileReport]) -> Iterator[Any]:
    from .discovery import dialect_of

    mindspore = any(dialect_of(f) == "mindspore" for f in files)
    if _streamed(job, block_bytes) and not (purge and mindspore):
        yield from _stream_tables(job.run, files, verify, purge, tags, block_bytes, reports)
        return
    # small, or MindSpore's one-value-per-step rule (it sorts the whole run)
    from .read_columns import ColumnLoader

    cols = ColumnLoader(verify).load(files, purge, reports)
    if tags is not None:
        keep = set(tags)
        cols.series = {t: s for t, s in cols.series.items() if t in keep}
    yield from scalar_tables(job.run, cols)


def _kind_tables(run: str, table: str, files: list[str], verify: bool, purge: bool,
                 tags: Sequence[str] | None, block_bytes: int,
                 reports: dict[str, FileReport]) -> Iterator[Any]:
    """Histograms, text or hparams, as the export reads them."""
    if not files:
        return
    # a run is one directory's files (or one file named on its own)
    unit = read_unit(files[0] if len(files) == 1 else os.path.dirname(files[0]), run,
                     purge=purge, verify=verify, tags=None, tables=(table,))
    reports.update(unit.reports)
    keep = None if tags is None else set(tags)
    for tag, t in unit.tables.get(table, []):
        if keep is None or tag in keep or table == "hparams":
            yield from _slices(t, block_bytes)


def _slices(table: Any, block_bytes: int) -> Iterator[Any]:
    """``table`` in zero-copy slices of at most about ``block_bytes``."""
    rows = max(1, int(table.num_rows * block_bytes // max(1, table.nbytes)))
    for start in range(0, table.num_rows, rows):
        yield table.slice(start, rows)


def _stream_tables(run: str, files: list[str], verify: bool, purge: bool,
                   tags: Sequence[str] | None, block_bytes: int,
                   reports: dict[str, FileReport]) -> Iterator[Any]:
    """A big run in file order, in tables of at most ``block_bytes`` (tags mixed)."""
    from .read_stream import iter_scalars

    pa = require_pyarrow()
    schema = scalar_schema()
    chunk = max(1024, block_bytes // ARROW_ROW_BYTES)
    runs = pa.array([arrow_text(run)], pa.string())
    keep = None if tags is None else set(tags)
    for c in iter_scalars(files, None, chunk, purge=purge, verify=verify, reports=reports):
        codes = c.tag.astype(np.int32)
        names = pa.array([arrow_text(t) for t in c.tags], pa.string())
        cols = [c.step, c.wall_time, c.value]
        if keep is not None:
            mask = np.isin(codes, [i for i, t in enumerate(c.tags) if t in keep])
            codes, cols = codes[mask], [a[mask] for a in cols]
            if not len(codes):
                continue
        zeros = pa.array(np.zeros(len(codes), np.int32))
        yield pa.Table.from_arrays(
            [pa.DictionaryArray.from_arrays(zeros, runs),
             pa.DictionaryArray.from_arrays(pa.array(codes), names),
             *(pa.array(a) for a in cols)], schema=schema)


def damage_row(run: str, file: str, offset: int | None, length: int | None, kind: str,
               detail: str = "") -> dict[str, Any]:
    return {"run": arrow_text(run), "file": arrow_text(file), "offset": offset,
            "length": length, "kind": kind, "detail": detail}


def damage_rows(run: str, reports: Mapping[str, FileReport],
                names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The damage table's rows for a run's file reports (``names``: local path -> the
    name to show, e.g. its URL), as the export writes them
    (:func:`summarylog.arrow_tables.report_damage`), and a row per unfinished record at
    a file's end (``tail_<kind>``: a live file's, or a crash's)."""
    rows = []
    for path, rep in reports.items():
        name = (names or {}).get(path, path)
        found, _ = report_damage(run, name, rep)
        rows += [damage_row(*r) for r in found]
        if rep.tail is not None:
            rows.append(damage_row(run, name, rep.tail.offset, rep.tail.length,
                                   f"tail_{rep.tail.kind}", "unfinished record at the end"))
    return rows
