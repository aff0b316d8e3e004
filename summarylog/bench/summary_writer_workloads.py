"""SummaryWriter workloads of ``python -m summarylog.bench``: the same script against
``torch.utils.tensorboard.SummaryWriter``, ``tensorboardX.SummaryWriter`` and
``summarylog.SummaryWriter``, only the import swapped.

Scalars: a loop of add_scalar plus close(), per second.  Heavy kinds: the caller's
time per call only (close() untimed: the encoding ours does later on its own thread
is not the caller's).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any, Callable

import numpy as np

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second
from .workloads import _ver
from .writer_workloads import caller_cost, scalar_loop

__all__ = ["bench_sw_add_scalar", "bench_sw_heavy"]


def _peers() -> list[tuple[str, str, Callable[[str], Any] | None, str]]:
    """(row suffix, label, factory or None, status) of torch's and tensorboardX's writers."""
    out = []
    for key, module, label in (("torch", "torch.utils.tensorboard", "torch {v} SummaryWriter"),
                               ("tbx", "tensorboardX", "tensorboardX {v} SummaryWriter")):
        try:
            mod = need_peer(module)
            out.append((key, label.format(v=_ver(module.split(".")[0])),
                        lambda d, m=mod: m.SummaryWriter(d), "ok"))
        except PeerMissing as exc:
            out.append((key, label.format(v="?"), None, str(exc)))
    return out


@bench("sw_add_scalar", goal=50, unit="calls/s", peer="torch's and tensorboardX's SummaryWriter",
       description="summarylog.SummaryWriter.add_scalar loop (200 000 calls, plus close)")
def bench_sw_add_scalar(ctx: Context) -> list[Row]:
    """add_scalar through the drop-in SummaryWriter vs each peer's SummaryWriter."""
    from ..summary_writer import SummaryWriter

    n, n_peer = ctx.pick(200_000, 20_000), ctx.pick(20_000, 2_000)
    rows = []
    for key, label, make, status in _peers():
        candidates = {"ours": scalar_loop(ctx, lambda d: SummaryWriter(d), n)}
        if make is not None:
            candidates["peer"] = scalar_loop(ctx, make, n_peer)
        ctx.log(f"sw_add_scalar vs {key}: {n:,} calls (peer: {n_peer:,}), {ctx.repeat} rounds")
        res = ctx.rounds(candidates)
        ours = per_second(n, res["ours"])
        rows.append(Row("sw_add_scalar", f"add_scalar vs {key}", label, "calls/s", ours,
                        per_second(n_peer, res["peer"]) if "peer" in res else None, status,
                        note=f"SummaryWriter.add_scalar loop plus close(): ours {n:,} calls, peer "
                             f"{n_peer:,}; median µs/call ours "
                             f"{1e6 / sorted(ours)[len(ours) // 2]:.2f}"))
    return rows


def _heavy_calls(ctx: Context) -> list[tuple[str, str, Callable[[Any, int], None], int]]:
    """(kind, what, call(writer, i), calls per run) of each heavy kind."""
    rng = np.random.default_rng(0)
    img = rng.random((3, 256, 256), dtype=np.float32)
    video = rng.random((1, 16, 3, 64, 64), dtype=np.float32)
    audio = (0.5 * np.sin(np.linspace(0, 2000, 44_100))).astype(np.float32)[None]
    mat = rng.standard_normal((5_000, 64)).astype(np.float32)
    labels = [str(i % 10) for i in range(len(mat))]
    out: list[tuple[str, str, Callable[[Any, int], None], int]] = [
        ("image", "float32 3x256x256 in [0, 1)",
         lambda w, i: w.add_image("img", img, max(i, 0)), ctx.pick(100, 10)),
        ("video", "float32 1x16x3x64x64 (GIF)",
         lambda w, i: w.add_video("vid", video, max(i, 0)), ctx.pick(20, 3)),
        ("audio", "1 s of 44.1 kHz float32 (WAV)",
         lambda w, i: w.add_audio("snd", audio, max(i, 0)), ctx.pick(100, 10)),
        ("embedding", "5 000 x 64 float32 with metadata",
         lambda w, i: w.add_embedding(mat, metadata=labels, global_step=i + 1, tag="e"),
         ctx.pick(5, 2)),
    ]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig = plt.figure()  # matplotlib's default size: 640x480
        plt.plot(rng.standard_normal(200).cumsum())
        plt.title("loss")
        out.append(("figure", "a 640x480 matplotlib line plot (close=False)",
                    lambda w, i: w.add_figure("fig", fig, max(i, 0), close=False),
                    ctx.pick(30, 3)))
    except ImportError:
        pass
    return out


@bench("sw_heavy", goal=10, unit="calls/s", peer="torch.utils.tensorboard SummaryWriter",
       description="image, figure, video, audio, embedding: the caller's cost per call")
def bench_sw_heavy(ctx: Context) -> list[Row]:
    """Each heavy kind through summarylog.SummaryWriter vs torch's, the caller's time."""
    from ..summary_writer import SummaryWriter

    key, label, make, status = _peers()[0]
    rows = []
    for kind, what, call, n in _heavy_calls(ctx):
        candidates = {"ours": caller_cost(ctx, lambda d: SummaryWriter(d), call, n)}
        if make is not None:
            candidates["peer"] = caller_cost(ctx, make, call, n)
        ctx.log(f"sw_heavy {kind}: {n} calls of {what}, {ctx.repeat} rounds")
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # torch warns when an embedding dir exists
            res = ctx.rounds(candidates)
        rows.append(Row("sw_heavy", f"add_{kind}", label, "calls/s", per_second(n, res["ours"]),
                        per_second(n, res["peer"]) if "peer" in res else None, status,
                        note=f"{what}: the caller's time only; close() untimed"))
    return rows
