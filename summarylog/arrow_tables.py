"""Decoded runs as Arrow tables: the one shape the Parquet export, the SQL queries and
the Ray datasource share.  One schema per kind; the run's exact name is a column, so
no engine has to parse it back out of a path."""

from __future__ import annotations

import json
from typing import Any, Iterator

import numpy as np

from .read_columns import RunColumns

__all__ = ["arrow_text", "scalar_schema", "scalar_tables", "require_pyarrow", "histogram_schema",
           "histogram_table", "text_schema", "text_table", "text_value", "hparams_schema",
           "hparams_rows", "hparams_table", "lineage_schema", "lineage_table",
           "damage_schema", "damage_table", "report_damage", "table_schema"]


def require_pyarrow() -> Any:
    """pyarrow, or an ImportError naming the extra that brings it."""
    try:
        import pyarrow
    except ImportError:
        raise ImportError("Arrow tables need pyarrow: pip install 'summarylog[parquet]'") from None
    return pyarrow


def arrow_text(name: str) -> str:
    """``name`` as an Arrow string."""
    # the Reader keeps non-UTF-8 bytes as surrogate escapes; Arrow strings must be UTF-8
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def scalar_schema() -> Any:
    """run, tag, step, wall_time, value: run and tag dictionary-encoded (one entry each
    per table, so a table of a million points carries each name once)."""
    pa = require_pyarrow()
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("run", text), ("tag", text), ("step", pa.int64()),
                      ("wall_time", pa.float64()), ("value", pa.float64())])


def scalar_tables(run: str, cols: RunColumns) -> Iterator[Any]:
    """The scalars of ``run`` as one Arrow table, a batch per tag in tag name order; the
    numpy columns are shared, not copied."""
    pa = require_pyarrow()
    schema = scalar_schema()
    runs = pa.array([arrow_text(run)], pa.string())
    longest = max((len(s.step) for s in cols.series.values()), default=0)
    zeros = pa.array(np.zeros(longest, np.int32))  # every tag's indices: slices of one array
    batches = []
    for tag in sorted(cols.series):
        s = cols.series[tag]
        first = zeros.slice(0, len(s.step))
        # safe=False: indices of zeros need no bounds check (a scan of every row)
        batches.append(pa.RecordBatch.from_arrays(
            [pa.DictionaryArray.from_arrays(first, runs, safe=False),
             pa.DictionaryArray.from_arrays(first, pa.array([arrow_text(tag)], pa.string()),
                                            safe=False),
             pa.array(s.step), pa.array(s.wall_time), pa.array(s.value)], schema=schema))
    if batches:
        yield pa.Table.from_batches(batches, schema)


# -- the other kinds (the export's tables; see summarylog/dataset) -----------------------
_HIST_STATS = ("min", "max", "num", "sum", "sum_squares", "nan_count", "pos_inf_count",
               "neg_inf_count")


def _dict_text(pa: Any, name: str, n: int) -> Any:
    """``name`` n times, dictionary-encoded (one entry)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                          pa.array([arrow_text(name)], pa.string()))


def histogram_schema() -> Any:
    """run, tag, step, wall_time, the eight statistics of
    :class:`~summarylog.read_histograms.Histograms` (float64), and each row's bucket
    right edges ``limits`` and ``counts`` (list<float64>)."""
    pa = require_pyarrow()
    text = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("run", text), ("tag", text), ("step", pa.int64()),
                      ("wall_time", pa.float64())]
                     + [(s, pa.float64()) for s in _HIST_STATS]
                     + [("limits", pa.list_(pa.float64())), ("counts", pa.list_(pa.float64()))])


def _lists(pa: Any, flat: np.ndarray, spans: np.ndarray) -> Any:
    """A list array of flat[start:end] per span: a zero-copy slice when the spans are
    contiguous (as the C loader writes them), else a gather."""
    spans = spans.astype(np.int64).reshape(-1, 2)
    if len(spans) and bool((spans[1:, 0] == spans[:-1, 1]).all()):
        lo = int(spans[0, 0])
        offsets = np.concatenate([spans[:, 0], spans[-1:, 1]]) - lo
        values = flat[lo:int(spans[-1, 1])]
    else:
        lengths = spans[:, 1] - spans[:, 0]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        idx = (np.repeat(spans[:, 0] - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
               if len(spans) else np.zeros(0, np.int64))
        values = flat[idx]
    otype = np.int32 if (len(offsets) == 0 or offsets[-1] < 2**31) else np.int64
    cls = pa.ListArray if otype is np.int32 else pa.LargeListArray
    arr = cls.from_arrays(pa.array(offsets.astype(otype)), pa.array(values, pa.float64()))
    return arr if otype is np.int32 else arr.cast(pa.list_(pa.float64()))


def histogram_table(run: str, tag: str, h: Any) -> Any:
    """One tag's :class:`~summarylog.read_histograms.Histograms` as a table."""
    pa = require_pyarrow()
    n = len(h)
    stats = np.ascontiguousarray(h.stats).reshape(n, len(_HIST_STATS))
    cols = [_dict_text(pa, run, n), _dict_text(pa, tag, n), pa.array(h.step, pa.int64()),
            pa.array(h.wall_time, pa.float64())]
    cols += [pa.array(np.ascontiguousarray(stats[:, i])) for i in range(len(_HIST_STATS))]
    cols += [_lists(pa, h.limits_flat, h.limit_spans), _lists(pa, h.counts_flat, h.count_spans)]
    return pa.Table.from_arrays(cols, schema=histogram_schema())


