"""summarylog.ray.read_events on a real local multi-process Ray cluster (one start-up
for the whole file): reads run in Ray's worker processes, values equal the Reader's,
damage reaches the driver, URLs are fetched by the workers, and the workers' memory
follows Ray's block size, not the number or size of runs."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy as np
import pytest

from conftest import require_module

# Ray's own modules warn about their deprecated settings when they touch them; ray.init
# starts its servers by fork+exec, which JAX (imported by another test in this process)
# warns about from its at-fork hook: nothing of JAX runs in those children
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*"),
              pytest.mark.filterwarnings("ignore::FutureWarning:ray.*"),
              pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")]
STEPS = 3000  # per tag of a small run


def _write_run(path: str, tags: tuple[str, ...], steps: int, offset: float = 0.0,
               purge_step: int | None = None, start: int = 0) -> None:
    from summarylog import Writer

    with Writer(path, durability="none", purge_step=purge_step) as w:
        for i in range(start, start + steps):
            w.log({t: offset + k + i * 0.5 for k, t in enumerate(tags)}, step=i)


def _big_file_run(path: str, steps: int) -> None:
    """One run of 4 tags x ``steps``, written as numbers of 10 000 steps hard-linked
    into more files (fast to make, read as distinct rotated files)."""
    os.makedirs(path)
    part = min(steps, 10_000)
    seed = path + ".seed"
    _write_run(seed, ("a", "b", "c", "d"), part)
    (name,) = os.listdir(seed)
    for k in range(steps // part):
        # rotated segment names: read in natural order, each a whole file of the run
        os.link(os.path.join(seed, name), os.path.join(path, f"{name}.{k:04d}"))


@pytest.fixture(scope="module")
def ray_cluster():
    ray = require_module("ray")
    require_module("ray.data")
    require_module("pyarrow")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # Ray 2.60 would write ~/.ray/auth_token
    tmp = tempfile.mkdtemp(prefix="slray-", dir="/tmp")  # short: Ray's sockets live under it
    here = os.getcwd()
    os.chdir(tmp)  # Ray puts the driver's directory first on the workers' sys.path: a
    try:           # source checkout there would shadow the installed summarylog
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=256 << 20, _temp_dir=tmp)
    finally:
        os.chdir(here)
    try:
        # the workers cannot import this test module: its functions travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        saved = ctx.target_max_block_size
        try:
            yield ray
        finally:
            ctx.target_max_block_size = saved
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Six runs: plain, two files, resumed (purge marker), a damaged one, a nested one."""
    top = tmp_path_factory.mktemp("rayruns")
    _write_run(str(top / "alpha"), ("loss", "acc"), STEPS)
    _write_run(str(top / "beta"), ("loss",), STEPS, 1.0)
    _write_run(str(top / "beta"), ("loss",), STEPS, 2.0, start=STEPS)  # a second file
    _write_run(str(top / "gamma"), ("loss", "lr"), STEPS, 3.0)
    _write_run(str(top / "gamma"), ("loss", "lr"), 100, 4.0, purge_step=STEPS // 2,
               start=STEPS // 2)  # resumed: the first file's later half is dropped
    _write_run(str(top / "sweep/lr=0.1"), ("loss",), STEPS, 5.0)
    _write_run(str(top / "sweep/lr=0.01"), ("loss",), STEPS, 6.0)
    _write_run(str(top / "broken"), ("loss", "acc"), STEPS, 7.0)
    (name,) = os.listdir(top / "broken")
    with open(top / "broken" / name, "r+b") as f:  # a flipped byte inside a record's data
        f.seek(os.path.getsize(top / "broken" / name) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x55]))
    return str(top)


def _by_series(table) -> dict[tuple[str, str], np.ndarray]:
    """(run, tag) -> rows (step, wall_time, value) sorted: the order blocks arrive in is Ray's."""
    run = np.asarray(table.column("run").to_pylist(), dtype=object)
    tag = np.asarray(table.column("tag").to_pylist(), dtype=object)
    cols = np.stack([table.column(c).to_numpy().astype(np.float64)
                     for c in ("step", "wall_time", "value")], axis=1)
    out = {}
    for key in sorted(set(zip(run.tolist(), tag.tolist()))):
        rows = cols[(run == key[0]) & (tag == key[1])]
        out[key] = rows[np.lexsort(rows.T[::-1])]
    return out


