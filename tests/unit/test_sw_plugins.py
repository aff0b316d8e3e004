"""SummaryWriter's plugin methods: the peers' bucket rules bucket for bucket, the cap
on absurd rule counts, work off the caller's thread, private copies, the peers'
argument names in every refusal, add_hparams' sub-run, and the caller's cost."""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from typing import Any

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog.dialects import tb_bins, tb_plugins
from summarylog.dialects.tb_bins import MAX_BINS, peer_buckets, rule_bucket_count
from summarylog.pb import tb


def _events(logdir: str) -> list[Any]:
    """Every Event of the run directory's files (not sub-runs), in file order."""
    from summarylog.records import RecordReader  # noqa: F401  (import check only)

    out = []
    for name in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, name)
        if os.path.isfile(path) and ".tfevents." in name:
            out += [tb.Event.FromString(bytes(r)) for r in _records(path)]
    return out


def _records(path: str) -> list[bytes]:
    import struct

    with open(path, "rb") as f:
        data = f.read()
    out, i = [], 0
    while i + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        out.append(data[i + 12:i + 12 + n])
        i += 12 + n + 4
    return out


def _values(logdir: str) -> dict[str, Any]:
    """tag -> Summary.Value (the last one of each tag)."""
    return {v.tag: v for ev in _events(logdir) for v in ev.summary.value}


# ---- bucket rules -------------------------------------------------------------------------

def _torch_histogram(values: np.ndarray, bins: Any, max_bins: Any = None) -> Any:
    summary = require_module("torch.utils.tensorboard.summary")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = tb_bins.tensorflow_edges().tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return summary.make_histogram(values.astype(float), bins, max_bins)


