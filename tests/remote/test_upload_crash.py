"""kill -9 of a writer while it uploads, then a restart (a new Writer on the spool,
or `summarylog upload SPOOL`): every acknowledged record is in the bucket once,
none duplicated, none lost; over 20 random kill trials against the S3 emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys


from upload_helpers import scalar_steps, segment_objects
from object_store import gcs, s3  # noqa: F401 (fixtures)

from summarylog import Writer
from summarylog.cli_upload import main as upload_main

TRIALS = 20

# One process imports summarylog once, then forks a writer per trial (four at a time)
# and kills each with SIGKILL at a random moment after its first acknowledged flush.  A child acknowledges, after each flush() returns, the number of
# steps logged so far.  No event loop runs in the parent before the forks.
RUNNER = r"""
import json, os, random, select, signal, sys, time
from summarylog import Writer
import s3fs  # imported only

endpoint, trials, seed, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = random.Random(seed)
opts = {"endpoint_url": endpoint, "key": "test", "secret": "test",
        "client_kwargs": {"region_name": "us-east-1"}}


def child(url, spool, w):
    try:
        mine = random.Random(os.getpid())
        wr = Writer(url, storage_options=opts, spool_dir=spool, segment_bytes=4096,
                    segment_secs=0.05, retry_wait=(0.01, 0.1))
        step = 0
        while True:
            for _ in range(mine.randint(1, 40)):
                wr.add_scalar("loss", float(step), step)
                step += 1
            wr.flush()
            os.write(w, f"{step}\n".encode())
            time.sleep(0.01)  # the uploader keeps up: kills land on uploads
    finally:
        os._exit(1)


BATCH = 4  # trials at once: their start-up (an S3 client each) overlaps
for first in range(0, trials, BATCH):
    live = {}
    for t in range(first, min(first + BATCH, trials)):
        url, spool = f"s3://bkt/crash-{t}", os.path.join(root, f"sp{t}")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            child(url, spool, w)
        os.close(w)
        live[r] = {"pid": pid, "url": url, "spool": spool, "buf": b"", "kill_at": None}
    end = time.monotonic() + 60
    while any(c["pid"] for c in live.values()):
        if time.monotonic() > end:
            raise SystemExit("no acknowledgement in 60 s")
        ready = select.select([r for r, c in live.items() if c["pid"]], [], [], 0.01)[0]
        for r in ready:
            c = live[r]
            c["buf"] += os.read(r, 65536)
            if c["kill_at"] is None and c["buf"]:  # the first acknowledgement: kill soon
                c["kill_at"] = time.monotonic() + rng.uniform(0.0, 0.15)
        for r, c in live.items():
            if c["pid"] and c["kill_at"] is not None and time.monotonic() >= c["kill_at"]:
                os.kill(c["pid"], signal.SIGKILL)
                os.waitpid(c["pid"], 0)
                c["pid"] = 0
    for r, c in live.items():
        while chunk := os.read(r, 65536):
            c["buf"] += chunk
        os.close(r)
        print(json.dumps({"url": c["url"], "spool": c["spool"],
                          "acked": max(map(int, c["buf"].split()))}), flush=True)
"""


def test_kill9_during_upload_then_restart(s3, tmp_path):
    seed = int.from_bytes(os.urandom(4), "little")
    out = subprocess.run([sys.executable, "-c", RUNNER, s3.endpoint, str(TRIALS), str(seed),
                          str(tmp_path)], capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path), env=dict(os.environ, PYTHONSAFEPATH="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    trials = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(trials) == TRIALS
    opts = s3.storage_options()
    acked = stored = dup = lost = leftovers = already = 0
    for i, t in enumerate(trials):
        left = [n for n in os.listdir(t["spool"]) if not n.startswith(".")]
        leftovers += len(left)
        if i % 2:  # `summarylog upload SPOOL`
            code = upload_main([t["spool"], "-o", f"endpoint_url={s3.endpoint}", "-o",
                                "key=test", "-o", "secret=test", "-o",
                                "client_kwargs.region_name=us-east-1", "--timeout", "60"])
            assert code == 0
        else:  # a new Writer on the spool (logs nothing itself)
            w = Writer(t["url"], storage_options=opts, spool_dir=t["spool"])
            w.close()
            already += w.stats["already_uploaded"]
        assert [n for n in os.listdir(t["spool"]) if not n.startswith(".")] == []
        steps = scalar_steps(segment_objects(t["url"], opts))
        acked += t["acked"]
        stored += len(steps)
        dup += len(steps) - len(set(steps))
        lost += len(set(range(t["acked"])) - set(steps))
        assert sorted(set(steps)) == list(range(len(set(steps)))), f"a gap in trial {i}"
    print(f"\nkill -9 during uploads, {TRIALS} trials (seed {seed}): {acked} records "
          f"acknowledged, {stored} in the bucket ({stored - acked + lost} written but not yet "
          f"acknowledged), {dup} duplicated, {lost} lost; restart found {leftovers} "
          f"segment(s) in the spools ({already} of them already uploaded: the kill fell "
          f"between commit and removal)")
    assert dup == 0 and lost == 0
