"""collect_landscape from the PyTorch and Lightning SummaryCollectors in real training:
the checkpoints (state_dict as .pt, parameters and buffers) at MindSpore's default
points and at custom step and epoch intervals, their names, train_metadata.json,
and the saved values equal to the model's at those steps; collect_gradients; and
what landscape collection costs a step (printed, not asserted)."""

from __future__ import annotations

import json
import os
import timeit

import pytest

from conftest import require_module
from summarylog import Reader
from summarylog.landscape import checkpoints

torch = require_module("torch")
from torch import nn  # noqa: E402

from summarylog.adapters.torch import SummaryCollector  # noqa: E402


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.bn = nn.BatchNorm1d(5)  # buffers (running stats) go into the checkpoints too
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def _loader(n=80, batch=8):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 6, generator=g)
    y = (x[:, 0] > 0).long()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)


def _train(d, epochs, **kw):
    """Train; returns {step: state_dict copy} and {epoch: state_dict copy}."""
    torch.manual_seed(0)
    model, loader = Net(), _loader()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    at_step, at_epoch = {}, {}
    with SummaryCollector(d, model=model, optimizer=opt, train_loader=loader, epochs=epochs,
                          **kw) as sc:
        for _ in range(epochs):
            for xb, yb in loader:
                loss = nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sc.step(loss=loss, inputs=xb)
                at_step[sc.global_step] = {k: v.clone() for k, v in model.state_dict().items()}
            sc.epoch_end()
            at_epoch[sc.epoch] = at_step[sc.global_step]
    return at_step, at_epoch


def _check(d, unit, points, truth, step_per_epoch, intervals):
    ckpt = d / "ckpt_dir"
    assert sorted(os.listdir(ckpt)) == sorted(
        [f"Net_{p}_{unit}.pt" for p in points] + ["train_metadata.json"])
    meta = json.loads((ckpt / "train_metadata.json").read_text())
    assert meta["epoch_group"] == {str(i): v for i, v in enumerate(intervals)}
    assert meta["unit"] == unit and meta["step_per_epoch"] == step_per_epoch
    assert meta["model_params_file_map"] == {str(p): str(ckpt / f"Net_{p}_{unit}.pt")
                                             for p in points}
    for p in points:
        got = checkpoints.load(meta["model_params_file_map"][str(p)])
        assert list(got) == list(truth[p])  # parameters and buffers, state_dict's order
        for k, v in truth[p].items():
            assert torch.equal(torch.as_tensor(got[k]), v), (p, k)


def test_defaults_save_steps_1_to_19_and_the_end(tmp_path):
    at_step, _ = _train(tmp_path, epochs=3)  # 30 steps
    _check(tmp_path, "step", [*range(1, 20), 30], at_step, 10,
           [list(range(1, 10)), list(range(10, 20))])


def test_custom_step_intervals(tmp_path):
    intervals = [[2, 4, 6], [6, 8, 12, 14]]
    at_step, _ = _train(tmp_path, epochs=2, collect_specified_data={
        "collect_landscape": {"unit": "step", "intervals": intervals, "landscape_size": 3,
                              "num_samples": 16}})
    _check(tmp_path, "step", [2, 4, 6, 8, 12, 14, 20], at_step, 10, intervals)
    meta = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert (meta["landscape_size"], meta["num_samples"]) == (3, 16)


def test_epoch_unit(tmp_path):
    intervals = [[1, 2, 3]]
    _, at_epoch = _train(tmp_path, epochs=4, collect_specified_data={
        "collect_landscape": {"unit": "epoch", "intervals": intervals}})
    _check(tmp_path, "epoch", [1, 2, 3, 4], at_epoch, 10, intervals)


def test_off(tmp_path):
    _train(tmp_path / "none", epochs=1, collect_specified_data={"collect_landscape": None})
    _train(tmp_path / "empty", epochs=1, collect_specified_data={"collect_landscape": {}})
    _train(tmp_path / "nodefault", epochs=1, keep_default_action=False,
           collect_specified_data={"collect_metric": True})
    for name in ("none", "empty", "nodefault"):
        assert not (tmp_path / name / "ckpt_dir").exists(), name


