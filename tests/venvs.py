"""Virtual environments for frameworks and clients whose pins clash with the
main test environment (MindSpore needs numpy<2; MindInsight pins protobuf
3.20).  The test run makes them itself under ``<repo>/.venvs/<name>``, once:
a stamp file holds the requirement list (a changed list rebuilds the venv)
and a file lock keeps two pytest processes from building the same one.

``SPECS`` names every environment the suite uses; ``python tests/venvs.py``
builds them all ahead of time (``./dev test`` runs it before pytest)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venvs"

#: name -> (requirements, install summarylog itself into it)
SPECS: dict[str, tuple[list[str], bool]] = {
    # MindSpore 2.10 on the CPU; its dataset pipeline needs numpy<2.  summarylog
    # is installed too, for the MindSpore adapter's tests.
    "mindspore": (["mindspore==2.10.0", "numpy<2", "pillow"], True),
    # MindInsight 2.3.1 pins protobuf 3.20; it needs numpy<2 (np.PINF) and a
    # pandas built for numpy 1, and gunicorn on PATH (its bin dir).
    "mindinsight": (["mindinsight==2.3.1", "gunicorn", "numpy<2", "pandas<2.3"], False),
}


def venv_python(path: pathlib.Path) -> pathlib.Path:
    return path / "bin" / "python"


def _stamp(reqs: list[str], with_self: bool) -> str:
    key = {"reqs": reqs, "self": with_self, "python": sys.version.split()[0]}
    if with_self:  # rebuild when summarylog's sources change
        h = hashlib.sha256()
        for p in sorted([*ROOT.glob("csrc/**/*.[ch]"), *ROOT.glob("summarylog/**/*.py"),
                         ROOT / "pyproject.toml", ROOT / "setup.py"]):
            h.update(p.read_bytes())
        key["src"] = h.hexdigest()
    return json.dumps(key, sort_keys=True)


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-25:])
        raise RuntimeError(f"{what} failed ({' '.join(cmd[:4])} ...):\n{tail}")


def ensure_venv(name: str) -> pathlib.Path:
    """The venv ``name`` of :data:`SPECS`, built if missing or stale."""
    reqs, with_self = SPECS[name]
    path = VENVS / name
    stamp = _stamp(reqs, with_self)
    VENVS.mkdir(exist_ok=True)
    with open(VENVS / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp_file = path / ".summarylog-stamp"
        if stamp_file.exists() and stamp_file.read_text() == stamp and venv_python(path).exists():
            return path
        t0 = time.monotonic()
        shutil.rmtree(path, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(path)], f"creating the {name} venv")
        pip = [str(venv_python(path)), "-m", "pip", "install", "--disable-pip-version-check",
               "-q"]
        _run([*pip, *reqs], f"installing {' '.join(reqs)} into the {name} venv")
        if with_self:  # the pins above hold: summarylog's own deps come on top of them
            _run([*pip, str(ROOT), *reqs], f"installing summarylog into the {name} venv")
        stamp_file.write_text(stamp)
        print(f"[venvs] built {name} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return path


def require_venv(name: str) -> pathlib.Path:
    """ensure_venv for tests: a failure skips locally and fails under CI."""
    import pytest

    from conftest import IN_CI

    try:
        return ensure_venv(name)
    except Exception as exc:
        if IN_CI:
            pytest.fail(f"the {name} venv is required under CI: {exc}")
        pytest.skip(f"the {name} venv is not available: {exc}")
        raise  # unreachable


if __name__ == "__main__":
    for n in sys.argv[1:] or list(SPECS):
        print(ensure_venv(n))
