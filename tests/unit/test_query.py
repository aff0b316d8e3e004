"""summarylog.query / ``summarylog sql``: DuckDB over an exported dataset and straight
over event files; the README's
three examples give the same answers from both and match numpy over the Reader; the
SQL can only read its source."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import require_module

STEPS = 400


def _write(path: str, tags: dict[str, float], steps: int = STEPS) -> None:
    from summarylog import Writer

    with Writer(path, durability="none") as w:
        for i in range(steps):
            w.log({t: base + np.sin(i * 0.1 + base) for t, base in tags.items()}, step=i)


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> str:
    """A sweep of three runs and a four-rank job (a run per rank)."""
    root = tmp_path_factory.mktemp("qevents")
    for k, lr in enumerate(("0.1", "0.01", "0.001")):
        _write(str(root / f"sweep/lr={lr}"), {"loss": 1.0 + k, "acc": 0.5 + 0.1 * k})
    for rank in range(4):
        _write(str(root / f"ddp/rank{rank}"), {"loss": 2.0 + rank})
    return str(root)


@pytest.fixture(scope="module")
def dataset(events, tmp_path_factory) -> str:
    """``events`` exported by summarylog.export_dataset: the dataset layout."""
    require_module("pyarrow")
    from summarylog.dataset import export_dataset

    out = str(tmp_path_factory.mktemp("qdataset") / "ds")
    export_dataset(events, out)
    return out


def _reader(events):
    from summarylog import Reader

    return Reader(events).scalars_all()


BEST_RUN = """SELECT run, arg_max(value, step) AS final_acc FROM scalars
              WHERE tag = 'acc' AND run LIKE 'sweep/%'
              GROUP BY run ORDER BY final_acc DESC LIMIT 1"""
LAST_VALUE = """SELECT run, tag, max(step) AS last_step, arg_max(value, step) AS last_value
                FROM scalars GROUP BY run, tag ORDER BY run, tag"""
MEAN_OVER_RANKS = """SELECT tag, step, avg(value) AS mean, count(*) AS ranks FROM scalars
                     WHERE run LIKE 'ddp/rank%' GROUP BY tag, step ORDER BY tag, step"""


@pytest.mark.parametrize("kind", ["dataset", "events"])
def test_readme_examples(kind, events, dataset, figure):
    require_module("duckdb")
    require_module("pandas")
    from summarylog.sql import query

    src = dataset if kind == "dataset" else events
    data = _reader(events)
    best = query(BEST_RUN, src)
    finals = {run: tags["acc"].value[-1] for run, tags in data.items() if "acc" in tags}
    assert best["run"].tolist() == [max(finals, key=finals.get)]
    assert best["final_acc"].tolist() == [max(finals.values())]

    last = query(LAST_VALUE, src, output="arrow")
    want = [(run, tag, int(s.step[-1]), float(s.value[-1]))
            for run in sorted(data) for tag, s in sorted(data[run].items())]
    got = list(zip(*(last.column(c).to_pylist()
                     for c in ("run", "tag", "last_step", "last_value"))))
    assert got == want

    mean = query(MEAN_OVER_RANKS, src)
    ranks = np.stack([data[f"ddp/rank{k}"]["loss"].value for k in range(4)])
    assert mean["ranks"].tolist() == [4] * STEPS
    np.testing.assert_allclose(mean["mean"].to_numpy(), ranks.mean(axis=0), rtol=1e-12)
    figure(f"{kind}: best run {best['run'][0]}, {last.num_rows} last values, "
           f"{len(mean)} rank means")


def test_dataset_views(events, dataset, tmp_path):
    require_module("duckdb")
    import shutil

    from summarylog.dataset import export_dataset
    from summarylog.sql import query

    t = query("SELECT DISTINCT typeof(run_key) AS t, count(*) OVER () AS n FROM scalars",
              dataset, output="arrow")
    assert t.column("t").to_pylist() == ["VARCHAR"]
    from summarylog.arrow_tables import table_schema

    for table in ("histograms", "text", "hparams", "lineage", "damage"):  # no parts
        empty = query(f"SELECT * FROM {table}", dataset, output="arrow")
        assert empty.num_rows == 0
        assert empty.column_names == table_schema(table).names + ["run_key"]
    assert query("SELECT count(*) AS n FROM damage", dataset)["n"].tolist() == [0]
    root = tmp_path / "root"  # a damaged run: its damage is a table of the export
    shutil.copytree(os.path.join(events, "ddp"), root)
    (name,) = os.listdir(root / "rank3")
    f = root / "rank3" / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x55
    f.write_bytes(bytes(data))
    export_dataset(str(root), str(tmp_path / "ds"))
    dmg = query('SELECT run, kind FROM damage WHERE "offset" IS NOT NULL',
                str(tmp_path / "ds"), output="arrow")
    assert dmg.to_pylist() == [{"run": "rank3", "kind": "bad_data_crc"}]


def test_errors_are_named(events, dataset, tmp_path):
    require_module("duckdb")
    from summarylog.sql import query

    with pytest.raises(TypeError, match="sql"):
        query(b"SELECT 1", dataset)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="(?i)parser error"):
        query("SELEC run FROM scalars", dataset)
    with pytest.raises(ValueError, match="nope"):
        query("SELECT nope FROM scalars", events)
    with pytest.raises(ValueError, match="export a dataset for lineage"):
        query("SELECT * FROM lineage", events)
    with pytest.raises(FileNotFoundError):
        query("SELECT 1", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="output"):
        query("SELECT 1", dataset, output="polars")
    with pytest.raises(ValueError, match="threads"):
        query("SELECT 1", dataset, threads=0)
    with pytest.raises(ValueError, match="scanned once"):
        query("SELECT count(*) FROM scalars a JOIN scalars b USING (run, tag, step)", events)
    for source in (dataset, events):  # options for a URL given with a local path
        with pytest.raises(ValueError, match="for URLs only"):
            query("SELECT 1", source, storage_options={"anon": True})
        with pytest.raises(ValueError, match="for URLs only"):
            query("SELECT 1", source, remote_options={"timeout": 5})


@pytest.mark.parametrize("kind", ["dataset", "events", "long table"])
def test_sql_can_only_read_its_source(kind, events, dataset, tmp_path, figure):
    """COPY TO, ATTACH, SET, INSTALL, a second statement and reads of other files are
    refused, inside the dataset as well as outside it; nothing is written."""
    require_module("duckdb")
    from summarylog.cli import main
    from summarylog.sql import query

    src = dataset if kind == "dataset" else events
    if kind == "long table":
        src = str(tmp_path / "long.parquet")
        assert main(["export", events, "-o", src]) == 0
    target = tmp_path / "x.csv"
    inside = os.path.join(dataset, "scalars", "evil.csv")
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for sql in (f"COPY (SELECT 1) TO '{target}'", f"COPY (SELECT 1) TO '{inside}'",
                f"SELECT 1; COPY (SELECT 1) TO '{target}'", f"ATTACH '{tmp_path / 'db'}'",
                "SET enable_external_access = true", "INSTALL httpfs",
                f"CREATE TABLE t AS SELECT 1"):
        with pytest.raises(ValueError, match="only read|one statement"):
            query(sql, src)
    for sql in (f"SELECT * FROM read_csv('{secret}')", "SELECT * FROM read_text('/etc/hostname')",
                f"SELECT * FROM read_parquet('{os.path.join(dataset, 'scalars', '*', '*')}"
                f"/../../../../{os.path.basename(str(secret))}')"):
        with pytest.raises(PermissionError):
            query(sql, src)
    assert not target.exists() and not os.path.exists(inside)
    figure(f"{kind}: 7 writing statements and 3 foreign reads refused, nothing written")


def test_event_files_stream_and_damage_is_warned(events, tmp_path):
    require_module("duckdb")
    import shutil

    from summarylog.sql import query

    root = tmp_path / "root"
    shutil.copytree(os.path.join(events, "sweep"), root)
    (name,) = os.listdir(root / "lr=0.1")
    f = root / "lr=0.1" / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x55
    f.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="damage rows.*bad_data_crc"):
        got = query("SELECT run, count(*) AS n FROM scalars GROUP BY run ORDER BY run",
                    str(root), output="arrow")
    from summarylog import Reader

    want = {run: sum(len(s.step) for s in tags.values())
            for run, tags in Reader(str(root)).scalars_all().items()}
    assert dict(zip(*(got.column(c).to_pylist() for c in ("run", "n")))) == want


def test_event_files_give_every_table_the_dataset_gives(tmp_path):
    """Over event files, ``histograms``, ``text`` and ``hparams`` are there as over the
    exported dataset, with the same rows; a file damaged and read for two tables is
    warned about once."""
    require_module("duckdb")
    from summarylog import Writer
    from summarylog.dataset import export_dataset
    from summarylog.sql import query

    src = tmp_path / "logs"
    for r in range(2):
        with Writer(src / f"r{r}") as w:
            for i in range(50):
                w.add_histogram("w", np.arange(8.0) + r * i, i)
                w.add_text("note", f"r{r} {i}", i)
                w.add_scalar("loss", float(i), i)
            w.add_hparams({"lr": 0.01 * (r + 1)}, {"acc": 0.9})
    export_dataset(str(src), str(tmp_path / "ds"))
    sqls = {"histograms": "SELECT run, tag, count(*) AS n, sum(num) AS s, max(step) AS last, "
                          "sum(list_sum(counts)) AS c FROM histograms GROUP BY ALL ORDER BY ALL",
            "text": "SELECT run, tag, step, text FROM text ORDER BY ALL",
            "hparams": "SELECT run, name, kind, value_str, value_num FROM hparams ORDER BY ALL"}
    for table, sql in sqls.items():
        a = query(sql, str(src), output="arrow").to_pylist()
        b = query(sql, str(tmp_path / "ds"), output="arrow").to_pylist()
        print(f"{table}: {len(a)} rows from the event files, equal to the dataset's")
        assert a == b and a
    (name,) = os.listdir(src / "r1")
    f = src / "r1" / name
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x55
    f.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=r"^summarylog.query: 1 damage rows in 1 files"):
        query("SELECT (SELECT count(*) FROM scalars) + (SELECT count(*) FROM histograms) AS n",
              str(src))


_MEMORY_CHILD = r"""
import os, sys, json
from summarylog.sql import query
def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) << 10
query("SELECT 1 AS x", sys.argv[1])  # imports, DuckDB's start-up
base = hwm()
t = query("SELECT count(*) AS n, sum(value) AS s FROM scalars", sys.argv[1], output="arrow",
          threads=1)
