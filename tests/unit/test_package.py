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
