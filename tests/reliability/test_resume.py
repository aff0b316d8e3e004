"""A run restarted from a checkpoint at step N in the same logdir: the
first attempt's points at steps >= N are purged, in summarylog's Reader and
in TensorBoard's own loader; the first attempt may have crashed mid-record.

purge_step semantics (see docs/reliability.md): ``Writer(logdir,
purge_step=N)`` writes a ``SessionLog(START)`` event at step N first in its
file; readers drop every event of the run (all tags) logged before that
marker with step >= N, and keep everything logged after it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from summarylog import Reader, Writer

FIRST, CHECKPOINT, SECOND = 1000, 600, 1500


def _attempts(logdir: str, crash: bool) -> None:
    w = Writer(logdir)
    for i in range(FIRST):
        w.log({"loss": float(i), "acc": float(-i)}, step=i)
    w.close()
    if crash:  # the first attempt died while writing a record: a torn tail
        (path,) = w.files
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 7)
    w = Writer(logdir, purge_step=CHECKPOINT)
    for i in range(CHECKPOINT, SECOND):
        w.log({"loss": i + 0.5}, step=i)  # only one tag in the second attempt
    w.close()


def _expected() -> tuple[np.ndarray, np.ndarray]:
    steps = np.arange(SECOND)
    return steps, np.where(steps < CHECKPOINT, steps, steps + 0.5).astype(np.float64)


@pytest.mark.parametrize("crash", [False, True], ids=["closed", "crashed"])
def test_resumed_run_purges_the_first_attempts_tail(tmp_path, crash, figure):
    _attempts(str(tmp_path), crash)
    steps, values = _expected()
    r = Reader(tmp_path)
    (run,) = r.runs()
    s = r.scalars(run, "loss")
    np.testing.assert_array_equal(s.step, steps)
    np.testing.assert_array_equal(s.value, values)
    acc = r.scalars(run, "acc")  # purged for every tag of the run, not only the logged ones
    np.testing.assert_array_equal(acc.step, np.arange(CHECKPOINT))
    # TensorBoard's own loader (the Python one, as behind --load_fast=false)
    from tensorboard.backend.event_processing import event_multiplexer

    mux = event_multiplexer.EventMultiplexer(size_guidance={"scalars": 0})  # keep all
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    (tb_run,) = mux.Runs()
    tb = mux.Scalars(tb_run, "loss")
    tb_steps = np.array([e.step for e in tb])
    tb_values = np.array([e.value for e in tb])
    np.testing.assert_array_equal(tb_steps, steps)
    np.testing.assert_array_equal(tb_values, values.astype(np.float32))
    assert [e.step for e in mux.Scalars(tb_run, "acc")] == list(range(CHECKPOINT))
    figure(f"{'crashed' if crash else 'closed'} first attempt to step {FIRST - 1}, resumed at "
           f"{CHECKPOINT}: Reader and TensorBoard both show {len(steps)} loss points, "
           f"{FIRST - CHECKPOINT} stale points purged, 'acc' purged too")
