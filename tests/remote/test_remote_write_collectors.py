"""Collectors on a URL: the adapters build a SummaryRecord or Writer on it, which
spools and uploads; side files that are not event files (landscape checkpoints)
are refused for URLs rather than written to a local folder named ``s3:``."""

from __future__ import annotations

import os

import pytest

from conftest import require_module
from upload_helpers import segment_objects

from summarylog.collector import CollectionPolicy


def test_torch_summary_collector_on_a_url(tmp_path, monkeypatch):
    torch = require_module("torch")
    from summarylog.adapters.torch import SummaryCollector

    monkeypatch.chdir(tmp_path)  # nothing may appear here (no local folder "memory:")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    url = f"memory://bkt/collector-{os.getpid()}"
    with SummaryCollector(url, model=model, optimizer=opt, collect_freq=2) as sc:
        for _ in range(6):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss)
    objs = segment_objects(url, None)
    assert objs and all(".out.events.summary." in n or ".tfevents." in n for n in objs)
    assert os.listdir(tmp_path) == []
    print(f"\ntorch SummaryCollector on {url}: {len(objs)} object(s), "
          f"{sum(map(len, objs.values()))} bytes; no local folder made")


def test_collector_refuses_landscape_on_a_url():
    with pytest.raises(ValueError, match="collect_landscape"):
        CollectionPolicy("s3://bkt/run", collect_specified_data={"collect_landscape": {}})
    assert CollectionPolicy("s3://bkt/run").landscape is None  # the default: off, not local


def test_jax_metric_writer_on_a_url():
    require_module("jax")
    from summarylog.adapters.jax import MetricWriter

    url = f"memory://bkt/jax-{os.getpid()}"
    w = MetricWriter(url)
    w.write_scalars(1, {"loss": 0.5})
    w.close()
    assert segment_objects(url, None)