def _same_as_torch(values: np.ndarray, bins: Any, max_bins: Any = None) -> None:
    h = _torch_histogram(values, bins, max_bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        b = peer_buckets(values.astype(np.float64).ravel(), bins, max_bins)
    assert b.counts.tolist() == list(h.bucket), (bins, max_bins)
    assert b.limits.tolist() == list(h.bucket_limit), (bins, max_bins)
    np.testing.assert_array_equal([b.min, b.max, b.num, b.sum, b.sum_squares],
                                  [h.min, h.max, h.num, h.sum, h.sum_squares])


def test_tensorflow_edges_are_the_peers():
    tbw = require_module("torch.utils.tensorboard")
    w = tbw.SummaryWriter(write_to_disk=False) if False else None  # noqa: F841
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    assert tb_bins.tensorflow_edges().tolist() == [-x for x in pos[::-1]] + [0] + pos
    print(f"'tensorflow' edges: {len(tb_bins.tensorflow_edges())}, as torch's default_bins")


RULES = ["tensorflow", 1, 7, 64, "auto", "fd", "doane", "scott", "stone", "rice", "sturges",
         "sqrt"]


def test_buckets_equal_torch_for_every_rule(rng):
    g = np.random.default_rng(rng.randrange(1 << 30))
    cases = 0
    for trial in range(40):
        size = int(g.integers(1, 3000))
        v = [g.normal(size=size), g.integers(-5, 5, size=size), g.random(size) * 1e-13,
             np.full(size, 3.0), g.lognormal(0, 2, size), g.random(size) < 0.3][trial % 6]
        v = v.astype(np.float32) if trial % 2 and v.dtype.kind == "f" else v
        for bins in RULES:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                if isinstance(bins, str) and bins != "tensorflow" and \
                        rule_bucket_count(bins, v.astype(float)) > MAX_BINS:
                    continue
            for max_bins in (None, 3, 40):
                _same_as_torch(v, bins, max_bins)
                cases += 1
    print(f"{cases} histograms bucket for bucket equal to torch's make_histogram")


def test_edges_as_bins_and_non_finite_with_tensorflow_rule_as_torch():
    v = np.array([0.5, 1.5, 2.5, 2.5, 7.0, np.nan, np.inf, -np.inf])
    _same_as_torch(v, "tensorflow")  # torch accepts these: NaN/inf outside every edge
    _same_as_torch(v[:5], np.array([0.0, 1.0, 2.5, 10.0]))


def test_non_finite_values_with_int_bins_bin_the_finite_ones():
    """torch raises on NaN/inf with an int or a rule; we bin the finite values."""
    v = np.array([1.0, 2.0, 3.0, np.nan, np.inf])
    b = peer_buckets(v, 2, None)
    assert (b.num, b.min, b.max, b.sum) == (5, 1.0, 3.0, 6.0)
    assert b.counts.tolist() == [0.0, 1.0, 2.0] and b.limits.tolist() == [1.0, 2.0, 3.0]
    assert peer_buckets(np.array([np.nan]), "auto", None).num == 1


def test_absurd_rule_count_is_capped_and_reported(caplog):
    """tensorboardX#1: 'auto' (numpy 1) or 'fd' made tens of billions of buckets from a
    tight cluster and one far value; numpy would allocate them all first."""
    g = np.random.default_rng(1)
    v = np.concatenate([g.normal(size=200_000) * 1e-9, [1e6]])
    asked = rule_bucket_count("fd", v)
    assert asked > 1e15
    t = time.perf_counter()
    reports = []
    b = peer_buckets(v, "fd", None, on_cap=lambda a, k: reports.append((a, k)))
    took = time.perf_counter() - t
    assert len(b.counts) <= MAX_BINS + 2 and b.counts.sum() == v.size
    assert reports == [(asked, len(b.counts) - 1)] or reports[0][0] == asked
    b7 = peer_buckets(v, "fd", 7)
    assert len(b7.counts) <= 9 and b7.counts.sum() == v.size
    with caplog.at_level(logging.WARNING, logger="summarylog"):
        with summarylog.SummaryWriter(caplog_dir := _tmpdir()) as w:
            for step in range(3):
                w.add_histogram("cluster", v, step, bins="fd")
    warned = [r for r in caplog.records if "cluster" in r.getMessage()]
    assert len(warned) == 1 and "merged" in warned[0].getMessage()
    hist = _values(caplog_dir)["cluster"].histo
    assert sum(hist.bucket) == v.size
    print(f"bins='fd' asked for {asked:.3g} buckets: {len(b.counts)} written in "
          f"{took:.3f} s (warned once per tag)")


def _tmpdir() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="swp-")


def test_capped_rule_equals_torch_merging_the_full_count(monkeypatch):
    """Above the cap, the buckets are those torch makes with max_bins=cap: the merged
    groups' edges taken from numpy's linspace, without making every bucket."""
    monkeypatch.setattr(tb_bins, "MAX_BINS", 300)
    g = np.random.default_rng(3)
    checked = 0
    for _ in range(30):
        v = g.lognormal(0, 2.5, size=2000)
        n = rule_bucket_count("fd", v)
        if not 300 < n < 200_000:
            continue
        for max_bins in (None, 9):
            h = _torch_histogram(v, "fd", max_bins or 300)
            b = peer_buckets(v, "fd", max_bins)
            assert b.counts.tolist() == list(h.bucket)
            assert b.limits.tolist() == list(h.bucket_limit)
            checked += 1
    assert checked
    print(f"{checked} capped histograms equal to torch's with max_bins")


# ---- off the caller's thread --------------------------------------------------------------

def test_binning_and_pr_computation_run_on_the_writers_thread(monkeypatch, tmp_path):
    seen: dict[str, threading.Thread] = {}
    real_buckets, real_pr = tb_plugins.peer_buckets, tb_plugins.pr_curve_data

    def buckets(*a: Any, **k: Any) -> Any:
        seen["bins"] = threading.current_thread()
        return real_buckets(*a, **k)

    def pr(*a: Any, **k: Any) -> Any:
        seen["pr"] = threading.current_thread()
        return real_pr(*a, **k)

    monkeypatch.setattr(tb_plugins, "peer_buckets", buckets)
    monkeypatch.setattr(tb_plugins, "pr_curve_data", pr)
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("h", np.arange(100.0), 1)
        w.add_histogram("h2", np.arange(100.0), 1, bins="auto")
        w.add_pr_curve("p", np.array([0, 1, 1]), np.array([0.2, 0.6, 0.9]), 1)
    me = threading.current_thread()
    assert seen["bins"] is not me and seen["pr"] is not me
    print(f"binned on {seen['bins'].name!r}, pr curve on {seen['pr'].name!r}; caller {me.name!r}")


