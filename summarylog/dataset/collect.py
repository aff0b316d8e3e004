"""What one export reads of one run: every kind's rows through the Reader (its values,
its rules), as Arrow tables per tag, with per-file row counts for the next export.

A unit is read with its own :class:`~summarylog.reader.Reader` on one event file (the
run's rows then split by file, so a grown file's new rows can be told from those
exported) or on the run's directory (read whole, as the Reader reads the run, when a
file's resume marker or MindSpore's one-value-per-step rule spans files)."""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any

import numpy as np

from ..arrow_tables import (histogram_table, hparams_rows, hparams_table,
                            require_pyarrow, scalar_tables, text_table, text_value)
from ..read_columns import RunColumns, resume_kept
from ..read_types import FileReport, Scalars
from ..reader import Reader

__all__ = ["Unit", "read_unit", "select_tags", "merged"]


@dataclasses.dataclass
class Unit:
    """The rows of a unit (one file or a whole run): per table, (tag, table) pairs."""

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


def _sorted(table: Any, step: np.ndarray) -> Any:
    """``table`` in step order (stable), untouched when already sorted."""
    if len(step) < 2 or bool((step[1:] >= step[:-1]).all()):
        return table
    return table.take(require_pyarrow().array(np.argsort(step, kind="stable")))


def read_unit(path: str, run: str, *, purge: bool, verify: bool,
              tags: list[str] | None, skip: dict[str, dict[str, int]] | None = None) -> Unit:
    """Every kind's rows of ``path`` (an event file or a run directory, its run ".")
    named ``run``; ``skip``: table -> tag -> rows already exported (left out)."""
    skip = skip or {}
    out = Unit()
    with Reader(path, purge=purge, verify=verify, threads=1) as r:
        if "." not in r.runs():
            return out
        kinds = r.tag_kinds(".")
        chosen = select_tags(list(kinds), tags)

        def add(table: str, tag: str, n: int, build: Any) -> None:
            out.rows.setdefault(table, {})[tag] = n
            done = skip.get(table, {}).get(tag, 0)
            if n > done:
                out.tables.setdefault(table, []).append((tag, build(done)))

        scalar_tags = set(r.scalar_tags("."))  # a tag whose every point a restart dropped: none
        for tag in chosen:
            if tag in scalar_tags:
                s = r.scalars(".", tag)
                add("scalars", tag, len(s.step), lambda k, s=s, tag=tag: _scalars(run, tag, s, k))
            if "histogram" in kinds[tag]:
                try:
                    h = r.histograms(".", tag)
                except KeyError:  # every histogram dropped by a restart
                    continue
                add("histograms", tag, len(h),
                    lambda k, h=h, tag=tag: _sorted(histogram_table(run, tag, h.take(
                        np.arange(k, len(h)))), h.step[k:]))
        text = [t for t in chosen if "text" in kinds[t]]
        hp = [t for t in chosen if "hparams" in kinds[t]]
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
                add("text", tag, len(rows), lambda k, rows=rows, tag=tag: _sorted(
                    text_table(run, tag, rows[k:]), np.array([x[0] for x in rows[k:]], np.int64)))
            if hrows:
                add("hparams", "", len(hrows), lambda k: hparams_table(run, hrows[k:]))
        out.reports = r.damage(".")
    return out


def _scalars(run: str, tag: str, s: Scalars, k: int) -> Any:
    cols = RunColumns()
    cols.series[tag] = Scalars(s.step[k:], s.wall_time[k:], s.value[k:]) if k else s
    (table,) = scalar_tables(run, cols)
    return _sorted(table, cols.series[tag].step)
