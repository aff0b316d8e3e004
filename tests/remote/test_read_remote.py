"""Reading runs from URLs (S3 emulator, GCS emulator): the same values as local, one
listing per poll, only new or grown objects fetched, damage reported with URLs, hostile
object names never written outside the mirror, the CLI on URLs."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from read_helpers import counted, upload, write_run
from object_store import gcs, s3  # noqa: F401 (fixtures)

from summarylog.reader import Reader
from summarylog.remote.urls import filesystem

S3_FAST = {"config_kwargs": {"connect_timeout": 1, "read_timeout": 3,
                             "retries": {"total_max_attempts": 2, "mode": "standard"}}}


@pytest.fixture(params=["s3", "gcs"])
def store(request, s3, gcs):
    srv = s3 if request.param == "s3" else gcs
    return request.param, srv


def _fs(kind, srv):
    return filesystem(f"{kind}://bkt", srv.storage_options())[0]


def test_url_reads_as_local_one_listing_per_poll(store, tmp_path, monkeypatch) -> None:
    kind, srv = store
    scratch = tmp_path / "scratch"  # where the mirror's private directory goes
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    local = str(tmp_path / "logs")
    write_run(local, "a", steps=200, files=3)
    write_run(local, "b", steps=200, files=2)
    fs = _fs(kind, srv)
    prefix = f"bkt/poll-{kind}"
    upload(fs, local, prefix)
    url = f"{kind}://{prefix}"
    before = len(srv.requests())
    r = Reader(url, storage_options=srv.storage_options())
    assert r.runs() == ["a", "b"]
    mine = Reader(local)
    for run in ("a", "b"):
        np.testing.assert_array_equal(r.scalars(run, "loss").value, mine.scalars(run, "loss").value)
    lists, gets, _ = counted(srv, before)
    print(f"\n{kind}: first read of 5 objects: {lists} listing, {gets} ranged GETs")
    assert lists == 1 and gets == 5

    before = len(srv.requests())
    r.refresh()
    r.runs()  # a poll with nothing new: one listing, no object read
    lists, gets, _ = counted(srv, before)
    print(f"{kind}: idle poll: {lists} listing, {gets} GETs")
    assert (lists, gets) == (1, 0)

    write_run(str(tmp_path / "more"), "a", steps=100)  # one new object
    (new,) = os.listdir(tmp_path / "more" / "a")
    fs.pipe_file(f"{prefix}/a/{new}", (tmp_path / "more" / "a" / new).read_bytes())
    before = len(srv.requests())
    r.refresh()
    assert len(r.scalars("a", "loss").step) == 700
    lists, gets, _ = counted(srv, before)
    print(f"{kind}: poll with 1 new object among 6: {lists} listing, {gets} GETs, "
          f"{r.remote_stats}")
    assert (lists, gets) == (1, 1)
    assert os.listdir(scratch)
    r.close()
    assert not os.listdir(scratch)  # the mirror removed its directory


def test_grown_object_fetches_only_new_bytes(s3, tmp_path) -> None:
    local = str(tmp_path / "l")
    write_run(local, "g", steps=3000)
    (name,) = os.listdir(os.path.join(local, "g"))
    with open(os.path.join(local, "g", name), "rb") as f:
        data = f.read()
    fs = _fs("s3", s3)
    key = f"bkt/grow/g/{name}"
    half = len(data) // 2
    fs.pipe_file(key, data[:half])
    r = Reader("s3://bkt/grow", storage_options=s3.storage_options())
    first = len(r.scalars("g", "loss").step)
    fs.pipe_file(key, data)  # the object grew
    r.refresh()
    assert len(r.scalars("g", "loss").step) == 3000 > first
    stats = r.remote_stats
    print(f"\ngrown object {half} -> {len(data)} bytes: {stats.bytes_fetched} bytes fetched "
          f"in all ({stats.ranged_reads} ranged reads)")
    assert stats.bytes_fetched == len(data)  # each byte once


def test_files_are_fetched_in_the_order_the_reader_reads_them(s3, tmp_path,
                                                             monkeypatch) -> None:
    """Loading runs on two threads, the Reader asks the mirror for their files in the
    order the threads read them (runs two at a time, their files alternating): each
    file is decoded as soon as it is in, and the last run is not left to decode alone
    after the fetching.  The ranges started before the Reader asked stay in listing order."""
    import asyncio

    from s3fs import S3FileSystem

    from summarylog.read_pool import read_order

    local = str(tmp_path / "l")
    for run in ("a", "b", "c"):
        for _ in range(3):
            write_run(local, run, steps=20)
    upload(_fs("s3", s3), local, "bkt/order")
    fetched: list[str] = []
    plain = S3FileSystem._cat_file

    async def slow(self, path, start=None, end=None, **kw):
        fetched.append(path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1])
        await asyncio.sleep(0.1)
        return await plain(self, path, start=start, end=end, **kw)

    plain_open = S3FileSystem.open_async

    async def slow_open(self, path, mode="rb", **kw):  # a whole small object is streamed
        fetched.append(path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1])
        await asyncio.sleep(0.1)
        return await plain_open(self, path, mode, **kw)

    monkeypatch.setattr(S3FileSystem, "_cat_file", slow)
    monkeypatch.setattr(S3FileSystem, "open_async", slow_open)
    with Reader("s3://bkt/order", storage_options=s3.storage_options(), threads=2,
                remote_options={"concurrency": 1}) as r:
        got = r.scalars_all()
        jobs = {run: r.files(run) for run in r.runs()}
        want = [os.path.basename(os.path.dirname(f)) + "/" + os.path.basename(f)
                for f in read_order(jobs, 2)]
    listing = sorted(want)
    early = next(k for k in range(len(want))
                 if fetched[:k] == listing[:k]
                 and fetched[k:] == [f for f in want if f not in listing[:k]])
    print(f"\n9 files, 3 runs on 2 threads: {early} fetched in listing order before the "
          f"Reader asked, then {len(fetched) - early} in its read order")
    assert {k: len(v["loss"].step) for k, v in got.items()} == {"a": 60, "b": 60, "c": 60}
    assert len(fetched) == 9 and early <= 2


def test_read_order_alternates_the_files_of_runs_read_together() -> None:
    from summarylog.read_pool import read_order

    jobs = {"a": ["a1", "a2", "a3"], "b": ["b1"], "c": ["c1", "c2"], "d": []}
    assert read_order(jobs, 2) == ["a1", "b1", "a2", "a3", "c1", "c2"]
    assert read_order(jobs, 1) == ["a1", "a2", "a3", "b1", "c1", "c2"]
    assert read_order(jobs, 8) == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert read_order({}, 2) == []


def test_damaged_and_truncated_objects_read_up_to_the_damage(store, tmp_path) -> None:
    kind, srv = store
    local = str(tmp_path / "l")
    write_run(local, "d", steps=400)
    (name,) = os.listdir(os.path.join(local, "d"))
    path = os.path.join(local, "d", name)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    data = bytes(data[:-7])  # damaged in the middle, torn at the end
    with open(path, "wb") as f:
        f.write(data)
    fs = _fs(kind, srv)
    upload(fs, local, f"bkt/dmg-{kind}")
    url = f"{kind}://bkt/dmg-{kind}"
    r = Reader(url, storage_options=srv.storage_options())
    mine = Reader(local)
    got, want = r.scalars("d", "loss"), mine.scalars("d", "loss")
    np.testing.assert_array_equal(got.value, want.value)
    (rep,) = r.damage("d").values()
    (lrep,) = mine.damage("d").values()
    assert rep.damage == lrep.damage and rep.tail == lrep.tail and not rep.ok
    assert r.name(rep.path) == f"{url}/d/{name}"
    print(f"\n{kind}: damaged object: {len(got.step)} of 400 points read, damage "
          f"{[d.kind for d in rep.damage]}, tail {rep.tail.kind if rep.tail else None}")


def test_hostile_names_and_huge_listing(s3, tmp_path) -> None:
    local = str(tmp_path / "l")
    write_run(local, "a-ok", steps=10)
    fs = _fs("s3", s3)
    upload(fs, local, "bkt/hostile")
    good = next(iter(os.listdir(os.path.join(local, "a-ok"))))
    with open(os.path.join(local, "a-ok", good), "rb") as f:
        body = f.read()
    outside = tmp_path / "x.tfevents.1"
    for key in ["hostile/../x.tfevents.1", "hostile/ok/../../x.tfevents.2",
                "hostile/" + "a" * 300 + ".tfevents", "hostile/ok/.summarylog-tail/" + good,
                "hostile/c\x01.tfevents"]:
        fs.pipe_file("bkt/" + key, body)
    for i in range(30):  # many event files
        fs.pipe_file(f"bkt/hostile/many/{i:03d}.tfevents", body)
    cache = tmp_path / "cache"
    r = Reader("s3://bkt/hostile", storage_options=s3.storage_options(),
               remote_options={"cache_dir": str(cache), "max_objects": 20})
    runs = r.runs()
    assert "a-ok" in runs
    errs = [str(e) for e in r.discovery_errors]
    print(f"\nhostile listing: runs {runs}, {len(errs)} reported: " + "; ".join(errs)[:400])
    assert any("max_objects" in e for e in errs)
    assert sum("refused" in e for e in errs) >= 3
    # a hidden object (a live tail's name, outside any run): listed, never fetched
    assert not [t for m, t, _ in s3.requests() if m == "GET" and "summarylog-tail" in t]
    assert not outside.exists() and not (tmp_path / "x.tfevents.2").exists()
    for d, _, names in os.walk(cache):
        for n in names:
            assert os.path.realpath(os.path.join(d, n)).startswith(str(cache.resolve()))
    assert oct(os.stat(cache).st_mode & 0o777) == "0o700"


def test_cache_dir_symlink_refused_and_reused(s3, tmp_path) -> None:
    local = str(tmp_path / "l")
    write_run(local, "c", steps=100)
    upload(_fs("s3", s3), local, "bkt/reuse")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with pytest.raises(OSError, match="real directory"):
        Reader("s3://bkt/reuse", storage_options=s3.storage_options(),
               remote_options={"cache_dir": str(tmp_path / "link")})
    opts = {"cache_dir": str(tmp_path / "cache")}
    Reader("s3://bkt/reuse", storage_options=s3.storage_options(), remote_options=opts).runs()
    again = Reader("s3://bkt/reuse", storage_options=s3.storage_options(), remote_options=opts)
    assert len(again.scalars("c", "loss").step) == 100
    print(f"\nreused cache: {again.remote_stats.bytes_fetched} bytes fetched again")
    assert again.remote_stats.bytes_fetched == 0


def test_bad_arguments(s3) -> None:
    with pytest.raises(FileNotFoundError):
        Reader("s3://bkt/nothing-here", storage_options=s3.storage_options())
    with pytest.raises(ValueError, match="remote_options"):
        Reader("s3://bkt/x", storage_options=s3.storage_options(), remote_options={"bogus": 1})
    with pytest.raises(ValueError, match="concurrency"):
        Reader("s3://bkt/x", storage_options=s3.storage_options(),
               remote_options={"concurrency": 0})
    with pytest.raises(ValueError, match="URLs only"):
        Reader(".", storage_options={"anon": True})
    with pytest.raises(ValueError, match="control"):
        Reader("s3://bkt/a\x01b")


def test_cli_on_a_url(s3, tmp_path, capsys) -> None:
    from summarylog.cli import main

    local = str(tmp_path / "l")
    write_run(local, "c", ranks=(0, 1), steps=20)
    upload(_fs("s3", s3), local, "bkt/cli")
    so = [f"--storage-option=endpoint_url={s3.endpoint}", "--storage-option=key=test",
          "--storage-option=secret=test",
          '--storage-option=client_kwargs={"region_name": "us-east-1"}']
    assert main(["inspect", "s3://bkt/cli", *so, "--json"]) == 0
    out = capsys.readouterr().out
    assert "s3://bkt/cli/c/events.out.tfevents" in out
    out_csv = tmp_path / "o.csv"
    assert main(["export", "s3://bkt/cli", *so, "--ranks", "max", "-o", str(out_csv)]) == 0
    rows = out_csv.read_text().splitlines()
    assert len(rows) == 21 and rows[-1].endswith(",1019.0")
    assert main(["verify", "s3://bkt/cli", *so]) == 0
    assert main(["tail", "s3://bkt/cli", *so, "-n", "1"]) == 0
    assert main(["cat", "s3://bkt/missing", *so]) == 2  # as a missing local path
    err = capsys.readouterr().err
    assert "no such file" in err
    print(f"\nCLI on s3://: inspect, export --ranks max, verify, tail: exit 0; missing: {err!r}")


def test_summary_reader_on_a_url(s3, tmp_path) -> None:
    from summarylog.summary_reader import SummaryReader

    local = str(tmp_path / "l")
    write_run(local, "s", steps=30)
    upload(_fs("s3", s3), local, "bkt/sr")
    got = SummaryReader("s3://bkt/sr", storage_options=s3.storage_options(),
                        extra_columns={"dir_name"}).scalars
    want = SummaryReader(local, extra_columns={"dir_name"}).scalars
    assert got.equals(want) and len(got) == 30
    with pytest.raises(ValueError, match="not found"):
        SummaryReader("s3://bkt/none", storage_options=s3.storage_options())
    print(f"\nSummaryReader(s3://…).scalars: {len(got)} rows, equal to the local run's")


def test_big_object_streams_in_bounded_memory(s3) -> None:
    import tracemalloc

    from summarylog.remote.mirror import Mirror

    size = 48 << 20
    _fs("s3", s3).pipe_file("bkt/big/run/events.out.tfevents.1.h.1.0", os.urandom(size))
    m = Mirror("s3://bkt/big", s3.storage_options(),
               {"concurrency": 2, "chunk_bytes": 1 << 20})
    tracemalloc.start()
    try:
        m.sync()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        m.close()
    print(f"\na {size >> 20} MiB object mirrored with 2 x 1 MiB buffers: "
          f"{peak / 2**20:.1f} MiB peak Python allocation, {m.stats.ranged_reads} ranged reads")
    assert m.stats.bytes_fetched == size and m.stats.ranged_reads == 48
    assert peak < 16 << 20  # bounded by the buffers, not by the object's size


@pytest.mark.parametrize("first_range", ["slow", "fails"])
def test_ranges_ending_out_of_order(first_range, s3, monkeypatch) -> None:
    """Ranged reads in flight end in any order (here the first one last): the mirror's
    size is the prefix without a gap, so an idle poll fetches nothing again; when the
    first range fails, what arrived past it is cut off (read up to the damage)."""
    import asyncio

    from summarylog.remote.mirror import Mirror

    data = os.urandom((1 << 20) + 12345)
    name = f"events.out.tfevents.1.h.1.{first_range}"
    _fs("s3", s3).pipe_file(f"bkt/order-{first_range}/run/{name}", data)
    m = Mirror(f"s3://bkt/order-{first_range}", s3.storage_options(),
               {"concurrency": 8, "chunk_bytes": 64 << 10, "retries": 0})
    plain = m.fs._cat_file

    async def first_last(path, start=None, end=None, **kw):
        if start == 0:
            await asyncio.sleep(0.5)  # every other range has ended by now
            if first_range == "fails":
                raise PermissionError(13, "refused")
        return await plain(path, start=start, end=end, **kw)

    monkeypatch.setattr(m.fs, "_cat_file", first_last)
    try:
        m.sync()
        first = m.stats.bytes_fetched
        with open(os.path.join(m.local_root, "run", name), "rb") as f:
            mirrored = f.read()
        errors = list(m.errors)
        monkeypatch.setattr(m.fs, "_cat_file", plain)
        m.sync()  # the next poll
        again = m.stats.bytes_fetched - first
        with open(os.path.join(m.local_root, "run", name), "rb") as f:
            assert f.read() == data
    finally:
        m.close()
    print(f"\nfirst of 17 ranges {first_range}, ending last: {len(mirrored)} bytes mirrored, "
          f"{len(errors)} error(s); the next poll fetched {again} bytes")
    if first_range == "slow":
        assert mirrored == data and not errors and again == 0
    else:
        assert mirrored == b"" and len(errors) == 1 and again == len(data)


def test_follow_a_url_sees_new_objects() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    for part in (0, 1):
        _put_run(fs, f"/follow/run/events.out.tfevents.{part}.h.1.0", part)
    r = Reader("memory://follow")
    got = []
    gen = r.follow(poll_secs=0.05, idle_timeout=1.0)
    for run, ev in gen:
        if ev.kind == "scalar":
            got.append(ev.step)
            if len(got) == 20:
                _put_run(fs, "/follow/run/events.out.tfevents.2.h.1.0", 2)
    print(f"\nfollow(memory://…): {len(got)} scalars, the last 10 from an object added "
          f"while following")
    assert sorted(got) == list(range(30))


def _put_run(fs, path, part) -> None:
    """An event file of 10 scalars (steps 10*part...) put into ``fs`` at ``path``."""
    import tempfile

    import summarylog

    with tempfile.TemporaryDirectory() as d:
        with summarylog.Writer(d) as w:
            for i in range(10 * part, 10 * part + 10):
                w.add_scalar("loss", float(i), i)
        (name,) = os.listdir(d)
        with open(os.path.join(d, name), "rb") as f:
            fs.pipe_file(path, f.read())


def test_s3_reads_leave_checksums_to_the_records_crc32c() -> None:
    """botocore's response checksum is off for reads unless the user asks for it: every
    record's CRC32C is checked by the Reader already."""
    from summarylog.remote.urls import for_reading

    assert for_reading("s3://b/p", None) == {
        "config_kwargs": {"response_checksum_validation": "when_required"}}
    given = {"key": "k", "config_kwargs": {"response_checksum_validation": "when_supported",
                                           "retries": {"max_attempts": 2}}}
    assert for_reading("S3://b", given) == given and given["key"] == "k"
    plain = {"endpoint_url": "http://x"}
    out = for_reading("s3a://b", plain)
    assert out["config_kwargs"] == {"response_checksum_validation": "when_required"}
    assert plain == {"endpoint_url": "http://x"}  # the caller's mapping is not changed
    assert for_reading("gs://b", None) is None and for_reading("gs://b", plain) == plain
