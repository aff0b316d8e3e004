"""The PyTorch SummaryCollector under real torch.distributed: two processes
(gloo, tcp://127.0.0.1) each train a DistributedDataParallel nn.Linear with
``SummaryCollector(..., collect_freq=5)`` for 25 steps
(tests/integration/scripts/torch_ddp_child.py).  With ``rank0_only=True``
only rank 0 writes, one file named ``...<pid>.<seq>.0``; with
``rank0_only=False`` each rank writes its own ``.<rank>`` file with its own
losses.  The rank comes from torch.distributed alone: the children get no
RANK / WORLD_SIZE variables."""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_module
from summarylog import Reader

torch = require_module("torch")

SCRIPT = pathlib.Path(__file__).with_name("scripts") / "torch_ddp_child.py"
WORLD = 2
STEPS = 25
LOSS_STEPS = [1, 5, 10, 15, 20, 25]  # the first step, then every collect_freq-th
DEADLINE = 45.0  # seconds for both ranks, start to exit
#: variables from which summarylog could guess a rank without torch.distributed
RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    """The parent's environment (the installed summarylog, not the source
    tree), without rank variables, one thread per rank."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    for var in RANK_VARS:
        env.pop(var, None)
    env["OMP_NUM_THREADS"] = "1"
    if os.path.exists("/sys/class/net/lo"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    return env


def _launch(logdir: pathlib.Path, work: pathlib.Path, rank0_only: bool) -> list[dict]:
    """Run both ranks; return each rank's report (rank order)."""
    port = _free_port()
    procs, outs = [], []
    for rank in range(WORLD):
        out = work / f"rank{rank}.json"
        log = open(work / f"rank{rank}.log", "w")
        procs.append((subprocess.Popen(
            [sys.executable, str(SCRIPT), str(logdir), str(rank), str(WORLD), str(port),
             "1" if rank0_only else "0", str(out), str(STEPS)],
            cwd="/", env=_child_env(), stdout=log, stderr=subprocess.STDOUT), log))
        outs.append(out)
    deadline = time.monotonic() + DEADLINE
    try:
        for p, _ in procs:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
            log.close()
    logs = "\n".join(f"--- rank {r} (exit {p.returncode}):\n"
                     f"{(work / f'rank{r}.log').read_text()[-3000:]}"
                     for r, (p, _) in enumerate(procs))
    if any(p.returncode != 0 for p, _ in procs):
        raise AssertionError(f"a rank failed or timed out after {DEADLINE}s:\n{logs}")
    reports = [json.loads(o.read_text()) for o in outs]
    for r, (rep, (p, _)) in enumerate(zip(reports, procs)):
        assert rep["pid"] == p.pid and rep["rank"] == r
        assert rep["rank_seen"] == r and rep["world_size"] == WORLD, rep
    return reports


def _run(tmp_path_factory, rank0_only: bool) -> tuple[pathlib.Path, list[dict]]:
    """(logdir, reports) of one two-process run."""
    work = tmp_path_factory.mktemp("rank0_only" if rank0_only else "every_rank")
    logdir = work / "run"
    for attempt in range(2):  # the free port may be taken between pick and bind
        try:
            return logdir, _launch(logdir, work, rank0_only)
        except AssertionError as exc:
            if attempt or "address already in use" not in str(exc).lower():
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def rank0_run(tmp_path_factory):
    return _run(tmp_path_factory, rank0_only=True)


@pytest.fixture(scope="module")
def every_rank_run(tmp_path_factory):
    return _run(tmp_path_factory, rank0_only=False)


def _name_re(pid: int, rank: int) -> re.Pattern[str]:
    """Writer._file_name: events.out.tfevents.<sec:010d>.<host>.<pid>.<seq>.<rank>."""
    host = re.escape(socket.gethostname().replace("/", "_") or "localhost")
    return re.compile(rf"events\.out\.tfevents\.\d{{10}}\.{host}\.{pid}\.\d+\.{rank}")


def _check_file(path: pathlib.Path, report: dict, other: dict) -> None:
    """The file holds this rank's losses at LOSS_STEPS and its lineage."""
    r = Reader(path)
    loss = r.scalars(".", "loss/auto")
    assert loss.step.tolist() == LOSS_STEPS
    mine = np.float32([report["losses"][str(s)] for s in LOSS_STEPS])
    theirs = np.float32([other["losses"][str(s)] for s in LOSS_STEPS])
    np.testing.assert_array_equal(np.float32(loss.value), mine)
    assert not np.array_equal(mine, theirs)  # the ranks' data (and losses) differ
    hp = [e.value for e in r.events(".") if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][-1]["session_start_info"]["hparams"]
    assert start["device_num"] == WORLD and start["parallel_mode"] == "data_parallel"


def _event_files(logdir):
    """The run's files but ckpt_dir (collect_landscape's, on by default; rank 0's alone)."""
    return sorted(n for n in os.listdir(logdir) if n != "ckpt_dir")


@pytest.mark.parametrize("which", ["rank0_run", "every_rank_run"])
def test_landscape_checkpoints_from_rank_0_alone(which, request):
    logdir, _ = request.getfixturevalue(which)
    names = sorted(os.listdir(logdir / "ckpt_dir"))
    assert names == sorted([f"Linear_{s}_step.pt" for s in [*range(1, 20), 25]]
                           + ["train_metadata.json"])


def test_rank0_only_one_file_from_rank_0(rank0_run):
    logdir, (r0, r1) = rank0_run
    names = _event_files(logdir)
    assert len(names) == 1, names
    assert _name_re(r0["pid"], 0).fullmatch(names[0]), names
    assert r0["enabled"] and r0["files"] == [str(logdir / names[0])]
    assert not r1["enabled"] and r1["files"] == []  # rank 1 writes nothing
    assert Reader(logdir).runs() == ["."]
    _check_file(logdir / names[0], r0, r1)


def test_every_rank_its_own_file(every_rank_run):
    logdir, reports = every_rank_run
    names = _event_files(logdir)
    assert len(names) == WORLD, names
    for rank, rep in enumerate(reports):
        (name,) = [n for n in names if _name_re(rep["pid"], rank).fullmatch(n)]
        assert rep["enabled"] and rep["files"] == [str(logdir / name)]
        _check_file(logdir / name, rep, reports[1 - rank])


def test_graph_of_a_ddp_model(rank0_run):
    logdir, _ = rank0_run
    (name,) = _event_files(logdir)
    assert [e for e in Reader(logdir / name).events(".") if e.kind == "graph"]


def test_lineage_network_of_a_ddp_model(rank0_run):
    logdir, _ = rank0_run
    (name,) = _event_files(logdir)
    hp = [e.value for e in Reader(logdir / name).events(".") if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][-1]["session_start_info"]["hparams"]
    assert start["network"] == "Linear"


def test_histogram_names_of_a_ddp_model(rank0_run):
    """Parameters are named as in the wrapped network (no DDP "module." prefix)."""
    logdir, _ = rank0_run
    (name,) = _event_files(logdir)
    tags = Reader(logdir / name).tags(".")
    assert {"weight/auto", "bias/auto"} <= set(tags), tags
    assert not [t for t in tags if t.startswith("module.")], tags