def test_values_are_copied_before_the_call_returns(tmp_path):
    torch = require_module("torch")
    arr = np.arange(1000.0)
    t = torch.arange(1000.0)
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("np", arr, 1, bins=10)
        w.add_histogram("torch", t, 1, bins=10)
        w.add_pr_curve("pr", np.array([1, 0]), np.array([0.9, 0.1]), 1)
        arr[:] = -1.0  # changed right after the call: what was logged stays
        t.fill_(-1.0)
    vals = _values(str(tmp_path))
    for tag in ("np", "torch"):
        assert (vals[tag].histo.min, vals[tag].histo.max) == (0.0, 999.0)


def test_torch_tensors_of_every_kind_and_lists(tmp_path):
    torch = require_module("torch")
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("grad", torch.ones(10, requires_grad=True) * 2, 1)
        w.add_histogram("bf16", torch.arange(8, dtype=torch.bfloat16), 1)
        w.add_histogram("bool", torch.tensor([True, False, True]), 1, bins=2)
        w.add_histogram("list", [1, 2, 3, 3], 1, bins=3)
        w.add_histogram("np_int", np.arange(5, dtype=np.int16), 1, bins="sqrt")
    vals = _values(str(tmp_path))
    assert vals["grad"].histo.num == 10 and vals["grad"].histo.sum == 20.0
    assert vals["bf16"].histo.max == 7.0
    assert sum(vals["bool"].histo.bucket) == 3 and vals["bool"].histo.sum == 2.0
    assert list(vals["list"].histo.bucket) == [0.0, 1.0, 1.0, 2.0]


# ---- refusals name the peers' arguments ---------------------------------------------------

