"""The README's main job: train a small model, log the run with
``summarylog.Writer``, then read the event file back and show what it holds.

The model is a two-layer numpy MLP learning a noisy two-spirals problem, so
the demo needs no ML framework.  Run it with ``./dev demo`` or
``summarylog-demo [--logdir DIR] [--steps N]``; then ``tensorboard --logdir
DIR`` shows the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import defaultdict

import numpy as np

from . import Writer, native_info
from .pb import tb
from .records import RecordReader

SPARK = "▁▂▃▄▅▆▇█"


def _spirals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    t = np.sqrt(rng.random(n)) * 2 * math.pi
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    x = np.stack([sign * t * np.cos(t), sign * t * np.sin(t)], 1) / 10
    return (x + rng.normal(0, 0.05, x.shape)).astype(np.float32), (sign > 0).astype(np.float32)


def train(logdir: str, steps: int, seed: int = 0) -> Writer:
    """Full-batch gradient descent on the spirals, logged every step."""
    rng = np.random.default_rng(seed)
    x, y = _spirals(512, rng)
    hidden, lr0 = 64, 2.0
    w1 = rng.normal(0, 1.0, (2, hidden)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    w2 = rng.normal(0, 1 / math.sqrt(hidden), (hidden, 1)).astype(np.float32)
    b2 = np.zeros(1, np.float32)
    with Writer(logdir) as w:
        w.add_text("about", "two-layer MLP (numpy), full-batch GD on noisy two spirals", 0)
        for step in range(steps):
            lr = lr0 * 0.5 * (1 + math.cos(math.pi * step / steps))
            h = np.tanh(x @ w1 + b1)
            p = 1 / (1 + np.exp(-(h @ w2 + b2)[:, 0]))
            loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
            acc = float(np.mean((p > 0.5) == (y > 0.5)))
            g = ((p - y) / len(y))[:, None]
            gw2, gb2 = h.T @ g, g.sum(0)
            gh = (g @ w2.T) * (1 - h * h)
            gw1, gb1 = x.T @ gh, gh.sum(0)
            for param, grad in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
                param -= lr * grad
            w.log({"loss": loss, "accuracy": acc, "lr": lr}, step)
            if step % 50 == 0 or step == steps - 1:
                w.add_histogram("weights/w1", w1, step)
                w.add_histogram("grads/w1", gw1, step)
                w.add_image("decision", _decision_image(w1, b1, w2, b2), step, dataformats="HWC")
        w.add_hparams({"hidden": hidden, "lr": lr0, "optimizer": "gd"},
                      {"final/loss": loss, "final/accuracy": acc}, step=steps)
    return w


def _decision_image(w1, b1, w2, b2, size: int = 96) -> np.ndarray:
    g = np.linspace(-1.1, 1.1, size, dtype=np.float32)
    xx, yy = np.meshgrid(g, -g)
    pts = np.stack([xx.ravel(), yy.ravel()], 1)
    p = 1 / (1 + np.exp(-(np.tanh(pts @ w1 + b1) @ w2 + b2)[:, 0]))
    p = p.reshape(size, size)
    return np.stack([p, 0.3 * np.ones_like(p), 1 - p], -1)  # red = class 1, blue = class 0


def summarize(files: list[str]) -> None:
    """Read the event files back and print what they hold."""
    kinds: dict[str, str] = {}
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    records = 0
    for path in files:
        with RecordReader(path) as r:
            for payload in r:
                records += 1
                ev = tb.Event.FromString(payload)
                for v in ev.summary.value:
                    kind = v.WhichOneof("value") or v.metadata.plugin_data.plugin_name
                    kind = {"simple_value": "scalar", "histo": "histogram"}.get(kind, kind)
                    if v.metadata.plugin_data.plugin_name in ("images", "text", "hparams"):
                        kind = v.metadata.plugin_data.plugin_name
                    kinds[v.tag] = kind
                    counts[v.tag] += 1
                    if kind == "scalar":
                        points[v.tag].append((ev.step, v.simple_value))
            if r.damage or r.tail:
                print(f"  {path}: damage {r.damage}, tail {r.tail}")
    print(f"\nread back {records} events from {len(files)} file(s):")
    print(f"  {'tag':<28} {'kind':<10} {'count':>6}  {'steps':<12} {'last':>9}  trend")
    for tag in sorted(kinds):
        pts = points.get(tag)
        if pts:
            steps = f"{pts[0][0]}..{pts[-1][0]}"
            vals = np.array([v for _, v in pts])
            idx = np.linspace(0, len(vals) - 1, min(24, len(vals))).astype(int)
            lo, hi = float(vals.min()), float(vals.max())
            spark = "".join(SPARK[int((vals[i] - lo) / (hi - lo + 1e-12) * 7.99)] for i in idx)
            print(f"  {tag:<28} {kinds[tag]:<10} {counts[tag]:>6}  {steps:<12} {vals[-1]:>9.4f}  {spark}")
        else:
            print(f"  {tag:<28} {kinds[tag]:<10} {counts[tag]:>6}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="summarylog-demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--logdir", default="demo-logs", help="where to write (default ./demo-logs)")
    ap.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    args = ap.parse_args(argv)
    info = native_info()
    print(f"summarylog {info['version']}  native core: CRC32C={info['crc32c']}")
    run = os.path.join(args.logdir, time.strftime("spirals-%Y%m%d-%H%M%S"))
    t0 = time.perf_counter()
    w = train(run, args.steps)
    dt = time.perf_counter() - t0
    st = w.stats
    print(f"trained {args.steps} steps in {dt:.2f} s, logged {st['events']} events "
          f"({st['file']['bytes_written']} bytes) to {run}")
    summarize(w.files)
    print(f"\nsee it in TensorBoard: tensorboard --logdir {args.logdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
