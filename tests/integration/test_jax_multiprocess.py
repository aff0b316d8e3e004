"""The JAX SummaryCollector under real multi-process JAX: two Python
processes join one ``jax.distributed`` job on this machine (CPU devices, gloo
collectives), each trains a tiny jitted optax model, and summarylog writes
per the process index: only process 0 by default, every process with
``process0_only=False``, the index as the file names' rank suffix.  Read
back with summarylog.Reader."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_module
from summarylog import Reader

require_module("jax")
require_module("optax")

import summarylog  # noqa: E402

SCRIPT = pathlib.Path(__file__).resolve().parent / "scripts" / "jax_multiprocess_child.py"
STEPS, FREQ = 25, 5
EXPECTED_STEPS = [s for s in range(1, STEPS + 1) if s == 1 or s % FREQ == 0]  # collector.py
PAIR_TIMEOUT = 25.0  # s per 2-process job (~2 s here); 3 jobs stay under 90 s even if all hang


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "RANK_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                        "SLURM_PROCID", "XLA_FLAGS", "JAX_COORDINATOR_ADDRESS",
                        "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")}
    env["JAX_PLATFORMS"] = "cpu"
    # the children import the same summarylog as this test process
    root = str(pathlib.Path(summarylog.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _run_pair(logdir: pathlib.Path, outdir: pathlib.Path, process0_only: bool,
              fmt: str = "tensorboard") -> list[dict]:
    """Both processes of one 2-process JAX job; their RESULT dicts by process id."""
    port = _free_port()
    env = _child_env()
    procs, outs = [], []
    try:
        for i in range(2):
            out, err = outdir / f"child{i}.out", outdir / f"child{i}.err"
            outs.append((out, err))
            with open(out, "wb") as fo, open(err, "wb") as fe:
                procs.append(subprocess.Popen(
                    [sys.executable, str(SCRIPT), str(logdir), str(port), str(i),
                     "1" if process0_only else "0", fmt],
                    stdout=fo, stderr=fe, env=env, cwd=str(outdir), start_new_session=True))
        deadline = time.monotonic() + PAIR_TIMEOUT
        while any(p.poll() is None for p in procs):
            if time.monotonic() > deadline:
                _kill(procs)
                tails = "\n".join(f"--- child {i} stderr ---\n{e.read_text()[-3000:]}"
                                  for i, (_, e) in enumerate(outs))
                pytest.fail(f"the 2-process JAX job did not finish in {PAIR_TIMEOUT} s\n{tails}")
            time.sleep(0.05)
    finally:
        _kill(procs)
    results = []
    for i, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, (f"child {i} exited with {p.returncode}\n"
                                   f"{err.read_text()[-4000:]}")
        lines = [ln for ln in out.read_text().splitlines() if ln.startswith("RESULT ")]
        assert len(lines) == 1, out.read_text()[-2000:]
        results.append(json.loads(lines[0][len("RESULT "):]))
    for i, r in enumerate(results):  # two real JAX processes of one job
        assert r["process_index"] == i and r["process_count"] == 2
        assert r["gathered"] == [0, 1]  # a cross-process collective went through
    assert results[0]["pid"] != results[1]["pid"]
    return results


def _file_pattern(r: dict, rank: int, fmt: str = "tensorboard") -> re.Pattern[str]:
    """The summary file name of process ``rank``: summarylog.Writer._file_name
    (TensorBoard, the JAX default) ``events.out.tfevents.<sec:010d>.<host>.<pid>.<seq>.<rank>``;
    SummaryRecord's _Files._name (MindInsight) ``events.out.events.summary.<sec>.<rank>.<host>_MS``."""
    host = re.escape(r["host"].replace("/", "_") or "localhost")
    if fmt == "mindinsight":
        return re.compile(rf"events\.out\.events\.summary\.\d+\.{rank}\.{host}_MS")
    return re.compile(rf"events\.out\.tfevents\.\d{{10}}\.{host}\.{r['pid']}\.\d+\.{rank}")


def _losses(r: dict, steps: list[int]) -> list[float]:
    return [r["losses"][str(s)] for s in steps]


@pytest.mark.parametrize("fmt", ["tensorboard", "mindinsight"])
def test_process0_only_by_default(tmp_path, fmt):
    logdir = tmp_path / "run"
    r0, r1 = _run_pair(logdir, tmp_path, process0_only=True, fmt=fmt)
    assert r0["enabled"] and not r1["enabled"]
    assert r1["files"] == [] and r1["collected"] == []
    assert r0["collected"] == EXPECTED_STEPS
    names = sorted(n for n in os.listdir(logdir) if n != "ckpt_dir")
    assert sorted(os.path.basename(f) for f in r0["files"]) == names  # process 1 wrote nothing
    (summary,) = [n for n in names if not n.endswith("_lineage")]
    assert _file_pattern(r0, 0, fmt).fullmatch(summary), summary
    if fmt == "mindinsight":  # and its lineage file beside it, same name but the suffix
        assert names == sorted([summary, summary[:-len("_MS")] + "_lineage"])
    else:
        assert names == [summary]
    reader = Reader(logdir)
    assert reader.runs() == ["."]
    s = reader.scalars(".", "loss/auto")
    assert s.step.tolist() == EXPECTED_STEPS
    np.testing.assert_allclose(s.value, _losses(r0, EXPECTED_STEPS), rtol=1e-6)
    assert not np.allclose(s.value, _losses(r1, EXPECTED_STEPS), rtol=1e-3)  # not process 1's


def test_every_process_writes_with_process0_only_false(tmp_path):
    logdir = tmp_path / "run"
    results = _run_pair(logdir, tmp_path, process0_only=False)
    # collect_landscape (on by default): process 0 alone saves the parameters
    assert sorted(os.listdir(logdir / "ckpt_dir")) == sorted(
        [f"Net_{s}_step.npz" for s in [*range(1, 20), STEPS]] + ["train_metadata.json"])
    names = sorted(n for n in os.listdir(logdir) if n != "ckpt_dir")
    assert len(names) == 2, names
    for rank, r in enumerate(results):
        assert r["enabled"] and r["collected"] == EXPECTED_STEPS
        (mine,) = [n for n in names if _file_pattern(r, rank).fullmatch(n)]
        assert [os.path.basename(f) for f in r["files"]] == [mine]
        s = Reader(logdir / mine).scalars(".", "loss/auto")
        assert s.step.tolist() == EXPECTED_STEPS
        np.testing.assert_allclose(s.value, _losses(r, EXPECTED_STEPS), rtol=1e-6)
    assert not np.allclose(_losses(results[0], EXPECTED_STEPS),
                           _losses(results[1], EXPECTED_STEPS), rtol=1e-3)
