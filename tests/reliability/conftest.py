"""Reliability tests: each prints its figure with the ``figure`` fixture
(tests/conftest.py; repeated in a "figures" section at the end of the run).
``pytest --long`` runs the long versions (more crash trials, more fuzz
inputs, bigger soaks)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

SCRIPTS = pathlib.Path(__file__).with_name("scripts")


def child_env() -> dict[str, str]:
    """The environment for a child Python: the installed summarylog, not
    the source tree (whose package has no compiled core)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def script_cmd(name: str, *args: object) -> list[str]:
    """The command running tests/reliability/scripts/<name> in a child Python
    that starts with the default SIGHUP/SIGTERM/SIGINT, unblocked, however
    this test run was started (nohup, a background job, CI): see
    scripts/clean_start.py."""
    return [sys.executable, str(SCRIPTS / "clean_start.py"), str(SCRIPTS / name),
            *map(str, args)]


def run_script(name: str, *args: str, timeout: float = 300, check: bool = True,
               **kw) -> subprocess.CompletedProcess[str]:
    """Run tests/reliability/scripts/<name> in a child Python (cwd /, signals
    as script_cmd says)."""
    r = subprocess.run(script_cmd(name, *args), cwd="/", env=child_env(),
                       capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{name} {args} exited {r.returncode}:\n{r.stdout[-3000:]}\n"
                             f"{r.stderr[-3000:]}")
    return r