print(json.dumps({"rows": t.column("n")[0].as_py(), "grew": hwm() - base, "base": base}))
"""


def test_event_files_are_never_all_in_memory(tmp_path, figure):
    """4.8 M scalars (154 MB as Arrow columns) summed over event files: the process's
    peak RSS grows by far less than the data (runs are streamed, never collected)."""
    require_module("duckdb")
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc (Linux)")
    seed = tmp_path / "seed"
    _write(str(seed), {f"t{k}": float(k) for k in range(4)}, steps=20_000)
    (name,) = os.listdir(seed)
    for r in range(60):  # 60 runs of 80 000 scalars, hard-linked: fast to make
        d = tmp_path / "root" / f"run{r:02d}"
        d.mkdir(parents=True)
        os.link(seed / name, d / name)
    # run from tmp_path: from the checkout, the source tree (no compiled core) is found first
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(tmp_path / "root")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    data = res["rows"] * 32
    figure(f"{res['rows']:,} scalars ({data / 2**20:.0f} MiB as Arrow): peak RSS grew "
           f"{res['grew'] / 2**20:.0f} MiB over {res['base'] / 2**20:.0f} MiB")
    assert res["rows"] == 60 * 80_000
    assert res["grew"] < data / 3


def test_cli_sql(events, dataset, capsys):
    require_module("duckdb")
    from summarylog.cli import main

    assert main(["sql", "SELECT run, count(*) AS n FROM scalars WHERE run LIKE 'ddp/%' "
                 "GROUP BY run ORDER BY run", dataset, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["run,n"] + [f"ddp/rank{k},{STEPS}" for k in range(4)]
    assert main(["sql", "SELECT 'sweep' AS s, max(step) AS m FROM scalars", events,
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"s": "sweep", "m": STEPS - 1}
    assert main(["sql", "SELECT tag, count(*) AS n FROM scalars GROUP BY tag ORDER BY tag",
                 dataset]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["tag", "n"] and lines[1].split() == ["acc", str(3 * STEPS)]
    assert main(["sql", f"COPY (SELECT 1) TO '{os.path.join(dataset, 'x')}'", dataset]) == 2
    assert "only read" in capsys.readouterr().err
    assert main(["sql", "SELECT 1", os.path.join(dataset, "missing")]) == 1


def test_event_file_sources_a_url_and_a_run_named_like_a_table(events, tmp_path):
    """A file:// URL is read through fsspec (as s3:// would be); a root of runs whose
    run is named "scalars" is event files, not a dataset."""
    require_module("duckdb")
    require_module("fsspec")
    import shutil

    from summarylog.sql import query

    sql = "SELECT run, count(*) AS n FROM scalars GROUP BY run ORDER BY run"
    local = query(sql, events, output="arrow")
    assert query(sql, "file://" + events, output="arrow").equals(local)
    shutil.copytree(os.path.join(events, "ddp", "rank0"), tmp_path / "scalars")
    got = query(sql, str(tmp_path), output="arrow")
    assert got.to_pylist() == [{"run": "scalars", "n": STEPS}]


def test_a_query_reads_only_the_parts_the_state_lists(tmp_path, monkeypatch):
    """Parts of an export that crashed, or that is still writing, are not read: the query
    answers as of the last finished export (its state), not from every part on disk."""
    require_module("duckdb")
    from summarylog.dataset import export_dataset
    from summarylog.dataset import store as store_mod
    from summarylog.sql import query

    src, ds = tmp_path / "logs", str(tmp_path / "ds")
    for k in range(3):
        _write(str(src / f"r{k}"), {"loss": float(k)}, steps=100)
    export_dataset(str(src), ds)
    count = "SELECT count(*) AS n FROM scalars"
    assert query(count, ds)["n"][0] == 300
    real = store_mod.LocalStore.write_part
    calls: list = []

    def crashing(self, *a):
        calls.append(a)
        if len(calls) == 2:
            raise RuntimeError("injected crash")
        return real(self, *a)

    # r0 and r1 get a point more each: the export writes r0's new part, then dies on r1's
    from summarylog import Writer

    for k in (0, 1):
        with Writer(src / f"r{k}", durability="none") as w:
            w.add_scalar("loss", 9.0, 100)
    monkeypatch.setattr(store_mod.LocalStore, "write_part", crashing)
    with pytest.raises(RuntimeError, match="injected"):
        export_dataset(str(src), ds, threads=1)
    monkeypatch.setattr(store_mod.LocalStore, "write_part", real)
    on_disk = sum(f.endswith(".parquet") for _, _, fs in os.walk(ds) for f in fs)
    got = query(count, ds)["n"][0]
    print(f"\nafter a crashed export: {on_disk} parts on disk; the query counts {got} rows "
          f"(the last finished export's)")
    assert on_disk == 4 and got == 300
    export_dataset(str(src), ds)
    assert query(count, ds)["n"][0] == 302


def test_a_state_listing_parts_outside_the_layout_is_refused(tmp_path):
    """A planted state naming a file outside the dataset's layout is refused, not read."""
    require_module("duckdb")
    from summarylog.dataset import export_dataset
    from summarylog.sql import query

    src, ds = tmp_path / "logs", tmp_path / "ds"
    _write(str(src / "r"), {"loss": 1.0}, steps=10)
    export_dataset(str(src), str(ds))
    state_path = ds / "_summarylog" / "state.json"
    good = json.loads(state_path.read_bytes())
    for bad in ("scalars/../../etc/passwd", "nosuch/run_key=x/part-000001-0.parquet",
                "scalars/elsewhere/part-000001-0.parquet", "scalars/run_key=x/notes.txt"):
        doc = json.loads(json.dumps(good))
        doc["runs"][0]["parts"] = [bad]
        state_path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="outside its layout"):
            query("SELECT count(*) FROM scalars", str(ds))


