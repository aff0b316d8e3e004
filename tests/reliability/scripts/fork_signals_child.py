"""Signal dispositions in fork() children of a process that logs.

    fork_signals_child.py LOGDIR POOLS

The process opens a Writer (summarylog's SIGTERM/SIGHUP handler goes in),
then forks children that send themselves SIGTERM and report what it did
there, and finally starts and terminates a ``multiprocessing`` fork pool
POOLS times (MindSpore's summary writer does this for every SummaryRecord).
Prints one JSON line.
"""

import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

from summarylog import Writer, shutdown

logdir, pools = sys.argv[1], int(sys.argv[2])
w = Writer(logdir, flush_secs=3600)
w.add_scalar("parent", 1.0, 0)
out = {"parent_handler": signal.getsignal(signal.SIGTERM) is shutdown._on_signal}


def in_child(body):
    """Fork; the child runs body() and sends back what it returns.  Returns
    that, or "killed by SIGTERM" (or how else the child ended) when it sent
    nothing back."""
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = body()
        except BaseException as exc:  # reported to the parent
            res = f"{type(exc).__name__}: {exc}"
        os.write(wfd, json.dumps(res).encode())
        os._exit(0)
    os.close(wfd)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if data:
        return json.loads(data)
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.WEXITSTATUS(status)}"


def sigterm_self():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # handlers run here
    return "survived SIGTERM"


def logs_then_sigterm():
    w.add_scalar("child", 2.0, 1)  # the child logs through the inherited Writer
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except SystemExit as exc:  # summarylog's drain, armed for this process
        return f"SystemExit({exc.code})"
    return "survived SIGTERM"


out["plain_child"] = in_child(sigterm_self)
out["logging_child"] = in_child(logs_then_sigterm)
box = {}
t = threading.Thread(target=lambda: box.setdefault("r", in_child(sigterm_self)))
t.start()
t.join()
out["child_of_a_thread"] = box["r"]

# a child blocked on a semaphore (where pool workers wait for tasks) and sent
# SIGTERM must die of it, as it would without summarylog
ctx = mp.get_context("fork")
lock = ctx.Lock()
lock.acquire()
p = ctx.Process(target=lock.acquire)
p.start()
time.sleep(0.3)
p.terminate()
p.join(30)
out["blocked_worker_exitcode"] = p.exitcode  # -SIGTERM: killed by it
if p.exitcode is None:
    p.kill()

t0 = time.perf_counter()
for _ in range(pools):
    with ctx.Pool(2):
        pass  # started and terminated at once: the race the handler lost
out["pools"] = pools
out["pool_seconds"] = time.perf_counter() - t0
w.close()
print(json.dumps(out))
