"""SQL over runs with DuckDB: ``summarylog.query(sql, source)`` (this module is ``sql``,
not ``query``: importing a submodule named like the package's function would replace
the function on the package with the module).

``source`` is either an exported dataset (``summarylog export ... --format parquet``:
the views ``scalars``, ``histograms``, ``text``, ``hparams``, ``lineage``, ``damage``
over its Parquet parts, a table without parts empty, so a query of ``damage`` over an
undamaged dataset gives no rows rather than an error; a dataset at a URL is scanned
through Arrow over fsspec), the long table ``summarylog export -o FILE.parquet`` writes
(the view ``scalars``), or event files (a root of runs, a run directory, an event file
or a URL): then ``scalars``, ``histograms``, ``text`` and ``hparams`` are read straight
from the files, run by run, as streams of Arrow batches (nothing exported; the scalars
of a big run are streamed, a run's values of another kind decoded at once).

The SQL may only read: one SELECT (or EXPLAIN) statement; DuckDB's access to files
is switched off (a dataset's own directory excepted, for its views) and the
configuration locked before the query runs, so ``COPY ... TO``, ``ATTACH``,
``read_csv('/etc/...')`` or ``SET`` are refused.
"""

from __future__ import annotations

import glob
import os
import warnings
from typing import Any, Iterator, Mapping

__all__ = ["query", "is_dataset"]

_OUTPUTS = ("pandas", "arrow")
_STREAM_BLOCK = 16 << 20  # bytes of Arrow per batch handed to DuckDB from event files


def _layout() -> Any:
    from .dataset import layout  # the dataset's one layout module (the export's)

    return layout


def is_dataset(path: str) -> bool:
    """Whether ``path`` is an exported dataset: its state file, or Parquet parts in the
    layout (a root of runs with a run named ``scalars`` is not one)."""
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, "_summarylog", "state.json")):
        return True
    layout = _layout()
    return any(glob.glob(layout.table_glob(path, t)) for t in layout.TABLES)


