"""``summarylog sql "SELECT ..." PATH``: one read-only DuckDB query over an exported
dataset or straight over event files (:func:`summarylog.sql.query`), printed as a
table, CSV or JSON lines."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from typing import Any

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sql", metavar="SQL", help="one SELECT statement; tables: scalars (run, tag, "
                   "step, wall_time, value), histograms, text, hparams, and over a dataset "
                   "lineage, damage (empty when nothing was exported to them)")
    p.add_argument("path", metavar="PATH", help="an exported dataset, the Parquet long table "
                   "'export -o FILE.parquet' writes, or event files: a root of runs, a run "
                   "directory, an event file or a URL of one")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table (aligned columns, default), csv, or json (one object per line)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="for a URL PATH: an fsspec option (endpoint_url=..., anon=true); repeat")
    p.add_argument("--threads", type=int, default=None, help="DuckDB's threads (default: all)")
    p.add_argument("--memory-limit", default=None, metavar="SIZE",
                   help="DuckDB's memory limit, e.g. 2GB (default: DuckDB's)")


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    return v


def _cell(v: Any) -> str:
    return "" if v is None else str(v)


def _print(table: Any, fmt: str) -> None:
    names = table.column_names
    rows = table.to_pylist()
    out = sys.stdout
    if fmt == "json":
        for row in rows:
            out.write(json.dumps({k: _json_value(v) for k, v in row.items()},
                                 ensure_ascii=False, default=str) + "\n")
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(names)
        w.writerows([[_cell(r[n]) for n in names] for r in rows])
    else:
        cells = [[_cell(r[n]) for n in names] for r in rows]
        widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
        out.write("  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip() + "\n")
        for c in cells:
            out.write("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip() + "\n")


def run(args: argparse.Namespace) -> int:
    """0: printed; 1: the source could not be read; 2: bad SQL or arguments."""
    from .cli_upload import parse_storage_options
    from .sql import query

    try:
        options = parse_storage_options(args.storage_option) if args.storage_option else None
        table = query(args.sql, args.path, output="arrow", threads=args.threads,
                      memory_limit=args.memory_limit, storage_options=options)
    except PermissionError as exc:
        print(f"summarylog sql: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"summarylog sql: {exc}", file=sys.stderr)
        return 2
    except (OSError, ImportError) as exc:
        print(f"summarylog sql: {exc}", file=sys.stderr)
        return 1
    if table is not None:
        _print(table, args.format)
    return 0
