"""``python -m summarylog.bench`` as a smoke test: it runs, reports every
workload with numbers for us and the peer, reports missing peers instead of
crashing, and its registry enforces the bench_* naming.  No time is
asserted anywhere."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import require

WORKLOADS = ("crc32c", "write_many", "fsync_1mib", "scan", "read_scalars", "read_scalars_tbparse",
             "rust_server", "read_memory", "inspect_many")
PEER_MODULES = ("crc32c", "tensorboardX", "tensorboard", "tbparse", "tensorboard_data_server")


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _run(args: list[str], tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    import summarylog

    # the child imports the same summarylog as this process (source tree or install)
    root = str(Path(summarylog.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, SUMMARYLOG_BENCH_TMPDIR=str(tmp_path), PYTHONPATH=path)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=tmp_path)


def test_quick_run_reports_every_workload(tmp_path: Path) -> None:
    for mod in PEER_MODULES:
        require(importlib.util.find_spec(mod) is not None, f"the {mod} package (summarylog[bench])")
    out = tmp_path / "bench.json"
    cp = _run(["-m", "summarylog.bench", "--quick", "--json", str(out)], tmp_path)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    doc = json.loads(out.read_text())
    assert doc["quick"] is True
    assert doc["machine"]["native_info"]["crc32c"]
    for name in WORKLOADS:
        assert name in doc["workloads"], name
        w = doc["workloads"][name]
        assert w["error"] is None, w["error"]
        assert w["peer_status"] == "ok", (name, w["peer_status"])
        assert _number(w["ours_value"]), (name, w)
        assert _number(w["peer_value"]), (name, w)
        assert _number(w["ratio"]), (name, w)
        assert _number(w["goal"]), (name, w)
        assert isinstance(w["met"], bool), (name, w)
        assert w["rows"] and all(_number(r["ours_value"]) for r in w["rows"]), name
        assert all(len(r["ours_runs"]) == doc["repeat"] for r in w["rows"]), name
        assert name in cp.stdout
    header = next(line for line in cp.stdout.splitlines() if line.startswith("workload"))
    assert header.split() == ["workload", "peer", "peer", "figure", "summarylog", "ratio",
                              "goal", "met"]
    # the scratch files are cleaned up
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]


def test_missing_peer_is_reported_not_fatal(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    script = textwrap.dedent(f"""
        import sys
        for name in ("crc32c", "google_crc32c"):
            sys.modules[name] = None  # import now raises ImportError
        from summarylog.bench.__main__ import main
        sys.exit(main(["--quick", "--only", "crc32c", "--repeat", "1", "--json", {str(out)!r}]))
    """)
    cp = _run(["-c", script], tmp_path)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    w = json.loads(out.read_text())["workloads"]
    assert list(w) == ["crc32c"]
    assert w["crc32c"]["peer_status"] == "missing (pip install summarylog[bench])"
    assert w["crc32c"]["peer_value"] is None and w["crc32c"]["met"] is None
    assert _number(w["crc32c"]["ours_value"])
    assert "missing (pip install summarylog[bench])" in cp.stdout


def test_unknown_bench_name_is_a_usage_error(tmp_path: Path) -> None:
    cp = _run(["-m", "summarylog.bench", "--only", "nope"], tmp_path, timeout=60)
    assert cp.returncode == 2
    assert "unknown bench" in cp.stderr


def test_registry_enforces_bench_naming() -> None:
    from summarylog.bench import REGISTRY, bench

    before = dict(REGISTRY)

    def not_a_bench(ctx):  # type: ignore[no-untyped-def]
        return []

    def bench_other(ctx):  # type: ignore[no-untyped-def]
        return []

    with pytest.raises(ValueError, match="bench_"):
        bench("smoke_x", goal=1, unit="GB/s", peer="p")(not_a_bench)
    with pytest.raises(ValueError, match="bench_smoke_x"):
        bench("smoke_x", goal=1, unit="GB/s", peer="p")(bench_other)
    with pytest.raises(ValueError, match="lowercase identifier"):
        bench("Bad-Name", goal=1, unit="GB/s", peer="p")
    with pytest.raises(ValueError, match="goal"):
        bench("smoke_x", goal=0, unit="GB/s", peer="p")
    assert REGISTRY == before


def test_paired_rows_take_the_median_of_the_rounds_ratios():
    """A side-by-side row's ratio is the median of each round's ratio: the
    machine's speed may differ from round to round, and one round's hiccup
    is one outlier ratio, where it would reshuffle the medians of the
    separate lists."""
    from summarylog.bench.registry import Row

    peer = [100.0, 60.0, 80.0, 90.0, 70.0]  # the machine's speed moves between rounds
    ours = [p * 0.98 for p in peer]  # 2 % slower in each round...
    ours[2] *= 0.7  # ...and a hiccup in round 3
    paired = Row("w", "l", "p", "steps/s", ours, peer, paired=True)
    unpaired = Row("w", "l", "p", "steps/s", ours, peer)
    assert paired.ratio == pytest.approx(0.98)
    assert unpaired.ratio == pytest.approx(68.6 / 80.0)  # median 70 * 0.98 over median 80
    assert paired.to_json()["ratio"] == paired.ratio
