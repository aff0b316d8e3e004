"""summarylog.SummaryRecord in real MindSpore 2.10 training (its own venv),
side by side with MindSpore's own SummaryRecord: a custom loop or a custom
callback calls nothing but ``record(step)``, and the values of the summary
operators in the network's ``construct`` (ScalarSummary, ImageSummary,
TensorSummary, HistogramSummary) are recorded, in graph and PyNative mode,
with the same tags, steps and values (read back by summarylog's Reader from
both runs).  Issue 24, item 6."""

from __future__ import annotations

import io
import json
import pathlib
import subprocess

import numpy as np
import pytest

from summarylog import Reader
from venvs import require_venv, venv_env, venv_python

SCRIPT = pathlib.Path(__file__).resolve().parent / "ms_record_scripts" / "ms_record.py"
TAGS = {"out_mean": "scalar", "input": "image", "out": "tensor", "fc_weight": "histogram"}


MODES, LOOPS = ("graph", "pynative"), ("loop", "callback", "collector")


@pytest.fixture(scope="module")
def ms_venv() -> pathlib.Path:
    return require_venv("mindspore")


def _run(venv, out, *args):
    r = subprocess.run([str(venv_python(venv)), str(SCRIPT), str(out), *args],
                       capture_output=True, text=True, cwd=str(out), timeout=600,
                       env=venv_env(), check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "duplicate values" not in r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ours(ms_venv, tmp_path_factory):
    """summarylog's records in every mode and loop, one MindSpore process for all
    (each case in its own directory, MODE-LOOP): {(mode, loop): (directory, result)}."""
    out = tmp_path_factory.mktemp("ours")
    cases = [f"{m}:{lp}" for m in MODES for lp in LOOPS]
    got = _run(ms_venv, out, ",".join(cases), "ours")
    return {tuple(c.split(":")): (out / c.replace(":", "-"), got[c]) for c in cases}


def _by_step_tag(reader):
    out = {}
    for e in reader.events("."):
        if e.tag in TAGS:
            assert (e.step, e.tag) not in out, f"{e.tag} recorded twice at step {e.step}"
            out[(e.step, e.tag)] = e
    return out


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


@pytest.mark.parametrize("loop", ["loop", "callback"])
@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_summary_operators_recorded_as_mindspores_record_does(ms_venv, ours, tmp_path, mode,
                                                             loop):
    theirs_info = _run(ms_venv, tmp_path, mode, loop, "mindspore")
    ours_dir, ours_info = ours[mode, loop]
    assert ours_info["losses"] == theirs_info["losses"]  # the same training
    mine, theirs = Reader(ours_dir / "ours"), Reader(tmp_path / "mindspore")
    assert mine.tags(".") == theirs.tags(".") == TAGS
    o, t = _by_step_tag(mine), _by_step_tag(theirs)
    assert sorted(o) == sorted(t) == [(s, tag) for s in range(1, 7) for tag in sorted(TAGS)]
    for key, e in o.items():
        f = t[key]
        if e.kind == "scalar":
            assert e.value == f.value, key
        elif e.kind == "tensor":
            np.testing.assert_array_equal(e.value, f.value)
            assert e.value.dtype == f.value.dtype
        elif e.kind == "histogram":
            assert e.value["buckets"] == f.value["buckets"], key
            assert (e.value["min"], e.value["max"], e.value["num"]) == (
                f.value["min"], f.value["max"], f.value["num"])
        else:
            assert (e.value["width"], e.value["height"]) == (f.value["width"], f.value["height"])
            np.testing.assert_array_equal(_pixels(e.value["pngs"][0]),
                                          _pixels(f.value["pngs"][0]))
    losses = mine.scalars(".", "out_mean")
    print(f"{mode}/{loop}: {len(o)} summary-operator values at steps 1-6, equal to "
          f"MindSpore's SummaryRecord's (out_mean {losses.value[0]:.4f} .. "
          f"{losses.value[-1]:.4f})")


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_a_collector_and_a_plain_record_take_each_value_once(ours, mode):
    """summarylog's SummaryCollector (its own source of the operators) and a
    plain SummaryRecord in a callback: MindSpore's cache is taken by whichever
    records first, so every step's values are recorded once, never twice."""
    run = ours[mode, "collector"][0]
    plain = _by_step_tag(Reader(run / "ours"))
    collector = _by_step_tag(Reader(run / "collector_ours"))
    assert not set(plain) & set(collector)
    assert sorted({s for s, _ in collector}) == [1, 2, 4, 6]  # collect_freq=2 (and step 1)
    assert sorted(set(plain) | set(collector)) == [
        (s, tag) for s in range(1, 7) for tag in sorted(TAGS)]
