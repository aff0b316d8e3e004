"""What one export reads of one run: every kind's rows through the Reader (its values,
its rules), per tag (scalars as the Reader's numpy series, the other kinds as Arrow
tables), with per-file row counts for the next export.

A unit is read with its own :class:`~summarylog.reader.Reader` on one event file (the
run's rows then split by file), on the bytes a file gained since the last export
(:func:`read_past`), or on the run's directory (read whole, as the Reader reads the run,
when a file's resume marker or MindSpore's one-value-per-step rule spans files)."""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import os
import stat
import tempfile
from typing import Any

import numpy as np

from ..arrow_tables import (histogram_table, hparams_rows, hparams_table,
                            require_pyarrow, text_table, text_value)
from ..read_columns import resume_kept
from ..read_types import FileReport, Scalars
from ..reader import Reader
from ..side_files import write_all

__all__ = ["Unit", "UNIT_TABLES", "read_unit", "read_past", "select_tags", "merged",
           "merged_scalars"]

UNIT_TABLES = ("scalars", "histograms", "text", "hparams")  #: what read_unit reads of a run

_COPY_STEP = 8 << 20  # bytes copied per read


@dataclasses.dataclass
class Unit:
    """The rows of a unit (one file or a whole run): per table, (tag, rows) pairs, the
    rows a :class:`Scalars` for "scalars", an Arrow table for the others."""

    tables: dict[str, list[tuple[str, Any]]] = dataclasses.field(default_factory=dict)
    rows: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  #: table -> tag -> n
    reports: dict[str, FileReport] = dataclasses.field(default_factory=dict)


def select_tags(tags: list[str], patterns: list[str] | None) -> list[str]:
    """``tags`` matching any of ``patterns`` (fnmatch; None: all)."""
    if patterns is None:
        return tags
    return [t for t in tags if any(t == p or fnmatch.fnmatchcase(t, p) for p in patterns)]


def merged(pieces: dict[str, list[Any]]) -> list[Any]:
    """One table per tag, tags in name order: each tag's pieces (from several files)
    concatenated, in step order (stable)."""
    pa = require_pyarrow()
    out = []
    for tag in sorted(pieces):
        ts = [t for t in pieces[tag] if t.num_rows]
        if len(ts) > 1:
            t = pa.concat_tables(ts)
            out.append(_sorted(t, t.column("step").to_numpy()) if "step" in t.column_names
                       else t)
        elif ts:
            out.append(ts[0])
    return out


def merged_scalars(pieces: dict[str, list[Scalars]]) -> list[tuple[str, Scalars]]:
    """:func:`merged` for scalar series: (tag, series) pairs, tags in name order."""
    out = []
    for tag in sorted(pieces):
        ss = [s for s in pieces[tag] if len(s.step)]
        if len(ss) > 1:
            out.append((tag, _step_order(Scalars(*(np.concatenate(c) for c in zip(*ss))))))
        elif ss:
            out.append((tag, ss[0]))
    return out


def _step_order(s: Scalars) -> Scalars:
    """``s`` in step order (stable), untouched when already sorted."""
    order = _order(s.step)
    return s if order is None else Scalars(*(a[order] for a in s))


def _sorted(table: Any, step: np.ndarray) -> Any:
    """``table`` in step order (stable), untouched when already sorted."""
    order = _order(step)
    return table if order is None else table.take(require_pyarrow().array(order))


def _order(step: np.ndarray) -> np.ndarray | None:
    """The stable sort of ``step``, or None when it is sorted already."""
    if len(step) < 2 or bool((step[1:] >= step[:-1]).all()):
        return None
    return np.argsort(step, kind="stable")


