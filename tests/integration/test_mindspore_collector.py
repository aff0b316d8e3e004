"""summarylog.adapters.mindspore.SummaryCollector in real MindSpore 2.10
training (its own venv), side by side with MindSpore's own SummaryCollector
on the same run: same steps, same values, same lineage; both dialects; graph
and PyNative mode; sink mode; MindInsight opens the result."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

from summarylog import Reader
from venvs import require_venv, venv_env, venv_python

SCRIPT = pathlib.Path(__file__).resolve().parent / "ms_scripts" / "ms_collector.py"


@pytest.fixture(scope="module")
def ms_venv() -> pathlib.Path:
    return require_venv("mindspore")


def _train(venv, out, fmt, mode, sink, which):
    r = subprocess.run([str(venv_python(venv)), str(SCRIPT), str(out), fmt, mode, sink, which],
                       capture_output=True, text=True, cwd=str(out), timeout=900,
                       env=venv_env())
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def side_by_side(ms_venv, tmp_path_factory):
    out = tmp_path_factory.mktemp("collectors")
    return out, _train(ms_venv, out, "mindinsight", "pynative", "0", "both")


def _events(reader, tag):
    return [(e.step, e.value) for e in reader.events(".") if e.tag == tag]


def test_same_steps_values_and_tags_as_mindspores_collector(side_by_side):
    out, info = side_by_side
    ours, theirs = Reader(out / "ours"), Reader(out / "mindspore")
    assert info["ours"]["losses"] == info["mindspore"]["losses"]  # the same training run
    assert sorted(ours.tags(".")) == sorted(theirs.tags("."))
    o, t = ours.scalars(".", "loss/auto"), theirs.scalars(".", "loss/auto")
    assert o.step.tolist() == t.step.tolist() == [1, *range(4, 37, 4)]
    np.testing.assert_array_equal(o.value, t.value)
    losses = info["ours"]["losses"]
    np.testing.assert_array_equal(o.value, np.float32([losses[str(s)] for s in o.step]))
    # histograms of the parameters histogram_regular="^fc" selects, at the same steps
    hist_tags = {t for t, k in ours.tags(".").items() if k == "histogram" and t.endswith("/auto")}
    assert hist_tags == {"fc.weight/auto", "fc.bias/auto"}
    for tag in hist_tags:
        a, b = _events(ours, tag), _events(theirs, tag)
        assert sorted({s for s, _ in a}) == sorted({s for s, _ in b})
        last_a, last_b = dict(a), dict(b)
        for step in last_a:
            assert last_a[step]["buckets"] == last_b[step]["buckets"]
    # summary operators: scalars at every collection, tensors at most 20 times
    assert ours.scalars(".", "act_mean").step.tolist() == theirs.scalars(".", "act_mean").step.tolist()
    np.testing.assert_array_equal(ours.scalars(".", "act_mean").value,
                                  theirs.scalars(".", "act_mean").value)
    tensor_steps = sorted({s for s, _ in _events(ours, "logits")})
    assert tensor_steps == sorted({s for s, _ in _events(theirs, "logits")})
    assert 0 < len(tensor_steps) <= 20
    assert [s for s, _ in _events(ours, "input_data/auto")][:1] == [1]


def test_same_landscape_checkpoints_as_mindspores_collector(side_by_side):
    """collect_landscape is on by default in both: the same .ckpt names, parameters and
    values at steps 1-19, and the same train_metadata.json (ours adds the end, step 36)."""
    from summarylog.landscape import checkpoints

    out, _ = side_by_side
    ours, theirs = out / "ours" / "ckpt_dir", out / "mindspore" / "ckpt_dir"
    names = sorted(f"Net_{s}_step.ckpt" for s in range(1, 20))
    assert sorted(n for n in os.listdir(theirs) if n.endswith(".ckpt")) == names
    assert sorted(n for n in os.listdir(ours) if n.endswith(".ckpt")) == sorted(
        [*names, "Net_36_step.ckpt"])
    for name in names:
        a, b = checkpoints.load(ours / name), checkpoints.load(theirs / name)
        assert list(a) == list(b), name
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{name} {k}")
    mo = json.loads((ours / "train_metadata.json").read_text())
    mt = json.loads((theirs / "train_metadata.json").read_text())
    assert list(mo) == list(mt)
    extra = mo["model_params_file_map"].pop("36")
    assert extra == str(ours / "Net_36_step.ckpt")
    assert {k: os.path.basename(v) for k, v in mo["model_params_file_map"].items()} == {
        k: os.path.basename(v) for k, v in mt["model_params_file_map"].items()}
    for key in ("epoch_group", "step_per_epoch", "unit", "num_samples", "landscape_size",
                "create_landscape"):
        assert mo[key] == mt[key], key


def test_same_lineage_row(side_by_side):
    out, _ = side_by_side
    (ours,) = Reader(out / "ours").lineage()
    (theirs,) = Reader(out / "mindspore").lineage()
    for key in ("optimizer", "learning_rate", "loss_function", "epoch", "batch_size",
                "train_dataset_size", "network", "device_num", "parallel_mode", "metric",
                "valid_dataset_size", "user_defined", "model_size"):
        assert ours[key] == theirs[key], key
    assert ours["loss"] == pytest.approx(theirs["loss"])
    assert (ours["optimizer"], ours["epoch"], ours["batch_size"], ours["train_dataset_size"]) == (
        "Momentum", 3, 8, 96)
    assert ours["user_defined"] == {"team": "blue", "trial": 2}
    assert ours["dataset_graph"] == theirs["dataset_graph"]


def test_graph_mode_records_the_graph(ms_venv, tmp_path):
    _train(ms_venv, tmp_path, "mindinsight", "graph", "0", "ours")
    r = Reader(tmp_path / "ours")
    graphs = [e for e in r.events(".") if e.kind == "graph"]
    assert len(graphs) == 1 and len(graphs[0].value) > 100
    from summarylog.pb import ms

    g = ms.GraphProto.FromString(graphs[0].value)
    assert len(g.node) > 3 and any(n.op_type for n in g.node)
    assert r.scalars(".", "loss/auto").step.tolist() == [1, *range(4, 37, 4)]


def test_sink_mode_collects_per_epoch_like_mindspore(ms_venv, tmp_path):
    """Sink mode asked for on the CPU: MindSpore trains step by step (step_end at every
    step) but reports dataset_sink_mode; both collectors collect once per epoch.  The
    real sink path (step_end once per sink) is test_mindspore_landscape.py's
    test_sink_mode_path_two_collectors_and_a_bad_mode."""
    info = _train(ms_venv, tmp_path, "mindinsight", "graph", "1", "both")
    o = Reader(tmp_path / "ours").scalars(".", "loss/auto")
    t = Reader(tmp_path / "mindspore").scalars(".", "loss/auto")
    assert o.step.tolist() == t.step.tolist()
    np.testing.assert_array_equal(o.value, t.value)
    assert info["ours"]["files"]


def test_tensorboard_dialect(ms_venv, tmp_path):
    _train(ms_venv, tmp_path, "tensorboard", "pynative", "0", "ours")
    r = Reader(tmp_path / "ours")
    assert all("tfevents" in p for p in r.files("."))
    assert r.scalars(".", "loss/auto").step.tolist() == [1, *range(4, 37, 4)]
    tags = r.tags(".")
    assert tags["fc.weight/auto"] == "histogram" and tags["input_data/auto"] == "image"
    hp = [e.value for e in r.events(".") if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
    assert start["optimizer"] == "Momentum" and start["team"] == "blue"
    assert r.scalars(".", "eval/acc").value.size == 1
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(tmp_path / "ours"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss/auto")] == [1, *range(4, 37, 4)]


def test_mindinsight_opens_the_collector_run(side_by_side, tmp_path):
    from mindinsight_client import MindInsight

    out, _ = side_by_side
    mi_venv = require_venv("mindinsight")
    with MindInsight(mi_venv, out, tmp_path / "ws") as mi:
        mi.wait_loaded("./ours", "scalar", "loss/auto/scalar")
        mi.wait_loaded("./ours", "histogram", "fc.weight/auto/histogram")
        got = mi.get("/datavisual/scalar/metadata", train_id="./ours", tag="loss/auto/scalar")
        s = Reader(out / "ours").scalars(".", "loss/auto")
        assert [m["step"] for m in got["metadatas"]] == s.step.tolist()
        assert [m["value"] for m in got["metadatas"]] == s.value.tolist()
        lineage = mi.post("/lineagemgr/lineages", {})
        rows = {o["summary_dir"]: o["model_lineage"] for o in lineage["object"]}
        assert rows["./ours"]["optimizer"] == rows["./mindspore"]["optimizer"] == "Momentum"
        assert rows["./ours"]["user_defined"] == rows["./mindspore"]["user_defined"]


def test_histograms_keep_no_parameter_copies(ms_venv, tmp_path):
    """A 4 MiB weight histogrammed at each of 150 graph-mode steps: the
    process grows by far less than 150 copies of it (a Parameter's own
    copy() is kept by MindSpore in its param_info.cloned_obj list for good),
    and each step's histogram is of the weight at that step."""
    script = SCRIPT.with_name("ms_collector_memory.py")
    r = subprocess.run([str(venv_python(ms_venv)), str(script), str(tmp_path / "run"), "150"],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=900,
                       env=venv_env())
    assert r.returncode == 0, r.stderr[-4000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    first, last = info["rss_mib"]
    print(f"150 collections of a 4 MiB weight's histogram: RSS {first:.0f} -> {last:.0f} MiB")
    assert last - first < 150 * 4 / 3
    sums = {int(e.step): e.value["sum"] for e in Reader(tmp_path / "run").events(".")
            if e.tag == "0.weight/auto"}
    assert sorted(sums) == list(range(1, 151))
    for step, total in info["sums"].items():
        assert sums[int(step)] == pytest.approx(total, rel=1e-4, abs=1e-3), step