A = np.arange(4.0)
BAD = [
    ("add_histogram", dict(tag=3, values=A), TypeError, "tag"),
    ("add_histogram", dict(tag="t", values="abc"), TypeError, "values"),
    ("add_histogram", dict(tag="t", values=None), TypeError, "values"),
    ("add_histogram", dict(tag="t", values=np.array([1j])), TypeError, "values"),
    ("add_histogram", dict(tag="t", values=np.zeros(0)), ValueError, "values"),
    ("add_histogram", dict(tag="t", values=A, bins="nope"), ValueError, "bins"),
    ("add_histogram", dict(tag="t", values=A, bins=0), ValueError, "bins"),
    ("add_histogram", dict(tag="t", values=A, bins=10 ** 9), ValueError, "bins"),
    ("add_histogram", dict(tag="t", values=A, bins=True), TypeError, "bins"),
    ("add_histogram", dict(tag="t", values=A, bins=[3.0, 1.0]), ValueError, "bins"),
    ("add_histogram", dict(tag="t", values=A, bins={}), TypeError, "bins"),
    ("add_histogram", dict(tag="t", values=A, max_bins=0), ValueError, "max_bins"),
    ("add_histogram", dict(tag="t", values=A, max_bins=2.5), TypeError, "max_bins"),
    ("add_histogram", dict(tag="t", values=A, global_step="1"), TypeError, "global_step"),
    ("add_histogram", dict(tag="t", values=A, global_step=1 << 64), ValueError, "global_step"),
    ("add_histogram", dict(tag="t", values=A, walltime=float("nan")), ValueError, "walltime"),
    ("add_histogram_raw", dict(tag="t", min="a", max=1, num=1, sum=1, sum_squares=1,
                               bucket_limits=[1], bucket_counts=[1]), TypeError, "min"),
    ("add_histogram_raw", dict(tag="t", min=0, max=1, num=1, sum=1, sum_squares=None,
                               bucket_limits=[1], bucket_counts=[1]), TypeError, "sum_squares"),
    ("add_histogram_raw", dict(tag="t", min=0, max=1, num=1, sum=1, sum_squares=1,
                               bucket_limits=[1, 2], bucket_counts=[1]), ValueError,
     "bucket_limits and bucket_counts"),
    ("add_histogram_raw", dict(tag="t", min=0, max=1, num=1, sum=1, sum_squares=1,
                               bucket_limits=[], bucket_counts=[]), ValueError, "empty"),
    ("add_histogram_raw", dict(tag="t", min=0, max=1, num=1, sum=1, sum_squares=1,
                               bucket_limits="ab", bucket_counts=[1]), TypeError, "bucket_limits"),
    ("add_pr_curve", dict(tag="t", labels=[1, 0], predictions=[0.5]), ValueError,
     "labels and predictions"),
    ("add_pr_curve", dict(tag="t", labels=None, predictions=[0.5]), TypeError, "labels"),
    ("add_pr_curve", dict(tag="t", labels=[1], predictions=["x"]), TypeError, "predictions"),
    ("add_pr_curve", dict(tag="t", labels=[1], predictions=[0.5], num_thresholds=0),
     ValueError, "num_thresholds"),
    ("add_pr_curve", dict(tag="t", labels=[1], predictions=[0.5], num_thresholds=2.0),
     TypeError, "num_thresholds"),
    ("add_pr_curve", dict(tag="t", labels=[1, 0], predictions=[0.5, 0.1], weights=[1, 2, 3]),
     ValueError, "weights"),
    ("add_pr_curve_raw", dict(tag="t", true_positive_counts=[1], false_positive_counts=[1],
                              true_negative_counts=[1], false_negative_counts=[1],
                              precision=[1], recall=[1, 2]), ValueError, "recall"),
    ("add_pr_curve_raw", dict(tag="t", true_positive_counts=None, false_positive_counts=[1],
                              true_negative_counts=[1], false_negative_counts=[1],
                              precision=[1], recall=[1]), TypeError, "true_positive_counts"),
    ("add_custom_scalars", dict(layout=["a"]), TypeError, "layout"),
    ("add_custom_scalars", dict(layout={"c": ["x"]}), TypeError, "layout['c']"),
    ("add_custom_scalars", dict(layout={"c": {"t": "Multiline"}}), TypeError, "layout['c']['t']"),
    ("add_custom_scalars", dict(layout={"c": {"t": ["Multiline", "loss"]}}), TypeError,
     "layout['c']['t']"),
    ("add_custom_scalars", dict(layout={"c": {"t": ["Margin", ["a", "b"]]}}), ValueError,
     "layout['c']['t']"),
    ("add_custom_scalars_marginchart", dict(tags=["a", "b"]), ValueError, "tags"),
    ("add_custom_scalars_multilinechart", dict(tags="loss"), TypeError, "tags"),
    ("add_mesh", dict(tag="m", vertices=np.zeros((4, 3))), ValueError, "vertices"),
    ("add_mesh", dict(tag="m", vertices=None), TypeError, "vertices"),
    ("add_mesh", dict(tag="m", vertices=np.zeros((1, 4, 3)), colors=np.zeros(3)), ValueError,
     "colors"),
    ("add_mesh", dict(tag="m", vertices=np.zeros((1, 4, 3)), faces=np.zeros((1, 3))), ValueError,
     "faces"),
    ("add_mesh", dict(tag="m", vertices=np.zeros((1, 4, 3)), config_dict={"a": object()}),
     TypeError, "config_dict"),
    ("add_hparams", dict(hparam_dict={"a": object()}, metric_dict={}), TypeError,
     "hparam_dict['a']"),
    ("add_hparams", dict(hparam_dict=[1], metric_dict={}), TypeError, "hparam_dict"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={"m": "x"}), TypeError,
     "metric_dict['m']"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict=None), TypeError, "metric_dict"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={}, run_name="../escape"), ValueError,
     "run_name"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={}, run_name="/abs"), ValueError,
     "run_name"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={}, run_name="a", name="b"),
     ValueError, "run_name and name"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={}, run_name=3), TypeError, "run_name"),
    ("add_hparams", dict(hparam_dict={"a": 1}, metric_dict={},
                         hparam_domain_discrete={"a": ["x"]}), TypeError,
     "hparam_domain_discrete['a']"),
    ("add_tensor", dict(tag="t", tensor=None), TypeError, "tensor"),
    ("add_tensor", dict(tag="t", tensor=np.array([object()])), TypeError, "tensor"),
    ("add_scalar", dict(tag="t", scalar_value="x", new_style=True), TypeError, "scalar_value"),
    ("add_scalar", dict(tag="t", scalar_value=np.zeros(2), new_style=True), ValueError,
     "scalar_value"),
    ("add_scalar", dict(tag="t", scalar_value=1.0, display_name=3), TypeError, "display_name"),
    ("add_scalar", dict(tag="t", scalar_value=1.0, global_step=1.5, new_style=True), TypeError,
     "global_step"),
]


