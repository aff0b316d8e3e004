"""Write-side faults between the uploader and the store (tests/object_store.FaultProxy
in front of the S3 and GCS emulators): every segment still arrives exactly once and
the training thread never waits on the network."""

from __future__ import annotations

import threading
import time

import pytest

from object_store import GCS_503, S3_SLOWDOWN, FaultProxy, gcs, s3  # noqa: F401 (fixtures)
from upload_helpers import scalar_steps, segment_objects

from summarylog import Writer


@pytest.fixture(scope="module")
def servers(s3, gcs):
    return {"s3": s3, "gs": gcs}


def _arm(proxy: FaultProxy, kind: str, fault: str) -> None:
    if fault == "503":  # gcsfs backs off ~1 s per 503 itself: one is enough to show it
        proxy.fail_next(2 if kind == "s3" else 1, 503,
                        S3_SLOWDOWN if kind == "s3" else GCS_503,
                        "application/xml" if kind == "s3" else "application/json")
    elif fault == "drop_mid_body":
        proxy.drop_next(1, after_body_bytes=1000)
    elif fault == "drop_response":  # the store commits; the client never hears it
        proxy.drop_response_next(1)
    elif fault == "stall":  # s3fs: no 100 Continue (it would wait forever); gcsfs: no answer
        (proxy.stall_head_next if kind == "s3" else proxy.stall_next)(1)


@pytest.mark.parametrize("fault", ["503", "drop_mid_body", "drop_response", "stall"])
@pytest.mark.parametrize("kind", ["s3", "gs"])
def test_fault_during_upload(kind, fault, servers, tmp_path):
    srv = servers[kind]
    proxy = FaultProxy(srv.port).start()
    url = f"{kind}://bkt/fault-{fault}"
    n = 3000
    try:
        w = Writer(url, storage_options=srv.storage_options(proxy.endpoint),
                   spool_dir=str(tmp_path / "sp"), upload_timeout=2.0,
                   retry_wait=(0.05, 0.5), segment_bytes=1024)
        w.flush()  # the store's check has gone through the proxy: the fault hits an upload
        before = len(proxy.log)
        _arm(proxy, kind, fault)
        t0 = time.monotonic()
        for i in range(n):  # segments are sealed and sent while the loop goes on
            w.add_scalar("loss", float(i), i)
            if i % 300 == 299:
                w.flush()
        caller = time.monotonic() - t0
        done = threading.Event()
        closer = threading.Thread(target=lambda: (w.close(), done.set()), daemon=True)
        t1 = time.monotonic()
        closer.start()
        assert done.wait(60), "hang guard: close()"
        upload = time.monotonic() - t1
        requests = len(proxy.log) - before
    finally:
        proxy.stop()
    st = w.stats
    objs = segment_objects(url, srv.storage_options())
    steps = scalar_steps(objs)
    print(f"\n{kind} {fault}: logging {n} values + flush {caller * 1e3:.0f} ms; upload done "
          f"in {upload:.2f} s with {requests} requests, {st['upload_retries']} retries; "
          f"{st['already_uploaded']} found already there; "
          f"{len(objs)} segment(s), {len(steps)} steps, duplicates "
          f"{len(steps) - len(set(steps))}")
    assert steps == list(range(n)), (sorted(objs), st)  # every step, once
    assert st["segments_uploaded"] == st["segments_sealed"] == len(objs)
    assert st["conflicts"] == 0
    if fault == "drop_response":  # the retry met its own committed object: confirmed, kept
        assert st["already_uploaded"] >= 1
    assert caller < 30, "hang guard: the training thread"


def test_full_spool_blocks_with_on_full_block(servers, tmp_path):
    """on_full="block" and a stalled store: once the spool is full the logging calls
    wait (the bounded queue fills behind the writer thread); when the store comes
    back they go on, and nothing is dropped."""
    srv = servers["s3"]
    proxy = FaultProxy(srv.port).start()
    url = "s3://bkt/block"
    n = 30000
    try:
        w = Writer(url, storage_options=srv.storage_options(proxy.endpoint),
                   spool_dir=str(tmp_path / "sp"), segment_bytes=1024, max_spool=4096,
                   max_buffer=1 << 20, upload_timeout=0.5, retry_wait=(0.05, 0.2))
        w.flush()
        proxy.stall_head_next(1000)
        done = threading.Event()

        def loop():
            for i in range(n):
                w.add_scalar("loss", float(i), i)
            done.set()

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        blocked = not done.wait(1.5)
        spool_then = w.stats["spool_bytes"]
        proxy.clear()
        assert done.wait(60), "hang guard: the logging loop after the store came back"
        w.close()
    finally:
        proxy.stop()
    steps = scalar_steps(segment_objects(url, srv.storage_options()))
    print(f"\non_full='block', stalled store, max_spool=4096: logging blocked={blocked} "
          f"(spool {spool_then} bytes); after the store came back: {len(steps)} of {n} "
          f"steps, {w.stats['dropped_values']} dropped")
    assert blocked and steps == list(range(n)) and w.stats["dropped_values"] == 0
