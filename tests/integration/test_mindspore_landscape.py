"""collect_landscape from summarylog.adapters.mindspore.SummaryCollector in real
MindSpore 2.10 training (its own venv): ckpt_dir made at construction, MindSpore's
.ckpt of every backbone parameter at the default points and at custom step and epoch
intervals (plus the end), train_metadata.json as MindSpore writes it, the saved
values equal to the network's at those steps, and MindSpore's OWN SummaryLandscape
computing landscapes from what we wrote.  Also the collector's sink-mode path (step_end
once per sink) through MindSpore's RunContext, two collectors and a bad mode."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

from summarylog import Reader
from summarylog.landscape import checkpoints
from venvs import require_venv, venv_env, venv_python

SCRIPTS = pathlib.Path(__file__).resolve().parent / "ms_scripts"
NAMES = ["fc1.weight", "fc1.bias", "bn.moving_mean", "bn.moving_variance", "bn.gamma",
         "bn.beta", "fc2.weight", "fc2.bias"]


@pytest.fixture(scope="module")
def ms_venv() -> pathlib.Path:
    return require_venv("mindspore")


def _run(venv, script, *args, cwd):
    r = subprocess.run([str(venv_python(venv)), str(SCRIPTS / script), *map(str, args)],
                       capture_output=True, text=True, cwd=str(cwd), timeout=900,
                       env=venv_env())
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


CASES = {  # case -> (unit, points saved (the last: the end of training), intervals)
    "default": ("step", [*range(1, 20), 24], [list(range(1, 10)), list(range(10, 20))]),
    "step": ("step", [2, 4, 6, 9, 13, 20, 24], [[2, 4, 6], [6, 9, 13, 20]]),
    "epoch": ("epoch", [1, 2, 3], [[1, 2, 3]]),
}


@pytest.fixture(scope="module", params=list(CASES))
def trained(request, ms_venv, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"ls_{request.param}")
    info = _run(ms_venv, "ms_landscape.py", "train", out, request.param, cwd=out)
    return request.param, out, info


def test_checkpoints_and_metadata(trained):
    case, out, info = trained
    unit, points, intervals = CASES[case]
    assert info["ckpt_dir_at_construction"] and info["names"] == NAMES
    ckpt = out / "run" / "ckpt_dir"
    assert sorted(os.listdir(ckpt)) == sorted(
        [f"Net_{p}_{unit}.ckpt" for p in points] + ["train_metadata.json"])
    meta = json.loads((ckpt / "train_metadata.json").read_text())
    assert list(meta) == ["epoch_group", "model_params_file_map", "step_per_epoch", "unit",
                          "num_samples", "landscape_size", "create_landscape"]
    assert meta["epoch_group"] == {str(i): v for i, v in enumerate(intervals)}
    assert meta["model_params_file_map"] == {str(p): str(ckpt / f"Net_{p}_{unit}.ckpt")
                                             for p in points}
    assert meta["step_per_epoch"] == 8 and meta["unit"] == unit
    for p in points:
        got = checkpoints.load(ckpt / f"Net_{p}_{unit}.ckpt")
        with np.load(out / "truth" / f"{unit}_{p}.npz") as truth:
            assert list(got) == NAMES
            for name in NAMES:
                np.testing.assert_array_equal(got[name], truth[name], err_msg=f"{p} {name}")


@pytest.mark.parametrize("trained", ["step", "epoch"], indirect=True)
def test_mindspores_summary_landscape_reads_ours(ms_venv, trained):
    case, out, _ = trained  # the training test_checkpoints_and_metadata checked
    info = _run(ms_venv, "ms_landscape.py", "landscape", out, cwd=out)
    assert len(info["new_files"]) >= 1
    _, _, intervals = CASES[case]
    final = intervals[-1][-1]
    want = {f"landscape_[{iv[0]}, {iv[-1]}]" for iv in intervals} | {f"landscape_[{final}]"}
    tags = Reader(out / "run").tags(".")
    assert {t for t, k in tags.items() if k == "landscape"} == want
    print(f"MindSpore's SummaryLandscape computed {sorted(want)} from our {case} checkpoints")


def test_sink_mode_path_two_collectors_and_a_bad_mode(ms_venv, tmp_path):
    info = _run(ms_venv, "ms_callbacks.py", tmp_path, cwd=tmp_path)
    r = Reader(tmp_path / "sink")
    s = r.scalars(".", "loss/auto")
    # once per sink: the epoch is the step of every collection
    assert s.step.tolist() == [1, 2, 3]
    np.testing.assert_allclose(s.value, [info["sink"]["losses"][str(e)] for e in (1, 2, 3)],
                               rtol=1e-6)
    assert sorted({int(e.step) for e in r.events(".") if e.tag == "weight/auto"}) == [1, 2, 3]
    # step-unit landscape points in sink mode: only multiples of the sink size (as MindSpore)
    ckpt = tmp_path / "sink" / "ckpt_dir"
    assert sorted(os.listdir(ckpt)) == ["Dense_12_step.ckpt", "Dense_4_step.ckpt",
                                        "Dense_8_step.ckpt", "train_metadata.json"]
    for step, w in info["sink"]["weights"].items():
        np.testing.assert_array_equal(checkpoints.load(ckpt / f"Dense_{step}_step.ckpt")["weight"],
                                      np.float32(w))
    meta = json.loads((ckpt / "train_metadata.json").read_text())
    assert sorted(map(int, meta["model_params_file_map"])) == [4, 8, 12]
    assert meta["step_per_epoch"] == 4
    assert info["two"].startswith("ValueError: There are more than one SummaryCollector")
    assert info["mode"].startswith("ValueError: Only support `train`")
    assert info["positional"] == [5, 8, True, False, None]
    assert info["num_process='8'"].startswith("TypeError") and "num_process" in info[
        "num_process='8'"]
    assert info["num_process=0"].startswith("ValueError")
