"""Writing to a URL: records spooled locally, sealed segments uploaded once each
(create-only) as a normal run directory; against the S3 and GCS emulators."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from object_store import FaultProxy, gcs, s3  # noqa: F401 (fixtures)
from upload_helpers import scalar_steps, segment_objects

from summarylog import SummaryRecord, SummaryWriter, Writer
from summarylog.remote.store import TAIL_DIR
from summarylog.remote.urls import filesystem


def _wait(cond, what, timeout=30.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"hang guard: {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("kind", ["s3", "gs"])
def test_bytes_uploaded_close_to_bytes_logged(kind, s3, gcs, tmp_path):
    """N scalars with 10 flushes: every step arrives once, and the bytes sent over
    the wire (the proxy's request bodies) stay within 1.05x the bytes logged."""
    srv = s3 if kind == "s3" else gcs
    proxy = FaultProxy(srv.port).start()
    try:
        url = f"{kind}://bkt/ratio-{kind}"
        n = 20000
        w = Writer(url, storage_options=srv.storage_options(proxy.endpoint),
                   spool_dir=str(tmp_path / "spool"), segment_bytes=64 << 10,
                   max_spool=8 << 20)
        for i in range(n):
            w.add_scalar("loss", i * 0.5, i)
            if i % (n // 10) == n // 10 - 1:
                w.flush()
        w.close()
        st = w.stats
        objs = segment_objects(url, srv.storage_options())
        logged = sum(map(len, objs.values()))
        # S3: PUT /bkt/ratio-s3/<name>; GCS: POST /upload/... (the name is in the body)
        sent = sum(clen for method, target, act, clen in proxy.log
                   if (method, kind) in (("PUT", "s3"), ("POST", "gs"))
                   and ("ratio-" in target or target.startswith("/upload/")))
    finally:
        proxy.stop()
    steps = scalar_steps(objs)
    assert steps == list(range(n))
    assert st["segments_uploaded"] == st["segments_sealed"] == len(objs)
    assert st["bytes_uploaded"] == logged and st["conflicts"] == 0
    assert os.listdir(tmp_path / "spool") == [".create.lock", ".target"] or \
        sorted(os.listdir(tmp_path / "spool")) == [".create.lock", ".target"]
    ratio = sent / logged
    print(f"\n{kind}: {n} scalars, 10 flushes: {len(objs)} segments, {logged} bytes logged, "
          f"{sent} bytes uploaded (request bodies): {ratio:.3f}x")
    assert sent >= logged and ratio <= 1.05


@pytest.mark.parametrize("scheme", ["memory", "file"])
def test_fsspec_targets(scheme, tmp_path):
    url = (f"memory://bkt/run-{os.getpid()}" if scheme == "memory"
           else f"file://{tmp_path}/bucket/run")
    with Writer(url, spool_dir=str(tmp_path / "spool"), segment_bytes=4096) as w:
        for i in range(2000):
            w.add_scalar("loss", 1.0, i)
            if i % 500 == 0:
                w.flush()
    objs = segment_objects(url, None)
    assert scalar_steps(objs) == list(range(2000))
    assert w.files == [f"{url}/{name}" for name in objs]
    if scheme == "file":  # linked into place: no temporary files left beside them
        assert sorted(os.listdir(tmp_path / "bucket" / "run")) == sorted(objs)
    print(f"\n{scheme}://: 2000 scalars in {len(objs)} segments, every step once")


@pytest.mark.parametrize("who", ["Writer", "SummaryRecord-mindinsight"])
def test_an_idle_writer_seals_by_age(who, s3, tmp_path):
    """With segment_secs, the open segment is sealed and uploaded once it is that old,
    though nothing more is logged (the background thread's timer); later records go to
    the next segment, and every step arrives once."""
    opts = s3.storage_options()
    url = f"s3://bkt/age-{who.lower()}"
    kw = dict(storage_options=opts, spool_dir=str(tmp_path / "sp"), segment_secs=0.5)
    if who == "Writer":
        w = Writer(url, flush_secs=0.1, **kw)
        log, close = (lambda i: w.add_scalar("loss", float(i), i)), w.close
    else:
        w = SummaryRecord(url, format="mindinsight", flush_secs=0.1, **kw)

        def log(i):
            w.add_value("scalar", "loss", float(i))
            w.record(i)
        close = w.close
    for i in range(20):
        log(i)
    t0 = time.monotonic()
    _wait(lambda: segment_objects(url, opts), "a segment sealed by age")
    idle = time.monotonic() - t0
    first = segment_objects(url, opts)
    for i in range(20, 40):
        log(i)
    close()
    objs = segment_objects(url, opts)
    if who == "Writer":
        steps = scalar_steps(objs)
    else:  # MindSpore summaries: one file of the pair at a time
        from summarylog import Reader

        steps = []
        for name in sorted(n for n in objs if n.endswith("_MS")):
            d = tmp_path / "one" / name
            d.mkdir(parents=True)
            (d / name).write_bytes(objs[name])
            steps += Reader(str(d)).scalars(".", "loss").step.tolist()
    print(f"\n{who}: a segment sealed {idle:.2f} s after the last record with "
          f"segment_secs=0.5; {len(objs)} objects, steps 0-39 once each")
    assert len(first) >= 1 and len(objs) > len(first)
    assert steps == list(range(40))


def test_summary_writer_and_summary_record(s3, tmp_path):
    opts = s3.storage_options()
    with SummaryWriter("s3://bkt/sw", storage_options=opts,
                       spool_dir=str(tmp_path / "sw")) as sw:
        for i in range(50):
            sw.add_scalar("loss", i, i)
        sw.add_scalars("pair", {"a": 1.0, "b": 2.0}, 3)  # sub-runs: their own URLs, spools
    assert scalar_steps(segment_objects("s3://bkt/sw", opts)) == list(range(50))
    assert segment_objects("s3://bkt/sw/pair_a", opts)
    for fmt in ("tensorboard", "mindinsight"):
        url = f"s3://bkt/sr-{fmt}"
        rec = SummaryRecord(url, format=fmt, storage_options=opts,
                            spool_dir=str(tmp_path / fmt), segment_bytes=1 << 16)
        for step in range(5):
            rec.add_value("scalar", "loss", float(step))
            rec.record(step)
        rec.close()
        objs = segment_objects(url, opts)
        assert objs and rec.stats()["segments_uploaded"] == len(objs)
        assert all(f.startswith(url + "/") for f in rec.files)
        if fmt == "mindinsight":
            assert any(".out.events.summary." in n and n.endswith("_MS") for n in objs)
    print(f"\nSummaryWriter, SummaryRecord (both formats) on s3://: {len(objs)} objects")


def test_live_tail(s3, tmp_path):
    """The unsealed segment's bytes appear as a hidden tail object (no 'tfevents' in
    its name) and it is removed once the segment is sealed and uploaded."""
    opts = s3.storage_options()
    url = "s3://bkt/tail"
    w = Writer(url, storage_options=opts, spool_dir=str(tmp_path / "sp"),
               live_tail_secs=0.1, segment_secs=600)
    fs, path = filesystem(url, opts)
    for i in range(100):
        w.add_scalar("loss", 1.0, i)
    w.flush()
    name = os.path.basename(w.files[0])
    tail_key = f"{path}/{TAIL_DIR}/{name}.tail"

    def tail_has_all():
        fs.invalidate_cache()
        return fs.exists(tail_key) and len(fs.cat_file(tail_key)) == os.path.getsize(
            tmp_path / "sp" / name)
    _wait(tail_has_all, "the live tail")
    assert "tfevents" not in tail_key.rsplit("/", 1)[1].replace(name, "")
    assert scalar_steps({name: bytes(fs.cat_file(tail_key))}) == list(range(100))
    assert segment_objects(url, opts) == {}  # sealed segments only: none yet
    w.close()
    fs.invalidate_cache()
    assert not fs.exists(tail_key)
    assert scalar_steps(segment_objects(url, opts)) == list(range(100))
    print(f"\nlive tail: {w.stats['tail_uploads']} tail upload(s), "
          f"{w.stats['tail_bytes']} bytes; removed after the seal")


def test_reader_sees_the_live_tail_then_the_sealed_segment(s3, tmp_path):
    """A Reader of the URL shows the newest points from the live tail, as the tail grows,
    and goes on from the bytes it has once the segment is sealed: every point once, no
    byte fetched twice."""
    from summarylog import Reader

    opts = s3.storage_options()
    url = "s3://bkt/tailread"
    w = Writer(url, storage_options=opts, spool_dir=str(tmp_path / "sp"),
               live_tail_secs=0.1, segment_secs=600)
    fs, path = filesystem(url, opts)
    seen = []
    r = None
    for part in (range(0, 100), range(100, 250)):
        for i in part:
            w.add_scalar("loss", float(i), i)
        w.flush()
        name = os.path.basename(w.files[0])
        size = os.path.getsize(tmp_path / "sp" / name)

        def tail_caught_up():
            fs.invalidate_cache()
            key = f"{path}/{TAIL_DIR}/{name}.tail"
            return fs.exists(key) and fs.info(key)["size"] == size
        _wait(tail_caught_up, "the live tail")
        if r is None:
            r = Reader(url, storage_options=opts)
        else:
            r.refresh()
        seen.append(r.scalars(".", "loss").step.tolist())
    w.close()
    r.refresh()
    final = r.scalars(".", "loss").step.tolist()
    stats = r.remote_stats
    sealed = fs.info(f"{path}/{name}")["size"]
    r.close()
    print(f"\nReader on a live URL: {len(seen[0])} then {len(seen[1])} points from the "
          f"tail, {len(final)} after the seal; {stats.bytes_fetched} bytes fetched for a "
          f"{sealed}-byte segment")
    assert seen == [list(range(100)), list(range(250))]
    assert final == list(range(250))
    assert stats.bytes_fetched == sealed  # the sealed object went on from the tail's bytes


def test_conflict_is_reported_never_overwritten(s3, tmp_path):
    """A leftover whose key holds other bytes: counted, logged, the object untouched,
    the segment kept in the spool (renamed so it is not retried)."""
    from summarylog.cli_upload import main

    opts = s3.storage_options()
    url = "s3://bkt/conflict"
    w = Writer(url, storage_options=opts, spool_dir=str(tmp_path / "sp"))
    w.add_scalar("loss", 1.0, 0)
    w.flush()
    name = os.path.basename(w.files[0])
    fs, path = filesystem(url, opts)
    fs.pipe_file(f"{path}/{name}", b"someone else's bytes")  # the key is taken first
    w.close()
    assert w.stats["conflicts"] == 1 and w.stats["segments_uploaded"] == 0
    assert bytes(fs.cat_file(f"{path}/{name}")) == b"someone else's bytes"
    assert os.path.exists(tmp_path / "sp" / f".conflict-{name}")
    # and a leftover that is already there (same bytes): done, not a conflict
    data = (tmp_path / "sp" / f".conflict-{name}").read_bytes()
    fs.pipe_file(f"{path}/again", data)
    (tmp_path / "sp" / "again").write_bytes(data)
    args = [str(tmp_path / "sp"), "-o", f"endpoint_url={s3.endpoint}", "-o", "key=test",
            "-o", "secret=test", "-o", "client_kwargs.region_name=us-east-1", "--timeout", "30"]
    assert main(args) == 0
    assert not (tmp_path / "sp" / "again").exists()
    assert hashlib.md5(bytes(fs.cat_file(f"{path}/again"))).digest() == hashlib.md5(data).digest()
    print("\nconflict: 1 counted, object untouched; same-bytes leftover: confirmed, removed")


def test_close_timeout_leaves_the_spool_for_summarylog_upload(s3, tmp_path, capsys):
    """close() on a stalled store returns within close_timeout; the segments stay in
    the spool and `summarylog upload SPOOL` sends them later, once each."""
    from summarylog.cli import main as cli_main

    def main(args):  # through the summarylog command, as a user runs it
        return cli_main(["upload", *args])

    proxy = FaultProxy(s3.port).start()
    spool = tmp_path / "sp"
    try:
        proxy.stall_head_next(50)
        w = Writer("s3://bkt/later", storage_options=s3.storage_options(proxy.endpoint),
                   spool_dir=str(spool), segment_bytes=1024, upload_timeout=1.0,
                   close_timeout=0.5, retry_wait=(0.05, 0.2))
        for i in range(300):
            w.add_scalar("loss", 1.0, i)
        t0 = time.monotonic()
        w.close()
        took = time.monotonic() - t0
        assert took < 30, "hang guard"
    finally:
        proxy.stop()
    left = [n for n in os.listdir(spool) if not n.startswith(".")]
    assert left
    args = [str(spool), "-o", f"endpoint_url={s3.endpoint}", "-o", "key=test", "-o",
            "secret=test", "-o", "client_kwargs.region_name=us-east-1", "--timeout", "60"]
    assert main(args) == 0
    assert [n for n in os.listdir(spool) if not n.startswith(".")] == []
    objs = segment_objects("s3://bkt/later", s3.storage_options())
    assert scalar_steps(objs) == list(range(300))
    print(f"\nclose() on a stalled store: {took:.2f} s, {len(left)} segment(s) left; "
          f"`summarylog upload`: all {len(objs)} uploaded once; "
          f"{capsys.readouterr().out.strip().splitlines()[-1]}")


def test_spool_is_private_and_symlink_safe(tmp_path):
    from summarylog.remote.spool import default_spool_dir

    secret = tmp_path / "secret"
    secret.write_bytes(b"not a segment")
    spool = tmp_path / "sp"
    w = Writer("memory://bkt/safe", spool_dir=str(spool))
    assert oct(os.stat(spool).st_mode & 0o777) == "0o700"
    w.close()
    os.symlink(secret, spool / "events.out.tfevents.0.planted")  # a planted leftover
    w = Writer("memory://bkt/safe", spool_dir=str(spool))
    w.add_scalar("loss", 1.0, 1)
    w.close()
    objs = segment_objects("memory://bkt/safe", None)
    assert "events.out.tfevents.0.planted" not in objs and secret.read_bytes() == b"not a segment"
    link = tmp_path / "link"
    os.symlink(tmp_path / "elsewhere", link)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ValueError, match="spool_dir"):
        Writer("memory://bkt/x", spool_dir=str(link))
    with pytest.raises(ValueError, match="spool_dir"):  # one URL per spool
        Writer("memory://bkt/other", spool_dir=str(spool))
    assert default_spool_dir("s3://b/r").startswith(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    print("\nspool: 0700, a planted symlink never followed nor uploaded, a symlinked "
          "spool_dir refused")


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(max_spool="1"), TypeError, "max_spool"),
    (dict(segment_bytes=0), ValueError, "segment_bytes"),
    (dict(segment_secs=float("nan")), ValueError, "segment_secs"),
    (dict(live_tail_secs=-1), ValueError, "live_tail_secs"),
    (dict(close_timeout="x"), TypeError, "close_timeout"),
    (dict(storage_options=[1]), TypeError, "storage_options"),
    (dict(segment_bytes=1 << 20, max_spool=1 << 20), ValueError, "max_spool"),
    (dict(retry_wait=1), TypeError, "retry_wait"),
    (dict(spool_dir="s3://x/y"), ValueError, "spool_dir"),
])
def test_bad_arguments(kwargs, exc, name, tmp_path):
    with pytest.raises(exc, match=name):
        Writer("memory://bkt/bad", **kwargs)


