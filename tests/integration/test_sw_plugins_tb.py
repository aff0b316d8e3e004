"""SummaryWriter's plugin methods against the peers, through TensorBoard itself.

The same calls go to ``torch.utils.tensorboard.SummaryWriter`` and to
``summarylog.SummaryWriter`` (one log directory each); both directories are loaded
by TensorBoard's plugin event multiplexer and data provider, and each plugin's HTTP
routes (scalars, histograms, distributions, pr_curves, custom_scalars, mesh,
hparams) are queried as the dashboard queries them, through a WSGI test client.
The answers must be the same: same runs, tags, steps and values (wall times too
where the call gives one).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from typing import Any, Callable

import numpy as np
import pytest

from conftest import require_module

torch = require_module("torch")
require_module("tensorboard")
tb_writer = require_module("torch.utils.tensorboard")

from tensorboard.plugins.custom_scalar import custom_scalars_plugin  # noqa: E402
from tensorboard.plugins.distribution import distributions_plugin  # noqa: E402
from tensorboard.plugins.histogram import histograms_plugin  # noqa: E402
from tensorboard.plugins.hparams import hparams_plugin  # noqa: E402
from tensorboard.plugins.mesh import mesh_plugin  # noqa: E402
from tensorboard.plugins.pr_curve import pr_curves_plugin  # noqa: E402
from tensorboard.plugins.scalar import scalars_plugin  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from werkzeug import test as wz_test  # noqa: E402
from werkzeug import wrappers as wz_wrappers  # noqa: E402

import summarylog  # noqa: E402
from tb_server import plugin_context  # noqa: E402

T0 = 1_750_000_000.25
RNG = np.random.default_rng(20261126)
VALUES = {
    "normal": RNG.normal(size=4000).astype(np.float32),
    "ints": RNG.integers(-50, 50, size=(30, 40)),
    "tiny": RNG.random(500) * 1e-11,
    "const": np.full(64, 2.5),
    "lognormal": RNG.lognormal(0, 1, size=3000),  # a rule's count under the cap: parity
}
LABELS = RNG.integers(0, 2, size=500)
PREDICTIONS = np.clip(LABELS * 0.3 + RNG.random(500) * 0.7, 0, 1)
WEIGHTS = RNG.random(500)
# float32 predictions on bucket boundaries: k/126 rounds differently in float32
PREDICTIONS_F32 = torch.cat([torch.arange(127) / 126.0, torch.rand(373)])


def script(w: Any) -> None:
    """The calls, made the same way on either writer (parity: no bools in hparams)."""
    step = 0
    for name, vals in VALUES.items():
        for bins in ("tensorflow", 10, "auto", "fd", "doane", "scott", "stone", "rice",
                     "sturges", "sqrt"):
            step += 1
            w.add_histogram(f"hist/{name}/{bins}", torch.as_tensor(vals), step, bins=bins,
                            walltime=T0 + step)
            w.add_histogram(f"hist_max/{name}/{bins}", vals, step, bins=bins,
                            walltime=T0 + step, max_bins=7)
    w.add_histogram("hist/small", np.array([1.0, 2.0, 2.5, 9.0]), 3, walltime=T0)
    counts, limits = np.histogram(VALUES["normal"], bins=20)
    w.add_histogram_raw("raw", float(VALUES["normal"].min()), float(VALUES["normal"].max()),
                        4000, float(VALUES["normal"].sum()), 12.5, limits[1:].tolist(),
                        counts.tolist(), 4, T0 + 4)
    for i, n in enumerate((127, 33, 2, 500)):
        w.add_pr_curve(f"pr/{n}", LABELS, PREDICTIONS, i, num_thresholds=n, walltime=T0 + i)
    w.add_pr_curve("pr/weighted", torch.as_tensor(LABELS), torch.as_tensor(PREDICTIONS), 7,
                   weights=WEIGHTS, walltime=T0 + 7)
    w.add_pr_curve("pr/float32", torch.as_tensor(LABELS).bool(), PREDICTIONS_F32, 8,
                   walltime=T0 + 8)
    data = [np.linspace(10, 1, 9), np.linspace(1, 5, 9), np.arange(9.0), np.arange(9.0)[::-1],
            np.linspace(0.2, 1, 9), np.linspace(1, 0, 9)]
    w.add_pr_curve_raw("pr_raw", *data, global_step=2, num_thresholds=9, walltime=T0 + 2)
    for s in range(5):
        for tag in ("loss/a", "loss/b", "band/v", "band/lo", "band/hi"):
            w.add_scalar(tag, s * 0.5 + len(tag), s, walltime=T0 + s)
    w.add_scalar("new_style", 1.0 / 3.0, 1, T0 + 1, new_style=True)
    w.add_scalar("new_style64", 1.0 / 3.0, 1, T0 + 1, new_style=True, double_precision=True)
    w.add_custom_scalars({"Losses": {"both": ["Multiline", ["loss/a", "loss/b"]],
                                     "band": ["Margin", ["band/v", "band/lo", "band/hi"]]}})
    w.add_custom_scalars_multilinechart(["loss/.*"], category="More", title="all losses")
    w.add_custom_scalars_marginchart(["band/v", "band/lo", "band/hi"], category="More")
    verts = torch.tensor([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1.5]]])
    colors = torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]])
    faces = torch.tensor([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]])
    w.add_mesh("mesh", verts, colors=colors, faces=faces, global_step=3, walltime=T0 + 3,
               config_dict={"camera": {"cls": "PerspectiveCamera", "fov": 75}})
    w.add_mesh("points", verts * 2, global_step=4, walltime=T0 + 4)
    w.add_tensor("tensor/i64", torch.arange(12).reshape(3, 4), 5, T0 + 5)
    w.add_tensor("tensor/f32", torch.linspace(0, 1, 7), 5, T0 + 5)
    w.add_tensor("tensor/bool", torch.tensor([True, False]), 5, T0 + 5)
    for i, (lr, opt) in enumerate(((0.1, "adam"), (0.01, "sgd"))):
        w.add_hparams({"lr": lr, "opt": opt, "depth": 3 + i, "skipped": None},
                      {"hparam/accuracy": 0.5 + i / 4, "hparam/loss": 1.0 - i / 4},
                      hparam_domain_discrete={"opt": ["adam", "sgd"]},
                      run_name=f"trial{i}", global_step=10 + i)


class TB:
    """One log directory as TensorBoard serves it: multiplexer, data provider, and
    each plugin's routes through a WSGI test client."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        ctx = plugin_context(logdir)
        self.mux, self.provider = ctx.multiplexer, ctx.data_provider
        self.plugins: dict[str, Any] = {}
        for name, cls in (("scalars", scalars_plugin.ScalarsPlugin),
                          ("histograms", histograms_plugin.HistogramsPlugin),
                          ("distributions", distributions_plugin.DistributionsPlugin),
                          ("pr_curves", pr_curves_plugin.PrCurvesPlugin),
                          ("custom_scalars", custom_scalars_plugin.CustomScalarsPlugin),
                          ("mesh", mesh_plugin.MeshPlugin),
                          ("hparams", hparams_plugin.HParamsPlugin)):
            self.plugins[name] = cls(ctx)
        ctx.plugin_name_to_instance.update(self.plugins)

    def get(self, plugin: str, route: str, body: Any = None, **args: Any) -> Any:
        app = self.plugins[plugin].get_plugin_apps()[route]
        client = wz_test.Client(app, wz_wrappers.Response)
        if body is None:
            resp = client.get(route, query_string=args)
        else:
            resp = client.post(route, data=json.dumps(body), content_type="application/json")
        assert resp.status_code == 200, (plugin, route, args, resp.get_data()[:500])
        if resp.mimetype == "application/json":
            return json.loads(resp.get_data())
        return resp.get_data()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[TB, TB]:
    root = tmp_path_factory.mktemp("sw_plugins_tb")
    theirs, ours = str(root / "torch"), str(root / "ours")
    with warnings.catch_warnings():  # numpy's 'stone' rule warns of a suboptimal count
        warnings.filterwarnings("ignore", "The number of bins estimated", RuntimeWarning)
        with tb_writer.SummaryWriter(theirs) as w:
            script(w)
        with summarylog.SummaryWriter(ours) as w:
            script(w)
    return TB(theirs), TB(ours)