def _reader_series(path: str, **kw) -> dict[tuple[str, str], np.ndarray]:
    from summarylog import Reader

    out = {}
    for run, tags in Reader(path, **kw).scalars_all().items():
        for tag, s in tags.items():
            rows = np.stack([s.step.astype(np.float64), s.wall_time, s.value], axis=1)
            out[(run, tag)] = rows[np.lexsort(rows.T[::-1])]
    return out


def _pids(batch):
    import time

    import pyarrow as pa

    time.sleep(0.3)  # a task long enough that both workers get some: tiny ones may all go to one
    pid = os.getpid()
    return batch.append_column("pid", pa.array([pid] * batch.num_rows, pa.int64()))


def test_reads_in_workers_equal_the_reader_and_report_damage(ray_cluster, root, figure):
    import pyarrow as pa

    from summarylog.ray import DamageLog, read_events

    log = DamageLog()
    ds = read_events(root, override_num_blocks=6, damage=log)
    got = pa.concat_tables(ray_cluster.get(
        ds.map_batches(_pids, batch_format="pyarrow", batch_size=None).to_arrow_refs()))
    pids = set(got.column("pid").to_pylist())
    figure(f"{got.num_rows} rows read by worker pids {sorted(pids)} (driver {os.getpid()})")
    assert os.getpid() not in pids
    assert len(pids) >= 2, pids
    want = _reader_series(root)
    have = _by_series(got.drop_columns(["pid"]))
    assert list(have) == list(want)
    for key in want:
        np.testing.assert_array_equal(have[key], want[key], err_msg=str(key))
    assert len(have[("gamma", "loss")]) == STEPS // 2 + 100  # the resume rule held
    # damage: the flipped byte is reported by the worker that read it, as the Reader does
    from summarylog import Reader

    expect = {(d.offset, d.kind) for rep in Reader(root).damage("broken").values()
              for d in rep.damage}
    rows = log.rows()
    figure(f"damage rows at the driver: {rows}")
    assert expect and {(r["offset"], r["kind"]) for r in rows if r["run"] == "broken"} >= expect
    assert all(r["run"] == "broken" for r in rows)
    assert log.table().num_rows == len(rows)


def test_filters_and_several_paths(ray_cluster, root):
    import pyarrow as pa

    from summarylog.ray import read_events

    sweep = os.path.join(root, "sweep")
    ds = read_events([os.path.join(sweep, "lr=0.1"), os.path.join(sweep, "lr=0.01")],
                     tags=["loss"])
    t = pa.concat_tables(ray_cluster.get(ds.to_arrow_refs()))
    assert sorted(set(t.column("run").to_pylist())) == sorted(
        os.path.join(sweep, r) for r in ("lr=0.1", "lr=0.01"))
    ds = read_events(root, runs=["alpha"], tags=["acc"])
    t = pa.concat_tables(ray_cluster.get(ds.to_arrow_refs()))
    assert set(t.column("tag").to_pylist()) == {"acc"} and t.num_rows == STEPS


def test_bad_arguments_are_named(ray_cluster, root, tmp_path):
    from summarylog.ray import read_events

    with pytest.raises(ValueError, match="kinds"):
        read_events(root, kinds=("images",))
    with pytest.raises(ValueError, match="one kind per dataset"):
        read_events(root, kinds=("scalars", "histograms"))
    with pytest.raises(ValueError, match="runs"):
        read_events(root, runs=["nope"])
    with pytest.raises(TypeError, match="tags"):
        read_events(root, tags="loss")
    with pytest.raises(FileNotFoundError):
        read_events(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="override_num_blocks"):
        read_events(root, override_num_blocks=0)
    with pytest.raises(TypeError, match="op_resource_reservation"):
        read_events(root, op_resource_reservation="no")


