"""The README's main job: a small training-like run that logs through the
native record core, then reads the log back and shows what it holds.

Until the event API lands, each record is a JSON object of metrics; the file
is an ordinary TFRecord file (and a zstd-compressed twin).  Run it with
``./dev demo`` or ``summarylog-demo [--logdir DIR] [--steps N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import socket
import time

from . import native_info
from .records import RecordReader, RecordWriter


def _train(logdir: str, steps: int, compression: str | None) -> RecordWriter:
    name = f"demo.{int(time.time())}.{socket.gethostname()}.{os.getpid()}.tfrecord"
    rng = random.Random(0)
    with RecordWriter(os.path.join(logdir, name), compression=compression) as w:
        for step in range(steps):
            loss = 0.3 + 2.2 * math.exp(-step / 120) + abs(rng.gauss(0, 0.03))  # going down
            lr = 0.1 * 0.5 * (1 + math.cos(math.pi * step / steps))  # cosine schedule
            w.write(json.dumps({"step": step, "loss": round(loss, 5), "lr": round(lr, 6)}).encode())
    return w


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="summarylog-demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--logdir", default="demo-logs", help="where to write (default ./demo-logs)")
    ap.add_argument("--steps", type=int, default=500, help="training steps (default 500)")
    args = ap.parse_args(argv)
    os.makedirs(args.logdir, exist_ok=True)

    info = native_info()
    print(f"summarylog {info['version']}  native core: CRC32C={info['crc32c']}")
    for compression in (None, "zstd"):
        t0 = time.perf_counter()
        w = _train(args.logdir, args.steps, compression)
        dt = time.perf_counter() - t0
        st = w.stats
        print(f"\nwrote {st.records_written} records, {st.bytes_written} bytes "
              f"in {dt * 1e3:.1f} ms -> {w.path}")

        with RecordReader(w.path) as r:
            rows = [json.loads(p) for p in r]
            damage, tail = r.damage, r.tail
        print(f"read back {len(rows)} records; damage: {damage or 'none'}; "
              f"unfinished tail: {tail or 'none'}")
        print(f"  {'step':>6} {'loss':>9} {'lr':>9}")
        shown = rows[:3] + rows[len(rows) // 2 : len(rows) // 2 + 1] + rows[-3:]
        for row in shown:
            print(f"  {row['step']:>6} {row['loss']:>9.5f} {row['lr']:>9.6f}")
        if rows:
            losses = [row["loss"] for row in rows]
            print(f"  loss: first {losses[0]:.4f}  min {min(losses):.4f}  last {losses[-1]:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
