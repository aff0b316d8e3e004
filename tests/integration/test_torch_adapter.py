"""The PyTorch and Lightning SummaryCollectors in real training (torch 2.13
CPU, pytorch-lightning), read back with summarylog.Reader and TensorBoard."""

from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import require_module
from summarylog import Reader

torch = require_module("torch")
from torch import nn  # noqa: E402

from summarylog.adapters.torch import SummaryCollector, summary  # noqa: E402


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 2)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x):
        h = torch.relu(self.conv(x))
        summary("act_mean", h.mean(), "scalar")
        summary("act", h, "histogram")
        summary("logits", self.fc(h.flatten(1)), "tensor")
        return self.fc(h.flatten(1))


def _data(n=160, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, 8, 8, generator=g)
    y = (x.mean((1, 2, 3)) > 0.5).long()
    return torch.utils.data.TensorDataset(x, y)


def _train(d, fmt="tensorboard", epochs=2, **kw):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    loader = torch.utils.data.DataLoader(_data(), batch_size=16, shuffle=True)
    losses = {}
    with SummaryCollector(d, model=model, optimizer=opt, loss_fn=model.loss_fn,
                          train_loader=loader, epochs=epochs, scheduler=sched, format=fmt,
                          custom_lineage_data={"seed": 0, "note": "ci"}, **kw) as sc:
        for _ in range(epochs):
            for xb, yb in loader:
                out = model(xb)
                loss = model.loss_fn(out, yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sc.step(loss=loss, inputs=xb)
                losses[sc.global_step] = float(loss.detach())
            sched.step()
            sc.epoch_end()
        sc.evaluate_end({"accuracy": 0.75},
                        eval_loader=torch.utils.data.DataLoader(_data(40, 1), batch_size=8))
    return losses


@pytest.mark.parametrize("fmt", ["tensorboard", "mindinsight"])
def test_hand_written_loop(tmp_path, fmt):
    losses = _train(tmp_path, fmt, collect_specified_data={"histogram_regular": r"^conv\."})
    r = Reader(tmp_path)
    loss = r.scalars(".", "loss/auto")
    assert loss.step.tolist() == [1, 10, 20]  # 20 steps: the first, then every 10th
    np.testing.assert_allclose(loss.value, [losses[s] for s in loss.step], rtol=1e-6)
    tags = r.tags(".")
    assert {t for t, k in tags.items() if t.endswith("/auto") and k == "histogram"} == {
        "conv.weight/auto", "conv.bias/auto"}
    assert tags["input_data/auto"] == "image" and tags["act"] == "histogram"
    assert r.scalars(".", "act_mean").step.tolist() == [1, 10, 20]
    tensor_steps = sorted({e.step for e in r.events(".") if e.tag == "logits"})
    assert 0 < len(tensor_steps) <= 20
    graphs = [e for e in r.events(".") if e.kind == "graph"]
    assert len(graphs) == 1 and len(graphs[0].value) > 100
    if fmt == "mindinsight":
        (row,) = r.lineage()
        assert (row["optimizer"], row["loss_function"], row["epoch"], row["batch_size"]) == (
            "SGD", "CrossEntropyLoss", 2, 16)
        assert row["learning_rate"] == pytest.approx(0.025)  # after two StepLR halvings
        assert row["train_dataset_size"] == 160 and row["network"] == "Net"
        assert row["metric"] == {"accuracy": 0.75} and row["valid_dataset_size"] == 40
        assert row["user_defined"] == {"seed": 0, "note": "ci"}
        assert row["dataset_graph"]["sampler"]["operationParam"]["mapStr"]["sampler"] == \
            "RandomSampler"
    else:
        hp = [e.value for e in r.events(".") if e.kind == "hparams"]
        start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
        assert start["optimizer"] == "SGD" and start["seed"] == 0
        # TensorBoard itself: scalars, histograms, images and the graph
        from tensorboard.backend.event_processing import event_accumulator

        acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
        acc.Reload()
        assert [e.step for e in acc.Scalars("loss/auto")] == [1, 10, 20]
        assert acc.Graph() is not None and len(acc.Graph().node) > 3


def test_loss_is_not_read_on_the_training_thread(tmp_path, monkeypatch):
    """Tensor values are read by summarylog's background thread: .item(),
    .numpy() or float() from summarylog on the caller's thread would sync a
    GPU.  The one exception is a 0-d loss already in host memory (a CPU
    tensor: no device to wait for), read at its step.  (Reads by other code,
    e.g. the DataLoader's seeding, don't count.)"""
    import threading
    import traceback

    main = threading.current_thread()
    reads = {"main": 0, "background": 0, "host loss": 0}

    def spy(name):
        orig = getattr(torch.Tensor, name)

        def read(self, *a, **k):
            if any("/summarylog/" in f.filename for f in traceback.extract_stack()):
                host_scalar = name == "item" and self.is_cpu and self.dim() == 0
                on_main = threading.current_thread() is main
                reads["host loss" if on_main and host_scalar else
                      "main" if on_main else "background"] += 1
            return orig(self, *a, **k)
        return read

    model = Net()
    loader = torch.utils.data.DataLoader(_data(32), batch_size=16)
    with SummaryCollector(tmp_path, model=model, train_loader=loader, epochs=1) as sc:
        for name in ("item", "numpy", "__float__", "tolist"):
            monkeypatch.setattr(torch.Tensor, name, spy(name))
        for xb, yb in loader:
            loss = model.loss_fn(model(xb), yb)
            sc.step(loss=loss, inputs=xb)
        sc.flush()
        monkeypatch.undo()
    assert reads["main"] == 0, reads
    assert reads["background"] > 0  # they were read, there
    assert Reader(tmp_path).scalars(".", "loss/auto").step.tolist() == [1]


def test_values_are_the_step_values_though_checked_later(tmp_path):
    """Collected tensors are cloned at step() and only checked and read on
    summarylog's thread: an in-place update right after the step (the next
    optimizer step) never reaches what is recorded."""
    import threading

    model = Net()
    gate = threading.Event()
    with SummaryCollector(tmp_path, model=model,
                          collect_specified_data={"histogram_regular": r"^fc\.weight$"}) as sc:
        rec = sc.core.record
        rec.add_later(lambda: (gate.wait(30), [])[1])  # hold summarylog's thread
        rec.record(0)
        before = model.fc.weight.detach().clone()
        loss = torch.tensor(0.5)
        sc.step(loss=loss)  # the first step: collected
        with torch.no_grad():
            model.fc.weight.add_(1000.0)
            loss.add_(1000.0)
        gate.set()
    r = Reader(tmp_path)
    assert r.scalars(".", "loss/auto").value.tolist() == [0.5]
    (h,) = [e.value for e in r.events(".") if e.tag == "fc.weight/auto"]
    assert h["max"] == pytest.approx(float(before.max()))
    assert h["sum"] == pytest.approx(float(before.double().sum()), rel=1e-6)


def test_validation_errors(tmp_path):
    with pytest.raises(ValueError):
        SummaryCollector(tmp_path, collect_freq=0)
    with pytest.raises(TypeError):
        SummaryCollector(tmp_path, model="net")
    with pytest.raises(TypeError, match="intervals"):  # MindSpore's: intervals have no default
        SummaryCollector(tmp_path, collect_specified_data={"collect_landscape": {"unit": "step"}})
    with pytest.raises(TypeError, match="num_process"):
        SummaryCollector(tmp_path, num_process="4")
    with pytest.raises(ValueError):
        summary("x", torch.ones(1), "audio") if False else None
        with SummaryCollector(tmp_path / "b"):
            summary("x", torch.ones(1), "audio")


# Lightning 2.6 on torch 2.13 warns about its own use of torch internals
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning",
                            "ignore::UserWarning")
