"""The README's main job: a real PyTorch training run logged by summarylog's
SummaryCollector, its loss landscapes computed from what the collector saved, then
read back and shown: a table in the terminal and a PNG plot of the scalars.

A small CNN tells horizontal from vertical stripes in noisy 16x16 synthetic images (CPU, a
few seconds); ``./dev demo`` or ``summarylog-demo`` runs it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from . import Reader, Writer, native_info

SPARK = "▁▂▃▄▅▆▇█"


def _stripes(n: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    phase = torch.rand(n, 1, 1, generator=g) * 6.28
    wave = torch.sin(torch.arange(16.0) * 0.9 + phase)  # (n, 1, 16)
    img = torch.where(y[:, None, None] == 1, wave.transpose(1, 2).expand(n, 16, 16),
                      wave.expand(n, 16, 16))
    x = (0.35 * img + torch.randn(n, 16, 16, generator=g))[:, None]
    return torch.utils.data.TensorDataset(x.float(), y)


def train(logdir: str, epochs: int = 4, seed: int = 0) -> dict[str, float]:
    """Train the stripes CNN, logging with the collector and a Writer."""
    import torch
    from torch import nn

    from .adapters.torch import SummaryCollector, summary

    class StripesNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 8, 5, padding=2)
            self.pool = nn.AdaptiveAvgPool2d(4)
            self.fc = nn.Linear(8 * 4 * 4, 2)

        def forward(self, x):
            h = torch.relu(self.conv(x))
            summary("activations/conv", h, "histogram")  # like a MindSpore summary operator
            return self.fc(self.pool(h).flatten(1))

    torch.manual_seed(seed)
    train_ds, val_ds = _stripes(2048, seed), _stripes(512, seed + 1)
    loader = torch.utils.data.DataLoader(train_ds, batch_size=32, shuffle=True)
    val_loader = torch.utils.data.DataLoader(val_ds, batch_size=256)
    model = StripesNet()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs * len(loader))
    result: dict[str, float] = {}
    with SummaryCollector(logdir, model=model, optimizer=opt, loss_fn=loss_fn,
                          train_loader=loader, epochs=epochs, scheduler=sched,
                          collect_freq=8, custom_lineage_data={"dataset": "stripes-16x16"}) as sc, \
            Writer(logdir) as w:
        for _ in range(epochs):
            model.train()
            for x, y in loader:
                out = model(x)
                loss = loss_fn(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                sc.step(loss=loss, inputs=x)
                # tensors, not floats: read by summarylog's thread, no sync here
                w.log({"train/accuracy": (out.argmax(1) == y).float().mean(),
                       "train/lr": sched.get_last_lr()[0]}, step=sc.global_step)
            sc.epoch_end()
            model.eval()
            with torch.no_grad():
                correct = sum(int((model(x).argmax(1) == y).sum()) for x, y in val_loader)
            acc = correct / len(val_ds)
            w.add_scalar("val/accuracy", acc, sc.global_step)
            result = {"val/accuracy": acc, "steps": sc.global_step}
        sc.evaluate_end({"accuracy": result["val/accuracy"]}, eval_loader=val_loader)
    # the collector saved the parameters at steps 1-19 and the end (collect_landscape's
    # defaults): the loss landscapes around them, on a small grid, into the same run
    from .landscape import compute

    t0 = time.perf_counter()
    found = compute(logdir, lambda m, batch: loss_fn(m(batch[0]), batch[1]), model=model,
                    data=val_loader, collect_landscape={"landscape_size": 15, "num_samples": 512},
                    progress=False)
    print(f"{len(found)} loss landscapes (15x15, 512 samples) in {time.perf_counter() - t0:.1f} s: "
          + ", ".join(f"{ls.tag} loss {ls.z.min():.3f}..{ls.z.max():.3f}" for ls in found))
    return result


def summarize(logdir: str) -> dict[str, object]:
    """Read the run back with summarylog.Reader and print a table."""
    r = Reader(logdir)
    run = r.runs()[0]
    tags = r.tags(run)
    steps: dict[str, list[int]] = {}  # of the tags that are not scalars
    for ev in r.events(run):
        if ev.tag and tags.get(ev.tag) not in ("scalar", None):
            steps.setdefault(ev.tag, []).append(ev.step)
    reports = r.damage(run)
    records = sum(rep.records for rep in reports.values())
    print(f"\nread back {records} records from {len(reports)} file(s) in {logdir}:")
    print(f"  {'tag':<26} {'kind':<10} {'count':>5}  {'steps':<10} {'last':>8}  trend")
    for tag, kind in tags.items():
        if kind == "scalar":
            s = r.scalars(run, tag)
            vals = s.value
            idx = np.linspace(0, len(vals) - 1, min(24, len(vals))).astype(int)
            lo, hi = float(vals.min()), float(vals.max())
            spark = "".join(SPARK[int((vals[i] - lo) / (hi - lo + 1e-12) * 7.99)] for i in idx)
            print(f"  {tag:<26} {kind:<10} {len(vals):>5}  {s.step[0]}..{s.step[-1]:<6} "
                  f"{vals[-1]:>8.4f}  {spark}")
        elif tag in steps:
            a, b = min(steps[tag]), max(steps[tag])
            print(f"  {tag:<26} {kind:<10} {len(steps[tag]):>5}  {a}..{b}")
    bad = [p for p, rep in reports.items() if not rep.ok or rep.tail]
    print(f"  damage: {'none' if not bad else bad}")
    return {"tags": tags, "records": records}


def plot(logdir: str, out_png: str) -> str | None:
    """A PNG of the run's scalars (needs matplotlib); returns its path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: pip install 'summarylog[demo]' for the plot)")
        return None
    r = Reader(logdir)
    run = r.runs()[0]
    scalar_tags = r.scalar_tags(run)
    fig, axes = plt.subplots(1, len(scalar_tags), figsize=(4 * len(scalar_tags), 3.2),
                             squeeze=False)
    for ax, tag in zip(axes[0], scalar_tags):
        s = r.scalars(run, tag)
        ax.plot(s.step, s.value, marker="." if len(s.step) < 40 else None)
        ax.set(title=tag, xlabel="step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)
    return out_png


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="summarylog-demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--logdir", default="demo-logs", help="where to write (default ./demo-logs)")
    ap.add_argument("--epochs", type=int, default=4, help="training epochs (default 4)")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("the demo trains with PyTorch: pip install 'summarylog[demo]' (./dev demo does)")
        return 2
    info = native_info()
    print(f"summarylog {info['version']}  native core: CRC32C={info['crc32c']}")
    run = os.path.join(args.logdir, time.strftime("stripes-%Y%m%d-%H%M%S"))
    t0 = time.perf_counter()
    result = train(run, args.epochs)
    print(f"trained {result['steps']} steps in {time.perf_counter() - t0:.1f} s: validation "
          f"accuracy {result['val/accuracy']:.3f}; logged to {run}")
    summarize(run)
    if png := plot(run, os.path.join(run, "scalars.png")):
        print(f"\nplot of the scalars: {png}")
    print(f"see it in TensorBoard: tensorboard --logdir {args.logdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
