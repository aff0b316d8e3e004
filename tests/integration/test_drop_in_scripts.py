"""Real scripts written for torch.utils.tensorboard run unchanged with summarylog's
SummaryWriter: only the import line is swapped.  Each script runs twice, once per
writer, and the two log directories hold the same runs, tags, kinds and scalar values
(wall times aside; a sub-run named after time.time(), as add_hparams names it, compared
by shape).  Values of every kind are compared in TensorBoard's backend by
test_summary_writer_tb.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_module

import summarylog

HERE = Path(__file__).parent / "dropin"
TORCH_IMPORT = "from torch.utils.tensorboard import SummaryWriter"
OURS_IMPORT = "from summarylog import SummaryWriter"
_TIME_RUN = re.compile(r"(^|/)\d{10}\.\d+($|/)")


def _run(script: str, workdir: Path, ours: bool) -> None:
    src = (HERE / script).read_text()
    assert TORCH_IMPORT in src
    if ours:
        src = src.replace(TORCH_IMPORT, OURS_IMPORT)
    workdir.mkdir()
    path = workdir / script
    path.write_text(src)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    cp = subprocess.run([sys.executable, str(path)], cwd=workdir, capture_output=True,
                        text=True, timeout=600, env=env)
    assert cp.returncode == 0, f"{script} ({'ours' if ours else 'torch'}):\n{cp.stderr[-3000:]}"


def _contents(root: Path) -> dict:
    """{run: {tag: (kind, steps, scalar values or None)}} and the projector's files."""
    reader = summarylog.Reader(str(root))
    out: dict = {}
    for run in reader.runs():
        if "projector" in run:
            continue
        series: dict = {}
        for e in reader.events(run):
            if e.kind in ("file_version", "session_log"):
                continue
            kind, steps, values = series.setdefault(e.tag, (e.kind, [], []))
            steps.append(e.step)
            if e.kind == "scalar":
                values.append(e.value)
        assert not reader.damage(run) or all(not r.damage for r in reader.damage(run).values())
        out[_TIME_RUN.sub(r"\1<time>\2", run)] = series
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if p.is_file() and "tfevents" not in p.name)
    return {"runs": out, "files": files}


def _compare(theirs: dict, ours: dict) -> int:
    assert ours["files"] == theirs["files"]
    assert sorted(ours["runs"]) == sorted(theirs["runs"])
    n = 0
    for run, series in theirs["runs"].items():
        mine = ours["runs"][run]
        assert sorted(mine) == sorted(series), run
        for tag, (kind, steps, values) in series.items():
            assert mine[tag][0] == kind, (run, tag)
            assert mine[tag][1] == steps, (run, tag)
            # float32 on both sides where the peers keep float32
            np.testing.assert_allclose(mine[tag][2], values, rtol=1e-6, err_msg=f"{run} {tag}")
            n += 1
    return n


@pytest.mark.parametrize("script", ["tutorial.py", "training_loop.py", "hparams_sweep.py"])
def test_script_runs_unchanged_and_logs_what_torch_logs(tmp_path, script) -> None:
    require_module("torch")
    require_module("matplotlib")
    _run(script, tmp_path / "torch", ours=False)
    _run(script, tmp_path / "ours", ours=True)
    n = _compare(_contents(tmp_path / "torch" / "runs"), _contents(tmp_path / "ours" / "runs"))
    print(f"{script}: {n} tags in the same runs with the same kinds, steps and values")
