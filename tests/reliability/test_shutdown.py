"""SIGTERM, SIGINT, SIGHUP and a plain exit without close() drain and close
every open writer; the user's own signal handlers are kept and run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from summarylog import Reader

from .conftest import child_env, run_script, script_cmd

N = 200_000

# What `nohup cmd &` under a non-interactive shell (or a CI runner) hands down:
# SIGHUP, SIGTERM and SIGINT ignored and blocked, which survive exec().  It
# exec()s the command given after it with that inheritance.
_HOSTILE_PARENT = """\
import os, signal, sys
sigs = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
for s in sigs:
    signal.signal(s, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
os.execv(sys.argv[1], sys.argv[1:])
"""


def _run(logdir: str, mode: str, sig: int | None,
         inherited_ignored: bool = False) -> tuple[int, str, float]:
    cmd = script_cmd("shutdown_child.py", logdir, mode, N)
    if inherited_ignored:
        cmd = [sys.executable, "-c", _HOSTILE_PARENT, *cmd]
    p = subprocess.Popen(cmd, cwd="/", env=child_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    lines = []
    try:
        while True:
            line = p.stdout.readline()
            assert line, (lines, p.stderr.read() if p.stderr else "")
            lines.append(line)
            if line == "ready\n":
                break
        t0 = time.perf_counter()
        if sig is not None:
            if mode == "ignored":
                os.kill(p.pid, signal.SIGTERM)  # ignored, as the user asked
                time.sleep(0.3)
                assert p.poll() is None, \
                    "SIGTERM was set to SIG_IGN by the user but killed the child"
                sig = signal.SIGINT
            os.kill(p.pid, sig)
        out, err = p.communicate(timeout=120)
    finally:  # a failed check leaves no child behind
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, "".join(lines) + out + err, time.perf_counter() - t0


def _check_drained(logdir: str) -> None:
    r = Reader(os.path.join(logdir, "tb"))
    (run,) = r.runs()
    s = r.scalars(run, "x")
    np.testing.assert_array_equal(s.step, np.arange(N))
    assert "h" in r.tags(run)
    for rep in r.damage().values():
        assert rep.ok and rep.tail is None, rep  # closed cleanly, not torn
    ms = Reader(os.path.join(logdir, "ms"))
    (run,) = ms.runs()
    y = ms.scalars(run, "y")
    np.testing.assert_array_equal(y.step, np.arange(0, N, 1000))
    for rep in ms.damage().values():
        assert rep.ok and rep.tail is None, rep


@pytest.mark.parametrize("mode,sig,rc", [
    ("exit", None, 0),
    ("sigterm", signal.SIGTERM, 128 + signal.SIGTERM),
    ("sighup", signal.SIGHUP, 128 + signal.SIGHUP),
    # an uncaught KeyboardInterrupt: exit code 1, or death by SIGINT (Python re-raises it
    # when the SIGINT disposition is its own default handler)
    ("sigint", signal.SIGINT, (1, -signal.SIGINT)),
    ("user_before", signal.SIGTERM, 3),
    ("user_after", signal.SIGTERM, 3),
    ("ignored", signal.SIGTERM, (1, -signal.SIGINT)),
])
def test_shutdown_drains_every_writer(tmp_path, mode, sig, rc, figure):
    code, out, secs = _run(str(tmp_path), mode, sig)
    assert code in (rc if isinstance(rc, tuple) else (rc,)), out
    if mode.startswith("user"):
        assert f"user handler {int(signal.SIGTERM)}" in out, out  # the user's handler ran
        assert "user_handler" in out.splitlines()[0], out  # and summarylog did not replace it
    _check_drained(str(tmp_path))
    figure(f"{mode}: {N} scalars + a histogram + {N // 1000} MindSpore-dialect records "
           f"queued un-flushed, all read back after the process ended (exit code {code}, "
           f"{secs:.2f} s from signal to exit)")


@pytest.mark.parametrize("mode,sig,rc", [
    ("sighup", signal.SIGHUP, (128 + signal.SIGHUP,)),
    ("sigterm", signal.SIGTERM, (128 + signal.SIGTERM,)),
    ("sigint", signal.SIGINT, (1, -signal.SIGINT)),
])
def test_shutdown_however_the_run_was_started(tmp_path, mode, sig, rc, figure):
    # The test run itself may have inherited these signals ignored and blocked
    # (`nohup ./dev test &`, a CI runner): its children must still start with
    # the defaults the shutdown tests assume, or the signal is ignored and the
    # child waits out its 60 s.
    code, out, secs = _run(str(tmp_path), mode, sig, inherited_ignored=True)
    assert code in rc, out
    _check_drained(str(tmp_path))
    figure(f"{mode} to a child whose parent ignored and blocked SIGHUP/SIGTERM/SIGINT: "
           f"drained, exit code {code}, {secs:.2f} s from signal to exit")


def test_fork_children_get_the_default_sigterm(tmp_path, figure):
    # A fork child (a multiprocessing or MindSpore pool worker) that inherited
    # summarylog's SIGTERM handler must die of SIGTERM as it would without
    # summarylog, even when the signal lands right after the fork: resetting
    # the handler in an at-fork hook lost such signals ("ignored due to race
    # condition") and Pool.terminate() hung for ever.
    pools = 500
    r = run_script("fork_signals_child.py", tmp_path, pools, timeout=240)
    res = json.loads(r.stdout.splitlines()[-1])
    assert res["parent_handler"] is True  # the logging process itself keeps the drain
    assert res["plain_child"] == "killed by SIGTERM"
    assert res["child_of_a_thread"] == "killed by SIGTERM"
    # a child that logs through the inherited Writer gets the drain then
    assert res["logging_child"] == f"SystemExit({128 + signal.SIGTERM})"
    assert res["blocked_worker_exitcode"] == -signal.SIGTERM
    figure(f"fork children: a plain child and a child forked from a thread die of SIGTERM, "
           f"a child that logs drains (SystemExit(143)); a worker blocked on a semaphore "
           f"dies of SIGTERM; {pools} fork pools started and terminated at once in "
           f"{res['pool_seconds']:.1f} s, none hung")


def test_sigterm_during_fork_still_drains(tmp_path, figure):
    # A SIGTERM held across fork() lands inside summarylog's after-fork hook,
    # where CPython swallows a raise: it is sent again, and the process
    # drains and exits as for any SIGTERM.
    r = run_script("signal_during_fork.py", tmp_path, timeout=60, check=False)
    assert r.returncode == 128 + signal.SIGTERM, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "never stopped" not in r.stdout
    assert Reader(tmp_path).scalars(".", "x").step.tolist() == list(range(1000))
    figure(f"SIGTERM during fork(): handled after the fork hooks, exit code {r.returncode}, "
           f"all 1000 un-flushed scalars drained")
