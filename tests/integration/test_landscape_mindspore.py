"""MindSpore 2.10 itself makes loss landscapes (SummaryCollector, then
SummaryLandscape: landscape_scripts/ms_landscape_run.py in the MindSpore venv), and
summarylog reads them back as Landscape objects and rewrites them byte for byte as
MindSpore wrote them but the wall time.  tests/data/ms210_landscape is one such file,
kept so the unit tests need no MindSpore; this test makes a fresh one."""

from __future__ import annotations

import pathlib
import subprocess

import numpy as np
import pytest

from summarylog.landscape import Landscape, write_landscapes
from summarylog.pb import ms
from summarylog.reader import Reader
from summarylog.records import RecordReader
from venvs import require_venv, venv_env, venv_python

SCRIPT = pathlib.Path(__file__).resolve().parent / "landscape_scripts" / "ms_landscape_run.py"
TAGS = ["landscape_[1, 4]", "landscape_[5, 8]", "landscape_[8]"]


@pytest.fixture(scope="module")
def ms_venv() -> pathlib.Path:
    return require_venv("mindspore")


def _records(path: pathlib.Path) -> list[bytes]:
    with RecordReader(str(path)) as rr:
        return [bytes(r) for r in rr]


def test_mindspore_made_landscapes_read_and_rewritten(ms_venv: pathlib.Path,
                                                      tmp_path: pathlib.Path) -> None:
    run = tmp_path / "ms"
    run.mkdir()
    r = subprocess.run([str(venv_python(ms_venv)), str(SCRIPT), str(run)], capture_output=True,
                       text=True, cwd=str(run), timeout=600, env=venv_env())
    assert r.returncode == 0, r.stderr[-3000:]
    summaries = sorted(p for p in run.iterdir() if p.name.endswith("_MS"))
    # the training's file, then SummaryLandscape's; MindSpore names files by the second,
    # and within one second its landscape file replaces the training's (seen under load)
    assert 1 <= len(summaries) <= 2
    got = Reader(str(run)).landscapes(".")
    assert list(got) == TAGS
    for tag, [(step, ls)] in got.items():
        assert step == 0 and ls.z.shape == (4, 4) and np.isfinite(ls.z).all(), tag
    assert [got[t][0][1].decomposition for t in TAGS] == ["PCA", "PCA", "Random"]
    theirs = _records(summaries[-1])
    values = [v for rec in theirs[1:] for v in ms.Event.FromString(rec).summary.value]
    assert [v.tag for v in values] == TAGS
    for v in values:
        ls = Landscape.from_message(v.tag, v.loss_landscape)
        assert ls.to_message().SerializeToString() == v.loss_landscape.SerializeToString()
    write_landscapes(tmp_path / "ours", [got[t][0][1] for t in TAGS])
    [ours_file] = [p for p in (tmp_path / "ours").iterdir() if p.name.endswith("_MS")]
    ours = _records(ours_file)
    assert len(ours) == len(theirs)
    assert all(a[9:] == b[9:] for a, b in zip(ours, theirs))  # all but the wall time
    print(f"MindSpore 2.10's fresh landscapes ({', '.join(TAGS)}): read, and rewritten as "
          f"{sum(map(len, ours))} bytes equal to MindSpore's but the wall time")
