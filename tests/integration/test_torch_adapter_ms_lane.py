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