def test_lightning_trainer(tmp_path):
    pl = require_module("pytorch_lightning")
    from summarylog.adapters.lightning import SummaryCollectorCallback, SummarylogLogger

    class Lit(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Net()
            self.save_hyperparameters({"lr": 0.1, "width": 4})

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = self.net.loss_fn(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            acc = (self.net(x).argmax(1) == y).float().mean()
            self.log("val_acc", acc)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=0.1)

    torch.manual_seed(0)
    train = torch.utils.data.DataLoader(_data(), batch_size=16)
    val = torch.utils.data.DataLoader(_data(32, 1), batch_size=16)
    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, log_every_n_steps=5,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=False,
                         callbacks=[SummaryCollectorCallback(tmp_path / "collector",
                                                             collect_freq=5, format="mindinsight")],
                         logger=SummarylogLogger(tmp_path / "logs"))
    trainer.fit(Lit(), train, val)
    r = Reader(tmp_path / "collector")
    assert r.scalars(".", "loss/auto").step.tolist() == [1, 5, 10, 15, 20]
    (row,) = r.lineage()
    assert row["optimizer"] == "Adam" and row["epoch"] == 2 and row["batch_size"] == 16
    assert "val_acc" in row["metric"] and row["network"] == "Lit"
    logs = Reader(tmp_path / "logs")
    (run,) = logs.runs()
    s = logs.scalars(run, "train_loss")
    assert s.step.tolist() == [4, 9, 14, 19]  # Lightning logs every 5 steps (0-based)
    assert logs.scalars(run, "val_acc").value.size == 2
    hp = [e.value for e in logs.events(run) if e.kind == "hparams"]
    start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
    assert start["lr"] == 0.1 and start["width"] == 4