def _same(a: Any, b: Any, path: str = "") -> None:
    """Equal, with floats compared exactly (NaN equal to NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, sorted(a), sorted(b))
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and a != a:
        assert b != b, path
    else:
        assert a == b, (path, a, b)


def _tags(tb: TB, plugin: str) -> dict[str, Any]:
    return tb.get(plugin, "/tags")


def test_same_runs_and_tags_for_every_plugin(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    assert sorted(ours.mux.Runs()) == sorted(theirs.mux.Runs()) == [".", "trial0", "trial1"]
    for plugin in ("scalars", "histograms", "distributions", "pr_curves", "mesh"):
        t, o = _tags(theirs, plugin), _tags(ours, plugin)
        assert {r: sorted(v) for r, v in o.items()} == {r: sorted(v) for r, v in t.items()}, plugin
        print(f"{plugin}: {sum(len(v) for v in o.values())} tags, same as torch")


def test_histograms_and_distributions_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    tags = _tags(theirs, "histograms")["."]
    assert len(tags) == 2 * 5 * 10 + 2
    for tag in tags:
        for plugin, route in (("histograms", "/histograms"), ("distributions", "/distributions")):
            _same(theirs.get(plugin, route, run=".", tag=tag),
                  ours.get(plugin, route, run=".", tag=tag), f"{plugin}:{tag}")
    print(f"{len(tags)} histograms (every bins rule, with and without max_bins, and "
          f"add_histogram_raw): buckets and distributions equal to torch's")


def test_pr_curves_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    tags = _tags(theirs, "pr_curves")["."]
    assert sorted(tags) == ["pr/127", "pr/2", "pr/33", "pr/500", "pr/float32", "pr/weighted",
                            "pr_raw"]
    for tag in tags:
        t = theirs.get("pr_curves", "/pr_curves", run=".", tag=tag)
        o = ours.get("pr_curves", "/pr_curves", run=".", tag=tag)
        _same(t, o, tag)
    (event,) = ours.mux.Tensors(".", "pr/500")
    assert [d.size for d in event.tensor_proto.tensor_shape.dim] == [6, 127]  # the peers' cap
    print(f"{len(tags)} pr curves equal to torch's (127 of 500 thresholds kept, as torch)")


def test_custom_scalars_layout_and_data_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    layout = ours.get("custom_scalars", "/layout")
    _same(theirs.get("custom_scalars", "/layout"), layout)
    titles = {c["title"]: [ch["title"] for ch in c["chart"]] for c in layout["category"]}
    assert titles == {"More": ["untitled"]}  # a run's last layout is the one shown
    for tag in ("loss/.*", "band/v"):
        _same(theirs.get("custom_scalars", "/scalars", run=".", tag=tag),
              ours.get("custom_scalars", "/scalars", run=".", tag=tag), tag)
    print(f"custom scalars layout {titles} equal to torch's")


def test_mesh_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    for tag in ("mesh", "points"):
        meta_t = theirs.get("mesh", "/meshes", run=".", tag=tag)
        meta_o = ours.get("mesh", "/meshes", run=".", tag=tag)
        _same(meta_t, meta_o, tag)
        for item in meta_o:
            kind = {1: "VERTEX", 2: "FACE", 3: "COLOR"}[item["content_type"]]
            args = dict(run=".", tag=tag, content_type=kind, sample=0, step=item["step"])
            a = np.frombuffer(theirs.get("mesh", "/data", **args), np.float32)
            b = np.frombuffer(ours.get("mesh", "/data", **args), np.float32)
            assert a.tolist() == b.tolist(), (tag, kind)
    kinds = sorted(m["content_type"] for m in ours.get("mesh", "/meshes", run=".", tag="mesh"))
    assert kinds == [1, 2, 3]  # VERTEX, FACE, COLOR
    print("mesh metadata and VERTEX/FACE/COLOR data equal to torch's")


def test_scalars_new_style_and_tensors_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    for tag in ("new_style", "new_style64", "loss/a"):
        _same(theirs.get("scalars", "/scalars", run=".", tag=tag),
              ours.get("scalars", "/scalars", run=".", tag=tag), tag)
    # plugin "tensor" has no dashboard: compared as the multiplexer keeps them
    t, o = (tb.mux.PluginRunToTagToContent("tensor")["."] for tb in pair)
    assert sorted(t) == sorted(o) == ["tensor/bool", "tensor/f32", "tensor/i64"]
    for tag in t:
        assert theirs.mux.SummaryMetadata(".", tag) == ours.mux.SummaryMetadata(".", tag)
        (et,) = theirs.mux.Tensors(".", tag)
        (eo,) = ours.mux.Tensors(".", tag)
        a, b = tensor_util.make_ndarray(et.tensor_proto), tensor_util.make_ndarray(eo.tensor_proto)
        assert (et.step, et.wall_time, a.dtype, a.shape, a.tolist()) == (
            eo.step, eo.wall_time, b.dtype, b.shape, b.tolist())
    print("new_style scalars (float32 and float64) and add_tensor equal to torch's")


def _hparams_tab(tb: TB) -> tuple[dict[str, Any], dict[str, Any]]:
    """The HParams tab's two requests: the experiment, then its session groups with
    every hparam and metric as a column."""
    exp = tb.get("hparams", "/experiment", body={"experimentName": "", "includeMetrics": True})
    cols = [{"hparam": i["name"], "includeInResult": True} for i in exp.get("hparamInfos", [])]
    cols += [{"metric": i["name"], "includeInResult": True} for i in exp.get("metricInfos", [])]
    groups = tb.get("hparams", "/session_groups", body={
        "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS",
                                                  "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": cols, "startIndex": 0, "sliceSize": 100, "includeMetrics": True})
    return exp, groups


def _without_times(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _without_times(v) for k, v in x.items() if "time" not in k.lower()}
    if isinstance(x, list):
        return [_without_times(v) for v in x]
    return x


def test_hparams_tab_same_as_torch(pair: tuple[TB, TB]) -> None:
    theirs, ours = pair
    exp_t, groups_t = _hparams_tab(theirs)
    exp_o, groups_o = _hparams_tab(ours)
    _same(_without_times(exp_t), _without_times(exp_o))
    _same(_without_times(groups_t), _without_times(groups_o))
    metrics = sorted(i["name"]["tag"] for i in exp_o["metricInfos"])
    assert metrics == ["hparam/accuracy", "hparam/loss"]
    sessions = {s["name"]: s for g in groups_o["sessionGroups"] for s in g["sessions"]}
    assert sorted(sessions) == ["trial0", "trial1"]
    got = {m["name"]["tag"]: m["value"] for m in sessions["trial1"]["metricValues"]}
    assert got == {"hparam/accuracy": 0.75, "hparam/loss": 0.75}
    print(f"HParams tab: experiment {[i['name'] for i in exp_o['hparamInfos']]} x {metrics}, "
          f"sessions {sorted(sessions)}: equal to torch's")


def _sweep(root: str, make: Callable[[str], Any], trials: int = 3) -> None:
    """A typical sweep: one SummaryWriter per trial, training scalars in its run,
    add_hparams at the end with the default (time) run name."""
    for i in range(trials):
        with make(os.path.join(root, f"lr_{i}")) as w:
            for s in range(3):
                w.add_scalar("train/loss", 1.0 / (s + 1 + i), s)
            w.add_hparams({"lr": 10.0 ** -i, "batch": 32 * (i + 1), "opt": "adam"},
                          {"hparam/accuracy": 0.5 + 0.1 * i, "hparam/loss": 0.3 - 0.1 * i})
            time.sleep(0.002)  # the default run names are the time


def test_sweep_hparams_tab_lists_exactly_the_given_metrics(tmp_path: Any) -> None:
    """Several runs each hold an experiment record; TensorBoard 2.21 takes the
    first one it lists (backend_context._find_experiment_tag), so each must name
    exactly the given metrics, not the runs' other scalars (train/loss)."""
    out = {}
    for who, make in (("torch", lambda d: tb_writer.SummaryWriter(d)),
                      ("ours", lambda d: summarylog.SummaryWriter(d))):
        root = str(tmp_path / who)
        _sweep(root, make)
        exp, groups = _hparams_tab(TB(root))
        sessions = {s["name"].split("/")[0]: s for g in groups["sessionGroups"]
                    for s in g["sessions"]}
        out[who] = (exp, sessions)
    exp_o, sessions_o = out["ours"]
    exp_t, sessions_t = out["torch"]
    assert sorted(i["name"]["tag"] for i in exp_o["metricInfos"]) == ["hparam/accuracy",
                                                                      "hparam/loss"]
    _same(_without_times(exp_t), _without_times(exp_o))
    assert sorted(sessions_o) == sorted(sessions_t) == ["lr_0", "lr_1", "lr_2"]
    for trial in sessions_o:
        _same(_without_times({k: v for k, v in sessions_t[trial].items() if k != "name"}),
              _without_times({k: v for k, v in sessions_o[trial].items() if k != "name"}),
              trial)
    print(f"sweep of 3 SummaryWriters: HParams tab lists exactly "
          f"{[i['name']['tag'] for i in exp_o['metricInfos']]}, sessions equal to torch's")


def test_bool_hparams_as_tensorboardx_writes_them(tmp_path: Any) -> None:
    """torch writes a bool hparam as 1.0 (its int test catches bools); tensorboardX
    and TensorBoard's own hparams API write a bool, as we do."""
    tbx = require_module("tensorboardX")
    out = {}
    for who, make in (("tbx", tbx.SummaryWriter), ("ours", summarylog.SummaryWriter)):
        root = str(tmp_path / who)
        with make(root) as w:
            w.add_hparams({"aug": True, "lr": 0.1}, {"acc": 0.5}, "run")  # tensorboardX: name
        out[who] = _hparams_tab(TB(root))
    _same(_without_times(out["tbx"][0]), _without_times(out["ours"][0]))
    _same(_without_times(out["tbx"][1]), _without_times(out["ours"][1]))
    hp = out["ours"][1]["sessionGroups"][0]["hparams"]
    assert hp == {"aug": True, "lr": 0.1}
    print(f"bool hparam shown as {hp['aug']!r}, as tensorboardX")
