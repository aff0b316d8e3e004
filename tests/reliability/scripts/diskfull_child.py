"""Disk-full child: log until the file system (or RLIMIT_FSIZE) refuses.

    diskfull_child.py LOGDIR STRICT FREE_CMD [RLIMIT_BYTES]

Logs scalar ``x`` = step with a ``flush()`` every 500 steps (``acked`` is the
last step whose flush returned without error), 60 000 steps in all (several
times the space there is), and a histogram every 5 000.  Strict: stops at the
first OSError and reports it.  Then frees space (FREE_CMD: ``rm:<path>``
deletes a filler file, ``rlimit`` lifts the limit) and logs 1 000 steps
with a new Writer.  Prints one JSON line.
"""

import json
import os
import resource
import signal
import sys

import numpy as np

from summarylog import Writer

logdir, strict, free = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
if len(sys.argv) > 4:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write(2) then fails with EFBIG
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[4]), hard))

out = {"acked": -1, "raised": None, "filename": None, "stopped_at": None}
w = Writer(logdir, strict=strict, flush_secs=0.2)
try:
    for step in range(60_000):
        w.add_scalar("x", float(step), step)
        if step % 5000 == 0:
            w.add_histogram("h", np.full(100, float(step)), step)
        if step % 500 == 499:
            w.flush()
            st = w.stats.get("file", {})
            if not st.get("errors"):
                out["acked"] = step
    w.close()
except OSError as exc:
    out.update(raised=f"{type(exc).__name__}: {exc}", filename=exc.filename,
               errno=exc.errno, stopped_at=step)
    try:
        w.close()
    except OSError:
        pass
out["files"] = w.files
out["stats"] = w.stats.get("file")

if free.startswith("rm:"):
    os.unlink(free[3:])
else:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
w2 = Writer(logdir, strict=True)
for step in range(100_000, 101_000):
    w2.add_scalar("x", float(step), step)
w2.close()
out["files2"] = w2.files
print(json.dumps(out))
