"""Read-side faults through FaultProxy in front of the S3 and GCS emulators: 503s and
dropped connections during the listing and the ranged reads are retried; a stalled
endpoint gives a clear TimeoutError after the deadline, never a hang."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from object_store import GCS_503, S3_SLOWDOWN, FaultProxy, gcs, s3  # noqa: F401 (fixtures)
from read_helpers import upload, write_run

from summarylog.reader import Reader
from summarylog.remote.urls import filesystem

DEADLINE = 3.0


@pytest.fixture(scope="module")
def servers(s3, gcs):
    return {"s3": s3, "gcs": gcs}


@pytest.fixture(params=["s3", "gcs"])
def run(request, servers, tmp_path_factory):
    """(kind, server, proxy, url, local copy): a 3-object run uploaded, a proxy in front."""
    kind, srv = request.param, servers[request.param]
    local = str(tmp_path_factory.mktemp("faults"))
    write_run(local, "r", steps=300, files=3)
    upload(filesystem(f"{kind}://bkt", srv.storage_options())[0], local, f"bkt/f-{kind}")
    proxy = FaultProxy(srv.port).start()
    yield kind, srv, proxy, f"{kind}://bkt/f-{kind}", local
    proxy.stop()


def _options(kind, srv, proxy):
    so = srv.storage_options(proxy.endpoint)
    if kind == "s3":
        so["config_kwargs"] = {"connect_timeout": 1, "read_timeout": 2,
                               "retries": {"total_max_attempts": 2, "mode": "standard"}}
    else:
        so["requests_timeout"] = 2
    return so


def _new_object(kind, srv, url, tmp_path, steps):
    """A new event file of ``steps`` points put into the run "r" on the server (not
    through the proxy): its name and bytes."""
    write_run(str(tmp_path), "r", steps=steps)
    (new,) = os.listdir(tmp_path / "r")
    data = (tmp_path / "r" / new).read_bytes()
    filesystem(url, srv.storage_options())[0].pipe_file(f"bkt/f-{kind}/r/{new}", data)
    return new, data


def _body(kind):
    return S3_SLOWDOWN if kind == "s3" else GCS_503


def test_503_and_drops_are_retried(run) -> None:
    kind, srv, proxy, url, local = run
    so = _options(kind, srv, proxy)
    want = Reader(local).scalars("r", "loss").value
    # the listing answered 503 twice, then the first ranged reads 503 and dropped
    # (GCS: once; gcsfs's own backoff, 1 s then 2 s, would dominate the suite's time)
    proxy.fail_next(2 if kind == "s3" else 1, 503, _body(kind),
                    "application/xml" if kind == "s3" else "application/json")
    t0 = time.monotonic()
    r = Reader(url, storage_options=so, remote_options={"timeout": 30})
    assert r.runs() == ["r"] and not r.discovery_errors
    proxy.drop_next(1)
    proxy.fail_next(1, 503, _body(kind))
    write_run(local + "2", "r", steps=50)  # a new object: the next poll reads it
    (new,) = os.listdir(os.path.join(local + "2", "r"))
    with open(os.path.join(local + "2", "r", new), "rb") as f:
        filesystem(url, srv.storage_options())[0].pipe_file(
            f"bkt/f-{kind}/r/{new}", f.read())
    r.refresh()
    got = r.scalars("r", "loss").value
    took = time.monotonic() - t0
    acts = [a for _, _, a, _ in proxy.log]
    print(f"\n{kind}: 503 x{2 if kind == 's3' else 1} on the listing, 503 + a dropped connection on ranged reads: "
          f"all {len(got)} points read in {took:.1f} s, {len(proxy.log)} requests "
          f"({acts.count('fail')} failed, {acts.count('drop')} dropped)")
    assert not r.discovery_errors
    np.testing.assert_array_equal(got[:len(want)], want)
    assert len(got) == len(want) + 50


def test_stalled_listing_is_a_clear_timeout(run) -> None:
    kind, srv, proxy, url, _ = run
    proxy.stall_next(50)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        Reader(url, storage_options=_options(kind, srv, proxy),
               remote_options={"timeout": DEADLINE})
    took = time.monotonic() - t0
    proxy.clear()
    print(f"\n{kind}: stalled listing: {info.value} after {took:.1f} s (deadline {DEADLINE} s)")
    assert url in str(info.value) and "no answer within" in str(info.value)
    assert took < 60  # hang guard


def test_stalled_ranged_read_is_reported_not_hung(run, tmp_path) -> None:
    kind, srv, proxy, url, _ = run
    r = Reader(url, storage_options=_options(kind, srv, proxy),
               remote_options={"timeout": DEADLINE, "retries": 0})
    assert r.runs() == ["r"]
    full = len(r.scalars("r", "loss").step)
    # a new object whose ranged read stalls: reported with its URL, the rest still read
    new, _ = _new_object(kind, srv, url, tmp_path, steps=10)
    t0 = time.monotonic()
    r.refresh()
    # the listing passes (1 request), the one ranged read stalls
    proxy.fail_next(0)
    proxy.actions.append(("pass",))
    proxy.stall_next(20)
    runs = r.runs()
    errs = [str(e) for e in r.discovery_errors]  # once the poll's fetching is over
    took = time.monotonic() - t0
    proxy.clear()
    print(f"\n{kind}: stalled ranged read: {errs} after {took:.1f} s; the run still reads "
          f"{full} points")
    assert runs == ["r"] and len(r.scalars("r", "loss").step) == full
    assert len(errs) == 1 and new in errs[0] and "no answer within" in errs[0]
    assert isinstance(r.discovery_errors[0], TimeoutError)
    assert took < 60  # hang guard


@pytest.mark.parametrize("run", ["s3"], indirect=True)  # gcsfs retries a cut answer itself
def test_object_cut_mid_answer_keeps_its_prefix_then_completes(run, tmp_path) -> None:
    """A whole object streamed from S3 whose answer is cut mid-body: the bytes that
    came stay mirrored, the cut is reported with the URL, and the next poll fetches
    only the rest."""
    kind, srv, proxy, url, _ = run
    r = Reader(url, storage_options=_options(kind, srv, proxy),
               remote_options={"timeout": 30, "retries": 0})
    assert r.runs() == ["r"]
    full = len(r.scalars("r", "loss").step)
    new, data = _new_object(kind, srv, url, tmp_path, steps=2000)
    proxy.fail_next(0)
    proxy.actions.append(("pass",))  # the listing
    proxy.cut_response_next(1, after_bytes=len(data) // 2)
    r.refresh()
    cut_runs = r.runs()
    errs = [str(e) for e in r.discovery_errors]
    before = r.remote_stats.bytes_fetched
    proxy.clear()
    r.refresh()
    assert r.runs() == ["r"] and not r.discovery_errors
    again = r.remote_stats.bytes_fetched - before
    got = len(r.scalars("r", "loss").step)
    print(f"\n{kind}: a {len(data)}-byte object cut mid-answer: {len(errs)} error(s); the "
          f"next poll fetched {again} bytes and read all {got} points")
    assert cut_runs == ["r"] and len(errs) == 1 and new in errs[0]
    assert 0 < again < len(data)  # only what the cut answer lacked
    assert got == full + 2000
