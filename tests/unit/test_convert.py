"""summarylog convert: MindSpore runs into TensorBoard runs and back, read
back with summarylog's Reader and with TensorBoard's own loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord, Writer
from summarylog.cli import main
from summarylog.convert import convert


def _ms_run(d, steps=5):
    with SummaryRecord(d) as rec:
        for step in range(steps):
            rec.add_value("scalar", "loss", 1.0 / (step + 1))
            rec.add_value("histogram", "w", np.linspace(-1, 1, 200) * (step + 1))
            rec.add_value("tensor", "t", np.arange(4, dtype=np.int64) + step)
            if step == steps - 1:
                rec.add_value("image", "img", np.random.default_rng(0).random((2, 3, 8, 8)))
            rec.record(step)
        rec.add_value("train_lineage", "x", {"hyper_parameters": {"optimizer": "SGD",
                                                                  "learning_rate": 0.5}})
        rec.add_value("eval_lineage", "x", {"metric": json.dumps({"accuracy": 0.875})})
        rec.add_value("custom_lineage_data", "x", {"seed": 3})
        rec.record(steps)


def test_mindspore_to_tensorboard(tmp_path):
    _ms_run(tmp_path / "src" / "run1")
    counts = convert(str(tmp_path / "src"), str(tmp_path / "tb"), "tensorboard")
    assert counts["run1"]["scalar"] == 5 and counts["run1"]["histogram"] == 5
    assert counts["run1"]["lineage"] == 1
    out = tmp_path / "tb" / "run1"
    assert all("tfevents" in n for n in os.listdir(out))
    src, dst = Reader(tmp_path / "src"), Reader(tmp_path / "tb")
    np.testing.assert_array_equal(src.scalars("run1", "loss").value,
                                  dst.scalars("run1", "loss").value)
    h_src = [e.value for e in src.events("run1") if e.tag == "w"][-1]
    h_dst = [e.value for e in dst.events("run1") if e.tag == "w"][-1]
    assert h_dst["limits"] == pytest.approx(h_src["limits"])
    assert h_dst["counts"] == h_src["counts"] and h_dst["num"] == 200
    t = [e.value for e in dst.events("run1") if e.tag == "t"][-1]
    np.testing.assert_array_equal(t, np.arange(4) + 4)
    assert t.dtype == np.int64
    hp = [e.value for e in dst.events("run1") if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
    assert start["optimizer"] == "SGD" and start["seed"] == 3
    assert dst.scalars("run1", "lineage/accuracy").value.tolist() == [0.875]

    # TensorBoard's own loader sees the same values
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(out), size_guidance={"scalars": 0,
                                                                      "histograms": 0})
    acc.Reload()
    assert [round(e.value, 6) for e in acc.Scalars("loss")] == [
        round(1.0 / (s + 1), 6) for s in range(5)]
    assert acc.Histograms("w")[-1].histogram_value.num == 200
    assert "img" in acc.Tags()["tensors"] or "img" in acc.Tags()["images"]


def test_tensorboard_to_mindspore_and_back(tmp_path):
    with Writer(tmp_path / "src" / "a") as w:
        for step in range(10):
            w.add_scalar("loss", 0.5 ** step, step)
            w.add_histogram("w", np.arange(1000.0) * step, step, bins=200)
        w.add_image("img", np.zeros((3, 4, 4), np.uint8), 9)
        w.add_text("note", "hello", 9)
        w.add_hparams({"lr": 0.01, "opt": "adam"}, {"loss": 0.1})
    rc = main(["convert", str(tmp_path / "src"), str(tmp_path / "ms"), "--to", "mindinsight"])
    assert rc == 0
    names = os.listdir(tmp_path / "ms" / "a")
    assert any(n.endswith("_MS") for n in names) and any(n.endswith("_lineage") for n in names)
    r = Reader(tmp_path / "ms")
    # add_hparams logged the metric loss=0.1 once more, at step 0: in a
    # MindSpore run the last value of a step wins (as MindInsight shows it)
    np.testing.assert_array_equal(r.scalars("a", "loss").value,
                                  np.float32([0.1, *0.5 ** np.arange(1, 10)]))
    hs = [e.value for e in r.events("a") if e.tag == "w"]
    assert len(hs[-1]["buckets"]) <= 90 and hs[-1]["num"] == 1000  # MindInsight's cap
    assert sum(hs[-1]["counts"]) == 1000
    assert not [e for e in r.events("a") if e.kind == "text"]  # no place in MindInsight
    (row,) = r.lineage()
    assert row["user_defined"]["opt"] == "adam" and row["user_defined"]["lr"] == pytest.approx(0.01)
    # and back to TensorBoard
    convert(str(tmp_path / "ms"), str(tmp_path / "tb2"), "tensorboard")
    np.testing.assert_array_equal(Reader(tmp_path / "tb2").scalars("a", "loss").value,
                                  np.float32([*0.5 ** np.arange(10), 0.1]))


def test_convert_cli_errors(tmp_path, capsys):
    _ms_run(tmp_path / "src", steps=1)
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "src" / "in"),
                 "--to", "tensorboard"]) != 0
    assert "must not be inside" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "nope"), str(tmp_path / "o"), "--to",
                 "tensorboard"]) != 0
    r = subprocess.run([sys.executable, "-m", "summarylog", "convert", str(tmp_path / "src"),
                        str(tmp_path / "o"), "--to", "tensorboard"], capture_output=True, cwd=tmp_path,
                       text=True)
    assert r.returncode == 0 and "converted 1 run to tensorboard" in r.stdout


def test_convert_refuses_a_run_directory_that_is_a_symlink(tmp_path):
    from summarylog.convert import DestinationError

    with Writer(tmp_path / "src" / "a") as w:
        w.add_scalar("loss", 1.0, 0)
    (tmp_path / "dst").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "dst" / "a")
    with pytest.raises(DestinationError) as info:
        convert(str(tmp_path / "src"), str(tmp_path / "dst"), "tensorboard")
    assert info.value.filename == str(tmp_path / "dst" / "a")
    assert os.listdir(tmp_path / "elsewhere") == []


def test_convert_counts_hostile_lineage_as_malformed(tmp_path):
    with SummaryRecord(tmp_path / "src") as rec:
        rec.add_value("scalar", "loss", 1.0)
        rec.record(0)
        rec.add_value("eval_lineage", "x", {"metric": json.dumps({"a": [1], "b": 0.5})})
        rec.record(1)
    reader = Reader(tmp_path / "src")
    (counts,) = convert(str(tmp_path / "src"), str(tmp_path / "dst"), "tensorboard").values()
    assert counts["malformed lineage metric"] == 1 and counts["lineage"] == 1
    assert Reader(tmp_path / "dst").scalars(".", "lineage/b").value.tolist() == [0.5]
    # through a given Reader, whose damage reports then cover what was converted
    from summarylog.convert import iter_convert

    (run, counts), = iter_convert(str(tmp_path / "src"), str(tmp_path / "dst2"), "mindinsight",
                                 reader=reader)
    assert run == "." and counts["scalar"] == 1 and all(r.ok for r in reader.damage(".").values())