@pytest.mark.parametrize("make", [
    lambda: torch.tensor(0.25, dtype=torch.float64),  # read straight from memory
    lambda: torch.tensor(-0.25)._neg_view(),  # a lazily negated view: not read raw
    lambda: torch.tensor(0.25, dtype=torch.bfloat16),  # no numpy dtype: cloned, read later
    lambda: torch.tensor([[0.25]]),  # not 0-d: cloned, read later
], ids=["float64", "neg_view", "bfloat16", "shape_1x1"])
def test_loss_kinds_are_recorded_with_their_step_value(tmp_path, make):
    """Every kind of loss tensor is recorded with its value at step(), even
    when it is changed in place right after."""
    loss = make()
    with SummaryCollector(tmp_path) as sc:
        sc.step(loss=loss)
        with torch.no_grad():
            (loss._neg_view() if loss.is_neg() else loss).add_(1000.0)  # the tensor's memory
    assert Reader(tmp_path).scalars(".", "loss/auto").value.tolist() == [0.25]


def test_snapshots_follow_a_parameter_swapped_under_them():
    """A collection's copy is always the parameter's current value, whatever
    ``p.data = ...`` swapped in: other memory, or the same memory seen
    another way (transposed, another dtype)."""
    from summarylog.adapters.torch import _snapshot_all

    p = torch.nn.Parameter(torch.arange(16.0).reshape(4, 4), requires_grad=False)  # int32 below
    for swap in (None, lambda d: d.t(),  # same memory and shape, transposed
                 lambda d: d.t().contiguous(),  # other memory
                 lambda d: d.view(torch.int32)):  # same memory, another dtype
        if swap is not None:
            p.data = swap(p.data)
        (copy,), nbytes = _snapshot_all([p])
        want = p.detach().clone()
        with torch.no_grad():
            p.add_(1)  # later in-place changes don't reach the copy
        assert copy.tolist() == want.tolist() and copy.dtype == want.dtype and nbytes == 64
        p.data = want