def test_a_part_removed_by_a_finishing_export_is_read_again(tmp_path, monkeypatch):
    """A query that read the state just before an export removed the parts it superseded
    reads the state again, once, and answers from the new parts."""
    require_module("duckdb")
    from summarylog.dataset import export_dataset
    from summarylog.dataset import store as store_mod
    from summarylog.sql import query

    src, ds = tmp_path / "logs", tmp_path / "ds"
    _write(str(src / "r"), {"loss": 1.0}, steps=50)
    export_dataset(str(src), str(ds))
    old_state = (ds / "_summarylog" / "state.json").read_bytes()
    for f in (src / "r").iterdir():  # the run rewritten: re-exported whole, old parts removed
        f.unlink()
    _write(str(src / "r"), {"loss": 2.0}, steps=60)
    res = export_dataset(str(src), str(ds))
    assert res.parts_removed >= 1
    real = store_mod.LocalStore.read_state
    calls: list = []

    def stale_first(self):
        calls.append(1)
        return old_state if len(calls) == 1 else real(self)

    monkeypatch.setattr(store_mod.LocalStore, "read_state", stale_first)
    got = query("SELECT count(*) AS n FROM scalars", str(ds))["n"][0]
    print(f"\nstale state first: the query read the state {len(calls)} times, counted {got}")
    assert (got, len(calls)) == (60, 2)


