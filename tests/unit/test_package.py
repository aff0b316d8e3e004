"""Packaging facts: one version in C and Python, typed, light imports, and
the README's set-up commands are the ones CI runs."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import summarylog
from summarylog._native import ffi, lib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_one_version() -> None:
    assert ffi.string(lib.slg_version()).decode() == summarylog.__version__
    assert summarylog.native_info()["version"] == summarylog.__version__


def test_installed_not_source_tree() -> None:
    # the suite tests the installed package (with its compiled core)
    assert "site-packages" in summarylog.__file__


def test_py_typed_shipped() -> None:
    assert (pathlib.Path(summarylog.__file__).parent / "py.typed").exists()


def test_import_pulls_no_framework() -> None:
    code = ("import sys, summarylog, summarylog.records; "
            "bad = [m for m in ('torch', 'jax', 'mindspore', 'tensorflow', 'tensorboard', 'zstandard')"
            " if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         check=True, cwd="/").stdout.strip()
    assert out == "[]"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^(\./dev \w+)", readme, flags=re.M)
    assert commands[:2] == ["./dev demo", "./dev test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec \./dev test$", ci, flags=re.M)


def test_demo_runs(tmp_path) -> None:
    """The main job: a real PyTorch run with the collector, a table, a plot."""
    res = subprocess.run([sys.executable, "-P", "-m", "summarylog.demo", "--logdir", str(tmp_path),
                          "--epochs", "1"], capture_output=True, text=True, check=True, cwd="/")
    out = res.stdout
    assert "read back" in out and "damage: none" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    assert rows["loss/auto"][1:4] == ["scalar", "9", "1..64"]  # first step, then every 8th
    assert rows["train/accuracy"][1:4] == ["scalar", "64", "1..64"]
    assert rows["conv.weight/auto"][1] == "histogram" and rows["input_data/auto"][1] == "image"
    assert rows["activations/conv"][1] == "histogram"
    (png,) = list(tmp_path.glob("*/scalars.png"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
