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

from conftest import IN_CI, require

WORKLOADS = ("crc32c", "write_many", "fsync_1mib", "scan", "read_scalars", "read_scalars_tbparse",
             "rust_server", "rust_server_root", "read_memory", "inspect_many", "sw_add_scalar",
             "sw_heavy", "read_many_runs", "stream_scalars", "summary_reader_scalars",
             "summary_reader_histograms")
PEER_MODULES = ("crc32c", "tensorboardX", "tensorboard", "tbparse", "tensorboard_data_server")


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _mindspore_python() -> str | None:
    """A Python with MindSpore for the mindspore_collector and landscape rows:
    $SUMMARYLOG_MINDSPORE_PYTHON, else the venv that the MindSpore tests and
    ``./dev bench`` share (tools/sidevenvs.py; built here if missing).  None
    when it cannot be built (under CI that fails the test)."""
    py = os.environ.get("SUMMARYLOG_MINDSPORE_PYTHON")
    if py:
        return py
    from venvs import ensure_venv, venv_python

    try:
        return str(venv_python(ensure_venv("mindspore")))
    except Exception as exc:
        if IN_CI:
            pytest.fail(f"the MindSpore venv is required under CI but could not be built: {exc}")
        print(f"no MindSpore venv, the mindspore_collector row is left out: {exc}")
        return None


def _run(args: list[str], tmp_path: Path, timeout: float = 300,
         ci: bool | None = None, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    """The bench in a child; ``ci``: run it with CI=true / without CI (None:
    as this run has it); ``env``: more variables."""
    import summarylog

    # the child imports the same summarylog as this process (source tree or install)
    root = str(Path(summarylog.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    child = dict(os.environ, SUMMARYLOG_BENCH_TMPDIR=str(tmp_path), PYTHONPATH=path, **(env or {}))
    if ci is not None:
        child.pop("CI", None)
        if ci:
            child["CI"] = "true"
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=child,
                          timeout=timeout, cwd=tmp_path)


def test_quick_run_reports_every_workload(tmp_path: Path) -> None:
    for mod in PEER_MODULES:
        require(importlib.util.find_spec(mod) is not None, f"the {mod} package (summarylog[bench])")
    out = tmp_path / "bench.json"
    # one round each: this proves every row runs and reports; the figures are the bench's job
    args = ["-m", "summarylog.bench", "--quick", "--repeat", "1", "--json", str(out)]
    ms_python = _mindspore_python()
    if ms_python is None:  # every other bench
        from summarylog.bench.registry import REGISTRY
        from summarylog.bench.runner import load_workloads

        load_workloads()

        args += ["--only", ",".join(n for n in REGISTRY
                                    if n not in ("mindspore_collector", "landscape"))]
    cp = _run(args, tmp_path, timeout=900,
              env={"SUMMARYLOG_MINDSPORE_PYTHON": ms_python} if ms_python else None)
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


def _without(modules: tuple[str, ...], argv: list[str]) -> str:
    """A child script: the bench's main(argv) with ``modules`` unimportable."""
    return textwrap.dedent(f"""
        import sys
        for name in {modules!r}:
            sys.modules[name] = None  # import now raises ImportError
        from summarylog.bench.__main__ import main
        sys.exit(main({argv!r}))
    """)


def test_missing_peer_is_reported_not_fatal(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    script = _without(("crc32c", "google_crc32c"),
                      ["--quick", "--only", "crc32c", "--repeat", "1", "--json", str(out)])
    cp = _run(["-c", script], tmp_path, ci=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    w = json.loads(out.read_text())["workloads"]
    assert list(w) == ["crc32c"]
    assert w["crc32c"]["peer_status"] == "missing (pip install summarylog[bench])"
    assert w["crc32c"]["peer_value"] is None and w["crc32c"]["met"] is None
    assert _number(w["crc32c"]["ours_value"])
    assert "missing (pip install summarylog[bench])" in cp.stdout


@pytest.mark.parametrize("modules,only,where", [
    (("crc32c", "google_crc32c"), "crc32c", "crc32c / "),  # a peer row says missing
    (("jax", "flax", "optax"), "jax_collector", "jax_collector: "),  # the bench cannot start
])
def test_missing_peer_fails_under_ci(tmp_path: Path, modules, only, where) -> None:
    # under CI=true a row the bench cannot judge is a failure, not a silent skip
    cp = _run(["-c", _without(modules, ["--quick", "--only", only, "--repeat", "1"])],
              tmp_path, ci=True)
    print(f"CI=true without {', '.join(modules)}: exit {cp.returncode}; "
          f"{cp.stderr.strip().splitlines()[-2:]}")
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "CI=true: every peer is required; missing:" in cp.stderr
    assert any(line.strip().startswith(where) and "missing" in line
               for line in cp.stderr.splitlines()), cp.stderr


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