def test_steps_between_collections_take_the_short_path(tmp_path):
    """Between collections step() leaves the core alone, yet the last loss
    (lineage) follows every step and a quiet step's summary() values are
    not carried into the next collection; a closed collector still raises."""
    from unittest import mock

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    losses = {}
    sc = SummaryCollector(tmp_path, model=model, optimizer=opt, loss_fn=loss_fn, collect_freq=5,
                          format="mindinsight")
    with mock.patch.object(sc.core, "step", wraps=sc.core.step) as core_step:
        for i in range(1, 24):
            loss = loss_fn(model(x), y)
            summary("step_no", torch.tensor(float(i)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss)
            losses[i] = float(loss.detach())
    assert [c.args[0] for c in core_step.call_args_list] == [1, 5, 10, 15, 20]
    assert sc.global_step == 23
    sc.close()
    with pytest.raises(ValueError, match="closed"):
        sc.step(loss=loss)
    r = Reader(tmp_path)
    assert r.scalars(".", "loss/auto").step.tolist() == [1, 5, 10, 15, 20]
    assert r.scalars(".", "step_no").value.tolist() == [1, 5, 10, 15, 20]
    (row,) = r.lineage()
    assert row["loss"] == pytest.approx(losses[23], rel=1e-6)


def test_explicit_step_numbers_take_the_short_path_only_going_forward(tmp_path):
    """With step= given (as the Lightning callback does), numbers that go
    back, repeat or skip past a due step take the full path."""
    from unittest import mock

    sc = SummaryCollector(tmp_path, collect_freq=5)
    with mock.patch.object(sc.core, "step", wraps=sc.core.step) as core_step:
        for s in [1, 2, 3, 4, 5, 5, 6, 7, 9, 12, 3, 13, 16, 17]:
            sc.step(loss=torch.tensor(float(s)), step=s)
    assert [c.args[0] for c in core_step.call_args_list] == [1, 5, 5, 12, 3, 16]
    assert sc.global_step == 17
    sc.close()
    assert Reader(tmp_path).scalars(".", "loss/auto").step.tolist() == [1, 5]


def _histogram_of(values: np.ndarray) -> dict:
    """The histogram the Python reference encoder makes of ``values``
    (MindSpore's bucket rule), decoded as the Reader decodes one."""
    from summarylog.dialects.tensorboard import TensorBoardEncoder, decode_event

    (ev,) = decode_event(TensorBoardEncoder().histogram(0.0, 0, "t", values.ravel(), 0))
    return ev.value


def test_collections_go_through_the_lane_with_their_step_values(tmp_path, figure):
    """From the second collection on, the loss and the parameters are
    copied and queued in one native call (the lane): every collection is
    recorded, each histogram the parameter's value at that step, and the
    events come out in step order."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(16, 32), torch.randint(0, 3, (16,))
    seen, losses = {}, {}
    with SummaryCollector(tmp_path, model=model, optimizer=opt, loss_fn=loss_fn,
                          collect_specified_data={"collect_graph": False}) as sc:
        for i in range(1, 301):
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss, inputs=x)
            if i == 1:  # step 1 written: its kinds checked, step 10 opens the lane
                sc.core.record.flush()
            if i == 1 or i % 10 == 0:
                seen[i] = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
                losses[i] = float(loss.detach())
        stats = sc.core.lane.lane.stats
    # (on a loaded machine the nice-19 binner may fall 8 collections behind: the
    # lane says busy, and until summarylog's thread caught up collections go the
    # record's way: checked below like the rest)
    assert stats["collections"] >= 1 and stats["failed"] == 0
    assert stats["collections"] + stats["busy"] <= len(seen) - 1
    r = Reader(tmp_path)
    s = r.scalars(".", "loss/auto")
    assert s.step.tolist() == sorted(seen)
    assert s.value.tolist() == pytest.approx([losses[k] for k in sorted(seen)], rel=1e-6)
    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        got = [e for e in r.events(".") if e.tag == f"{name}/auto"]
        assert [e.step for e in got] == sorted(seen)
        for e in got:
            want = _histogram_of(seen[e.step][name])
            assert e.value["counts"] == want["counts"] and e.value["limits"] == want["limits"]
            assert (e.value["min"], e.value["max"], e.value["num"]) == \
                (want["min"], want["max"], want["num"])
    figure(f"{len(seen)} collections, {stats['collections']} through the lane "
           f"({stats['busy']} found it busy): each loss and histogram the step's value")


def test_a_swapped_parameter_gets_a_new_lane_and_its_new_values(tmp_path):
    """``p.data = ...`` (other memory) or a transposed view of the same
    memory makes the lane stale: the next collection opens another one over
    the parameters as they are, and what is recorded is their value."""
    model = nn.Linear(8, 8, bias=False)
    w = model.weight
    with SummaryCollector(tmp_path, model=model) as sc:
        for i in range(1, 61):
            if i == 25:
                w.data = torch.full((8, 8), 3.0)  # other memory
            if i == 45:
                w.data = w.data.t()  # same memory and shape, transposed: not contiguous
            with torch.no_grad():
                w.add_(1.0)
            sc.step(loss=torch.tensor(float(i)))
            if i == 15:  # steps 1 and 10 written: their kinds checked, step 20 opens a lane
                sc.core.record.flush()
            if i in (24, 44):
                lanes = sc.core.record._tb.pipeline.histograms.lanes
                assert len(lanes) == 1 and lanes[0] is sc.core.lane.lane
        tb = sc.core.record._tb
        # the stale lanes went, their counts kept (from 45 on the transposed
        # parameter is not contiguous: no lane, the copy pool's path)
        assert tb.pipeline.histograms.lanes == [] and sc.core.lane.lane is None
    assert tb.stats["events"] == sum(1 for e in Reader(tmp_path).events(".")
                                     if e.kind in ("scalar", "histogram", "hparams"))
    got = {e.step: e.value for e in Reader(tmp_path).events(".") if e.tag == "weight/auto"}
    assert sorted(got) == [1, 10, 20, 30, 40, 50, 60]
    assert got[30]["min"] == got[30]["max"] == 3.0 + (30 - 24)
    assert got[50]["min"] == got[50]["max"] == 3.0 + (50 - 24)


def test_summary_ops_and_images_take_the_record_path_in_step_order(tmp_path):
    """A collection with summary() values or input images is not the lane's:
    it goes through the record's thread, and the lane's collections wait
    for it, so each tag's steps come out in order."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.rand(8, 1, 8, 8), torch.randint(0, 2, (8,))
    with SummaryCollector(tmp_path, model=model, optimizer=opt, loss_fn=model.loss_fn) as sc:
        for i in range(1, 121):
            out = model(x) if i % 20 == 0 else model.fc(torch.relu(model.conv(x)).flatten(1))
            loss = model.loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss, inputs=x if i < 50 else x.flatten(1))
    r = Reader(tmp_path)
    want = [1] + list(range(10, 121, 10))
    assert r.scalars(".", "loss/auto").step.tolist() == want
    assert r.scalars(".", "act_mean").step.tolist() == [20, 40, 60, 80, 100, 120]
    for tag in ("conv.weight/auto", "fc.bias/auto"):
        assert [e.step for e in r.events(".") if e.tag == tag] == want
    assert [e.step for e in r.events(".") if e.tag == "input_data/auto"] == [1, 10, 20, 30, 40]


