"""The engines' URL route (summarylog.query over event files, the runs Ray's workers read)
goes through the mirror, so it keeps the mirror's guarantees: a stalled listing is a clear
TimeoutError within the deadline, a stalled fetch is a damage row, not a hang, a hostile
object name is refused, not written, and max_objects bounds a listing."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from conftest import require_module
from object_store import FaultProxy, gcs, s3  # noqa: F401 (fixtures)
from read_helpers import upload, write_run

import summarylog
from summarylog.engine_runs import find_runs, read_run
from summarylog.reader import Reader
from summarylog.remote.urls import filesystem

require_module("pyarrow")
DEADLINE = 3.0


@pytest.fixture
def run(s3, tmp_path):
    """(url, options through a proxy, proxy, local copy): runs a (2 files) and b uploaded."""
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=200, files=2)
    write_run(local, "b", steps=50)
    prefix = f"bkt/eng-{os.getpid()}-{time.monotonic_ns()}"
    upload(filesystem("s3://bkt", s3.storage_options())[0], local, prefix)
    proxy = FaultProxy(s3.port).start()
    so = s3.storage_options(proxy.endpoint)
    so["config_kwargs"] = {"connect_timeout": 1, "read_timeout": 2,
                           "retries": {"total_max_attempts": 2, "mode": "standard"}}
    yield f"s3://{prefix}", so, proxy, local
    proxy.stop()


def _values(tables) -> dict[tuple[str, str], np.ndarray]:
    out: dict[tuple[str, str], list[float]] = {}
    for t in tables:
        d = t.to_pydict()
        for r, g, v in zip(d["run"], d["tag"], d["value"]):
            out.setdefault((r, g), []).append(v)
    return {k: np.array(v) for k, v in out.items()}


def _equal_to_local(jobs, local: str) -> None:
    """Every run of ``jobs`` read without damage, value for value the local Reader's."""
    damage: list = []
    got = _values(t for j in jobs for t in read_run(j, damage=damage))
    assert not damage
    r = Reader(local)
    for name in ("a", "b"):
        np.testing.assert_array_equal(got[(name, "loss")], r.scalars(name, "loss").value)


def test_runs_of_a_url_read_as_the_local_runs(run, tmp_path) -> None:
    url, so, proxy, local = run
    # a cache_dir is not shared by the readers of runs (their locks would serialise them)
    jobs, errors = find_runs(url, storage_options=so,
                             remote_options={"cache_dir": str(tmp_path / "cache")})
    assert all(j.remote_options.cache_dir is None for j in jobs)
    assert not os.path.exists(tmp_path / "cache")
    assert not errors and [j.run for j in jobs] == ["a", "b"]
    assert [len(j.files) for j in jobs] == [2, 1]
    _equal_to_local(jobs, local)


def test_a_url_of_one_event_file_is_its_run(run) -> None:
    url, so, _, local = run
    (name,) = os.listdir(os.path.join(local, "b"))
    (job,), errors = find_runs(f"{url}/b/{name}", storage_options=so)
    assert not errors and job.run == "."
    damage: list = []
    got = _values(read_run(job, damage=damage))
    assert not damage
    np.testing.assert_array_equal(got[(".", "loss")], Reader(local).scalars("b", "loss").value)


def test_gcs_runs_read_as_the_local_runs_and_datasets_query(gcs, tmp_path) -> None:
    """The same route on the GCS emulator (gcsfs: ranged reads, no streamed objects),
    and a dataset exported there queried back."""
    require_module("duckdb")
    from summarylog.dataset import export_dataset

    so = gcs.storage_options()
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=200, files=2)
    write_run(local, "b", steps=50)
    prefix = f"bkt/eng-{os.getpid()}-{time.monotonic_ns()}"
    upload(filesystem("gs://bkt", so)[0], local, prefix)
    jobs, errors = find_runs(f"gs://{prefix}", storage_options=so)
    assert not errors and [(j.run, len(j.files)) for j in jobs] == [("a", 2), ("b", 1)]
    _equal_to_local(jobs, local)
    export_dataset(f"gs://{prefix}", f"gs://{prefix}-ds", storage_options=so)
    sql = "SELECT run, count(*) AS n, sum(value) AS s FROM scalars GROUP BY run ORDER BY run"
    assert summarylog.query(sql, f"gs://{prefix}-ds", storage_options=so).to_dict("records") \
        == summarylog.query(sql, local).to_dict("records")


def test_a_stalled_listing_is_a_timeout_not_a_hang(run) -> None:
    url, so, proxy, _ = run
    require_module("duckdb")
    proxy.stall_next(50)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        summarylog.query("select count(*) from scalars", url, storage_options=so,
                         remote_options={"timeout": DEADLINE})
    took = time.monotonic() - t0
    proxy.clear()
    print(f"\nquery over a stalled listing: {info.value} after {took:.1f} s "
          f"(deadline {DEADLINE} s)")
    assert url in str(info.value) and "no answer within" in str(info.value)
    assert took < 60  # hang guard


def test_a_stalled_fetch_is_a_damage_row_and_the_rest_is_read(run) -> None:
    url, so, proxy, local = run
    jobs, _ = find_runs(url, storage_options=so,
                        remote_options={"timeout": DEADLINE, "retries": 0, "concurrency": 1})
    a = next(j for j in jobs if j.run == "a")
    proxy.stall_next(2)  # the first of the run's two objects: both of botocore's tries stall
    damage: list = []
    t0 = time.monotonic()
    got = _values(read_run(a, damage=damage))
    took = time.monotonic() - t0
    proxy.clear()
    print(f"\nstalled fetch: {damage} after {took:.1f} s; {len(got.get(('a', 'loss'), []))} "
          f"points read")
    assert took < 60  # hang guard
    assert [d["kind"] for d in damage] == ["unreadable"]
    assert "no answer within" in damage[0]["detail"] and damage[0]["file"].startswith(url)
    # the other object's 200 points are read
    assert len(got[("a", "loss")]) == 200


def test_a_hostile_object_name_is_refused_not_written(s3, tmp_path) -> None:
    fs = filesystem("s3://bkt", s3.storage_options())[0]
    local = str(tmp_path / "logs")
    write_run(local, "ok", steps=20)
    prefix = f"bkt/hostile-{os.getpid()}"
    upload(fs, local, prefix)
    (name,) = os.listdir(os.path.join(local, "ok"))
    with open(os.path.join(local, "ok", name), "rb") as f:
        data = f.read()
    # a key whose ".." would climb out of the private fetch directory
    fs.pipe_file(f"{prefix}/ok/../../../escaped/{name}", data)
    jobs, errors = find_runs(f"s3://{prefix}", storage_options=s3.storage_options())
    print(f"\nhostile name: runs {[j.run for j in jobs]}, errors {[str(e) for e in errors]}")
    assert [j.run for j in jobs] == ["ok"]
    assert len(errors) == 1 and "object name refused" in str(errors[0])
    damage: list = []
    assert len(_values(read_run(jobs[0], damage=damage))[("ok", "loss")]) == 20
    assert not damage and not os.path.exists(str(tmp_path / "escaped"))


def test_max_objects_bounds_the_listing(run) -> None:
    url, so, _, _ = run
    jobs, errors = find_runs(url, storage_options=so, remote_options={"max_objects": 2})
    assert sum(len(j.files) for j in jobs) == 2
    assert len(errors) == 1 and "max_objects" in str(errors[0])
