"""Polite-shutdown child: log without flushing, then wait to be stopped.

    shutdown_child.py LOGDIR MODE N

MODE: ``exit`` (return without close), ``sigterm``/``sigint``/``sighup`` (wait
for the parent's signal), ``user_before`` (the user's SIGTERM handler is
installed before summarylog's writers open), ``user_after`` (installed
after), ``ignored`` (the user set SIGTERM to SIG_IGN: it must stay ignored;
the parent then sends SIGINT).  Logs N scalars to a Writer and N to a
MindSpore-dialect SummaryRecord with flush_secs=3600, so only the shutdown
drain can put them on disk.  Prints ``ready`` when done logging.  Run it
through clean_start.py (conftest's script_cmd).
"""

import os
import signal
import sys
import time

logdir, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Started through clean_start.py: SIGHUP, SIGTERM and SIGINT have their
# defaults here (SIGINT: Python's KeyboardInterrupt) however the test run was
# started.


def user_handler(signum, frame):
    print(f"user handler {signum}", flush=True)
    sys.exit(3)


if mode == "user_before":
    signal.signal(signal.SIGTERM, user_handler)
if mode == "ignored":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

import numpy as np  # noqa: E402

from summarylog import SummaryRecord, Writer  # noqa: E402

w = Writer(os.path.join(logdir, "tb"), flush_secs=3600)
rec = SummaryRecord(os.path.join(logdir, "ms"), flush_secs=3600)
if mode == "user_after":
    signal.signal(signal.SIGTERM, user_handler)
print("handler", signal.getsignal(signal.SIGTERM), flush=True)
for i in range(n):
    w.add_scalar("x", float(i), i)
w.add_histogram("h", np.arange(1000.0), 0)
for i in range(0, n, 1000):
    rec.add_value("scalar", "y", np.float32(i))
    rec.record(i)
print("ready", flush=True)
if mode == "exit":
    sys.exit(0)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    time.sleep(0.01)
print("not stopped", flush=True)
sys.exit(9)
