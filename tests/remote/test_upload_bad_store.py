"""A store that can't take writes (missing bucket, no credentials, unreachable
endpoint): one clear error at the first write (raised with strict=True, else
logged once and counted), and nothing logged is lost: it waits in the spool and
goes up once the store works."""

from __future__ import annotations

import logging
import os

import pytest

from object_store import GCSServer, S3Server, free_port
from upload_helpers import scalar_steps, segment_objects

from summarylog import Writer
from summarylog.cli_upload import main as upload_main


@pytest.fixture(scope="module")
def servers():
    with S3Server() as s3, GCSServer() as gcs:
        yield {"s3": s3, "gs": gcs}


def _log_steps(w: Writer, steps: range) -> None:
    for i in steps:
        w.add_scalar("loss", 1.0, i)


@pytest.mark.parametrize("kind, strict", [("s3", True), ("s3", False), ("gs", True)])
def test_missing_bucket_then_created(kind, strict, servers, tmp_path, caplog):
    srv = servers[kind]
    bucket = f"late-{kind}-{int(strict)}"
    url = f"{kind}://{bucket}/run"
    w = Writer(url, storage_options=srv.storage_options(), spool_dir=str(tmp_path / "sp"),
               strict=strict, retry_wait=(0.05, 0.3), segment_bytes=1024)
    _log_steps(w, range(0, 500))
    with caplog.at_level(logging.WARNING, logger="summarylog"):
        if strict:
            with pytest.raises(OSError, match="does not exist") as err:
                w.flush()
            message = str(err.value)
        else:
            w.flush()
            message = caplog.records[-1].getMessage()
        _log_steps(w, range(500, 1000))
        w.flush()  # the error is not repeated while the outage lasts
        w.pipeline.drain()
    warnings = [r for r in caplog.records if "cannot upload" in r.getMessage()]
    assert len(warnings) == 1 and w.stats["upload_errors"] == 1
    assert w.stats["segments_uploaded"] == 0 and w.stats["spool_bytes"] > 0
    srv.make_bucket(bucket)
    _log_steps(w, range(1000, 1500))
    w.close()
    steps = scalar_steps(segment_objects(url, srv.storage_options()))
    print(f"\n{kind} missing bucket (strict={strict}): one error: {message[:110]}...; "
          f"after the bucket was made: {len(steps)} of 1500 steps arrived once")
    assert steps == list(range(1500))


def _s3_options_without_credentials(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "client_kwargs": {"region_name": "us-east-1"}}


def test_missing_credentials(servers, tmp_path, monkeypatch):
    s3 = servers["s3"]
    s3.make_bucket("creds")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    spool = tmp_path / "sp"
    w = Writer("s3://creds/run", storage_options=_s3_options_without_credentials(s3.endpoint),
               spool_dir=str(spool), strict=True, close_timeout=0, upload_timeout=5)
    _log_steps(w, range(100))
    with pytest.raises(OSError, match="no credentials") as err:
        w.flush()
    w.close()
    assert [n for n in os.listdir(spool) if not n.startswith(".")]  # waiting, not lost
    assert upload_main([str(spool), "-o", f"endpoint_url={s3.endpoint}", "-o", "key=test",
                        "-o", "secret=test", "-o", "client_kwargs.region_name=us-east-1"]) == 0
    steps = scalar_steps(segment_objects("s3://creds/run", s3.storage_options()))
    print(f"\nno credentials: {str(err.value)[:100]}...; with them, `summarylog upload`: "
          f"{len(steps)} of 100 steps")
    assert steps == list(range(100))


@pytest.mark.parametrize("kind", ["s3", "gs"])
def test_unreachable_endpoint(kind, servers, tmp_path):
    srv = servers[kind]
    dead = f"http://127.0.0.1:{free_port()}"
    spool = tmp_path / "sp"
    bucket = f"reach-{kind}"
    srv.make_bucket(bucket)
    w = Writer(f"{kind}://{bucket}/run", storage_options=srv.storage_options(dead),
               spool_dir=str(spool), strict=True, close_timeout=0, upload_timeout=1.5,
               retry_wait=(0.05, 0.3))
    _log_steps(w, range(100))
    with pytest.raises(OSError, match="cannot upload") as err:
        w.flush()
    w.close()
    opts = ["-o", f"endpoint_url={srv.endpoint}"] + (
        ["-o", "key=test", "-o", "secret=test", "-o", "client_kwargs.region_name=us-east-1"]
        if kind == "s3" else ["-o", "token=anon", "-o", "project=test"])
    assert upload_main([str(spool), *opts]) == 0
    steps = scalar_steps(segment_objects(f"{kind}://{bucket}/run", srv.storage_options()))
    print(f"\n{kind} unreachable endpoint: {str(err.value)[:100]}...; later: "
          f"{len(steps)} of 100 steps uploaded once")
    assert steps == list(range(100))
