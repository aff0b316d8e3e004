"""SIGTERM that lands while the process forks.

    signal_during_fork.py LOGDIR

A before-fork hook registered ahead of summarylog's (so it runs after
summarylog has blocked SIGTERM) sends the process SIGTERM; the signal is
held until the fork is over and its handler then runs inside summarylog's
after-fork hook, where a raise would be swallowed.  The process must still
drain its writer and exit with 128 + SIGTERM.  Prints a line after the fork;
exits 0 only if it was never stopped (a failure).
"""

import os
import signal
import sys
import time

os.register_at_fork(before=lambda: os.kill(os.getpid(), signal.SIGTERM))

from summarylog import Writer  # noqa: E402

w = Writer(sys.argv[1], flush_secs=3600)
for i in range(1000):
    w.add_scalar("x", float(i), i)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("forked", flush=True)
t = time.monotonic()
while time.monotonic() - t < 10:  # the re-sent signal stops us here
    time.sleep(0.01)
print("never stopped", flush=True)