@pytest.mark.parametrize("method,kwargs,err,words", BAD,
                         ids=[f"{m}-{i}" for i, (m, *_) in enumerate(BAD)])
def test_bad_input_names_the_argument_and_logs_nothing(tmp_path, method, kwargs, err, words):
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(err) as info:
            getattr(w, method)(**kwargs)
    assert words in str(info.value), str(info.value)
    files = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path) for f in fs]
    assert all(len(_records(f)) <= 1 for f in files)  # a file header at most
    assert not [d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d)]  # no sub-run
    print(f"{method}: {err.__name__}: {info.value}")


# ---- add_hparams --------------------------------------------------------------------------

def test_hparams_sub_run_names(tmp_path):
    torch = require_module("torch")
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"lr": 0.1}, {"acc": torch.tensor(0.5)})  # the time names it
        w.add_hparams({"lr": 0.2}, {"acc": 0.6}, "tbx_name")  # tensorboardX's third argument
        w.add_hparams({"lr": 0.3}, {"acc": 0.7}, name="kw", global_step=5)
        w.add_hparams({"lr": 0.4}, {"acc": 0.8}, run_name="nested/run")
    subs = sorted(d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d))
    timed = [d for d in subs if d not in ("tbx_name", "kw", "nested")]
    assert len(timed) == 1 and abs(float(timed[0]) - time.time()) < 3600
    assert set(subs) - set(timed) == {"tbx_name", "kw", "nested"}
    vals = _values(str(tmp_path / "kw"))
    assert set(vals) == {"_hparams_/experiment", "_hparams_/session_start_info",
                         "_hparams_/session_end_info", "acc"}
    evs = _events(str(tmp_path / "kw"))
    assert all(e.step == 5 for e in evs if e.WhichOneof("what") == "summary")
    assert _values(str(tmp_path / timed[0]))["acc"].simple_value == 0.5
    assert os.path.isdir(tmp_path / "nested" / "run")


def test_hparams_without_disk_writes_nothing(tmp_path):
    w = summarylog.SummaryWriter(str(tmp_path / "x"), write_to_disk=False)
    w.add_hparams({"a": 1}, {"m": 1.0}, run_name="r")
    with pytest.raises(TypeError):
        w.add_hparams({"a": object()}, {})
    w.close()
    assert not os.path.exists(tmp_path / "x")


