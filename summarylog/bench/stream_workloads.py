"""Bench: a huge run's scalars in bounded memory.  Peak RSS of ``iter_scalars``
(chunks of 65 536) against ``Reader.scalars`` (every value in numpy at once) on the same
run, each in a fresh child process.  The figure is scalars per MiB of peak RSS above
the child's start-up (higher is better), so the ratio is Reader peak / stream peak;
an informational row compares their throughput."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from .registry import Context, Row, bench

_STEPS = 400_000  # per file, x 2 tags
_CHILD = r"""
import json, sys, time
import numpy as np
from summarylog import Reader
from summarylog.read_stream import iter_scalars

def hwm():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) << 10

mode, run = sys.argv[1], sys.argv[2]
r = Reader(run, purge=False)
files = r.files(".")
base = hwm()
t0 = time.perf_counter()
n = 0
if mode == "stream":
    for c in iter_scalars(files, chunk=65536, purge=False):
        n += len(c.step)
else:
    n = sum(len(r.scalars(".", t).step) for t in r.scalar_tags("."))
dt = time.perf_counter() - t0
print(json.dumps({"grew": hwm() - base, "seconds": dt, "values": n}))
"""


def _run(ctx: Context, copies: int) -> str:
    """A run of ``copies`` hard links to one event file of ``_STEPS`` x 2 scalars
    (a big run with no disk cost); cached for the bench run."""
    key = f"stream-run-{copies}"
    if key in ctx.cache:
        return ctx.cache[key]
    from ..writer import Writer

    root = tempfile.mkdtemp(prefix="stream-", dir=ctx.tmpdir)
    steps = ctx.pick(_STEPS, _STEPS // 8)
    with Writer(os.path.join(root, "base"), durability="none") as w:
        for s in range(steps):
            w.log({"loss": s * 0.5, "acc": 1.0 / (s + 1)}, step=s)
    run = os.path.join(root, "run")
    os.mkdir(run)
    for k in range(copies):
        os.link(w.files[0], os.path.join(run, f"events.out.tfevents.{1000 + k}.host"))
    ctx.cache[key] = run
    return run


def _child(mode: str, run: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    cp = subprocess.run([sys.executable, "-P", "-c", _CHILD, mode, run], capture_output=True,
                        text=True, env=env, cwd="/", timeout=600)
    if cp.returncode != 0:
        raise RuntimeError(f"stream bench child ({mode}) failed: {cp.stderr[-2000:]}")
    return json.loads(cp.stdout.splitlines()[-1])


@bench("stream_scalars", goal=10, unit="scalars/MiB", peer="Reader.scalars (whole run)",
       description="12.8 M scalars (16 files): peak RSS of iter_scalars vs Reader.scalars")
def bench_stream_scalars(ctx: Context) -> list[Row]:
    copies = 16
    run = _run(ctx, copies)
    res: dict[str, list[dict[str, Any]]] = {"stream": [], "reader": []}
    for r in range(ctx.round_count()):
        for mode in (("stream", "reader") if r % 2 == 0 else ("reader", "stream")):
            res[mode].append(_child(mode, run))
    n = res["stream"][0]["values"]
    if any(x["values"] != n for xs in res.values() for x in xs):
        raise RuntimeError(f"stream and Reader read different counts: {res}")
    mib = 1 << 20

    def per_mib(xs: list[dict[str, Any]]) -> list[float]:
        return [n / max(x["grew"] / mib, 1.0) for x in xs]  # at least 1 MiB: no division by 0

    return [
        Row("stream_scalars", f"iter_scalars, {n:,} scalars: scalars per MiB of peak RSS",
            "Reader.scalars", "scalars/MiB", per_mib(res["stream"]), per_mib(res["reader"]),
            paired=True, extra={"stream_peak_mib": [x["grew"] / mib for x in res["stream"]],
                                "reader_peak_mib": [x["grew"] / mib for x in res["reader"]]}),
        Row("stream_scalars", "iter_scalars throughput", "Reader.scalars", "scalars/s",
            [n / x["seconds"] for x in res["stream"]], [n / x["seconds"] for x in res["reader"]],
            primary=False, paired=True),
    ]