def _check(sql: Any, source: Any, output: Any, threads: Any, memory_limit: Any) -> str:
    if not isinstance(sql, str):
        raise TypeError(f"sql must be a str, got {type(sql).__name__}")
    if not sql.strip():
        raise ValueError("sql is empty")
    if not isinstance(source, (str, os.PathLike)) or not os.fspath(source):
        raise TypeError(f"source must be a non-empty path or URL, got {source!r}")
    if output not in _OUTPUTS:
        raise ValueError(f"output must be one of {_OUTPUTS}, got {output!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):
        raise ValueError(f"threads must be a positive int or None, got {threads!r}")
    if memory_limit is not None and (isinstance(memory_limit, bool) or
                                     not isinstance(memory_limit, (int, str))):
        raise TypeError(f"memory_limit must be bytes (int) or a DuckDB size such as '2GB', "
                        f"got {type(memory_limit).__name__}")
    return os.fspath(source)


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise ImportError("summarylog.query needs DuckDB: pip install 'summarylog[sql]'") from None
    return duckdb


def _only_reads(duckdb: Any, sql: str) -> None:
    """ValueError unless ``sql`` is one SELECT or EXPLAIN statement."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ValueError(f"SQL error: {exc}") from None
    if len(statements) != 1:
        raise ValueError(f"sql must be one statement, got {len(statements)}")
    kind = statements[0].type
    if kind not in (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN):
        raise ValueError(f"sql may only read (SELECT or EXPLAIN), got a {kind.name} statement")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _live_parts(state: bytes | None) -> dict[str, list[str]] | None:
    """table -> its parts (``<table>/<keydir>/<name>``) that the dataset's state lists,
    or None without a state.  Only these are read: parts of an export that is running,
    or that crashed, are not yet (or never) part of the dataset."""
    if not state:
        return None
    from .dataset.state import DatasetState

    layout = _layout()
    out: dict[str, list[str]] = {t: [] for t in layout.TABLES}
    for part in sorted(DatasetState.from_bytes(state).live_parts()):
        bits = part.split("/")
        if (len(bits) != 3 or bits[0] not in out or not bits[1].startswith(layout.KEY_PREFIX)
                or layout.parse_part(bits[2]) is None):
            raise ValueError(f"the dataset's state lists a part outside its layout: {part!r}")
        out[bits[0]].append(part)
    return out


def _empty_table(table: str) -> Any:
    """The dataset table ``table`` without rows, its columns as a query reads them
    (strings for the dictionary-encoded ones, then ``run_key``)."""
    import pyarrow as pa

    from .arrow_tables import table_schema

    fields = [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
              for f in table_schema(table)]
    return pa.schema(fields + [pa.field("run_key", pa.string())]).empty_table()


def _dataset_views(con: Any, path: str) -> None:
    """A view per table of the dataset: the parts its state lists (all those on disk for
    a dataset without a state); a table without parts is empty."""
    from .dataset.store import open_store

    layout = _layout()
    live = _live_parts(open_store(path, None).read_state())
    found = False
    for table in layout.TABLES:
        if live is None:
            files = sorted(glob.glob(layout.table_glob(path, table)))
        else:
            files = [os.path.join(path, *p.split("/")) for p in live[table]]
        if not files:  # read_parquet refuses an empty list
            con.register(table, _empty_table(table))
            continue
        found = True
        listed = "[" + ", ".join(map(_literal, files)) + "]"
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet({listed}, "
                    "hive_partitioning=true, hive_types={'run_key': VARCHAR}, "
                    "union_by_name=true)")
    if not found:
        raise FileNotFoundError(2, "an exported dataset without any Parquet part", path)


def _parquet_file(path: str) -> Any | None:
    """The long scalar table in the local Parquet file ``path`` (``summarylog export -o
    FILE.parquet``) as an Arrow dataset, or None when ``path`` is not a Parquet file."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith((b"run,tag,step,", b'{"run": ')):  # not event files: say so
        raise ValueError(f"{path}: a CSV or JSON lines long table: query() reads the Parquet "
                         f"one (summarylog export -o FILE.parquet), a dataset or event files")
    if not head.startswith(b"PAR1"):  # an event file starts with a record's length
        return None
    import pyarrow.dataset as pads

    try:
        data = pads.dataset(path, format="parquet")
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"{path}: not a readable Parquet file: {exc}") from None
    missing = sorted({"run", "tag", "step", "value"} - set(data.schema.names))
    if missing:
        raise ValueError(f"{path}: a Parquet file without the scalar table's columns "
                         f"{missing}: a source is an exported dataset, the long table "
                         f"'summarylog export -o FILE.parquet' writes, or event files")
    return data


def _url_dataset(url: str, storage_options: Mapping[str, Any] | None,
                 remote_options: Any) -> dict[str, Any] | None:
    """The tables of a dataset exported to ``url`` as Arrow datasets over fsspec (DuckDB
    scans them with its file access off), or None when ``url`` holds no dataset.  The
    look for its state file and parts is under the ``remote_options`` deadline (a stalled
    endpoint: TimeoutError naming the URL); the scan is under the filesystem's own
    timeouts."""
    import pyarrow as pa
    import pyarrow.dataset as pads
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    from .arrow_tables import table_schema
    from .dataset.store import STATE_LIMIT
    from .remote.fetch import Fetcher
    from .remote.read_options import MirrorOptions
    from .remote.urls import filesystem, for_reading

    layout = _layout()
    opts = MirrorOptions.of(remote_options)
    fs, root = filesystem(url, for_reading(url, storage_options))
    root = root.rstrip("/")
    probe = Fetcher(fs, timeout=opts.timeout, concurrency=1, chunk_bytes=opts.chunk_bytes,
                    retries=opts.retries, name=lambda _: url)
    state = f"{root}/{layout.STATE_DIR}/{layout.STATE_FILE}"
    try:
        if not probe.call(url, fs.exists, state):
            return None
        if int(probe.call(url, fs.info, state).get("size") or 0) > STATE_LIMIT:
            raise ValueError(f"{url}: the dataset's state is over {STATE_LIMIT} bytes")
        live = _live_parts(probe.call(url, fs.cat_file, state))
    finally:
        probe.close()
    parts = {t: [f"{root}/{p}" for p in (live or {}).get(t, [])] for t in layout.TABLES}
    if not any(parts.values()):
        raise FileNotFoundError(2, "an exported dataset without any Parquet part", url)
    arrow_fs = PyFileSystem(FSSpecHandler(fs))
    key = pa.schema([("run_key", pa.string())])
    # the table's schema: a part written before a column was added reads null
    return {table: pads.dataset(
                files, schema=pa.unify_schemas([table_schema(table), key]), format="parquet",
                filesystem=arrow_fs, partitioning=pads.partitioning(key, flavor="hive"),
                partition_base_dir=f"{root}/{table}") if files else _empty_table(table)
            for table, files in parts.items()}


