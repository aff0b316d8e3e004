"""Crash-test child: log scalars forever until killed.

    crash_child.py LOGDIR DURABILITY FLUSH_EVERY STEPS_PER_MS

Logs ``x`` = step at steps 0, 1, 2, ... (about STEPS_PER_MS per ms), and
after every FLUSH_EVERY steps calls ``flush()`` and prints ``ack <step>``:
every step up to that one must survive a SIGKILL.  Prints ``ready`` first.
"""

import sys
import time

from summarylog import Writer

logdir, durability, flush_every, per_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = sys.stdout
w = Writer(logdir, durability=durability, flush_secs=1.0)
w.add_scalar("x", 0.0, 0)
w.flush()
out.write("ready\n")
out.flush()
step = 0
t0 = time.monotonic()
while True:
    step += 1
    w.add_scalar("x", float(step), step)
    if step % flush_every == 0:
        w.flush()
        out.write(f"ack {step}\n")
        out.flush()
    if step % per_ms == 0:  # pace: about per_ms steps per millisecond
        ahead = step / per_ms / 1000 - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
