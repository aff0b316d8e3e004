"""Bench: a 40 x 40 loss landscape of a small MLP (32 -> 64 -> 2, cross entropy, 256
samples in batches of 32) around checkpoints MindSpore's SummaryCollector saved, by
summarylog's ``SummaryLandscape`` drop-in and by MindSpore 2.10's own, in MindSpore's
venv (graph mode, CPU), one after the other each round; the two grids are checked equal
before any figure is used.  A second row computes the same grid from the same
checkpoints with ``summarylog.landscape.compute`` and a PyTorch copy of the MLP
(``torch.func.vmap`` over a row of points), also checked against MindSpore's grid.
Figures are grid points per second."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import numpy as np

from .collector_workloads import _mindspore_python
from .registry import Context, PeerMissing, Row, bench, need_peer

__all__ = ["bench_landscape"]


def _grid(run: str) -> np.ndarray:
    from ..reader import Reader
    from ..landscape import Landscape

    got = [Landscape.from_message(e.tag, e.value) for e in Reader(run).events(".")
           if e.kind == "landscape"]
    if len(got) != 1:
        raise RuntimeError(f"{run}: {len(got)} landscapes, expected 1")
    return got[0].z


def _torch_rounds(run: str, rounds: int, expect: np.ndarray, info: dict) -> list[float]:
    """Seconds of ``compute`` with a torch copy of the MLP, ``rounds`` times; its grid
    checked against MindSpore's."""
    torch = need_peer("torch")
    from ..landscape.compute import compute

    model = torch.nn.Sequential()
    model.add_module("fc1", torch.nn.Linear(32, 64))
    model.add_module("relu", torch.nn.ReLU())
    model.add_module("fc2", torch.nn.Linear(64, 2))
    rng = np.random.default_rng(0)  # ms_landscape.py's data
    xs = [rng.random(32).astype(np.float32) for _ in range(info["num_samples"] * 2)]
    x = torch.from_numpy(np.stack(xs))
    y = (x.sum(1) > 16).long()
    bs = info["batch"]
    data = [(x[i:i + bs], y[i:i + bs]) for i in range(0, len(x), bs)]

    def loss(m: object, batch: tuple) -> object:
        return torch.nn.functional.cross_entropy(m(batch[0]), batch[1])

    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        (ls,) = compute(run, loss, model=model, data=data, seed=0, write=False, progress=False)
        out.append(time.perf_counter() - t0)
        np.testing.assert_allclose(ls.z, expect, rtol=1e-4, atol=1e-5,
                                   err_msg="torch grid differs from MindSpore's")
    return out


@bench("landscape", goal=2.0, unit="points/s", peer="MindSpore's SummaryLandscape",
       description="40x40 loss landscape of a small MLP: SummaryLandscape vs MindSpore's")
def bench_landscape(ctx: Context) -> list[Row]:
    """Grid points per second of a 40 x 40 result landscape: summarylog's drop-in
    SummaryLandscape vs MindSpore 2.10's, same checkpoints, callback and data."""
    import summarylog

    py = _mindspore_python()
    if py is None:
        raise PeerMissing("missing (a Python with MindSpore: set SUMMARYLOG_MINDSPORE_PYTHON "
                          "or run the test suite once to make .venvs/mindspore)")
    size = ctx.pick(40, 3)
    # MindSpore takes minutes for one 40x40 grid: one round in a full run
    rounds = ctx.repeat if ctx.quick else 1
    script = pathlib.Path(__file__).with_name("ms_landscape.py")
    out = tempfile.mkdtemp(prefix="slg-bench-landscape-", dir=ctx.tmpdir)
    try:
        os.symlink(pathlib.Path(summarylog.__file__).parent, os.path.join(out, "summarylog"))
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
        env["PYTHONPATH"] = out
        run = os.path.join(out, "run")
        ctx.log(f"landscape: {size}x{size} grid, MindSpore and summarylog, {rounds} round(s)")
        r = subprocess.run([py, str(script), run, str(size), str(rounds)], capture_output=True,
                           text=True, timeout=7200, env=env, cwd=out)
        if r.returncode != 0:
            raise RuntimeError(f"ms_landscape.py failed: {r.stderr[-2000:]}")
        data = json.loads(r.stdout.strip().splitlines()[-1])
        theirs = _grid(os.path.join(run, "mindspore-0"))
        ours = _grid(os.path.join(run, "ours-0"))
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6,
                                   err_msg="the drop-in's grid differs from MindSpore's")
        points = size * size
        per_s = lambda xs: [points / x for x in xs]  # noqa: E731
        rows = [Row("landscape", f"SummaryLandscape drop-in, {size}x{size} (MindSpore graph "
                    f"mode)", f"MindSpore {data['version']} SummaryLandscape", "points/s",
                    per_s(data["ours"]), per_s(data["mindspore"]), paired=True,
                    note=f"{len(data['ours'])} round(s); seconds: MindSpore's "
                         f"{data['mindspore']}, summarylog's {data['ours']}; "
                         f"{data['num_samples']} samples a point, batches of {data['batch']}; "
                         f"grids checked equal", extra=data)]
        try:
            t = _torch_rounds(run, rounds, theirs, data)
            rows.append(Row("landscape", f"summarylog.landscape.compute, PyTorch MLP, "
                            f"{size}x{size}", f"MindSpore {data['version']} SummaryLandscape",
                            "points/s", per_s(t), per_s(data["mindspore"]), primary=False,
                            note="the same checkpoints read into a torch copy of the MLP, "
                                 "torch.func.vmap over each row; grid checked against "
                                 "MindSpore's"))
        except PeerMissing as exc:
            ctx.log(f"landscape: torch row skipped ({exc})")
        return rows
    finally:
        shutil.rmtree(out, ignore_errors=True)
