"""Side virtual environments for frameworks and clients whose pins clash with
the main one (MindSpore needs numpy<2; MindInsight pins protobuf 3.20;
TensorFlow, the oracle of SummaryReader's images and audio, its own), made
under ``<repo>/.venvs/<name>``, once: a stamp file holds the requirement list
(a changed list rebuilds the venv) and a file lock keeps two processes from
building the same one.

The one maker of these venvs: the tests use it through tests/venvs.py,
``./dev bench`` runs it for the MindSpore collector row.  ``SPECS`` names
every environment; ``python tools/sidevenvs.py [NAME...]`` builds them (all
by default) and prints each venv's directory.
"""

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
    # pandas built for numpy 1, and gunicorn on PATH (its bin dir).  With
    # marshmallow 4 every lineage search condition (POST lineagemgr/lineages
    # with a filter, GET datasets/dataset_graph) is a 500: its validators
    # take no ``data_key`` argument.
    "mindinsight": (["mindinsight==2.3.1", "gunicorn", "numpy<2", "pandas<2.3",
                     "marshmallow<4"], False),
    # TensorFlow 2.21 on the CPU: the oracle of SummaryReader's images and audio
    # (tbparse decodes them only when TensorFlow imports) and the writer of
    # tf.summary runs.  tbparse, pandas, numpy and pyarrow pinned to the main venv's, so
    # the DataFrames pickled there unpickle in the main venv as the same dtypes (pandas's
    # string columns are pyarrow-backed only where pyarrow imports).
    "tensorflow": (["tensorflow-cpu==2.21.0", "tbparse==0.0.9", "pandas==3.1.1",
                    "numpy==2.4.6", "pyarrow==26.0.1", "pillow"], False),
}


STAMP = ".summarylog-stamp"


def venv_python(path: str | os.PathLike[str]) -> pathlib.Path:
    """The interpreter of the venv at ``path``."""
    return pathlib.Path(path) / "bin" / "python"


def venv_env(**extra: str) -> dict[str, str]:
    """The environment for a side venv's programs: nothing of the main venv on
    their import path (a PYTHONPATH would bring numpy 2 into MindSpore's)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env.update(extra)
    return env


def venv_bin(path: str | os.PathLike[str]) -> pathlib.Path:
    """The venv's bin dir (put it first on PATH for tools that shell out,
    e.g. MindInsight's ``gunicorn``)."""
    return pathlib.Path(path) / "bin"


def _stamp(reqs: list[str], with_self: bool) -> str:
    key = {"reqs": list(reqs), "self": with_self, "python": sys.version.split()[0]}
    if with_self:  # rebuild when summarylog's sources change
        h = hashlib.sha256()
        for p in sorted([*ROOT.glob("csrc/**/*.[ch]"), *ROOT.glob("summarylog/**/*.py"),
                         ROOT / "pyproject.toml", ROOT / "setup.py"]):
            h.update(p.read_bytes())
        key["src"] = h.hexdigest()
    return json.dumps(key, sort_keys=True)


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-25:])
        raise RuntimeError(f"{what} failed (exit {r.returncode}; {' '.join(cmd[:5])} ...):"
                           f"\n{tail}")


def ensure_venv(name: str, requirements: list[str] | None = None, *,
                with_self: bool | None = None,
                root: str | os.PathLike[str] | None = None) -> pathlib.Path:
    """The venv ``<root>/<name>`` (root: ``<repo>/.venvs``) holding
    ``requirements`` (default: ``SPECS[name]``), built if missing or stale.

    ``with_self`` also installs summarylog (the repo) into it, keeping the pins
    (default: as ``SPECS`` says for a SPECS name without explicit
    requirements, else False).  A stamp file holds the requirement list, the
    Python version and, with summarylog, a hash of its sources: any change
    rebuilds the venv from scratch.  A file lock (``<root>/.<name>.lock``)
    makes a second process wait for the first one's build.  A failed build
    raises RuntimeError with the tail of pip's output and leaves no stamp."""
    if requirements is None:
        requirements, spec_self = SPECS[name]
        with_self = spec_self if with_self is None else with_self
    reqs = list(requirements)
    with_self = bool(with_self)
    base = pathlib.Path(root) if root is not None else VENVS
    path = base / name
    stamp = _stamp(reqs, with_self)
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp_file = path / STAMP
        if stamp_file.exists() and stamp_file.read_text() == stamp and venv_python(path).exists():
            return path
        t0 = time.monotonic()
        shutil.rmtree(path, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(path)], f"creating the {name} venv")
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
        pip = [str(venv_python(path)), "-m", "pip", "install", "-q"]
        if reqs:
            _run([*pip, *reqs], f"installing {' '.join(reqs)} into the {name} venv", env)
        if with_self:  # the pins above hold: summarylog's own deps come on top of them
            _run([*pip, str(ROOT), *reqs], f"installing summarylog into the {name} venv", env)
        stamp_file.write_text(stamp)
        print(f"[venvs] built {name} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return path


if __name__ == "__main__":
    for n in sys.argv[1:] or list(SPECS):
        print(ensure_venv(n))