def test_reservation_is_set_in_the_datasets_own_context(ray_cluster, root):
    """Off in the returned dataset's DataContext and in what is derived from it; the
    current DataContext and another read's keep their setting; True keeps it too."""
    from summarylog.ray import read_events

    current = ray_cluster.data.DataContext.get_current()
    assert current.op_resource_reservation_enabled  # Ray's default
    ds = read_events(root)
    derived = ds.map_batches(lambda b: b, batch_format="pyarrow")
    kept = read_events(root, op_resource_reservation=True)
    assert ds.context.op_resource_reservation_enabled is False
    assert derived.context.op_resource_reservation_enabled is False
    assert kept.context.op_resource_reservation_enabled is True
    assert current.op_resource_reservation_enabled is True
    assert ds.count() == kept.count() == derived.count() > 0


def test_url_runs_are_fetched_by_the_workers(ray_cluster, root):
    """A file:// URL goes through fsspec in the worker (a private temporary copy per
    run), as s3:// or gs:// would; values and run names as from the local root."""
    import pyarrow as pa

    require_module("fsspec")
    from summarylog.ray import DamageLog, read_events

    log = DamageLog()
    ds = read_events("file://" + root, override_num_blocks=3, damage=log)
    have = _by_series(pa.concat_tables(ray_cluster.get(ds.to_arrow_refs())))
    want = _reader_series(root)
    assert list(have) == list(want)
    for key in want:
        np.testing.assert_array_equal(have[key], want[key], err_msg=str(key))
    assert {r["run"] for r in log.rows()} == {"broken"}
    assert all(r["file"].startswith("file://") for r in log.rows())


def _peak(batch):
    """One row per block: the worker's pid and its peak RSS so far (VmHWM, KiB)."""
    import pyarrow as pa

    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return pa.table({"pid": [os.getpid()], "hwm_kib": [hwm], "rows": [batch.num_rows]})


def _driver_hwm() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def test_memory_follows_the_block_size_not_the_runs(ray_cluster, tmp_path, figure):
    """N runs, then 4N runs, then one run 4x bigger than all N together, each streamed
    through the driver in 4 MiB blocks: the workers' and the driver's peak RSS after the
    4N runs and the big run stay within a margin of the peak after N runs."""
    from summarylog.ray import read_events

    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc (Linux)")
    ray = ray_cluster
    ctx = ray.data.DataContext.get_current()
    ctx.target_max_block_size = 4 << 20
    per_run = 40_000  # steps x 4 tags: 160 000 scalars, ~5 MiB of Arrow per run
    n = 6
    seed = tmp_path / "seed"
    _big_file_run(str(seed), per_run)
    many = tmp_path / "many"
    for k in range(4 * n):  # hard links: the same bytes, distinct runs
        d = many / f"run{k:03d}"
        d.mkdir(parents=True)
        for f in os.listdir(seed):
            os.link(seed / f, d / f)
    big = tmp_path / "big"
    _big_file_run(str(big), per_run * n * 4)  # one run of 3.84 M scalars (~120 MiB of Arrow)

    def peaks(path, runs=None):
        ds = read_events(str(path), runs=runs, override_num_blocks=8)
        rows = 0
        hwm: dict[int, int] = {}
        for b in ds.map_batches(_peak, batch_format="pyarrow", batch_size=None).iter_batches(
                batch_size=None, batch_format="pyarrow"):
            for pid, h, r in zip(*(b.column(c).to_pylist() for c in ("pid", "hwm_kib", "rows"))):
                hwm[pid] = max(hwm.get(pid, 0), h)
                rows += r
        return rows, hwm

    names = [f"run{k:03d}" for k in range(n)]
    rows_n, hwm_n = peaks(many, names)
    drv_n = _driver_hwm()
    rows_4n, hwm_4n = peaks(many)
    drv_4n = _driver_hwm()
    rows_big, hwm_big = peaks(big)
    drv_big = _driver_hwm()
    mib = lambda kib: kib / 1024  # noqa: E731
    figure(f"rows {rows_n:,} / {rows_4n:,} / big run {rows_big:,}; workers' peak RSS MiB "
           f"after N: {[round(mib(v)) for v in hwm_n.values()]}, 4N: "
           f"{[round(mib(v)) for v in hwm_4n.values()]}, big run: "
           f"{[round(mib(v)) for v in hwm_big.values()]}; driver {mib(drv_n):.0f} / "
           f"{mib(drv_4n):.0f} / {mib(drv_big):.0f} MiB")
    assert rows_n == n * per_run * 4 and rows_4n == 4 * rows_n and rows_big == rows_4n
    margin = 48 << 10  # KiB: well under the 3 x N runs' more data (~90 MiB of Arrow)
    worst_n = max(hwm_n.values())
    assert max(hwm_4n.values()) <= worst_n + margin
    assert max(hwm_big.values()) <= worst_n + margin
    assert drv_big <= drv_n + margin


