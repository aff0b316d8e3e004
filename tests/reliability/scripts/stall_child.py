"""Bounded memory with a stalled disk.

    stall_child.py LOGDIR ON_FULL MAX_BUFFER SECONDS

ON_FULL: "block" or "drop" (a Writer), or "summary_record" (a
MindSpore-dialect SummaryRecord recording a scalar and a 1 MB tensor a step).

A thread logs scalars (1000 per round) and a 2 MB histogram per round to a
Writer(max_buffer=MAX_BUFFER, on_full=ON_FULL) whose disk stalls (the native
writer's test hook: nothing reaches the file) for SECONDS; the main thread
samples the process's RSS.  Then the disk is released, the run closed, and
one JSON line printed: RSS baseline and peak, what was logged, the stats,
and whether the logging thread was held (blocked) during the stall.
"""

import json
import os
import sys
import threading
import time

import numpy as np

from summarylog import SummaryRecord, Writer
from summarylog._native import lib

logdir, on_full, cap, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
page = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page


hist = np.random.default_rng(0).normal(size=250_000)  # 2 MB of float64
if on_full == "summary_record":  # MindSpore's API (its own queue), MindSpore-dialect files
    rec = SummaryRecord(logdir, max_buffer=cap, flush_secs=0.1)
    for i in range(20):
        rec.add_value("tensor", "warm", hist.astype(np.float32))
        rec.record(i)
        rec.flush()
    h = rec._files.summary.current.handle
else:
    w = Writer(logdir, max_buffer=cap, on_full=on_full, flush_secs=0.1)
    for i in range(20):  # warm: allocator pools, numpy caches, the file
        w.add_histogram("warm", hist, i)
        w.add_scalar("warm", float(i), i)
        w.flush()
    h = w.pipeline.files.current.handle
lib.slg_writer_inject_stall(h, 1)
base = peak = rss()
state = {"scalars": 0, "hists": 0, "stop": False}


def produce_records() -> None:  # one step: a scalar and a 1 MB tensor
    step = 0
    t32 = hist.astype(np.float32)
    while not state["stop"]:
        rec.add_value("scalar", "x", np.float32(step))
        rec.add_value("tensor", "t", t32)
        rec.record(step)
        step += 1
        state["scalars"] = step
        state["hists"] += 1


def produce() -> None:
    step = 0
    while not state["stop"]:
        for _ in range(1000):
            w.add_scalar("x", float(step), step)
            step += 1
        state["scalars"] = step
        w.add_histogram("h", hist, step)
        state["hists"] += 1


t = threading.Thread(target=produce_records if on_full == "summary_record" else produce,
                     daemon=True)
t0 = time.monotonic()
t.start()
marks = []
while time.monotonic() - t0 < secs:
    peak = max(peak, rss())
    time.sleep(0.005)
    if not marks and time.monotonic() - t0 > secs / 2:
        marks.append(state["scalars"])
marks.append(state["scalars"])
if on_full == "summary_record":
    stalled_stats = {"queued_bytes": rec._pipe.queued_jobs[0],
                     "file": rec._files.summary.current.stats._asdict()}
else:
    stalled_stats = dict(w.stats)
lib.slg_writer_inject_stall(h, 0)  # the disk comes back
time.sleep(0.5)
state["stop"] = True
t.join()
if on_full == "summary_record":
    rec.close()
    stats = {"dropped_values": 0, "file": {"records_dropped": 0}}
    files = rec._files.paths
else:
    w.close()
    stats, files = w.stats, w.files
print(json.dumps({
    "base": base, "peak": peak, "scalars": state["scalars"], "hists": state["hists"],
    "progress_in_second_half": marks[1] - marks[0], "stats_while_stalled": stalled_stats,
    "stats": stats, "file": files[0]}))
