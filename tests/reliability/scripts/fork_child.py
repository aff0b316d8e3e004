"""A Writer and a RecordWriter inherited across fork().

    fork_child.py LOGDIR N

The parent logs N scalars (not flushed: they sit in its buffers), forks, and
both go on logging N more; the child exits through sys.exit (so its at-exit
close runs on the inherited Writer).  Prints one JSON line.
"""

import json
import os
import sys

from summarylog import Writer
from summarylog.records import RecordWriter

logdir, n = sys.argv[1], int(sys.argv[2])
w = Writer(logdir, flush_secs=3600)
for i in range(n):
    w.add_scalar("parent", float(i), i)
raw = RecordWriter(os.path.join(logdir, "raw.tfrecord"))
raw.write(b"parent record")
r, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    out = {}
    try:
        raw.write(b"child record")
    except Exception as exc:
        out["raw_error"] = f"{type(exc).__name__}: {exc}"
    for i in range(n, 2 * n):
        w.add_scalar("child", float(i), i)
    w.flush()
    out["child_files"] = w.files
    os.write(wfd, json.dumps(out).encode())
    os.close(wfd)
    sys.exit(0)  # atexit closes the child's Writer (its own file), never the parent's
os.close(wfd)
for i in range(n, 2 * n):
    w.add_scalar("parent", float(i), i)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
_, status = os.waitpid(pid, 0)
raw.write(b"parent again")
raw.close()
w.close()
out = json.loads(data)
out.update(parent_files=w.files, child_status=status)
print(json.dumps(out))
