"""The framework-neutral collection policy (summarylog.collector), with no
framework: validation as MindSpore's SummaryCollector, the step rules, the
tensor range, and the timeline over numpy values read back by the Reader."""

from __future__ import annotations

import json

import numpy as np
import pytest

from summarylog import Reader
from summarylog.collector import (GRAPH_TAG, INPUT_TAG, LOSS_TAG, CollectionPolicy,
                                  CollectorCore, image_nchw)


def test_validation_errors(tmp_path):
    P = lambda **kw: CollectionPolicy(tmp_path, **kw)  # noqa: E731
    with pytest.raises(ValueError):
        P(collect_freq=0)
    with pytest.raises(ValueError):
        P(collect_freq=-3)
    with pytest.raises(TypeError):
        P(collect_freq=1.5)
    with pytest.raises(TypeError):
        P(collect_freq=True)
    with pytest.raises(ValueError):
        P(collect_tensor_freq=0)
    with pytest.raises(ValueError):
        P(collect_specified_data={"collect_audio": True})
    with pytest.raises(TypeError):
        P(collect_specified_data={"collect_metric": 1})
    with pytest.raises(TypeError):
        P(collect_specified_data=["collect_metric"])
    with pytest.raises(TypeError):
        P(collect_specified_data={"histogram_regular": 3})
    with pytest.raises(ValueError):
        P(collect_specified_data={"histogram_regular": "(["})
    with pytest.raises(TypeError, match="intervals"):  # MindSpore's: intervals have no default
        P(collect_specified_data={"collect_landscape": {"landscape_size": 40}})
    with pytest.raises(TypeError, match="collect_landscape"):
        P(collect_specified_data={"collect_landscape": True})
    with pytest.raises(ValueError, match="landscape_size"):
        P(collect_specified_data={"collect_landscape": {"landscape_size": 2,
                                                        "intervals": [[1, 2, 3]]}})
    with pytest.raises(ValueError, match="unit"):
        P(collect_specified_data={"collect_landscape": {"unit": "batch",
                                                        "intervals": [[1, 2, 3]]}})
    with pytest.raises(ValueError, match="intervals"):
        P(collect_specified_data={"collect_landscape": {"intervals": [[1, 2]]}})
    with pytest.raises(ValueError, match="unsupported"):
        P(collect_specified_data={"collect_landscape": {"size": 3, "intervals": [[1, 2, 3]]}})
    with pytest.raises(TypeError, match="num_process"):
        P(num_process=2.0)
    with pytest.raises(ValueError, match="num_process"):
        P(num_process=0)
    with pytest.raises(TypeError):
        P(keep_default_action="yes")
    with pytest.raises(TypeError):
        P(custom_lineage_data={"a": [1]})
    with pytest.raises(TypeError):
        P(custom_lineage_data={1: "a"})
    with pytest.raises(TypeError):
        P(custom_lineage_data=[("a", 1)])
    with pytest.raises(ValueError):
        P(max_file_size=0)
    with pytest.raises(ValueError):
        P(format="csv")
    with pytest.raises(ValueError):
        P(export_options={"tensor_format": "csv"})


def test_keep_default_action_and_histogram_names(tmp_path):
    p = CollectionPolicy(tmp_path, collect_specified_data={"collect_graph": False})
    assert not p.enabled("collect_graph") and p.enabled("collect_metric")
    only = CollectionPolicy(tmp_path, collect_specified_data={"collect_metric": True},
                            keep_default_action=False)
    assert only.enabled("collect_metric") and not only.enabled("collect_input_data")
    assert only.histogram_names(["a", "b"]) == []
    names = [f"layer{i}.weight" for i in range(8)] + ["fc.bias"]
    assert CollectionPolicy(tmp_path).histogram_names(names) == names[:5]
    rx = CollectionPolicy(tmp_path, collect_specified_data={"histogram_regular": r"^layer[12]"})
    assert rx.histogram_names(names) == ["layer1.weight", "layer2.weight"]
    assert rx.histogram_names(["x.layer1"]) == []  # re.match: anchored at the start


