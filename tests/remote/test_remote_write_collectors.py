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


def test_lightning_logger_on_a_url(tmp_path, monkeypatch):
    """Lightning's SummarylogLogger on a URL: versions are found by listing it, metrics
    and hparams are uploaded, and no local folder named after the URL appears."""
    require_module("torch")
    require_module("pytorch_lightning")
    from summarylog import Reader
    from summarylog.adapters.lightning import SummarylogLogger

    monkeypatch.chdir(tmp_path)
    root = f"memory://bkt/pl-{os.getpid()}"
    for version in range(2):
        lg = SummarylogLogger(root, name="exp")
        assert lg.version == version  # version_0 is listed when the second one starts
        assert lg.log_dir == f"{root}/exp/version_{version}"
        lg.log_hyperparams({"lr": 0.1})
        for step in range(5):
            lg.log_metrics({"loss": 1.0 / (step + 1)}, step=step)
        lg.finalize("success")
        assert segment_objects(lg.log_dir, None)
    with Reader(f"{root}/exp/version_1") as r:
        assert r.scalars(".", "loss").step.tolist() == list(range(5))
    assert os.listdir(tmp_path) == []
    print(f"\nLightning SummarylogLogger on {root}: version_0 and version_1 uploaded, "
          "5 loss points read back; no local folder made")
