"""The engines docs/datasets.md names read an exported dataset with the recipes it gives
(DuckDB, pyarrow.dataset, Polars, Dask): each sees every table's rows, the scalars equal
to the Reader's, ``run_key`` a string, and the exact run name in ``run``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require_module

from summarylog import Reader, Writer
from summarylog.dataset import export_dataset, run_key, table_glob

RUNS = ("001", "sweep/lr=0.1", "ünï")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Runs with awkward names (digits only, a slash and '=', non-ASCII) of scalars
    and histograms, exported; and what the Reader reads of them."""
    root = tmp_path_factory.mktemp("engines") / "logs"
    rng = np.random.default_rng(3)
    for k, run in enumerate(RUNS):
        with Writer(root / run, durability="none") as w:
            for i in range(200 * (k + 1)):
                w.add_scalar("loss", float(rng.normal()), i)
                w.add_scalar("acc", i / 1000, i)
            w.add_histogram("w", rng.normal(size=50), 0)
    ds = str(root.parent / "ds")
    export_dataset(str(root), ds)
    want = {}
    r = Reader(str(root))
    for run, tags in r.scalars_all().items():
        for tag, s in tags.items():
            want[(run, tag)] = (len(s.step), float(s.value.sum()), int(s.step.max()))
    return ds, want


def _check(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for k, (n, total, last) in want.items():
        assert got[k][0] == n and got[k][2] == last, k
        assert np.isclose(got[k][1], total, rtol=1e-12, atol=1e-12), k


def test_duckdb(dataset):
    duckdb = require_module("duckdb")
    ds, want = dataset
    con = duckdb.connect()
    src = (f"read_parquet('{table_glob(ds, 'scalars')}', hive_partitioning=true, "
           f"union_by_name=true, hive_types={{'run_key': VARCHAR}})")
    rows = con.sql(f"SELECT run, tag, count(*), sum(value), max(step) FROM {src} "
                   f"GROUP BY ALL").fetchall()
    _check({(r, t): (n, s, m) for r, t, n, s, m in rows}, want)
    keys = con.sql(f"SELECT DISTINCT run, run_key, typeof(run_key) FROM {src}").fetchall()
    assert sorted(keys) == sorted((run, run_key(run), "VARCHAR") for run in RUNS)


def test_pyarrow_dataset(dataset):
    pa = require_module("pyarrow")
    pds = require_module("pyarrow.dataset")
    ds, want = dataset
    part = pds.partitioning(pa.schema([("run_key", pa.string())]), flavor="hive")
    t = pds.dataset(f"{ds}/scalars", format="parquet", partitioning=part).to_table()
    # run and tag come as dictionaries, one per part: group_by wants them unified
    got = t.unify_dictionaries().group_by(["run", "tag"]).aggregate(
        [("value", "count"), ("value", "sum"), ("step", "max")]).to_pylist()
    _check({(str(g["run"]), str(g["tag"])): (g["value_count"], g["value_sum"], g["step_max"])
            for g in got}, want)
    assert t.schema.field("run_key").type == pa.string()
    h = pds.dataset(f"{ds}/histograms", format="parquet", partitioning=part).to_table()
    assert sorted(set(h.column("run").to_pylist())) == sorted(RUNS)


def test_polars(dataset):
    pl = require_module("polars")
    ds, want = dataset
    lf = pl.scan_parquet(f"{ds}/scalars/**/*.parquet", hive_partitioning=True,
                         hive_schema={"run_key": pl.String})
    got = lf.group_by("run", "tag").agg(pl.len(), pl.col("value").sum(),
                                        pl.col("step").max()).collect()
    _check({(r, t): (n, s, m) for r, t, n, s, m in got.iter_rows()}, want)
    keys = lf.select("run", "run_key").unique().collect()
    assert keys.schema["run_key"] == pl.String
    assert sorted(keys.iter_rows()) == sorted((run, run_key(run)) for run in RUNS)


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # dask 2026.8 under pandas 3.1
def test_dask(dataset):
    dd = require_module("dask.dataframe")
    pa = require_module("pyarrow")
    pds = require_module("pyarrow.dataset")
    ds, want = dataset
    part = pds.partitioning(pa.schema([("run_key", pa.string())]), flavor="hive")
    df = dd.read_parquet(f"{ds}/scalars", dataset={"partitioning": part})
    got = df.groupby(["run", "tag"], observed=True).agg(
        n=("value", "count"), s=("value", "sum"), m=("step", "max")).compute()
    _check({(str(r), str(t)): (int(row.n), float(row.s), int(row.m))
            for (r, t), row in got.iterrows()}, want)
    assert df["run_key"].compute().map(type).eq(str).all()