def test_damage_without_a_log_is_a_warning_with_counts(ray_cluster, root, caplog):
    """Without a DamageLog the read task itself (here run in the driver, as a worker
    runs it) logs the damage with counts; Ray forwards worker logs to the driver."""
    import logging

    from summarylog.engine_runs import find_runs
    from summarylog.ray_source import EventsDatasource

    jobs, _ = find_runs(root, ["broken"])
    (task,) = EventsDatasource(jobs).get_read_tasks(4)
    with caplog.at_level(logging.WARNING, logger="summarylog.ray"):
        rows = sum(t.num_rows for t in task())
    assert rows > 0
    (msg,) = [r.getMessage() for r in caplog.records if r.name == "summarylog.ray"]
    assert "'broken'" in msg and "1 damage rows (bad_data_crc)" in msg


def test_histograms_text_hparams_equal_the_export(ray_cluster, tmp_path):
    """kinds=("histograms",), ("text",), ("hparams",): each a dataset in the schema of the
    export's table of that name, its rows the export's (the same reader of a run), a
    resumed run's purged values left out, big tables cut into blocks."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from summarylog import Writer
    from summarylog.arrow_tables import table_schema
    from summarylog.dataset import export_dataset
    from summarylog.ray import read_events

    src = tmp_path / "logs"
    for r in range(3):
        with Writer(src / f"r{r}") as w:
            for i in range(40):
                w.add_histogram("w", np.arange(10.0) * (r + 1) + i, i)
                w.add_text("note", f"run {r} step {i}", i)
                w.add_scalar("loss", float(i), i)
            w.add_hparams({"lr": 0.1 * (r + 1), "opt": "adam"}, {"acc": 0.5 + r / 10})
    with Writer(src / "r1", purge_step=30) as w:  # a restart at step 30 drops 30..39
        for i in range(30, 35):
            w.add_histogram("w", np.full(4, -1.0), i)
            w.add_text("note", f"again {i}", i)
    ds = tmp_path / "ds"
    export_dataset(str(src), str(ds))
    ctx = ray_cluster.data.DataContext.get_current()
    saved = ctx.target_max_block_size
    ctx.target_max_block_size = 4096  # histogram tables come in slices
    try:
        for kind in ("histograms", "text", "hparams"):
            refs = read_events(str(src), kinds=(kind,), override_num_blocks=2).to_arrow_refs()
            got = pa.concat_tables(ray_cluster.get(refs))
            assert got.schema == table_schema(kind)
            if kind == "histograms":  # 3 runs of 1 tag, cut to fit 4 KiB blocks
                assert len(refs) > 3 and got.num_rows == 115
            want = pa.concat_tables(
                [pq.read_table(os.path.join(d, f), schema=table_schema(kind))
                 for d, _, fs in os.walk(ds / kind) for f in fs if f.endswith(".parquet")])
            key = ["run", "tag", "step"] if kind != "hparams" else ["run", "name"]
            got_rows = sorted(got.to_pylist(), key=lambda r: [str(r[k]) for k in key])
            want_rows = sorted(want.to_pylist(), key=lambda r: [str(r[k]) for k in key])
            print(f"{kind}: {len(got_rows)} rows in {len(refs)} blocks through Ray, equal "
                  f"to the export's")
            assert got_rows == want_rows and got_rows
    finally:
        ctx.target_max_block_size = saved
    hist = pa.concat_tables(ray_cluster.get(read_events(
        str(src), kinds=("histograms",)).to_arrow_refs())).to_pylist()
    assert sorted(r["step"] for r in hist if r["run"] == "r1") == list(range(35))
