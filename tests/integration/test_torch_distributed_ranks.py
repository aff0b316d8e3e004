"""Real torch.distributed (gloo, 2 processes, as torchrun starts them: RANK, WORLD_SIZE,
MASTER_ADDR/PORT) with each rank logging through summarylog with no rank given: the
Writer's files are per rank by default, and the Reader's ranks= results equal what each
rank logged, on the local run and on the same run read back from the S3 emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_module

CHILD = r"""
import json, os, sys
import torch, torch.distributed as dist
import summarylog
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
logged = []
with summarylog.Writer(sys.argv[1]) as w:          # no rank given: RANK says it
    for step in range(20):
        t = torch.tensor([float(rank + 1) * step])
        dist.all_reduce(t)                          # a real collective every step
        loss = float(t.item()) / world + rank       # differs per rank
        w.add_scalar("loss", loss, step)
        logged.append(loss)
    files = list(w.files)
dist.barrier()
dist.destroy_process_group()
json.dump({"rank": rank, "loss": logged, "files": files}, open(sys.argv[2], "w"))
"""

WORLD = 2  # 3 work too; 2 keep the cost of importing torch down


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dist_run(tmp_path_factory):
    require_module("torch")
    root = tmp_path_factory.mktemp("dist")
    logdir = str(root / "logs" / "run")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               WORLD_SIZE=str(WORLD), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    env["PYTHONSAFEPATH"] = "1"  # the installed summarylog, not a source tree in cwd
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, logdir, str(root / f"r{r}.json")],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), cwd=str(root),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(WORLD)]
    try:
        outs = [p.communicate(timeout=120)[0] for p in procs]  # hang guard
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out.decode(errors="replace")[-2000:]
    print(f"\ntorch.distributed gloo, {WORLD} ranks logging 20 steps: "
          f"{time.monotonic() - t0:.1f} s wall")
    logged = {}
    for r in range(WORLD):
        with open(root / f"r{r}.json") as f:
            doc = json.load(f)
        logged[doc["rank"]] = doc
    return str(root / "logs"), logged


def test_ranks_of_a_real_distributed_run(dist_run) -> None:
    from summarylog.reader import Reader

    logdir, logged = dist_run
    for r in range(WORLD):  # per-rank files by default: the rank in each file's name
        assert all(f.endswith(f".{r}") for f in logged[r]["files"])
    table = np.array([logged[r]["loss"] for r in range(WORLD)])
    for r in range(WORLD):
        assert Reader(logdir, ranks=r).scalars("run", "loss").value.tolist() == logged[r]["loss"]
    allr = Reader(logdir, ranks="all").scalars("run", "loss")
    for r in range(WORLD):
        assert allr.value[allr.rank == r].tolist() == logged[r]["loss"]
    for how, f in (("mean", np.mean), ("min", np.min), ("max", np.max)):
        got = Reader(logdir, ranks=how).scalars("run", "loss")
        assert got.step.tolist() == list(range(20))
        np.testing.assert_allclose(got.value, f(table, axis=0))


def test_the_same_run_read_back_from_s3(dist_run) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "remote"))
    from object_store import S3Server
    from read_helpers import upload

    from summarylog.reader import Reader
    from summarylog.remote.urls import filesystem

    logdir, logged = dist_run
    table = np.array([logged[r]["loss"] for r in range(WORLD)])
    with S3Server() as s3:
        s3.make_bucket("bkt")
        so = s3.storage_options()
        upload(filesystem("s3://bkt", so)[0], logdir, "bkt/dist")
        allr = Reader("s3://bkt/dist", ranks="all", storage_options=so).scalars("run", "loss")
        for r in range(WORLD):
            assert allr.value[allr.rank == r].tolist() == logged[r]["loss"]
        got = Reader("s3://bkt/dist", ranks="mean", storage_options=so).scalars("run", "loss")
        np.testing.assert_allclose(got.value, table.mean(axis=0))
        print(f"\ns3://: ranks=all and mean of {WORLD} torch.distributed ranks equal what "
              f"each rank logged")
