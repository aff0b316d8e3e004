"""The collectors' lane into MindSpore summary files: a PyTorch collector writing
MindSpore's dialect takes the same one fast path as for TensorBoard, and each
collection it writes is the Event the record's own path makes for that step."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

torch = require_module("torch")
nn = torch.nn

from summarylog import Reader  # noqa: E402
from summarylog.adapters.torch import SummaryCollector  # noqa: E402
from summarylog.dialects.mindspore import MindSporeEncoder, decode_event  # noqa: E402


def test_mindspore_files_take_the_lane_with_each_steps_values(tmp_path, figure):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(16, 32), torch.randint(0, 3, (16,))
    seen, losses = {}, {}
    with SummaryCollector(tmp_path, model=model, optimizer=opt, loss_fn=loss_fn,
                          format="mindinsight",
                          collect_specified_data={"collect_graph": False,
                                                  "collect_landscape": None}) as sc:
        for i in range(1, 201):
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss, inputs=x)
            if i == 1:
                sc.core.record.flush()  # the file exists: step 10 may open the lane
            if i == 1 or i % 10 == 0:
                seen[i] = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
                losses[i] = float(loss.detach())
        stats = sc.core.lane.lane.stats
    assert stats["collections"] >= 1 and stats["failed"] == 0
    r = Reader(tmp_path)
    s = r.scalars(".", "loss/auto")
    assert s.step.tolist() == sorted(seen)
    assert s.value.tolist() == pytest.approx([losses[k] for k in sorted(seen)], rel=1e-6)
    enc = MindSporeEncoder()
    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        got = [e for e in r.events(".") if e.tag == f"{name}/auto"]
        assert [e.step for e in got] == sorted(seen)
        for e in got:  # the record's own encoding of that step's value
            (payload,) = enc.summary(0.0, e.step, [("histogram", f"{name}/auto",
                                                    seen[e.step][name])])
            (want,) = [w for w in decode_event(payload) if w.kind == "histogram"]
            assert e.value == want.value
    figure(f"MindSpore files: {len(seen)} collections, {stats['collections']} through the "
           f"lane ({stats['busy']} found it busy), each the step's values")


def test_collections_through_the_lane_count_toward_mindinsights_limits(tmp_path, caplog):
    """MindInsight shows 50 steps per histogram tag: lane collections count too."""
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    with caplog.at_level("WARNING", logger="summarylog"):
        with SummaryCollector(tmp_path, model=model, optimizer=opt, format="mindinsight",
                              collect_freq=1,
                              collect_specified_data={"collect_graph": False,
                                                      "collect_landscape": None}) as sc:
            # a busy lane skips a step's collection: on a loaded machine fewer are taken,
            # so train until more than 50 were (bounded)
            for i in range(1, 2001):
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sc.step(loss=loss)
                if i == 1:
                    sc.core.record.flush()
                if i >= 80 and sc.core.lane.lane.stats["collections"] > 55:
                    break
            taken = sc.core.lane.lane.stats["collections"]
    assert taken > 50, f"{taken} collections in {i} steps"
    warned = [r.getMessage() for r in caplog.records if "more than 50 steps" in r.getMessage()]
    assert len(warned) == 1 and "histogram tag" in warned[0]
