"""The MindSpore dialect against the real clients, each in its own venv
(tests/venvs.py): MindSpore 2.10 writes files that summarylog's Reader reads
as MindSpore's own protobuf classes decode them; MindSpore's classes decode
summarylog's files; MindInsight 2.3.1 serves summarylog's files with exactly
the values written."""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord
from summarylog.dialects.mindspore import histogram_buckets
from summarylog.records import RecordReader
from venvs import require_venv, venv_env, venv_python

HERE = pathlib.Path(__file__).resolve().parent
MS_RUN = HERE / "ms_scripts" / "ms_run.py"


def _ms(venv: pathlib.Path, *args: str, cwd: str) -> object:
    r = subprocess.run([str(venv_python(venv)), str(MS_RUN), *args], capture_output=True,
                       text=True, cwd=cwd, timeout=600, env=venv_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def ms_venv() -> pathlib.Path:
    return require_venv("mindspore")


@pytest.fixture(scope="module")
def mi_venv() -> pathlib.Path:
    return require_venv("mindinsight")


@pytest.fixture(scope="module")
def mindspore_run(ms_venv, tmp_path_factory):
    out = tmp_path_factory.mktemp("ms-written")
    return out, _ms(ms_venv, "train", str(out), cwd=str(out))


def _ours(path: str) -> list[list]:
    """Our Reader's events of one file, grouped per record, as comparable rows."""
    from summarylog.dialects.mindspore import decode_event

    out = []
    with RecordReader(path) as rr:
        for payload in rr:
            out.append(decode_event(payload))
    return out


def _same(ms_value: dict, ev) -> None:
    kind = ms_value["kind"]
    assert ev.tag == ms_value["tag"]
    if kind == "scalar_value":
        assert ev.kind == "scalar" and ev.value == ms_value["value"]
    elif kind == "histogram":
        assert ev.kind == "histogram"
        assert ev.value["buckets"] == sorted(ms_value["buckets"])
        assert ev.value["num"] == ms_value["count"]
        assert (ev.value["min"], ev.value["max"], ev.value["sum"]) == (
            ms_value["min"], ms_value["max"], ms_value["sum"])
        assert ev.value["nan_count"] == ms_value["nan_count"]
    elif kind == "image":
        assert ev.kind == "image"
        assert (ev.value["height"], ev.value["width"]) == (ms_value["height"], ms_value["width"])
        assert len(ev.value["pngs"][0]) == ms_value["png_len"]
    elif kind == "tensor":
        assert ev.kind == "tensor"
        assert list(ev.value.shape) == ms_value["dims"]
        np.testing.assert_array_equal(ev.value.astype(np.float32).ravel(),
                                      np.float32(ms_value["float_data"]))
    else:  # pragma: no cover
        raise AssertionError(f"unexpected kind {kind}")


def test_reader_reads_what_mindspore_wrote(mindspore_run):
    out, expected = mindspore_run
    kinds_seen = set()
    for rel, records in expected.items():
        path = str(out / rel)
        if rel.endswith("_lineage"):
            continue
        ours = _ours(path)
        assert len(ours) == len(records), rel
        for rec, evs in zip(records, ours):
            if rec["what"] == "version":
                assert [e.kind for e in evs] == ["file_version"]
                assert evs[0].value == rec["version"]
                continue
            assert len(evs) == len(rec["values"])
            for value, ev in zip(rec["values"], evs):
                assert ev.step == rec["step"] and ev.wall_time == rec["wall_time"]
                _same(value, ev)
                kinds_seen.add(value["kind"])
    assert kinds_seen == {"scalar_value", "histogram", "image", "tensor"}
    # the columnar path agrees with the events, and applies MindInsight's
    # one-value-per-step rule (MindSpore records an epoch's last step twice)
    r = Reader(out / "collector")
    loss = r.scalars(".", "loss/auto")
    raw = [(e.step, e.value) for e in r.events(".") if e.tag == "loss/auto"]
    last = dict(raw)
    assert loss.step.tolist() == sorted(last)
    assert loss.value.tolist() == [last[s] for s in sorted(last)]
    assert loss.step.tolist()[:3] == [1, 3, 6]  # the first step, then every collect_freq-th
    assert all(rep.ok and rep.tail is None for rep in r.damage(".").values())


def test_lineage_rows_of_mindspore_lineage(mindspore_run):
    out, expected = mindspore_run
    (rel,) = [k for k in expected if k.startswith("collector/") and k.endswith("_lineage")]
    ms_records = expected[rel]
    (row,) = Reader(out / "collector").lineage()
    train = next(r["train_lineage"] for r in ms_records if "train_lineage" in r)
    hp = train["hyper_parameters"]
    assert row["optimizer"] == hp["optimizer"] == "Momentum"
    assert row["learning_rate"] == pytest.approx(hp["learning_rate"])
    assert row["epoch"] == hp["epoch"] == 2 and row["batch_size"] == hp["batch_size"] == 8
    assert row["train_dataset_size"] == train["train_dataset"]["train_dataset_size"] == 64
    assert row["network"] == train["algorithm"]["network"] == "Net"
    assert row["loss"] == pytest.approx(train["algorithm"]["loss"])
    assert row["user_defined"] == {"team": "red", "seed": 1}
    assert row["dataset_graph"]  # MindSpore's dataset graph came through


def _our_run(d: pathlib.Path) -> dict:
    """A run written by summarylog.SummaryRecord; returns what was written."""
    rng = np.random.default_rng(7)
    written: dict = {"scalar": {}, "hist": {}, "tensor": {}, "image": None}
    with SummaryRecord(d) as rec:
        for step in range(6):
            loss = float(np.float32(1.0 / (step + 1)))
            h = rng.normal(size=300) * (step + 1)
            t = np.arange(6, dtype=np.float32).reshape(2, 3) * step
            rec.add_value("scalar", "loss", loss)
            rec.add_value("histogram", "weights", h)
            rec.add_value("tensor", "t", t)
            written["scalar"][step] = loss
            written["hist"][step] = h
            written["tensor"][step] = t
            if step == 5:
                img = rng.random((2, 3, 6, 5)).astype(np.float32)
                rec.add_value("image", "inputs", img)
                written["image"] = img
            rec.record(step)
        rec.add_value("train_lineage", "x", {
            "hyper_parameters": {"optimizer": "Adam", "learning_rate": 0.25, "epoch": 3,
                                 "batch_size": 16, "loss_function": "MSELoss"},
            "train_dataset": {"train_dataset_size": 480},
            "algorithm": {"network": "Tiny", "loss": 0.125}})
        rec.add_value("eval_lineage", "x", {"metric": json.dumps({"accuracy": 0.5})})
        rec.add_value("custom_lineage_data", "x", {"lr_policy": "cosine", "warmup": 5})
        rec.record(6)
    return written


def test_mindspore_decodes_summarylog_files(ms_venv, tmp_path):
    written = _our_run(tmp_path / "run")
    files = sorted(str(p) for p in (tmp_path / "run").iterdir())
    decoded = _ms(ms_venv, "decode", *files, cwd=str(tmp_path))
    (summary,) = [v for k, v in decoded.items() if k.endswith("_MS")]
    assert summary[0]["version"] == "MindSpore.Event:1" and summary[0]["step"] is None
    steps = [r for r in summary if r["what"] == "summary"]
    assert [r["step"] for r in steps] == list(range(6))
    for r in steps:
        vals = {v["tag"]: v for v in r["values"]}
        assert vals["loss"]["value"] == written["scalar"][r["step"]]
        assert vals["weights"]["count"] == 300 and len(vals["weights"]["buckets"]) == 300 // 10 + 1
        np.testing.assert_array_equal(np.float32(vals["t"]["float_data"]),
                                      written["tensor"][r["step"]].ravel())
    img = {v["tag"]: v for v in steps[-1]["values"]}["inputs"]
    assert (img["height"], img["width"], img["colorspace"]) == (6, 10, 3)
    (lineage,) = [v for k, v in decoded.items() if k.endswith("_lineage")]
    assert [next(k for k in r if k != "wall_time") for r in lineage] == [
        "train_lineage", "evaluation_lineage", "user_defined_info"]


def test_mindinsight_serves_summarylog_files(mi_venv, tmp_path):
    from mindinsight_client import MindInsight

    base = tmp_path / "logs"
    written = _our_run(base / "run1")
    with MindInsight(mi_venv, base, tmp_path / "ws") as mi:
        tid = "./run1"
        for plugin, tag in (("scalar", "loss/scalar"), ("histogram", "weights/histogram"),
                            ("image", "inputs/image"), ("tensor", "t/tensor")):
            mi.wait_loaded(tid, plugin, tag)
        scalars = mi.get("/datavisual/scalar/metadata", train_id=tid, tag="loss/scalar")
        assert [(m["step"], m["value"]) for m in scalars["metadatas"]] == sorted(
            written["scalar"].items())
        hists = mi.get("/datavisual/histograms", train_id=tid, tag="weights/histogram")
        assert [h["step"] for h in hists["histograms"]] == list(range(6))
        for h in hists["histograms"]:
            # MindInsight re-samples the stored buckets onto its display grid
            # (each display bucket: the overlap-weighted counts, rounded up);
            # the same from our own buckets must give exactly its counts
            ours = histogram_buckets(written["hist"][h["step"]]).buckets
            for left, width, count in h["buckets"]:
                x = sum(b.count * max(0.0, min(left + width, b.left + b.width) - max(left, b.left))
                        / b.width for b in ours)
                near = abs(x - round(x)) < 1e-6
                assert count in ({math.floor(x + 1e-6), math.ceil(x - 1e-6)} if near
                                 else {math.ceil(x)}), (h["step"], left, count, x)
        meta = mi.get("/datavisual/image/metadata", train_id=tid, tag="inputs/image")
        assert [(m["step"], m["height"], m["width"]) for m in meta["metadatas"]] == [(5, 6, 10)]
        png = mi.get("/datavisual/image/single-image", train_id=tid, tag="inputs/image", step=5)
        ours = [e.value["pngs"][0] for e in Reader(base / "run1").events(".") if e.tag == "inputs"]
        assert png == ours[0]
        for step in (0, 5):
            t = mi.get("/datavisual/tensors", train_id=tid, tag="t/tensor", step=step,
                       detail="data", dims="[:,:]")
            value = t["tensors"][0]["values"][0]["value"]
            assert value["dims"] == [2, 3] and value["data_type"] == "DT_FLOAT32"
            np.testing.assert_array_equal(np.float32(value["data"]), written["tensor"][step])
        lineage = mi.post("/lineagemgr/lineages", {})
        (obj,) = [o for o in lineage["object"] if o["summary_dir"] == tid]
        ml = obj["model_lineage"]
        assert (ml["optimizer"], ml["epoch"], ml["batch_size"], ml["network"]) == (
            "Adam", 3, 16, "Tiny")
        assert ml["learning_rate"] == pytest.approx(0.25) and ml["loss"] == pytest.approx(0.125)
        assert ml["train_dataset_count"] == 480 and ml["metric"] == {"accuracy": 0.5}
        assert ml["user_defined"] == {"lr_policy": "cosine", "warmup": 5}
