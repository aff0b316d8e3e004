"""The Parquet dataset export from and to an object store (the S3 emulator): the same
rows as a local export, incremental over URLs (nothing new: no part written), and the
dataset read back from S3 by DuckDB-compatible globs through pyarrow."""

from __future__ import annotations

import os

import pytest

from conftest import require_module
from read_helpers import upload, write_run
from object_store import s3  # noqa: F401 (fixture)

from summarylog.dataset import export_dataset, table_glob
from summarylog.remote.urls import filesystem

pa = require_module("pyarrow")
pq = require_module("pyarrow.parquet")


def _rows(fs, url_path: str) -> list[tuple]:
    out = []
    for p in sorted(fs.glob(url_path)):
        with fs.open(p, "rb") as f:
            t = pq.read_table(f)
        d = t.to_pydict()
        out += list(zip(d["run"], d["tag"], d["step"], d["value"]))
    return sorted(out)


def test_export_from_and_to_s3(s3, tmp_path) -> None:
    opts = s3.storage_options()
    fs = filesystem("s3://bkt", opts)[0]
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=300)
    write_run(local, "b/c", steps=120, files=2)
    upload(fs, local, "bkt/logs")

    res = export_dataset("s3://bkt/logs", "s3://bkt/ds", storage_options=opts)
    print(f"\nS3 -> S3: {res.summary()}")
    assert res.rows["scalars"] == 300 + 240
    here = str(tmp_path / "ds")
    export_dataset(local, here)
    glob = table_glob("bkt/ds", "scalars")
    assert _rows(fs, glob) == _rows(_LocalFS(), table_glob(here, "scalars"))
    assert fs.exists("bkt/ds/_summarylog/state.json")

    again = export_dataset("s3://bkt/logs", "s3://bkt/ds", storage_options=opts)
    print(f"again: {again.summary()}")
    assert (again.files_read, again.parts_written) == (0, 0)

    write_run(str(tmp_path / "more"), "d", steps=10)  # a new run on S3
    upload(fs, str(tmp_path / "more"), "bkt/logs")
    new = export_dataset("s3://bkt/logs", "s3://bkt/ds", storage_options=opts)
    assert new.runs_new == ["d"] and new.rows == {"scalars": 10} and new.files_read == 1

    # from S3 to a local directory, and from local to S3
    down = export_dataset("s3://bkt/logs", str(tmp_path / "down"), storage_options=opts)
    up = export_dataset(local, "s3://bkt/up", dest_storage_options=opts)
    assert down.rows["scalars"] == 550 and up.rows["scalars"] == 540
    assert len(_rows(fs, table_glob("bkt/up", "scalars"))) == 540


class _LocalFS:
    """The local files through the same two calls the S3 filesystem answers."""

    def glob(self, pattern: str) -> list[str]:
        import glob

        return glob.glob(pattern)

    def open(self, path: str, mode: str):
        return open(path, mode)


@pytest.mark.parametrize("bad", ["s3://", "s3:///"])
def test_bad_destination_url(bad, tmp_path) -> None:
    os.makedirs(tmp_path / "logs")
    with pytest.raises((ValueError, TypeError)):
        export_dataset(str(tmp_path / "logs"), bad)


