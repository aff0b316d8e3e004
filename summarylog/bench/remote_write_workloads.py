"""Remote write workloads: N scalars with 10 flushes to the S3 emulator, through
summarylog.Writer("s3://...") against torch.utils.tensorboard's SummaryWriter("s3://...")
(which uploads the whole file again at every flush).

The endpoint is ``$S3_ENDPOINT`` (torch's S3 support reads the same variable); without
it, a moto server (``moto[server]``) is started on 127.0.0.1 for the run.  Bytes sent
are counted at the client: our uploader's ``bytes_uploaded``; boto3's PutObject bodies
for the peer.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Iterator

from .moto import Moto, make_bucket
from .registry import Context, PeerMissing, Row, bench, need_peer
from .workloads import _ver

__all__ = ["bench_remote_write_s3"]

_CREDS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
          "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"}


@contextlib.contextmanager
def _endpoint(tmpdir: str) -> Iterator[str]:
    if os.environ.get("S3_ENDPOINT"):
        yield os.environ["S3_ENDPOINT"]
        return
    with Moto(tmpdir) as srv:
        yield srv.endpoint


def _log(w: Any, n: int) -> None:
    """The workload, the same for both writers: n scalars, 10 flushes, close."""
    every = max(1, n // 10)
    for i in range(n):
        w.add_scalar("loss", 0.5, i)
        if i % every == every - 1:
            w.flush()
    w.close()


def _ours(endpoint: str, n: int, key: str) -> tuple[float, int, int]:
    """(seconds, bytes uploaded, bytes of the run) of n scalars, 10 flushes, close."""
    from ..writer import Writer

    opts = {"endpoint_url": endpoint, "key": "test", "secret": "test",
            "client_kwargs": {"region_name": "us-east-1"}}
    t0 = time.perf_counter()
    w = Writer(f"s3://bench/{key}", storage_options=opts)
    _log(w, n)
    took = time.perf_counter() - t0
    st = w.stats
    return took, st["bytes_uploaded"], st["bytes_uploaded"]


def _peer(endpoint: str, n: int, key: str) -> tuple[float, int, int]:
    tut = need_peer("torch.utils.tensorboard")
    boto3 = need_peer("boto3", "pip install boto3")
    sent = [0]

    def count(request: Any, **_: Any) -> None:
        sent[0] += int(request.headers.get("Content-Length") or 0)

    # tensorboard's S3 filesystem reads $S3_ENDPOINT when it is made, once at its import
    # (perhaps by an earlier bench row): make one that sees this endpoint
    from tensorboard.compat.tensorflow_stub.io import gfile

    gfile.register_filesystem("s3", gfile.S3FileSystem())
    boto3.setup_default_session()
    boto3.DEFAULT_SESSION.events.register("before-send.s3.PutObject", count)
    t0 = time.perf_counter()
    w = tut.SummaryWriter(f"s3://bench/{key}")
    _log(w, n)
    took = time.perf_counter() - t0
    s3 = boto3.client("s3", endpoint_url=endpoint)
    size = sum(o["Size"] for o in s3.list_objects_v2(Bucket="bench", Prefix=key + "/")
               .get("Contents", []))
    return took, sent[0], size


@bench("remote_write_s3", goal=1.0, unit="logged B / sent B",
       peer="torch.utils.tensorboard SummaryWriter('s3://...')",
       description="N scalars, 10 flushes, to the S3 emulator: bytes sent per byte logged")
def bench_remote_write_s3(ctx: Context) -> list[Row]:
    """Bytes uploaded and wall time: summarylog's spool + sealed segments against
    torch.utils.tensorboard's whole-file re-upload at each flush."""
    n = ctx.pick(20_000, 2_000)
    ours_eff: list[float] = []
    ours_rate: list[float] = []
    peer_eff: list[float] = []
    peer_rate: list[float] = []
    status, label = "ok", "torch.utils.tensorboard"
    with _endpoint(ctx.tmpdir) as endpoint:
        make_bucket(endpoint, "bench")
        saved = {k: os.environ.get(k) for k in [*_CREDS, "S3_ENDPOINT"]}
        os.environ.update(_CREDS, S3_ENDPOINT=endpoint)
        try:
            for r in range(ctx.repeat):
                took, sent, size = _ours(endpoint, n, f"ours-{os.getpid()}-{r}")
                ours_eff.append(size / sent if sent else 0.0)
                ours_rate.append(n / took)
                try:
                    label = f"torch {_ver('torch')} utils.tensorboard"
                    took, sent, size = _peer(endpoint, n, f"peer-{os.getpid()}-{r}")
                    peer_eff.append(size / sent if sent else 0.0)
                    peer_rate.append(n / took)
                except PeerMissing as exc:
                    status = str(exc)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    ctx.log(f"remote_write_s3: {n:,} scalars, 10 flushes, {ctx.repeat} rounds")
    return [
        Row("remote_write_s3", "bytes logged / bytes sent", label, "logged B / sent B",
            ours_eff, peer_eff or None, status, paired=True,
            note=f"{n:,} scalars, 10 flushes: the peer re-sends its whole file per flush"),
        Row("remote_write_s3", "scalars/s incl. upload at close", label, "calls/s",
            ours_rate, peer_rate or None, status, primary=False, paired=True,
            note="wall time from the writer's creation to close() returning (uploads done)"),
    ]
