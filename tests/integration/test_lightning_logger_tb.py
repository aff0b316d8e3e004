"""SummarylogLogger against Lightning's TensorBoardLogger in a real ``Trainer.fit``
(CPU, a few steps, validation, nested hyperparameters, a dict metric, the graph):
both runs read back with TensorBoard's own backend (plugin event multiplexer, the
HParams plugin's handlers) and compared tag by tag, value by value; hparams.yaml
compared byte for byte."""

from __future__ import annotations

import json
import os
import warnings
from argparse import Namespace
from typing import Any

import numpy as np
import pytest

from conftest import require_module

torch = require_module("torch")
pl = require_module("pytorch_lightning")
require_module("tensorboard")

from pytorch_lightning.loggers import TensorBoardLogger  # noqa: E402
from tensorboard import plugin_util  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

from summarylog import SummaryWriter  # noqa: E402
from summarylog.adapters.lightning import SummarylogLogger  # noqa: E402
from tb_server import hparams_tab_in_process  # noqa: E402
from tb_server import loaded_multiplexer as _mux  # noqa: E402

# Lightning 2.6 on torch 2.13 warns about its own use of torch internals, and about
# the tiny data loaders
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning",
                                        "ignore::UserWarning")

HPARAMS = {
    "lr": 0.05,
    "width": 8,
    "optim": {"name": "adam", "betas": [0.9, 0.99], "sched": {"gamma": 0.5}},
    "arch": Namespace(act="relu", depth=2),
    "layers": [{"w": 4}, {"w": 2}],
    "note": None,
    "shuffle": True,
}


class Lit(pl.LightningModule):
    def __init__(self, **hp: Any) -> None:
        super().__init__()
        self.save_hyperparameters(hp)
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                       torch.nn.Linear(8, 2))
        self.example_input_array = torch.zeros(3, 4)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(1) == y).float().mean()
        self.log("val_acc", acc)
        self.log("hp_metric", acc)

    def on_validation_epoch_end(self):
        if not self.trainer.sanity_checking:  # a dict value: add_scalars' sub-runs
            self.logger.log_metrics({"pair": {"a": 1.0 + self.current_epoch, "b": 0.5}},
                                    step=self.global_step)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def _data(n: int, seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


def _fit(logger: Any) -> None:
    pl.seed_everything(0, verbose=False)
    train = torch.utils.data.DataLoader(_data(64, 0), batch_size=8)
    val = torch.utils.data.DataLoader(_data(16, 1), batch_size=8)
    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, log_every_n_steps=2,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False, logger=logger)
    trainer.fit(Lit(**HPARAMS), train, val)


def _scalars(m: Any) -> dict[tuple[str, str], list[tuple[int, float]]]:
    out = {}
    for run, tags in m.PluginRunToTagToContent("scalars").items():
        for tag in tags:
            out[run, tag] = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
                             for e in m.Tensors(run, tag)]
    return out