def test_nothing_new_fetches_no_object_with_a_kept_mirror(s3, tmp_path) -> None:
    from read_helpers import counted

    from summarylog.remote.read_options import MirrorOptions

    opts = s3.storage_options()
    fs = filesystem("s3://bkt", opts)[0]
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=100, files=2)
    upload(fs, local, "bkt/kept")
    keep = MirrorOptions(cache_dir=str(tmp_path / "mirror"))
    dest = str(tmp_path / "ds")
    export_dataset("s3://bkt/kept", dest, storage_options=opts, remote_options=keep)
    before = len(s3.requests())
    again = export_dataset("s3://bkt/kept", dest, storage_options=opts, remote_options=keep)
    lists, gets, _ = counted(s3, before)
    print(f"\nsecond export over S3 with the mirror kept: {lists} listing, {gets} object GETs; "
          f"{again.summary()}")
    assert (again.files_read, again.parts_written, gets) == (0, 0, 0)

    # the run's last object grows (uploaded again, longer): its new bytes are fetched
    # by ranged reads and only those are read by the export
    last = sorted(os.listdir(os.path.join(local, "a")))[-1]
    path = os.path.join(local, "a", last)
    size = os.path.getsize(path)
    import summarylog

    with summarylog.Writer(tmp_path / "more") as w:
        for i in range(200, 230):
            w.add_scalar("loss", float(i), i)
    (more,) = os.listdir(tmp_path / "more")
    extra = (tmp_path / "more" / more).read_bytes()
    skip = 8 + 4 + int.from_bytes(extra[:8], "little") + 4  # its file_version record
    with open(path, "ab") as f:
        f.write(extra[skip:])
    with open(path, "rb") as f:
        fs.pipe_file(f"bkt/kept/a/{last}", f.read())
    grown = export_dataset("s3://bkt/kept", dest, storage_options=opts, remote_options=keep)
    print(f"grown by {len(extra) - skip} B: {grown.summary()}")
    assert grown.runs_appended == ["a"] and grown.rows == {"scalars": 30}
    assert grown.bytes_read == len(extra) - skip
    mine = export_dataset(local, str(tmp_path / "local-ds"))
    assert mine.rows["scalars"] == 230
    assert _rows(_LocalFS(), table_glob(dest, "scalars")) == \
        _rows(_LocalFS(), table_glob(str(tmp_path / "local-ds"), "scalars"))


def test_query_a_dataset_exported_to_s3(s3, tmp_path) -> None:
    """summarylog.query over a dataset at a URL: its tables scanned through Arrow over
    fsspec (DuckDB's own file access stays off), the same answers as the local dataset."""
    require_module("duckdb")
    from summarylog.sql import query

    opts = s3.storage_options()
    fs = filesystem("s3://bkt", opts)[0]
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=300)
    write_run(local, "b/c", steps=120, files=2)
    prefix = f"bkt/qds-{os.getpid()}"
    export_dataset(local, f"s3://{prefix}", dest_storage_options=opts)
    export_dataset(local, str(tmp_path / "ds"))
    sql = ("SELECT run, tag, count(*) AS n, max(step) AS last, sum(value) AS s, "
           "count(DISTINCT run_key) AS keys FROM scalars GROUP BY run, tag ORDER BY run, tag")
    remote = query(sql, f"s3://{prefix}", storage_options=opts, output="arrow")
    here = query(sql, str(tmp_path / "ds"), output="arrow")
    print(f"\nquery over s3://{prefix}: {remote.to_pylist()}")
    assert remote.to_pylist() == here.to_pylist()
    assert [r["n"] for r in remote.to_pylist()] == [300, 240]
    empty = query("SELECT * FROM damage", f"s3://{prefix}", storage_options=opts,
                  output="arrow")  # no parts: an empty table with the table's columns
    assert (empty.num_rows, empty.column_names[-1]) == (0, "run_key")
    with pytest.raises(PermissionError):  # DuckDB's own file access is still off
        query(f"SELECT * FROM read_parquet('{tmp_path}/ds/scalars/*/*.parquet')",
              f"s3://{prefix}", storage_options=opts)
    # a URL without a dataset is read as event files
    assert fs.exists(f"{prefix}/_summarylog/state.json")
    upload(fs, local, f"bkt/qev-{os.getpid()}")
    ev = query("SELECT run, count(*) AS n FROM scalars GROUP BY run ORDER BY run",
               f"s3://bkt/qev-{os.getpid()}", storage_options=opts, output="arrow")
    assert ev.to_pylist() == [{"run": "a", "n": 300}, {"run": "b/c", "n": 240}]