def text_schema() -> Any:
    """run, tag, step, wall_time, text."""
    pa = require_pyarrow()
    t = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("run", t), ("tag", t), ("step", pa.int64()), ("wall_time", pa.float64()),
                      ("text", pa.string())])


def text_value(value: Any) -> str:
    """A text value as one string: a str as is, a tensor of strings as a JSON list."""
    if isinstance(value, bytes):
        return arrow_text(value.decode("utf-8", "surrogateescape"))
    if isinstance(value, str):
        return arrow_text(value)
    arr = np.asarray(value)
    if arr.shape == ():
        return text_value(arr.item())
    return json.dumps(_plain(arr.tolist()))


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return arrow_text(v.decode("utf-8", "surrogateescape"))
    if isinstance(v, str):
        return arrow_text(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {arrow_text(str(k)): _plain(x) for k, x in v.items()}
    if isinstance(v, (bool, int, float)) or v is None:
        return v
    if isinstance(v, np.generic):
        return _plain(v.item())
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    return arrow_text(str(v))


def text_table(run: str, tag: str, rows: list[tuple[int, float, str]]) -> Any:
    """One tag's text values ``(step, wall_time, text)`` as a table."""
    pa = require_pyarrow()
    n = len(rows)
    return pa.Table.from_arrays(
        [_dict_text(pa, run, n), _dict_text(pa, tag, n),
         pa.array([r[0] for r in rows], pa.int64()), pa.array([r[1] for r in rows], pa.float64()),
         pa.array([r[2] for r in rows], pa.string())], schema=text_schema())


def hparams_schema() -> Any:
    """Long format (the schema never changes with the hparams logged): run, name, kind
    (``hparam``, ``metric``, ``status``), value_str, value_num (a bool as 1/0 with
    value_str ``true``/``false``)."""
    pa = require_pyarrow()
    return pa.schema([("run", pa.string()), ("name", pa.string()), ("kind", pa.string()),
                      ("value_str", pa.string()), ("value_num", pa.float64())])


def hparams_rows(value: Any) -> list[tuple[str, str, str | None, float | None]]:
    """(name, kind, value_str, value_num) rows of one hparams plugin record (the dict
    :class:`~summarylog.events.Event` holds)."""
    out: list[tuple[str, str, str | None, float | None]] = []
    if not isinstance(value, dict):
        return out
    start = value.get("session_start_info") or {}
    for name, v in (start.get("hparams") or {}).items() if isinstance(start, dict) else ():
        if isinstance(v, bool):
            out.append((arrow_text(str(name)), "hparam", "true" if v else "false", float(v)))
        elif isinstance(v, (int, float)):
            out.append((arrow_text(str(name)), "hparam", None, float(v)))
        else:
            out.append((arrow_text(str(name)), "hparam", None if v is None else
                        (v if isinstance(v, str) else json.dumps(_plain(v))), None))
    exp = value.get("experiment") or {}
    for m in (exp.get("metric_infos") or []) if isinstance(exp, dict) else ():
        name = m.get("name", {}) if isinstance(m, dict) else {}
        tag = name.get("tag") if isinstance(name, dict) else None
        if tag is not None:
            out.append((arrow_text(str(tag)), "metric", None, None))
    end = value.get("session_end_info") or {}
    if isinstance(end, dict) and "status" in end:
        out.append(("status", "status", arrow_text(str(end["status"])), None))
    return [(n, k, arrow_text(s) if isinstance(s, str) else s, x) for n, k, s, x in out]


def hparams_table(run: str, rows: list[tuple[str, str, str | None, float | None]]) -> Any:
    pa = require_pyarrow()
    return pa.Table.from_arrays(
        [pa.array([arrow_text(run)] * len(rows), pa.string())]
        + [pa.array([r[i] for r in rows], t) for i, t in
           enumerate((pa.string(), pa.string(), pa.string(), pa.float64()))],
        schema=hparams_schema())


def lineage_schema() -> Any:
    """run, key, value (JSON text): one row per field of a Reader.lineage() row."""
    pa = require_pyarrow()
    return pa.schema([("run", pa.string()), ("key", pa.string()), ("value", pa.string())])


def lineage_table(run: str, row: dict[str, Any]) -> Any:
    pa = require_pyarrow()
    items = [(k, v) for k, v in row.items() if k != "run"]
    return pa.Table.from_arrays(
        [pa.array([arrow_text(run)] * len(items), pa.string()),
         pa.array([arrow_text(str(k)) for k, _ in items], pa.string()),
         pa.array([json.dumps(_plain(v)) for _, v in items], pa.string())],
        schema=lineage_schema())


def damage_schema() -> Any:
    """run, file, offset, length, kind, detail: one row per damaged region (offset and
    length in bytes), or per count of bad records/values (offset null, length the count)."""
    pa = require_pyarrow()
    return pa.schema([("run", pa.string()), ("file", pa.string()), ("offset", pa.int64()),
                      ("length", pa.int64()), ("kind", pa.string()), ("detail", pa.string())])


_COUNTS = {"bad_events": "records with valid CRCs that are not Events",
           "bad_values": "values not decoded, or kept despite a defect",
           "damage_past_cap": "damaged regions past the listed ones, counted"}


def report_damage(run: str, name: str, rep: Any, after: int = 0,
                  counted: dict[str, int] | None = None
                  ) -> tuple[list[tuple[str, str, int | None, int | None, str, str]],
                             dict[str, int]]:
    """The damage table's rows of one file's :class:`~summarylog.read_types.FileReport`
    ``rep`` (the file shown as ``name``): a row per damaged region at or past ``after``
    (offset, length in bytes), and a row per count above ``counted`` (offset null,
    length the count); and the counts, for the next call's ``counted``."""
    rows: list[tuple[str, str, int | None, int | None, str, str]] = [
        (run, name, d.offset, d.length, d.kind, "") for d in rep.damage if d.offset >= after]
    counts = {"bad_events": rep.bad_events, "bad_values": rep.bad_values,
              "damage_past_cap": rep.damage_past_cap}
    for kind, n in counts.items():
        if n > (counted or {}).get(kind, 0):
            rows.append((run, name, None, n - (counted or {}).get(kind, 0), kind, _COUNTS[kind]))
    return rows, counts


def damage_table(rows: list[tuple[str, str, int | None, int | None, str, str]]) -> Any:
    pa = require_pyarrow()
    return pa.Table.from_arrays(
        [pa.array([arrow_text(r[0]) for r in rows], pa.string()),
         pa.array([arrow_text(r[1]) for r in rows], pa.string()),
         pa.array([r[2] for r in rows], pa.int64()), pa.array([r[3] for r in rows], pa.int64()),
         pa.array([r[4] for r in rows], pa.string()), pa.array([r[5] for r in rows], pa.string())],
        schema=damage_schema())


def table_schema(table: str) -> Any:
    """The schema of the export's table named ``table`` (the dataset layout's TABLES)."""
    schemas = {"scalars": scalar_schema, "histograms": histogram_schema, "text": text_schema,
               "hparams": hparams_schema, "lineage": lineage_schema, "damage": damage_schema}
    if table not in schemas:
        raise ValueError(f"table must be one of {sorted(schemas)}, got {table!r}")
    return schemas[table]()