def _event_tables(path: str, storage_options: Mapping[str, Any] | None, remote_options: Any,
                  damage: list[dict[str, Any]]) -> dict[str, Any]:
    """The tables of the event files under ``path`` (scalars, histograms, text, hparams),
    each a RecordBatchReader read run by run as DuckDB pulls it (only the tables the
    query scans are read).  The runs are listed once, here."""
    import pyarrow as pa

    from .arrow_tables import table_schema
    from .engine_runs import TABLES, damage_row, find_runs, read_run

    # FileNotFoundError for a missing path
    jobs, errors = find_runs(path, None, storage_options, remote_options)
    damage += [damage_row("", e.filename or "", None, None, "unlisted", str(e))
               for e in errors]

    def batches(table: str) -> Iterator[Any]:
        for job in jobs:
            for t in read_run(job, table, block_bytes=_STREAM_BLOCK, damage=damage):
                yield from t.to_batches()

    return {t: pa.RecordBatchReader.from_batches(table_schema(t), batches(t)) for t in TABLES}


def _hint(message: str, dataset: bool, long_table: bool) -> str:
    """What to add to DuckDB's error ``message`` for this kind of source."""
    if "already been consumed" in message:
        return (" (over event files, each table can be scanned once per query: export a "
                "dataset for self-joins)")
    if dataset or "does not exist" not in message:
        return ""
    return (" (a long table is the view scalars only)" if long_table else
            " (over event files the tables are scalars, histograms, text and hparams: "
            "export a dataset for lineage and damage)")


class _PartGone(Exception):
    """A part the dataset's state listed was gone when DuckDB read it."""


def _run(duckdb: Any, sql: str, path: str, output: str, config: dict[str, Any],
         storage_options: Mapping[str, Any] | None, remote_options: Any,
         damage: list[dict[str, Any]]) -> Any:
    """One connection: the source's tables, file access off, the statement's result."""
    from .remote.urls import is_url

    try:
        con = duckdb.connect(config=config)
    except duckdb.Error as exc:
        raise ValueError(f"DuckDB refused the settings: {exc}") from None
    try:
        allowed: list[str] = []
        remote = (_url_dataset(path, storage_options, remote_options) if is_url(path)
                  else None)
        dataset = remote is not None or (not is_url(path) and is_dataset(path))
        long_table = None if dataset or is_url(path) else _parquet_file(path)
        if remote is not None:
            for table, data in remote.items():
                con.register(table, data)
        elif dataset:
            path = os.path.abspath(path)
            try:
                _dataset_views(con, path)
            except duckdb.IOException as exc:  # views read the parts' schemas now
                raise _PartGone(str(exc)) from None
            # the views' own directory only (as the glob names it, and with links resolved)
            allowed = sorted({os.path.join(p, "") for p in (path, os.path.realpath(path))})
        elif long_table is not None:
            con.register("scalars", long_table)
        else:
            for table, data in _event_tables(path, storage_options, remote_options,
                                             damage).items():
                con.register(table, data)
        if allowed:
            con.execute(f"SET allowed_directories=[{', '.join(map(_literal, allowed))}]")
        con.execute("SET enable_external_access=false")
        con.execute("SET lock_configuration=true")
        try:
            result = con.sql(sql)
            return (None if result is None else
                    result.df() if output == "pandas" else result.to_arrow_table())
        except duckdb.PermissionException as exc:
            raise PermissionError(f"the query may read only its source: {exc}") from None
        except duckdb.IOException as exc:
            if dataset:
                raise _PartGone(str(exc)) from None
            raise ValueError(f"SQL error: {exc}") from None
        except duckdb.Error as exc:
            raise ValueError(f"SQL error: {exc}{_hint(str(exc), dataset, long_table is not None)}"
                             ) from None
    finally:
        con.close()