def test_collect_landscape_defaults_and_replacement_as_mindspore(tmp_path):
    from summarylog.landscape import DEFAULT_LANDSCAPE

    assert CollectionPolicy(tmp_path).landscape == DEFAULT_LANDSCAPE  # on by default
    # other keys given keep the landscape's defaults (keep_default_action)
    assert (CollectionPolicy(tmp_path, collect_specified_data={"collect_graph": False}).landscape
            == DEFAULT_LANDSCAPE)
    # a given dict replaces the defaults whole: no per-key merge with MindSpore's
    mine = CollectionPolicy(tmp_path, collect_specified_data={
        "collect_landscape": {"unit": "epoch", "intervals": [[2, 4, 6]]}}).landscape
    assert mine == {"landscape_size": 40, "unit": "epoch", "num_samples": 2048,
                    "create_landscape": {"train": True, "result": True},
                    "intervals": [[2, 4, 6]]}
    for off in (None, {}):
        assert CollectionPolicy(tmp_path, collect_specified_data={
            "collect_landscape": off}).landscape is None
    assert CollectionPolicy(tmp_path, keep_default_action=False).landscape is None
    assert CollectionPolicy(tmp_path, collect_specified_data={"collect_metric": True},
                            keep_default_action=False).landscape is None
    assert CollectionPolicy(tmp_path, num_process=4).num_process == 4
    assert CollectionPolicy(tmp_path).num_process == 32


def test_keep_default_action_false_alone_collects_nothing(tmp_path):
    """MindSpore: keep_default_action=False and no collect_specified_data: nothing
    automatic (summary operators only)."""
    p = CollectionPolicy(tmp_path, keep_default_action=False)
    for item in ("collect_metric", "collect_graph", "collect_train_lineage",
                 "collect_eval_lineage", "collect_input_data", "collect_dataset_graph"):
        assert not p.enabled(item), item
    assert p.histogram_names(["a.weight"]) == [] and p.landscape is None
    core = CollectorCore(p)
    core.begin(10)
    for s in range(1, 11):
        core.step(s, loss=np.float32(s), inputs=np.zeros((2, 1, 4, 4), np.float32),
                  params={"a.weight": np.ones(3, np.float32)})
    core.train_end({"algorithm": {"network": "Net"}})
    core.close()
    r = Reader(tmp_path)
    events = [e for e in r.events(".") if e.kind != "version"] if r.runs() else []
    assert not events, events[:3]
    assert not (tmp_path / "ckpt_dir").exists()


def test_custom_lineage_merges_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDINSIGHT_HYPER_CONFIG",
                       json.dumps({"custom_lineage_data": {"a": 1, "b": "env"}}))
    p = CollectionPolicy(tmp_path, custom_lineage_data={"b": "arg", "c": 0.5})
    assert p.custom_lineage_data == {"a": 1, "b": "arg", "c": 0.5}


@pytest.mark.parametrize("total, freq, tensor_freq, expected", [
    (600, 10, None, set(range(0, 601, 31))),  # MindSpore's docstring example: 20 steps
    (100, 10, None, set(range(0, 101, 10))),
    (100, 10, 25, {0, 25, 50, 75, 100}),
    (30, 1, None, set(range(0, 21))),  # f = 30 // 19 = 1: the first 21
])
def test_tensor_range(tmp_path, total, freq, tensor_freq, expected):
    p = CollectionPolicy(tmp_path, collect_freq=freq, collect_tensor_freq=tensor_freq)
    got = p.tensor_steps(total)
    assert got == expected
    assert len(got) <= 21


def test_rule_per_step(tmp_path):
    p = CollectionPolicy(tmp_path, collect_freq=10)
    tensors = p.tensor_steps(600)
    everything = [s for s in range(1, 601) if (f := p.plugins_at(s, tensors, False))
                  and f("scalar")]
    only_tensors = [s for s in range(1, 601) if (f := p.plugins_at(s, tensors, False))
                    and f("tensor")]
    assert everything == list(range(10, 601, 10))  # 60 (+ the first step: 61)
    assert len(only_tensors) == 19 and len(tensors) == 20
    assert p.plugins_at(7, tensors, True)("tensor")  # the first step takes everything


def test_image_detection():
    assert image_nchw(np.zeros((2, 3, 8, 8))).shape == (2, 3, 8, 8)
    assert image_nchw(np.zeros((2, 8, 8, 1))).shape == (2, 1, 8, 8)  # NHWC
    assert image_nchw(np.zeros((2, 8, 8, 5))) is None
    assert image_nchw(np.zeros((2, 10))) is None