def test_collect_gradients_histograms_the_gradients(tmp_path):
    torch.manual_seed(0)
    model, loader = Net(), _loader()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    grads = {}
    with SummaryCollector(tmp_path, model=model, optimizer=opt, collect_freq=5,
                          collect_gradients=True, format="mindinsight",
                          collect_specified_data={"collect_landscape": None}) as sc:
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss)
            grads[sc.global_step] = model.fc1.weight.grad.clone()
    r = Reader(tmp_path)
    tags = r.tags(".")
    assert tags["fc1.weight.grad/auto"] == "histogram" and tags["fc1.weight/auto"] == "histogram"
    got = {int(e.step): e.value for e in r.events(".") if e.tag == "fc1.weight.grad/auto"}
    assert sorted(got) == [1, 5, 10]
    for step, h in got.items():
        assert h["sum"] == pytest.approx(float(grads[step].double().sum()), rel=1e-5, abs=1e-6)


def test_step_cost_with_landscape_on_and_off(tmp_path):
    """The per-step check is one int compare: quiet steps cost the same with the
    collection on (printed; no time asserted)."""
    torch.manual_seed(0)
    model = Net()
    loss = torch.tensor(0.5)
    far = 10 ** 6
    collectors = {name: SummaryCollector(tmp_path / name, model=model, collect_freq=far,
                                         collect_specified_data={"collect_landscape": spec})
                  for name, spec in (("off", None), ("on", {"unit": "step", "intervals": [
                      [far, far + 1, far + 2]]}))}
    cost = {name: float("inf") for name in collectors}
    for sc in collectors.values():
        sc.step(loss=loss)  # the first step collects
    n = 100_000
    for _ in range(5):  # interleaved: the machine's load falls on both alike
        for name, sc in collectors.items():
            cost[name] = min(cost[name], timeit.timeit(lambda: sc.step(loss=loss), number=n) / n)
    for sc in collectors.values():
        sc.close()
    print(f"quiet torch step(): {cost['off'] * 1e9:.0f} ns with collect_landscape off, "
          f"{cost['on'] * 1e9:.0f} ns on (a point not due; min of 5 x 100 000)")


# Lightning 2.6 on torch 2.13 warns about its own use of torch internals
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning",
                            "ignore::UserWarning")
def test_lightning_forwards_collect_landscape(tmp_path):
    pl = require_module("pytorch_lightning")
    from summarylog.adapters.lightning import SummaryCollectorCallback

    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Net()

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    class Capture(pl.Callback):
        def __init__(self):
            self.at = {}

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.at[trainer.global_step] = {k: v.clone()
                                            for k, v in pl_module.state_dict().items()}

    torch.manual_seed(0)
    cap = Capture()
    intervals = [[3, 5, 7], [9, 11, 13]]
    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False,
                         callbacks=[cap, SummaryCollectorCallback(
                             tmp_path, collect_freq=5, collect_specified_data={
                                 "collect_landscape": {"unit": "step", "intervals": intervals}})])
    trainer.fit(Lit(), _loader())
    ckpt = tmp_path / "ckpt_dir"
    points = [3, 5, 7, 9, 11, 13, 20]
    assert sorted(os.listdir(ckpt)) == sorted(
        [f"Lit_{p}_step.pt" for p in points] + ["train_metadata.json"])
    meta = json.loads((ckpt / "train_metadata.json").read_text())
    assert meta["step_per_epoch"] == 10 and meta["epoch_group"] == {"0": [3, 5, 7],
                                                                     "1": [9, 11, 13]}
    for p in points:
        got = checkpoints.load(meta["model_params_file_map"][str(p)])
        assert list(got) == list(cap.at[p])
        for k, v in cap.at[p].items():
            assert torch.equal(torch.as_tensor(got[k]), v), (p, k)