def test_collections_a_busy_lane_cannot_take_are_recorded_the_other_way(tmp_path, figure):
    """When every slot of the lane is still queued (a stalled disk), a
    collection goes through the copy pool and the record's thread instead:
    nothing is lost, the values are the step's, the steps stay in order,
    and the lane takes over again once that step is written."""
    torch.manual_seed(0)
    model = nn.Linear(16, 4)
    w = model.weight

    class Busy:  # the lane, saying busy at some steps
        def __init__(self, lane):
            self.lane, self.refused = lane, []

        def collect(self, loss, step, wall):
            if 100 <= step <= 150 or step == 200:
                self.refused.append(step)
                return False
            return self.lane.collect(loss, step, wall)

    busy = None
    with SummaryCollector(tmp_path, model=model) as sc:
        for i in range(1, 301):
            with torch.no_grad():
                w.fill_(float(i))
            time.sleep(0.0005)  # a training step's time, for summarylog's thread
            sc.step(loss=torch.tensor(float(i)))
            if sc.core.lane.run is not None and busy is None:
                busy = sc.core.lane.run.lane = Busy(sc.core.lane.lane)
        lane_stats = busy.lane.stats
    # (after a refused one the next waits for it to be written: it goes the
    # record's way too without asking the lane)
    assert busy.refused[0] == 100 and busy.refused[-1] == 200
    assert set(busy.refused) <= {100, 110, 120, 130, 140, 150, 200}
    assert lane_stats["collections"] >= 20
    r = Reader(tmp_path)
    want = [1] + list(range(10, 301, 10))
    assert r.scalars(".", "loss/auto").step.tolist() == want
    assert r.scalars(".", "loss/auto").value.tolist() == [float(s) for s in want]
    got = [(e.step, e.value["min"], e.value["max"]) for e in r.events(".")
           if e.tag == "weight/auto"]
    assert got == [(s, float(s), float(s)) for s in want]
    figure(f"the lane refused steps {busy.refused}; {lane_stats['collections']} of "
           f"{len(want)} collections went through it, the rest the record's way: all "
           f"{len(want)} recorded with the step's values, in step order")


def test_steps_of_tensors_alone_record_no_loss_or_histograms(tmp_path):
    """With the run's length known, the 20 tensor collections are spread
    over it, mostly off collect_freq: those steps record summary tensors
    alone (nothing when there are none), while the lane takes the regular
    collections."""
    torch.manual_seed(0)
    model = nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x.repeat(100, 1),
                                                                        y.repeat(100)),
                                         batch_size=4)
    with SummaryCollector(tmp_path, model=model, optimizer=opt, loss_fn=loss_fn,
                          train_loader=loader, epochs=10) as sc:
        tensor_steps = sorted(sc.core._tensor_steps)
        for i in range(1, 1001):
            out = model(x)
            if i % 10 and i in tensor_steps[::2]:  # half of them: the others have none
                summary("logits", out, "tensor")
            loss = loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(0.0002)  # a training step's time, for summarylog's thread
            sc.step(loss=loss)
        assert sc.core.lane.lane is not None and sc.core.lane.lane.stats["collections"] > 50
    off = [t for t in tensor_steps if t % 10 and t > 1]
    assert len(off) >= 15
    r = Reader(tmp_path)
    want = [1] + list(range(10, 1001, 10))
    assert r.scalars(".", "loss/auto").step.tolist() == want
    assert [e.step for e in r.events(".") if e.tag == "weight/auto"] == want
    assert [e.step for e in r.events(".") if e.tag == "logits"] == \
        [t for t in off if t in tensor_steps[::2]]