def read_unit(path: str, run: str, *, purge: bool, verify: bool,
              tags: list[str] | None, tables: tuple[str, ...] | None = None) -> Unit:
    """Every kind's rows of ``path`` (an event file or a run directory, its run ".")
    named ``run``; ``tables``: only these tables' (None: all)."""
    out = Unit()
    want = set(tables if tables is not None else UNIT_TABLES)
    with Reader(path, purge=purge, verify=verify, threads=1) as r:
        if "." not in r.runs():
            return out
        kinds = r.tag_kinds(".")
        chosen = select_tags(list(kinds), tags)

        def add(table: str, tag: str, n: int, table_rows: Any) -> None:
            out.rows.setdefault(table, {})[tag] = n
            if n:
                out.tables.setdefault(table, []).append((tag, table_rows))

        scalar_tags = set(r.scalar_tags("."))  # a tag whose every point a restart dropped: none
        for tag in chosen:
            if tag in scalar_tags and "scalars" in want:
                s = r.scalars(".", tag)
                add("scalars", tag, len(s.step), _step_order(s))
            if "histogram" in kinds[tag] and "histograms" in want:
                try:
                    h = r.histograms(".", tag)
                except KeyError:  # every histogram dropped by a restart
                    continue
                add("histograms", tag, len(h), _sorted(histogram_table(run, tag, h), h.step))
        text = [t for t in chosen if "text" in kinds[t]] if "text" in want else []
        hp = [t for t in chosen if "hparams" in kinds[t]] if "hparams" in want else []
        if text or hp:
            by_tag: dict[str, list[tuple[int, float, str]]] = {}
            hrows: list[Any] = []
            for ev in resume_kept(r.events(".", tags=text + hp), ("text", "hparams"), purge):
                if ev.kind == "text":
                    by_tag.setdefault(ev.tag, []).append((ev.step, ev.wall_time,
                                                          text_value(ev.value)))
                else:
                    hrows += hparams_rows(ev.value)
            for tag in sorted(by_tag):
                rows = by_tag[tag]
                add("text", tag, len(rows), _sorted(text_table(run, tag, rows),
                                                    np.array([x[0] for x in rows], np.int64)))
            if hrows:
                add("hparams", "", len(hrows), hparams_table(run, hrows))
        out.reports = r.damage(".")
    return out


def read_past(path: str, run: str, start: int, exported: dict[str, dict[str, int]],
              counted: dict[str, int], *, purge: bool, verify: bool,
              tags: list[str] | None) -> Unit:
    """The rows of the event file ``path`` past byte ``start``, where the last export's
    reading ended (a record boundary), read from a private copy of those bytes: a grown
    file costs its new bytes, not its size.  The caller has made sure no resume marker
    is among them (it would drop rows exported before).  Row counts and the report are
    the whole file's: ``exported`` (table -> tag -> rows) and ``counted`` (the report's
    counts then) added, offsets shifted by ``start``."""
    with tempfile.TemporaryDirectory(prefix="summarylog-grown-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        copied = _copy_past(path, start, copy)
        unit = read_unit(copy, run, purge=purge, verify=verify, tags=tags)
    rows = {t: dict(by_tag) for t, by_tag in exported.items()}
    for table, by_tag in unit.rows.items():
        total = rows.setdefault(table, {})
        for tag, n in by_tag.items():
            total[tag] = total.get(tag, 0) + n
    unit.rows = rows
    rep = unit.reports.pop(copy, None) or FileReport(copy, size=copied)
    unit.reports = {path: dataclasses.replace(
        rep, path=path, size=start + (rep.size if rep.size is not None else copied),
        damage=[d._replace(offset=d.offset + start) for d in rep.damage],
        tail=rep.tail._replace(offset=rep.tail.offset + start) if rep.tail else None,
        bad_events=rep.bad_events + counted.get("bad_events", 0),
        bad_values=rep.bad_values + counted.get("bad_values", 0),
        damage_past_cap=rep.damage_past_cap + counted.get("damage_past_cap", 0))}
    return unit


def _copy_past(src: str, start: int, dst: str) -> int:
    """Copy ``src``'s bytes from ``start`` to its size now into the new file ``dst``
    (created, never followed); returns the bytes copied."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(src, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", src)
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                      | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            pos = start
            while pos < st.st_size:
                data = os.pread(fd, min(_COPY_STEP, st.st_size - pos), pos)
                if not data:  # truncated meanwhile: the next export sees it shrank
                    break
                write_all(out, data)
                pos += len(data)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return pos - start
