"""Decoded runs as Arrow tables: the one shape the Parquet export, the SQL queries and
the Ray datasource share.  One schema per kind; the run's exact name is a column, so
no engine has to parse it back out of a path."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from .read_columns import RunColumns

__all__ = ["scalar_schema", "scalar_tables", "require_pyarrow"]


def require_pyarrow() -> Any:
    """pyarrow, or an ImportError naming the extra that brings it."""
    try:
        import pyarrow
    except ImportError:
        raise ImportError("Arrow tables need pyarrow: pip install 'summarylog[parquet]'") from None
    return pyarrow


def _utf8(name: str) -> str:
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
    """One Arrow table per scalar tag of ``run``, in tag name order; the numpy columns
    are shared, not copied."""
    pa = require_pyarrow()
    schema = scalar_schema()
    runs = pa.array([_utf8(run)], pa.string())
    for tag in sorted(cols.series):
        s = cols.series[tag]
        zeros = pa.array(np.zeros(len(s.step), np.int32))
        yield pa.Table.from_arrays(
            [pa.DictionaryArray.from_arrays(zeros, runs),
             pa.DictionaryArray.from_arrays(zeros, pa.array([_utf8(tag)], pa.string())),
             pa.array(s.step), pa.array(s.wall_time), pa.array(s.value)], schema=schema)
