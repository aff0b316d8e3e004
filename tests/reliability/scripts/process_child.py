"""One of several processes logging into one run directory.

    process_child.py LOGDIR N START_AT

Waits until time.time() >= START_AT (all processes start in the same
second), logs scalar ``p`` = step for steps 0..N-1, closes, prints its files.
"""

import json
import sys
import time

from summarylog import Writer

logdir, n, start_at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
w = Writer(logdir)
while time.time() < start_at:
    time.sleep(0.001)
for i in range(n):
    w.add_scalar("p", float(i), i)
w.close()
print(json.dumps({"files": w.files, "second": int(start_at)}))