@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
def test_timeline_over_numpy_values(tmp_path, fmt):
    policy = CollectionPolicy(tmp_path, collect_freq=4, format=fmt,
                              custom_lineage_data={"team": "a"},
                              collect_specified_data={"histogram_regular": "w"})
    core = CollectorCore(policy)
    core.begin(total=12)
    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=10), "b1": np.zeros(3), "w2": rng.normal(size=(2, 2))}
    for step in range(1, 13):
        core.step(step, loss=np.array([1.0 / step, 3.0 / step]),
                  inputs=rng.random((2, 8, 8, 3)), params=lambda: params)
    core.train_end({"hyper_parameters": {"optimizer": "SGD", "learning_rate": 0.1,
                                         "epoch": 1, "batch_size": 2},
                    "train_dataset": {"train_dataset_size": 24},
                    "algorithm": {"network": "MLP"}})
    core.eval_end({"acc": 0.5}, "/data/valid", 8)
    core.close()
    assert core.collected_steps == [1, 4, 8, 12]
    r = Reader(tmp_path)
    s = r.scalars(".", LOSS_TAG)
    assert s.step.tolist() == [1, 4, 8, 12]
    np.testing.assert_allclose(s.value, [2.0 / k for k in (1, 4, 8, 12)], rtol=1e-6)
    tags = r.tags(".")
    assert tags["w1/auto"] == "histogram" and tags["w2/auto"] == "histogram"
    assert "b1/auto" not in tags and tags[INPUT_TAG] == "image"
    if fmt == "mindinsight":
        (row,) = r.lineage()
        assert row["optimizer"] == "SGD" and row["batch_size"] == 2
        assert row["loss"] == pytest.approx(2.0 / 12) and row["network"] == "MLP"
        assert row["metric"] == {"acc": 0.5} and row["valid_dataset_size"] == 8
        assert row["user_defined"] == {"team": "a"}
    else:
        hp = [e.value for e in r.events(".") if e.kind == "hparams"]
        start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
        assert start["optimizer"] == "SGD" and start["team"] == "a"
        assert r.scalars(".", "eval/acc").value.tolist() == [0.5]
    assert GRAPH_TAG not in tags  # no graph given


@pytest.mark.parametrize("freq, tensor_freq, total", [(10, None, 95), (10, 7, 60), (4, 3, 40),
                                                      (5, None, None)])
def test_steps_before_quiet_until_collect_nothing(tmp_path, freq, tensor_freq, total):
    """Adapters skip step() for numbers below quiet_until: a core told only
    of the others collects exactly what a core told of every step does."""
    def core(d):
        c = CollectorCore(CollectionPolicy(tmp_path / d, collect_freq=freq,
                                           collect_tensor_freq=tensor_freq))
        c.begin(total)
        return c

    every, skipping = core("every"), core("skipping")
    assert skipping.quiet_until == 0  # nothing is skipped before the first collection
    told = []
    for s in range(1, (total or 60) + 1):
        every.step(s, loss=1.0)
        if s < skipping.quiet_until:
            continue
        skipping.step(s, loss=1.0)
        told.append(s)
    assert skipping.collected_steps == every.collected_steps
    assert len(told) <= len(every.collected_steps) + 1
    skipping.close()
    every.close()
    assert skipping.quiet_until == 0  # a closed core skips nothing: step() must raise


def test_landscape_plugin_through_the_collectors_record(tmp_path):
    """A LossLandscape recorded through a collector's SummaryRecord (the LANDSCAPE
    plugin, as MindSpore's SummaryLandscape records one) is written whole at its step."""
    from summarylog.landscape import Landscape
    from summarylog.pb import ms

    core = CollectorCore(CollectionPolicy(tmp_path, collect_specified_data={
        "collect_landscape": None}))
    core.begin(4)
    core.step(1, loss=np.float32(0.5))
    ls = Landscape("landscape_[1, 3]", x=[-1.0, 0.0, 1.0], y=[-2.0, 0.0, 2.0],
                   z=np.arange(9.0).reshape(3, 3), intervals=[1, 2, 3],
                   path_x=[0.5, 0.1, 0.0], path_y=[0.2, 0.1, 0.0], path_z=[3.0, 2.0, 1.0],
                   convergence_point=(0.0, 0.0, 1.0))
    core.record.add_value("LANDSCAPE", ls.tag, ls.to_message())
    core.record.record(0)
    core.close()
    r = Reader(tmp_path)
    assert r.tags(".")[ls.tag] == "landscape"
    (value,) = [e.value for e in r.events(".") if e.tag == ls.tag]
    if isinstance(value, (bytes, bytearray)):
        value = Landscape.from_message(ls.tag, ms.LossLandscape.FromString(bytes(value)))
    z = value.z if hasattr(value, "z") else value["z"]
    np.testing.assert_array_equal(np.asarray(z), ls.z)