def test_a_parquet_long_table_is_the_view_scalars(events, tmp_path):
    """The file ``summarylog export -o FILE.parquet`` writes is a source: its rows are
    the view ``scalars``; its CSV and JSON lines siblings, or a Parquet file without the
    scalar columns, are refused by name instead of being read as event files."""
    require_module("duckdb")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from summarylog.cli import main
    from summarylog.sql import query

    out = tmp_path / "long.parquet"
    assert main(["export", events, "-o", str(out)]) == 0
    sql = "SELECT run, tag, count(*) AS n, sum(value) AS s FROM scalars GROUP BY ALL ORDER BY ALL"
    got = query(sql, str(out), output="arrow").to_pylist()
    want = query(sql, events, output="arrow").to_pylist()
    assert [(r["run"], r["tag"], r["n"]) for r in got] == [(r["run"], r["tag"], r["n"])
                                                           for r in want]
    assert np.allclose([r["s"] for r in got], [r["s"] for r in want], rtol=1e-12)
    assert len(got) == 10  # 3 sweep runs x 2 tags + 4 ranks
    # scanned as often as a query asks (unlike event files)
    n = query("SELECT count(*) AS n FROM scalars a JOIN scalars b USING (run, tag, step)",
              str(out))["n"].tolist()
    assert n == [sum(r["n"] for r in got)]
    with pytest.raises(ValueError, match="long table is the view scalars only"):
        query("SELECT * FROM histograms", str(out))
    for fmt in ("csv", "jsonl"):
        other = tmp_path / f"long.{fmt}"
        assert main(["export", events, "-o", str(other)]) == 0
        with pytest.raises(ValueError, match=f"long.{fmt}: a CSV or JSON lines long table"):
            query("SELECT count(*) FROM scalars", str(other))
    alien = tmp_path / "alien.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), alien)
    with pytest.raises(ValueError, match=r"without the scalar table's columns \['run', 'step'"):
        query("SELECT * FROM scalars", str(alien))
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(out.read_bytes()[:100])
    with pytest.raises(ValueError, match="cut.parquet: not a readable Parquet file"):
        query("SELECT * FROM scalars", str(cut))