def test_remote_arguments_refused_for_local_paths(tmp_path):
    with pytest.raises(ValueError, match="storage_options"):
        Writer(str(tmp_path / "run"), storage_options={"anon": True})
    w = Writer(str(tmp_path / "run"))  # unchanged: no spool, no uploader
    w.add_scalar("loss", 1.0, 0)
    w.close()
    assert "segments_uploaded" not in w.stats and w.files[0].startswith(str(tmp_path))


def test_full_spool_drops_with_on_full_drop(tmp_path):
    """An unreachable store and a tiny spool: with on_full="drop" new values are
    dropped and counted, the spool stays bounded, and logging never waits."""
    from object_store import free_port

    w = Writer("s3://bkt/full", storage_options={"endpoint_url": f"http://127.0.0.1:{free_port()}",
                                                 "key": "x", "secret": "x"},
               spool_dir=str(tmp_path / "sp"), segment_bytes=1024, max_spool=4096,
               on_full="drop", upload_timeout=1.0, retry_wait=(0.5, 1.0), close_timeout=0)
    t0 = time.monotonic()
    for i in range(20000):
        w.add_scalar("loss", 1.0, i)
        if i % 1000 == 0:
            w.pipeline.drain()
    took = time.monotonic() - t0
    st = w.stats
    w.close()
    held = sum(os.path.getsize(tmp_path / "sp" / n) for n in os.listdir(tmp_path / "sp")
               if not n.startswith("."))
    print(f"\nspool full (max_spool=4096, a drain per 1000 calls): {st['dropped_values']} "
          f"values dropped, {held} bytes held, 20000 calls in {took:.2f} s")
    # the bound is checked before each drain: one drain's records may pass it
    assert st["dropped_values"] > 0 and held <= 4096 + (64 << 10)
    assert took < 30, "hang guard"


def test_upload_cli_bad_input(tmp_path, capsys):
    from summarylog.cli_upload import main

    assert main([str(tmp_path)]) == 2  # not a spool
    assert "not a summarylog spool" in capsys.readouterr().err
    Writer("memory://bkt/cli", spool_dir=str(tmp_path / "sp")).close()
    assert main([str(tmp_path / "sp"), "-o", "novalue"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
