"""export_dataset: runs of event files (a local root or an fsspec URL) into the Parquet
dataset of :mod:`.layout` (a local directory or an fsspec URL), incrementally.

Each run is read and written by one task; tasks run side by side on ``threads``
threads (the native decoder and pyarrow's encoder both release the GIL, so reading
one run overlaps writing another).  Every part is complete when it appears (written
under a temporary name and renamed, or one PUT); the state is written last, then the
parts it no longer lists are removed.  A crash leaves the parts of the last committed
export readable, plus parts of the crashed one, which the next export removes before
it redoes what the state does not record: no duplicates, no loss."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping

from ..arrow_tables import damage_table, report_damage, require_pyarrow
from ..read_lineage import read_lineage
from ..read_pool import thread_count
from ..reader import Reader
from ..remote.urls import check_dir_or_url, is_url
from .collect import Unit, merged, merged_scalars, read_past, read_unit
from .layout import KEY_PREFIX, part_name, run_key
from .plan import RunPlan, per_file_ok, plan_run
from .row_groups import row_groups
from .scalar_parquet import write_scalars
from .state import DatasetState, FileState, RunState, file_identity
from .store import Store, open_store

__all__ = ["export_dataset", "ExportResult"]

_FLOAT = "BYTE_STREAM_SPLIT"
_ENCODINGS = {  # lossless: float64 values kept, split into byte streams before zstd
    "histograms": {"step": "DELTA_BINARY_PACKED", "wall_time": _FLOAT,
                   **{s: _FLOAT for s in ("min", "max", "num", "sum", "sum_squares")}},
    "text": {"step": "DELTA_BINARY_PACKED", "wall_time": _FLOAT},
}
_DICTIONARY = {"histograms": ["run", "tag"], "text": ["run", "tag"]}


@dataclasses.dataclass
class ExportResult:
    """What one export did."""

    export_id: int
    rows: dict[str, int]  #: rows written per table
    files_read: int  #: event and lineage files read (a grown one: only its new bytes)
    files_skipped: int  #: files unchanged since the last export, not read
    bytes_read: int  #: of the files read (a grown one: the bytes it gained)
    parts_written: int
    damage_rows: int  #: rows added to the damage table
    runs_new: list[str]
    runs_appended: list[str]
    runs_reexported: dict[str, str]  #: run -> why it was read again in full
    parts_removed: int  #: superseded parts, and parts of an export that did not finish
    errors: dict[str, str]  #: runs that could not be read (tried again next time)
    seconds: float
    #: runs of the dataset no longer under the source (of an export of every run); their
    #: parts are kept, or removed when ``pruned``
    runs_gone: list[str] = dataclasses.field(default_factory=list)
    pruned: bool = False
    unlisted: dict[str, str] = dataclasses.field(default_factory=dict)  #: path -> why

    def summary(self) -> str:
        rows = ", ".join(f"{t} {n}" for t, n in self.rows.items() if n) or "no rows"
        gone = (f"; {len(self.runs_gone)} runs gone from the source "
                f"{'removed' if self.pruned else 'kept'}" if self.runs_gone else "")
        unlisted = f"; {len(self.unlisted)} paths not listed" if self.unlisted else ""
        return (f"export {self.export_id}: {rows}; files read {self.files_read} "
                f"({self.bytes_read:,} B), skipped {self.files_skipped}; "
                f"{self.parts_written} parts; "
                f"damage {self.damage_rows}; {len(self.runs_reexported)} runs re-exported"
                f"{gone}{unlisted}; {self.seconds:.2f} s")


@dataclasses.dataclass
class _Outcome:
    run: str
    state: RunState | None  #: None: keep the old state
    rows: dict[str, int]
    files_read: int
    parts: list[str]
    damage: int
    error: str | None = None
    bytes_read: int = 0


def _write(store: Store, table: str, keydir: str, name: str, rows: list[Any],
           run: str) -> None:
    """One part of ``table``: ``rows`` (scalars: (tag, series) pairs; else one Arrow
    table per tag, in tag order)."""
    if table == "scalars":
        store.write_part(table, keydir, name, write_scalars(run, rows))
        return
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, rows[0].schema, compression="zstd",
                          use_dictionary=_DICTIONARY.get(table, True),
                          column_encoding=_ENCODINGS.get(table)) as out:
        for group in row_groups([t.num_rows for t in rows]):
            out.write_table(pa.concat_tables([rows[i].slice(a, b - a) for i, a, b in group]))
    store.write_part(table, keydir, name, [sink.getvalue()])


def _count(table: str, rows: list[Any]) -> int:
    return sum(len(s.step) for _, s in rows) if table == "scalars" else \
        sum(t.num_rows for t in rows)


class _Export:
    def __init__(self, reader: Reader, store: Store, state: DatasetState, export_id: int,
                 tags: list[str] | None) -> None:
        self.reader, self.store, self.state = reader, store, state
        self.export_id, self.tags = export_id, tags
        self.failed = threading.Event()  # a run failed: the runs not started yet are not

    def run(self, plan: RunPlan) -> _Outcome:
        if self.failed.is_set():
            raise RuntimeError("export stopped: an earlier run failed")
        try:
            return self._run(plan)
        except BaseException:
            self.failed.set()
            raise

    def _run(self, plan: RunPlan) -> _Outcome:
        old = self.state.runs.get(plan.run)
        key = old.key if old is not None else run_key(plan.run)
        out: dict[str, dict[str, list[Any]]] = {}  # table -> tag -> pieces
        damage: list[Any] = []
        files: dict[str, FileState] = {}
        whole = False
        read = nbytes = 0
        try:
            if plan.action == "append":
                assert old is not None
                files = dict(old.files)
                units = ([(plan.grown, old.files[os.path.basename(plan.grown)])]
                         if plan.grown else []) + [(p, None) for p in plan.new]
                for path, before in units:
                    name = os.path.basename(path)
                    unit = (read_past(path, plan.run, before.consumed, before.rows, before.bad,
                                      purge=self.reader.purge, verify=self.reader.verify,
                                      tags=self.tags) if before is not None else
                            read_unit(path, plan.run, purge=self.reader.purge,
                                      verify=self.reader.verify, tags=self.tags))
                    read += 1
                    files[name] = self._file(plan.run, path, unit, before, out, damage)
                    nbytes += files[name].size - (before.consumed if before else 0)
            else:
                whole = not per_file_ok(plan.files)
                if whole and plan.files:
                    unit = read_unit(os.path.dirname(plan.files[0]), plan.run,
                                     purge=self.reader.purge, verify=self.reader.verify,
                                     tags=self.tags)
                    for path in plan.files:  # the unit's tables go in with the first
                        files[os.path.basename(path)] = self._file(plan.run, path, unit, None,
                                                                   out, damage)
                        files[os.path.basename(path)].rows = {}  # no per-file counts
                else:
                    for path in plan.files:
                        unit = read_unit(path, plan.run, purge=self.reader.purge,
                                         verify=self.reader.verify, tags=self.tags)
                        files[os.path.basename(path)] = self._file(plan.run, path, unit, None,
                                                                   out, damage)
                read += len(plan.files)
                if plan.lineage:
                    read += len(plan.lineage)
                    self._lineage(plan, files, out, damage)
                nbytes = sum(f.size for f in files.values())
        except OSError as exc:  # this run only; tried again at the next export
            damage = [(plan.run, self.reader.name(exc.filename) if isinstance(exc.filename, str)
                       else "", None, None, "unreadable", str(exc))]
            parts = self._write_all(plan.run, key, {"damage": [damage_table(damage)]})
            kept = old or RunState(key)
            return _Outcome(plan.run, dataclasses.replace(kept, parts=kept.parts + parts),
                            {"damage": 1}, read, parts, 1, str(exc))
        tables = {t: merged_scalars(by_tag) if t == "scalars" else merged(by_tag)
                  for t, by_tag in out.items()}
        if damage:
            tables["damage"] = [damage_table(damage)]
        rows = {t: n for t, ts in tables.items() if (n := _count(t, ts))}
        parts = self._write_all(plan.run, key, tables)
        base = old.parts if plan.action == "append" and old is not None else []
        return _Outcome(plan.run, RunState(key, files, whole, base + parts), rows, read, parts,
                        len(damage), bytes_read=nbytes)

    def _file(self, run: str, path: str, unit: Unit, before: FileState | None,
              out: dict[str, dict[str, list[Any]]], damage: list[Any]) -> FileState:
        """Add a unit's tables to ``out`` (its damage for ``path`` to ``damage``) and
        return what to remember of ``path``."""
        for table, pairs in unit.tables.items():
            for tag, t in pairs:
                out.setdefault(table, {}).setdefault(tag, []).append(t)
        unit.tables = {}  # added once, whatever the number of files of a whole read
        rep = unit.reports.get(path)
        size = rep.size if rep is not None and rep.size is not None else os.path.getsize(path)
        consumed = rep.tail.offset if rep is not None and rep.tail is not None else size
        rows, bad = report_damage(run, self.reader.name(path), rep, before.consumed if before
                                else 0, before.bad if before else None) if rep else ([], {})
        damage.extend(rows)
        head, mark = file_identity(path, size)
        return FileState(size, min(consumed, size), head, mark, unit.rows, bad)

    def _lineage(self, plan: RunPlan, files: dict[str, FileState],
                 out: dict[str, dict[str, list[Any]]], damage: list[Any]) -> None:
        from ..arrow_tables import lineage_table

        reports: dict[str, Any] = {}
        row = read_lineage(plan.run, plan.lineage, self.reader.verify, reports)
        out.setdefault("lineage", {})[""] = [lineage_table(plan.run, row)]
        for path in plan.lineage:
            rep = reports[path]
            rows, bad = report_damage(plan.run, self.reader.name(path), rep)
            damage.extend(rows)
            head, mark = file_identity(path, rep.size or 0)
            files[os.path.basename(path)] = FileState(rep.size or 0, rep.size or 0, head, mark,
                                                      {}, bad)

    def _write_all(self, run: str, key: str, out: dict[str, list[Any]]) -> list[str]:
        parts = []
        keydir = KEY_PREFIX + key
        for table, rows in out.items():
            if _count(table, rows):
                name = part_name(self.export_id, 0)
                _write(self.store, table, keydir, name, rows, run)
                parts.append(f"{table}/{keydir}/{name}")
        return parts


def export_dataset(src: str | os.PathLike[str], dest: str | os.PathLike[str], *,
                   runs: list[str] | None = None, tags: list[str] | None = None,
                   storage_options: Mapping[str, Any] | None = None,
                   dest_storage_options: Mapping[str, Any] | None = None,
                   remote_options: Any = None, threads: int | None = None,
                   purge: bool = True, verify: bool = True, prune: bool = False
                   ) -> ExportResult:
    """Export the runs under ``src`` (a local root or an fsspec URL) into the Parquet
    dataset ``dest`` (a local directory or an fsspec URL), or bring it up to date.

    Args:
      runs: only these runs (default: all); the others' parts stay as they are.
      prune: remove the parts of runs no longer under ``src`` (default: keep them; they
        are listed in ``ExportResult.runs_gone`` either way).  Not with ``runs``, and not
        done when a directory under ``src`` could not be listed (``unlisted``).
      tags: only tags matching one of these fnmatch patterns (default: all); a dataset
        keeps the selection it was first exported with (ValueError for another).
      storage_options: the source URL's filesystem options; ``dest_storage_options``
        the destination's (default: the same).
      remote_options, purge, verify: as :class:`summarylog.Reader`'s.
      threads: runs read and written side by side (default: min(CPUs, 8)).

    Returns an :class:`ExportResult`.  Raises TypeError/ValueError for bad arguments,
    FileNotFoundError for a missing ``src``, OSError when ``dest`` cannot be written
    (a symlink planted inside it is refused, never followed)."""
    t0 = time.perf_counter()
    src = check_dir_or_url("src", src)
    dest = check_dir_or_url("dest", dest)
    if runs is not None and (isinstance(runs, str) or not all(isinstance(r, str) for r in runs)):
        raise TypeError("runs must be a list of run names or None")
    if tags is not None and (isinstance(tags, str) or not all(isinstance(t, str) for t in tags)):
        raise TypeError("tags must be a list of fnmatch patterns or None")
    if not isinstance(prune, bool):
        raise TypeError(f"prune must be a bool, got {type(prune).__name__}")
    if prune and runs is not None:
        raise ValueError("prune removes runs gone from the source: it needs runs=None")
    nthreads = thread_count(threads)
    store = open_store(dest, dest_storage_options if dest_storage_options is not None
                       else storage_options if is_url(dest) else None)
    with store.locked():
        return _export(store, src, runs, tags, storage_options, remote_options, nthreads,
                       purge, verify, prune, t0)


def _export(store: Store, src: str, runs: list[str] | None, tags: list[str] | None,
            storage_options: Mapping[str, Any] | None, remote_options: Any, nthreads: int,
            purge: bool, verify: bool, prune: bool, t0: float) -> ExportResult:
    state = DatasetState.from_bytes(store.read_state())
    removed = 0
    live = state.live_parts()
    for table, keydir, name in list(store.parts()):  # an unfinished export's leftovers
        if f"{table}/{keydir}/{name}" not in live:
            store.delete(table, keydir, name)
            removed += 1
    export_id = state.next_export
    with Reader(src, purge=purge, verify=verify, threads=1,
                storage_options=storage_options if is_url(src) else None,
                remote_options=remote_options) as reader:
        wanted = reader.runs() if runs is None else [r for r in runs]
        unknown = [r for r in wanted if r not in reader.runs()]
        if unknown:
            raise KeyError(f"no run {unknown[0]!r} under {src!r}")
        gone, unlisted = _gone(state, reader, src, runs is None, prune)
        _check_tags(state, tags)
        plans = [plan_run(r, reader.files(r), reader.lineage_files(r), state.runs.get(r))
                 for r in wanted]
        todo = [p for p in plans if p.action != "skip"]
        skipped = sum(len(p.files) + len(p.lineage) for p in plans if p.action == "skip") + sum(
            len(p.files) + len(p.lineage) - len(p.new) - (p.grown is not None)
            for p in plans if p.action == "append")
        job = _Export(reader, store, state, export_id, tags)
        with ThreadPoolExecutor(max(1, min(nthreads, len(todo) or 1)),
                                thread_name_prefix="summarylog-export") as ex:
            futures = [ex.submit(job.run, p) for p in todo]
            try:
                outcomes = [f.result() for f in futures]
            except BaseException:  # no more runs once one failed: the state stays as it was
                ex.shutdown(wait=True, cancel_futures=True)
                raise
    superseded: list[str] = []
    pruned = prune and bool(gone) and not unlisted  # an unlisted directory may hold them
    if pruned:
        for run in gone:
            superseded += state.runs.pop(run).parts
    for plan, o in zip(todo, outcomes):
        old = state.runs.get(plan.run)
        if o.state is not None:
            if old is not None and o.error is None and plan.action == "full":
                superseded += old.parts
            state.runs[plan.run] = o.state
    written = sum(len(o.parts) for o in outcomes)
    if written or todo or pruned:
        state.next_export = export_id + 1
        state.tags = sorted(tags) if tags is not None else None
        store.write_state(state.to_bytes())
    for p in superseded:  # after the state: a crash before leaves them listed, still live
        table, keydir, name = p.split("/", 2)
        store.delete(table, keydir, name)
        removed += 1
    rows: dict[str, int] = {}
    for o in outcomes:
        for t, n in o.rows.items():
            rows[t] = rows.get(t, 0) + n
    return ExportResult(
        export_id, rows, sum(o.files_read for o in outcomes), skipped,
        sum(o.bytes_read for o in outcomes), written,
        sum(o.damage for o in outcomes),
        [p.run for p in todo if p.action == "full" and not p.why],
        [p.run for p in todo if p.action == "append"],
        {p.run: p.why for p in todo if p.action == "full" and p.why}, removed,
        {o.run: o.error for o in outcomes if o.error}, time.perf_counter() - t0,
        gone, pruned, unlisted)


def _gone(state: DatasetState, reader: Reader, src: str, every_run: bool,
          prune: bool) -> tuple[list[str], dict[str, str]]:
    """The dataset's runs no longer under ``src`` (of an export of every run) and the
    paths under ``src`` that could not be listed (name -> why)."""
    unlisted = {reader.name(e.filename) if isinstance(e.filename, str) else src: str(e)
                for e in reader.discovery_errors}
    present = set(reader.runs())
    gone = sorted(r for r in state.runs if r not in present) if every_run else []
    if prune and gone and not present:  # a wrong source would empty the dataset
        raise ValueError(f"prune: no run under {src!r}, every run of the dataset would be "
                         f"removed; refused")
    return gone, unlisted


def _check_tags(state: DatasetState, tags: list[str] | None) -> None:
    if state.runs and state.tags != (sorted(tags) if tags is not None else None):
        raise ValueError(f"the dataset was exported with tags={state.tags!r}: export "
                         f"tags={tags!r} into a new directory")
