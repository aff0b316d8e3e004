"""The dataset's layout: the one module that names its files (the export writes them,
the SQL side and the tests read them through these names).

    DATASET/<table>/run_key=<KEY>/part-<EXPORT_ID>-<N>.parquet
    DATASET/_summarylog/state.json

KEY is a filesystem-safe slug of the run name (at most 60 bytes of [A-Za-z0-9._-],
never "." or "..") + "-" + 12 hex digits of the sha1 of the name (UTF-8, non-UTF-8
bytes kept by surrogateescape): hostile, long, non-UTF-8 or case-colliding names all get
a distinct, short, harmless directory.  The exact name is the ``run`` column inside
every file."""

from __future__ import annotations

import hashlib
import re

__all__ = ["TABLES", "run_key", "table_glob", "part_name", "parse_part", "STATE_DIR",
           "STATE_FILE", "KEY_PREFIX"]

TABLES = ("scalars", "histograms", "text", "hparams", "lineage", "damage")
STATE_DIR = "_summarylog"
STATE_FILE = "state.json"
KEY_PREFIX = "run_key="
_SLUG_BYTES = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_PART = re.compile(r"^part-(\d{6,})-(\d+)\.parquet$")


def run_key(run: str) -> str:
    """The directory key of ``run`` (without the ``run_key=`` prefix)."""
    if not isinstance(run, str):
        raise TypeError(f"run must be a str, got {type(run).__name__}")
    raw = run.encode("utf-8", "surrogateescape")
    slug = _UNSAFE.sub("_", run.encode("ascii", "replace").decode("ascii"))[:_SLUG_BYTES]
    if slug.strip(".") == "":
        slug = slug.replace(".", "_")  # never "." or ".." (nor empty)
    return f"{slug or '_'}-{hashlib.sha1(raw).hexdigest()[:12]}"


def table_glob(dataset: str, table: str) -> str:
    """The glob of every part of ``table`` under ``dataset`` (a path or URL)."""
    if table not in TABLES:
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    return f"{dataset.rstrip('/')}/{table}/{KEY_PREFIX}*/*.parquet"


def part_name(export_id: int, n: int) -> str:
    """The file name of part ``n`` of export ``export_id``."""
    return f"part-{export_id:06d}-{n}.parquet"


def parse_part(name: str) -> tuple[int, int] | None:
    """(export_id, n) of a part's file name, or None for any other name."""
    m = _PART.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None