def query(sql: str, source: str | os.PathLike[str], *, output: str = "pandas",
          threads: int | None = None, memory_limit: int | str | None = None,
          storage_options: Mapping[str, Any] | None = None, remote_options: Any = None) -> Any:
    """Run one read-only DuckDB SQL statement over ``source`` and return its result as a
    pandas DataFrame (``output="pandas"``) or a pyarrow Table (``"arrow"``).

    Tables: over a dataset, ``scalars`` (run, tag, step, wall_time, value, run_key) and
    the other exported tables (``histograms``, ``text``, ``hparams``, ``lineage``,
    ``damage``; empty when the dataset has no part of one); over the long table
    ``summarylog export -o FILE.parquet`` writes, ``scalars``; over event files, ``scalars``,
    ``histograms``, ``text`` and ``hparams`` with the dataset's columns (no ``run_key``),
    each of which one query may scan once (a self-join needs a dataset).
    ``threads`` / ``memory_limit`` (bytes or e.g. ``"2GB"``): DuckDB's own limits.
    ``storage_options``: a URL's fsspec options (a dataset's or event files');
    ``remote_options``: for a URL, as :class:`summarylog.Reader` takes them (deadline,
    retries, bounds; not ``cache_dir``: runs are fetched one at a time into a private
    directory).

    Raises TypeError for a non-str ``sql``; ValueError for SQL that does not parse or
    bind, or that would do more than read (with DuckDB's message); PermissionError for
    SQL that reaches for other files; FileNotFoundError for a missing source.  Damage
    found reading event files is warned about (RuntimeWarning, with counts).
    """
    path = _check(sql, source, output, threads, memory_limit)
    duckdb = _duckdb()
    _only_reads(duckdb, sql)
    config: dict[str, Any] = {}
    if threads is not None:
        config["threads"] = threads
    if memory_limit is not None:
        config["memory_limit"] = (f"{memory_limit}B" if isinstance(memory_limit, int)
                                  else memory_limit)
    from .remote.urls import is_url

    if not is_url(path) and (storage_options is not None or remote_options is not None):
        raise ValueError(f"storage_options and remote_options are for URLs only, not "
                         f"the local path {path!r}")
    damage: list[dict[str, Any]] = []
    for attempt in (1, 2):
        try:
            out = _run(duckdb, sql, path, output, config, storage_options, remote_options,
                       damage)
            break
        except _PartGone as exc:  # an export removed a part the state listed: read it again
            if attempt == 2:
                raise ValueError(f"SQL error: {exc}") from None
    if damage:  # a file read for two tables reports its damage twice: counted once
        damage = list({tuple(sorted(d.items())): d for d in damage}.values())
        kinds = sorted({d["kind"] for d in damage})
        warnings.warn(f"summarylog.query: {len(damage)} damage rows in "
                      f"{len({d['file'] for d in damage})} files ({', '.join(kinds)}); "
                      f"Reader(...).damage() lists them", RuntimeWarning, stacklevel=2)
    return out