def test_hparams_refuses_a_symlinked_run_escape(tmp_path):
    """A planted symlink as the sub-run: the writer refuses it rather than follow it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / "trial")
    with summarylog.SummaryWriter(str(run)) as w:
        for name in ("trial", "trial/deeper"):
            with pytest.raises(ValueError, match="symbolic link") as info:
                w.add_hparams({"a": 1}, {"m": 1.0}, run_name=name)
    assert os.listdir(outside) == []  # nothing written there
    print(f"refused: {info.value}")


# ---- scalar forms -------------------------------------------------------------------------

def test_scalar_forms_as_the_peers_write_them(tmp_path):
    torch = require_module("torch")
    tbx_summary = require_module("tensorboardX.summary")
    with summarylog.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("ns", 1 / 3, 1, new_style=True)
        w.add_scalar("ns64", torch.tensor(1 / 3, dtype=torch.float64), 1, new_style=True,
                     double_precision=True)
        w.add_scalar("named", 2.5, 1, display_name="Loss", summary_description="the loss")
        w.add_scalar("plain_double", 2.5, 1, double_precision=True)
    vals = _values(str(tmp_path))
    assert vals["ns"].tensor.float_val[0] == np.float32(1 / 3)
    assert vals["ns"].metadata.plugin_data.plugin_name == "scalars"
    assert vals["ns64"].tensor.double_val[0] == 1 / 3
    assert vals["plain_double"].simple_value == 2.5  # torch: double_precision needs new_style
    theirs = tbx_summary.scalar("named", 2.5, display_name="Loss",
                                summary_description="the loss").value[0]
    assert vals["named"].SerializeToString() == theirs.SerializeToString()


# ---- the caller's cost --------------------------------------------------------------------

def test_caller_cost_of_add_histogram_vs_torch(tmp_path, figure):
    """What add_histogram(bins='tensorflow') costs the training thread: each call
    after a simulated 50 ms training step (the binning runs meanwhile), median
    of the calls; torch bins on the caller's thread."""
    torch = require_module("torch")
    tbw = require_module("torch.utils.tensorboard")
    x = torch.randn(1_000_000)
    n = 8

    def cost(w: Any) -> float:
        w.add_histogram("warm", x, 0)
        took = []
        for step in range(n):
            time.sleep(0.05)  # the training step
            t = time.perf_counter()
            w.add_histogram("w", x, step)
            took.append(time.perf_counter() - t)
        w.close()
        return float(np.median(took))

    ours = cost(summarylog.SummaryWriter(str(tmp_path / "ours")))
    theirs = cost(tbw.SummaryWriter(str(tmp_path / "torch")))
    figure(f"add_histogram(1M float32 tensor, bins='tensorflow') caller's cost: "
           f"summarylog {ours * 1e3:.2f} ms, torch {theirs * 1e3:.1f} ms "
           f"({theirs / ours:.0f}x less)")


def test_rule_counts_without_numpys_private_selectors(monkeypatch):
    """Where numpy has no ``_hist_bin_selectors`` the documented formulas count the
    unbounded rules: fd and scott as numpy does, auto at least as many (numpy 1's
    rule, which numpy 2 bounds further), so the cap still holds."""
    g = np.random.default_rng(5)
    x = g.lognormal(0, 1.5, size=5000)
    exact = {r: rule_bucket_count(r, x) for r in ("fd", "scott", "auto", "sqrt")}
    monkeypatch.setattr(tb_bins, "_numpy_selector", lambda rule: None)
    fallback = {r: rule_bucket_count(r, x) for r in ("fd", "scott", "auto", "sqrt")}
    assert fallback["fd"] == exact["fd"] and fallback["scott"] == exact["scott"]
    assert fallback["auto"] >= exact["auto"] and fallback["sqrt"] is None
    for rule in ("auto", "sqrt"):  # under the cap: left to np.histogram, exact
        monkeypatch.undo()
        expected = peer_buckets(x, rule, None)
        monkeypatch.setattr(tb_bins, "_numpy_selector", lambda rule: None)
        b = peer_buckets(x, rule, None)
        assert b.counts.tolist() == expected.counts.tolist()
        assert b.limits.tolist() == expected.limits.tolist()
    print(f"without numpy's selectors: {fallback} (numpy's own: {exact})")
