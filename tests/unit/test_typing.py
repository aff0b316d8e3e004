"""Type checkers see summarylog's API: mypy passes on every Python example of the
README (each block checked as a module, its free names — the reader's model, loader, … —
declared Any), and the lazily imported classes have their real types, not ``object``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_module

ROOT = Path(__file__).resolve().parents[2]
#: names the README's examples take from the reader's own code
FREE = ("model opt loss_fn loader loss acc val_loader pl n train_step params opt_state batch "
        "epochs dataset weights batch_nchw step x y net images labels callback_fn F batches ls"
        ).split()
CONFIG = """\
[mypy]
ignore_missing_imports = True
warn_unused_ignores = False
[mypy-summarylog.*]
follow_imports = silent
[mypy-torch.*,jax.*,jaxlib.*,flax.*,optax.*,lightning.*,pytorch_lightning.*,mindspore.*,\
clu.*,tensorflow.*,matplotlib.*,pandas.*,pyarrow.*,tensorboard.*,tensorboardX.*]
follow_imports = skip
"""


def _mypy(tmp_path: Path, sources: dict[str, str]) -> subprocess.CompletedProcess[str]:
    require_module("mypy")
    (tmp_path / "mypy.ini").write_text(CONFIG)
    for name, src in sources.items():
        (tmp_path / name).write_text(src)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini",
                           "--cache-dir", str(tmp_path / ".cache"), *sources],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_readme_examples_pass_mypy(tmp_path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 4
    preamble = "from typing import Any\nimport summarylog\n" + "".join(
        f"{name}: Any\n" for name in FREE)
    cp = _mypy(tmp_path, {f"readme_{i}.py": preamble + b for i, b in enumerate(blocks)})
    assert cp.returncode == 0, cp.stdout + cp.stderr
    print(f"mypy: {len(blocks)} README examples: {cp.stdout.strip().splitlines()[-1]}")


def test_lazy_classes_have_their_types(tmp_path) -> None:
    src = """\
import summarylog
reveal_type(summarylog.Writer)
reveal_type(summarylog.SummaryWriter)
reveal_type(summarylog.Reader)
reveal_type(summarylog.SummaryRecord)
w = summarylog.SummaryWriter("runs/x")
w.add_scalar("loss", 0.5, global_step=3)
w.add_scalr("loss", 0.5)
summarylog.Writer("runs/y").add_scalar("loss", "x", step=1.5)
"""
    cp = _mypy(tmp_path, {"probe.py": src})
    out = cp.stdout
    for name in ("writer.Writer", "summary_writer.SummaryWriter", "reader.Reader",
                 "summary_record.SummaryRecord"):
        assert re.search(rf"Revealed type is \"def .*summarylog\.{name}\"", out), (name, out)
    assert 'has no attribute "add_scalr"' in out  # real classes, not Any
    assert 'Argument "step" to "add_scalar" of "Writer" has incompatible type "float"' in out
    assert "object" not in out.replace("[object]", "")
    print(out)
