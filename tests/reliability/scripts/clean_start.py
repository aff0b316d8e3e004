"""Start a child script with the signal dispositions of a fresh terminal,
whatever started the test run.

    clean_start.py SCRIPT ARGS...

An ignored disposition and a blocked signal survive exec(): under ``nohup``
SIGHUP is ignored, a shell's background job has SIGINT ignored, a CI runner
may block or ignore SIGTERM.  summarylog rightly leaves an ignored signal
alone, so a test that sends one would wait for nothing.  This resets
SIGHUP, SIGTERM and SIGINT to the default, unblocks them, and exec()s
SCRIPT in a new interpreter (same pid, so the parent's signals reach it;
that interpreter installs its own SIGINT handler as from a terminal).
"""

import os
import signal
import sys

SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
for sig in SIGNALS:
    signal.signal(sig, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