def _hparams_tab(m: Any, logdir: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The HParams tab's two requests (experiment, session groups) as JSON."""
    exp, groups = hparams_tab_in_process(m, logdir)
    return (json.loads(plugin_util.proto_to_json(exp)),
            json.loads(plugin_util.proto_to_json(groups)))


def _without_times(x: Any) -> Any:
    """The JSON with wall times dropped (the two runs ran at different times)."""
    if isinstance(x, dict):
        return {k: _without_times(v) for k, v in x.items()
                if k not in ("timeCreatedSecs", "startTimeSecs", "endTimeSecs", "wallTimeSecs")}
    if isinstance(x, list):
        return [_without_times(v) for v in x]
    return x


def _bool_as_number(tb_json: Any, ours: Any) -> Any:
    """torch's JSON with "shuffle" as we write it (a bool, not 1.0)."""
    text = json.dumps(tb_json).replace('"shuffle": 1.0', '"shuffle": true')
    out = json.loads(text)
    for info in out.get("hparamInfos", []):
        if info["name"] == "shuffle":
            info["type"] = "DATA_TYPE_BOOL"
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("lightning")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(TensorBoardLogger(root / "tb", log_graph=True))
        _fit(SummarylogLogger(root / "sl", log_graph=True))
    return {"tb": str(root / "tb"), "sl": str(root / "sl")}


def test_same_runs_tags_steps_and_values(runs: dict[str, Any]) -> None:
    tb, sl = _mux(runs["tb"]), _mux(runs["sl"])
    assert sorted(sl.Runs()) == sorted(tb.Runs())
    assert "lightning_logs/version_0/pair_a" in sl.Runs()  # add_scalars, as torch names it
    got, want = _scalars(sl), _scalars(tb)
    assert sorted(got) == sorted(want)
    assert got == want  # same steps, same float32 values
    print(f"{len(got)} scalar series, {sum(map(len, got.values()))} points: all equal")


def test_same_hparams_tab(runs: dict[str, Any]) -> None:
    """What the HParams tab lists: every flattened hparam with its type and value, the
    metric columns (exactly hp_metric) and each session's metric value and step."""
    tb_exp, tb_groups = _hparams_tab(_mux(runs["tb"]), runs["tb"])
    sl_exp, sl_groups = _hparams_tab(_mux(runs["sl"]), runs["sl"])
    names = {i["name"] for i in sl_exp["hparamInfos"]}
    assert {"optim/name", "optim/betas", "optim/sched/gamma", "arch/act", "arch/depth",
            "layers/0/w", "layers/1/w", "lr", "width"} <= names
    assert [i["name"]["tag"] for i in sl_exp["metricInfos"]] == ["hp_metric"]
    # the one deliberate difference: a bool is a bool (torch's add_hparams writes 1.0,
    # its int test catching bools first)
    assert _without_times(sl_exp) == _bool_as_number(_without_times(tb_exp), sl_exp)
    assert _without_times(sl_groups) == _bool_as_number(_without_times(tb_groups), sl_groups)
    assert next(i for i in sl_exp["hparamInfos"] if i["name"] == "shuffle")["type"] == \
        "DATA_TYPE_BOOL"
    (group,) = sl_groups["sessionGroups"]
    assert group["hparams"]["optim/betas"] == "[0.9, 0.99]"
    print("hparams tab:", json.dumps(_without_times(sl_groups))[:300])


def test_same_hparams_yaml(runs: dict[str, Any]) -> None:
    rel = os.path.join("lightning_logs", "version_0", "hparams.yaml")
    with open(os.path.join(runs["tb"], rel), "rb") as a, open(os.path.join(runs["sl"], rel),
                                                             "rb") as b:
        assert b.read() == a.read()


def test_graph_present(runs: dict[str, Any]) -> None:
    run = "lightning_logs/version_0"
    tb, sl = _mux(runs["tb"]), _mux(runs["sl"])
    want, got = tb.Graph(run), sl.Graph(run)
    assert len(got.node) > 0

    def nodes(g: Any) -> list[tuple[str, str, list[str]]]:
        return sorted((n.name, n.op, list(n.input)) for n in g.node)

    assert nodes(got) == nodes(want)
    print(f"graph of {len(got.node)} nodes, names, ops and inputs as TensorBoardLogger's")


def test_version_discovery_and_directories(tmp_path: Any) -> None:
    """version_N as TensorBoardLogger counts it (directories only), a str version
    as the directory's name, sub_dir under it, an empty name for none."""
    (tmp_path / "lightning_logs" / "version_3").mkdir(parents=True)
    (tmp_path / "lightning_logs" / "version_7").write_text("a file, not a version")
    (tmp_path / "lightning_logs" / "version_x").mkdir()
    for kw in ({}, {"version": "exp1", "sub_dir": "train"}, {"name": ""}, {"version": 5}):
        a, b = SummarylogLogger(tmp_path, **kw), TensorBoardLogger(tmp_path, **kw)
        assert (a.version, a.log_dir, a.root_dir, a.save_dir, a.sub_dir, a.name) == \
               (b.version, b.log_dir, b.root_dir, b.save_dir, b.sub_dir, b.name), kw
    assert SummarylogLogger(tmp_path).version == 4


def test_metrics_prefix_and_tensors(tmp_path: Any, monkeypatch: Any) -> None:
    """prefix joined with "-" as Lightning joins it; a tensor metric read on the
    background thread, not the caller's (TensorBoardLogger calls .item() in the call:
    a device sync); a value that is not a scalar refused naming its key."""
    import threading

    readers = []
    item = torch.Tensor.item

    def spy(self: Any) -> Any:
        readers.append(threading.current_thread())
        return item(self)

    lg = SummarylogLogger(tmp_path, prefix="exp", default_hp_metric=False)
    assert lg.experiment is not None  # the directory and writer made before the spy
    monkeypatch.setattr(torch.Tensor, "item", spy)
    lg.log_metrics({"loss": torch.tensor(0.25), "acc": 0.5}, step=3)
    assert threading.current_thread() not in readers
    lg.experiment.flush()
    assert readers and threading.current_thread() not in readers
    print(f"tensor metric read on {readers[0].name!r}, not on the caller's thread")
    lg.log_hyperparams({"a": {"b": 1}})  # no metrics, no default: nothing written for it
    with pytest.raises(ValueError, match="exp-bad"):
        lg.log_metrics({"bad": "text"}, step=4)
    lg.finalize("success")
    m = _mux(str(tmp_path))
    assert _scalars(m) == {("lightning_logs/version_0", "exp-loss"): [(3, 0.25)],
                           ("lightning_logs/version_0", "exp-acc"): [(3, 0.5)]}
    assert m.PluginRunToTagToContent("hparams") == {}
    assert (tmp_path / "lightning_logs" / "version_0" / "hparams.yaml").read_text() == \
        "a:\n  b: 1\n"


def test_hyperparams_with_metrics_and_a_step(tmp_path: Any) -> None:
    """metrics= kept as given (a dict, or one value as hp_metric), logged at the step."""
    for sub, metrics in (("d", {"acc": 0.75, "loss": 0.125}), ("v", 0.5)):
        lg = SummarylogLogger(tmp_path / sub)
        lg.log_hyperparams(Namespace(lr=0.1, nested=Namespace(k=np.int64(3))), metrics,
                           step=7)
        lg.finalize("success")
        exp, groups = _hparams_tab(_mux(str(tmp_path / sub)), str(tmp_path / sub))
        want = metrics if isinstance(metrics, dict) else {"hp_metric": metrics}
        assert sorted(i["name"]["tag"] for i in exp["metricInfos"]) == sorted(want)
        (group,) = groups["sessionGroups"]
        assert group["hparams"] == {"lr": 0.1, "nested/k": 3.0}
        got = {v["name"]["tag"]: (v["value"], v["trainingStep"])
               for v in group["sessions"][0]["metricValues"]}
        assert got == {k: (v, 7) for k, v in want.items()}


def test_bad_constructor_arguments(tmp_path: Any) -> None:
    with pytest.raises(TypeError, match="flush_sec"):
        SummarylogLogger(tmp_path, flush_sec=1)  # a misspelt SummaryWriter option
    with pytest.raises(TypeError, match="log_dir"):
        SummarylogLogger(tmp_path, log_dir="elsewhere")
    with pytest.raises(TypeError, match="version"):
        SummarylogLogger(tmp_path, version=1.5)
    with pytest.raises(ValueError, match="save_dir"):
        SummarylogLogger("s3://")  # a URL without a bucket (URLs: tests/remote)
    with pytest.raises(TypeError, match="save_dir"):
        SummarylogLogger(None)
    lg = SummarylogLogger(tmp_path, durability="fsync", flush_secs=5, max_queue=3,
                          filename_suffix=".x")
    assert isinstance(lg.experiment, SummaryWriter)
    lg.log_metrics({"x": 1.0}, step=0)
    lg.save()
    assert lg.experiment.writer.files[0].endswith(".x")
    lg.finalize("success")


def test_unpicklable_experiment_is_left_out(tmp_path: Any) -> None:
    import pickle

    lg = SummarylogLogger(tmp_path)
    lg.log_metrics({"x": 1.0}, step=0)
    clone = pickle.loads(pickle.dumps(lg))
    assert clone._experiment is None and clone.log_dir == lg.log_dir
    lg.finalize("success")


def test_hparams_yaml_never_follows_a_planted_link(tmp_path: Any) -> None:
    """A symlink planted where hparams.yaml goes (dangling, or to a file) is left as it
    is: nothing is written through it (TensorBoardLogger writes through a dangling one)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me")
    for target, name in ((outside / "created.yaml", "dangling"), (victim, "to_a_file")):
        lg = SummarylogLogger(tmp_path / "logs", version=name)
        os.makedirs(lg.log_dir)
        link = os.path.join(lg.log_dir, "hparams.yaml")
        os.symlink(target, link)
        lg.log_hyperparams({"lr": 0.1})
        lg.finalize("success")
        assert os.path.islink(link) and os.readlink(link) == str(target)
    assert not (outside / "created.yaml").exists() and victim.read_text() == "keep me"
    lg = SummarylogLogger(tmp_path / "logs", version="plain")
    lg.log_hyperparams({"lr": 0.1})
    lg.finalize("success")
    path = os.path.join(lg.log_dir, "hparams.yaml")
    with open(path) as f:
        assert f.read() == "lr: 0.1\n"
    mode = os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # as open(path, "w") makes it, not a temp file's 0600
    print(f"2 planted links left alone, nothing written outside; plain file mode {mode:o}")
