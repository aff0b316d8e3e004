"""summarylog.engine_runs, the engine-free half of the Ray datasource and the SQL event
source: runs balanced by bytes, a big run streamed in tables of bounded size with the
Reader's values (resume rule included), damage and vanished files as rows."""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import require_module


def _write(path, steps, tags=("a", "b"), start=0, purge_step=None):
    from summarylog import Writer

    with Writer(str(path), durability="none", purge_step=purge_step) as w:
        for i in range(start, start + steps):
            w.log({t: i + k * 0.25 for k, t in enumerate(tags)}, step=i)


def _series(tables):
    out: dict[tuple[str, str], list] = {}
    for t in tables:
        for run, tag, step, value in zip(*(t.column(c).to_pylist()
                                           for c in ("run", "tag", "step", "value"))):
            out.setdefault((run, tag), []).append((step, value))
    return out


def test_balance_splits_by_bytes_never_a_run():
    from summarylog.engine_runs import RunJob, balance

    jobs = [RunJob(f"r{k}", ((f"f{k}", size),)) for k, size in enumerate([90, 50, 40, 30, 10, 5])]
    groups = balance(jobs, 3)
    loads = sorted(sum(j.size for j in g) for g in groups)
    assert loads == [65, 70, 90]  # largest first onto the lightest: the 90 alone
    assert sorted(j.run for g in groups for j in g) == sorted(j.run for j in jobs)
    assert len(balance(jobs, 100)) == len(jobs) and len(balance(jobs[:1], 0)) == 1


def test_streamed_run_equals_the_reader_in_bounded_tables(tmp_path, figure):
    """A resumed run of two files read with a 64 KiB block: every table holds at most
    2 048 rows, and the values per tag are the Reader's, in its order."""
    require_module("pyarrow")
    from summarylog import Reader
    from summarylog.engine_runs import ARROW_ROW_BYTES, find_runs, read_run

    run = tmp_path / "run"
    _write(run, 20_000)
    _write(run, 5_000, start=15_000, purge_step=15_000)  # drops 15 000.. of the first file
    (job,), errors = find_runs(str(run))
    assert not errors
    block = 64 << 10
    tables = list(read_run(job, block_bytes=block))
    figure(f"{sum(t.num_rows for t in tables):,} rows in {len(tables)} tables of at most "
           f"{max(t.num_rows for t in tables):,}")
    assert max(t.num_rows for t in tables) <= block // ARROW_ROW_BYTES
    want = Reader(str(run)).scalars_all()["."]
    got = _series(tables)
    for tag, s in want.items():
        assert got[(".", tag)] == list(zip(s.step.tolist(), s.value.tolist()))
    assert len(want["a"].step) == 20_000
    only = _series(read_run(job, block_bytes=block, tags=["b"]))
    assert list(only) == [(".", "b")]
    whole = _series(read_run(job))  # the same run, small enough to load whole
    assert whole == got


def test_damage_and_a_vanished_file_become_rows(tmp_path):
    require_module("pyarrow")
    from summarylog.arrow_tables import damage_schema
    from summarylog.engine_runs import find_runs, read_run

    _write(tmp_path / "ok", 2000)
    _write(tmp_path / "bad", 2000)
    _write(tmp_path / "gone", 10)
    (name,) = os.listdir(tmp_path / "bad")
    f = tmp_path / "bad" / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x55
    f.write_bytes(bytes(data))
    jobs, _ = find_runs(str(tmp_path))
    (gone,) = os.listdir(tmp_path / "gone")
    os.unlink(tmp_path / "gone" / gone)  # after the driver listed it
    rows: list[dict] = []
    read = {j.run: sum(t.num_rows for t in read_run(j, damage=rows)) for j in jobs}
    assert read["ok"] == 4000 and 0 < read["bad"] < 4000 and read["gone"] == 0
    kinds = {(r["run"], r["kind"]) for r in rows}
    assert kinds == {("bad", "bad_data_crc"), ("gone", "unreadable")}
    import pyarrow as pa

    assert pa.Table.from_pylist(rows, schema=damage_schema()).num_rows == 2
    with pytest.raises(OSError):  # without a damage list the error is the caller's
        list(read_run(next(j for j in jobs if j.run == "gone")))
    # the export's damage table says the same, in the same convention (an unreadable
    # file: offset and length null; a region: its offset and length)
    from summarylog.dataset import export_dataset, table_glob

    export_dataset(str(tmp_path), str(tmp_path / "ds"), runs=["bad", "ok"])
    import glob

    import pyarrow.parquet as pq

    exported = [r for p in sorted(glob.glob(table_glob(str(tmp_path / "ds"), "damage")))
                for r in pq.read_table(p).to_pylist()]
    assert [{k: r[k] for k in ("run", "offset", "length", "kind")} for r in exported] == \
        [{k: r[k] for k in ("run", "offset", "length", "kind")} for r in rows if r["run"] == "bad"]
    (unreadable,) = [r for r in rows if r["kind"] == "unreadable"]
    assert (unreadable["offset"], unreadable["length"]) == (None, None)


def test_counts_are_rows_as_the_export_writes_them():
    """A count of bad records is one row: offset null, length the count (both engines
    and the export, through arrow_tables.report_damage); a tail is listed by the engines."""
    from summarylog.engine_runs import damage_rows
    from summarylog.read_types import FileReport
    from summarylog.records.reader import Tail

    rep = FileReport("f", 10, bad_events=3, size=100, bad_values=0)
    rep.tail = Tail(90, "torn", 10)
    rows = damage_rows("r", {"f": rep}, {"f": "s3://b/f"})
    assert [(r["file"], r["offset"], r["length"], r["kind"]) for r in rows] == [
        ("s3://b/f", None, 3, "bad_events"), ("s3://b/f", 90, 10, "tail_torn")]


def test_bad_arguments(tmp_path):
    from summarylog.engine_runs import find_runs

    _write(tmp_path / "r", 10)
    with pytest.raises(TypeError, match="paths"):
        find_runs(42)
    with pytest.raises(TypeError, match="runs"):
        find_runs(str(tmp_path), runs="r")
    with pytest.raises(ValueError, match="not found"):
        find_runs(str(tmp_path), runs=["x"])
    with pytest.raises(ValueError, match="same run twice"):
        find_runs([str(tmp_path), str(tmp_path)])
    with pytest.raises(ValueError, match="same run twice"):  # one path inside the other
        find_runs([str(tmp_path / "r"), str(tmp_path)])
    _write(tmp_path / "s", 10)
    jobs, _ = find_runs([str(tmp_path / "r"), str(tmp_path / "s")])
    assert [j.run for j in jobs] == [str(tmp_path / "r"), str(tmp_path / "s")]
    assert np.all([j.size > 0 for j in jobs])
