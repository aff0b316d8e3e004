"""Training-loop overhead of the SummaryCollectors, side by side.

- ``torch_collector``: a small PyTorch MLP loop with summarylog's collector
  at default settings against the same loop without it (goal: within 3 %),
  and against the loop logging the same values with
  ``torch.utils.tensorboard`` (informational);
- ``jax_collector``: a jitted Flax MLP step loop with the JAX collector
  against the same loop without it (goal: within 3 %), with the device
  reads the collector made on the training thread (goal: none);
- ``mindspore_collector``: a MindSpore ``Model.train`` run (768 steps) with
  MindSpore's own SummaryCollector and with summarylog's (the same things
  collected), against none;
  needs a Python with MindSpore 2.x (``$SUMMARYLOG_MINDSPORE_PYTHON``, else
  the test suite's ``.venvs/mindspore``).  Goal: ours adds at most 1/5 of
  the wall time MindSpore's adds.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time
from typing import Any, Callable

from .registry import Context, PeerMissing, Row, bench, need_peer

__all__ = ["bench_torch_collector", "bench_mindspore_collector", "bench_jax_collector"]


# How the collector benches time: each candidate is one training loop, kept
# for the whole bench (its logger open across blocks) and run in blocks of
# steps, the candidates' blocks alternating (order rotated each round); the
# ratio is the median of the rounds' paired block ratios, with the logger's
# close() spread over its blocks.  Why blocks, not a fresh run per round: on
# this 2-core VM a jitted JAX loop switches, every 0.1-0.4 s, between ~4300
# steps/s (its dispatch and XLA threads on one CPU) and ~3100 (on two; pinned
# to one CPU it stays at ~4100), so two 0.5 s runs side by side differ by
# -10..+10 % from the machine alone and 81 of them left the median +-2 % from
# the truth; 500-step blocks next to each other mostly share a phase: the
# same loop against itself gave medians of 0.9998-1.0021, the middle half of
# the block ratios within +-2 %.
_BLOCK_STEPS = 500
_MIN_ROUNDS_TORCH = 61  # ~0.3 s a block (~0.65 s torch.utils.tensorboard's)
_MIN_ROUNDS_JAX = 161  # ~0.13 s a block


class _Loop:
    """A training loop run in blocks: ``block(first, n)`` runs steps
    ``first .. first + n - 1``; ``close()`` ends its logger (timed, once)."""

    def __init__(self, block: Callable[[int, int], None],
                 close: Callable[[], None] | None = None) -> None:
        self._block, self._close = block, close
        self.next_step = 1

    def run(self, n: int) -> float:
        """Seconds for the next ``n`` steps."""
        t0 = time.perf_counter()
        self._block(self.next_step, n)
        dt = time.perf_counter() - t0
        self.next_step += n
        return dt

    def close(self) -> float:
        t0 = time.perf_counter()
        if self._close is not None:
            self._close()
        return time.perf_counter() - t0


def _interleaved(ctx: Context, loops: dict[str, _Loop], block: int,
                 at_least: int) -> tuple[dict[str, list[float]], dict[str, float], str]:
    """Block seconds of each loop (``ctx.rounds``: one block each a round;
    no gc.collect() between blocks: a full collection before each block
    moved the jitted JAX loop's ratio by -1.5 % and doubled its spread),
    after one untimed block each (compiling, allocators; the collector's
    first collection), each loop's close() spread over its blocks; the
    one-off costs, and a note with the whole runs' ratio (first blocks and
    close included)."""
    first = {n: loop.run(block) for n, loop in loops.items()}
    res = ctx.rounds({n: (lambda loop=loop: loop.run(block)) for n, loop in loops.items()},
                     at_least=at_least, collect=False)
    closes = {n: loop.close() for n, loop in loops.items()}
    for n, times in res.items():
        share = closes[n] / len(times)
        res[n] = [t + share for t in times]
    total = {n: first[n] + sum(res[n]) for n in loops}
    steps = block * (len(res["none"]) + 1)
    note = (f"{len(res['none'])} rounds of {block}-step blocks, each loop run once for "
            f"{steps} steps; its one-off costs: first block {first['ours'] * 1e3:.0f} ms vs "
            f"{first['none'] * 1e3:.0f} ms without, close() {closes['ours'] * 1e3:.1f} ms; "
            f"whole runs' ratio {total['none'] / total['ours']:.3f}x")
    return res, closes, note


def _torch_loop(mode: str | None, ctx: Context, dirs: list[str]) -> _Loop:
    """The MLP loop (one intra-op thread) with ``mode``'s logging: None,
    "ours" (the collector, default settings but the graph) or "torch_tb"
    (torch.utils.tensorboard writing the same values)."""
    torch = need_peer("torch")
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    d = tempfile.mkdtemp(prefix="slg-bench-coll-", dir=ctx.tmpdir)
    dirs.append(d)
    hook: Any = None
    close: Any = None
    if mode == "ours":
        from ..adapters.torch import SummaryCollector

        sc = SummaryCollector(d, model=model, optimizer=opt, loss_fn=loss_fn,
                              collect_specified_data={"collect_graph": False})
        hook, close = (lambda i, loss: sc.step(loss=loss, inputs=x)), sc.close
    elif mode == "torch_tb":
        from torch.utils.tensorboard import SummaryWriter

        tw = SummaryWriter(d)
        names = [n for n, _ in model.named_parameters()][:5]

        def hook(i: int, loss: Any) -> None:  # the collector's defaults, by hand
            if i == 1 or i % 10 == 0:
                tw.add_scalar("loss/auto", loss.item(), i)
                params = dict(model.named_parameters())
                for n in names:
                    tw.add_histogram(f"{n}/auto", params[n].detach(), i)
        close = tw.close

    def block(first: int, n: int) -> None:
        for i in range(first, first + n):
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if hook is not None:
                hook(i, loss)

    return _Loop(block, close)


@bench("torch_collector", goal=0.97, unit="steps/s", peer="the same loop without logging",
       description="PyTorch MLP loop with the SummaryCollector at default settings")
def bench_torch_collector(ctx: Context) -> list[Row]:
    """Steps/s of an MLP loop with summarylog's collector vs without it, and
    vs torch.utils.tensorboard logging the same values."""
    block = ctx.pick(_BLOCK_STEPS, 100)
    dirs: list[str] = []
    try:
        loops = {"none": _torch_loop(None, ctx, dirs), "ours": _torch_loop("ours", ctx, dirs)}
        tb_status = "ok"
        try:
            need_peer("tensorboard")
            loops["torch_tb"] = _torch_loop("torch_tb", ctx, dirs)
        except PeerMissing as exc:
            tb_status = str(exc)
        ctx.log(f"torch_collector: {ctx.round_count(_MIN_ROUNDS_TORCH)} rounds of "
                f"{block}-step blocks")
        res, closes, note = _interleaved(ctx, loops, block, _MIN_ROUNDS_TORCH)
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    per_s = lambda xs: [block / x for x in xs]  # noqa: E731
    rows = [Row("torch_collector", "MLP loop + SummaryCollector", "the loop without logging",
                "steps/s", per_s(res["ours"]), per_s(res["none"]),
                note="ratio = median of the rounds' steps/s with / without the collector "
                     "(default settings: loss, input, 5 histograms at step 1 and every 10th; "
                     "close() included); >= 0.97 is within 3 %; " + note + "; "
                     + _unpaired(res["none"], res["ours"]) + "; "
                     + _spread(res["none"], res["ours"]),
                extra={"close_s": closes["ours"], "block_steps": block}, paired=True)]
    rows.append(Row("torch_collector", "MLP loop + SummaryCollector",
                    "the loop + torch.utils.tensorboard (same values)", "steps/s",
                    per_s(res["ours"]), per_s(res["torch_tb"]) if "torch_tb" in res else None,
                    peer_status=tb_status, primary=False, paired=True))
    return rows


def _mindspore_python() -> str | None:
    env = os.environ.get("SUMMARYLOG_MINDSPORE_PYTHON")
    if env:
        return env
    here = pathlib.Path(__file__).resolve()
    for base in (pathlib.Path.cwd(), *here.parents):
        cand = base / ".venvs" / "mindspore" / "bin" / "python"
        if cand.exists():
            return str(cand)
    return None


def _unpaired(none: list[float], ours: list[float]) -> str:
    """The ratio of the medians, for comparison with the paired ratio."""
    import statistics as st

    return f"ratio of the medians {st.median(none) / st.median(ours):.3f}x"


def _spread(none: list[float], ours: list[float]) -> str:
    """The middle half of the rounds' paired ratios: how far one round moves
    (a median over N rounds moves about 1.25 / sqrt(N) of that range's width)."""
    import statistics as st

    ratios = [n / o for n, o in zip(none, ours)]
    if len(ratios) < 4:
        return f"rounds' ratios {min(ratios):.3f}-{max(ratios):.3f}x"
    q1, _, q3 = st.quantiles(ratios, n=4)
    return f"middle half of the rounds' ratios {q1:.3f}-{q3:.3f}x"


@bench("mindspore_collector", goal=20.0, unit="1/s overhead",
       peer="MindSpore's own SummaryCollector",
       description="MindSpore Model.train, 768 steps: overhead of each SummaryCollector at "
                   "its defaults (the loss landscape's 19 checkpoints included)")
def bench_mindspore_collector(ctx: Context) -> list[Row]:
    """Added wall time of MindSpore's SummaryCollector vs summarylog's on the
    same Model.train run, both collecting the same things (figures are
    1/overhead: the ratio is how many times less summarylog adds); a second
    row compares the CPU time each adds (its threads and child processes)."""
    import statistics as st

    import summarylog

    py = _mindspore_python()
    if py is None:
        raise PeerMissing("missing (a Python with MindSpore: set SUMMARYLOG_MINDSPORE_PYTHON "
                          "or run the test suite once to make .venvs/mindspore)")
    script = pathlib.Path(__file__).with_name("ms_overhead.py")
    out = tempfile.mkdtemp(prefix="slg-bench-ms-", dir=ctx.tmpdir)
    try:
        # ~10 s a round: MindSpore's collector adds a few ms a step, ours a few tenths,
        # and a run's time on a shared 2-core VM moves by +-20 %: many rounds
        rounds, epochs = ctx.round_count(15), ctx.pick(8, 1)
        # MindSpore's environment, nothing of ours on its import path but this
        # summarylog (the venv's own copy may be an older build)
        os.symlink(pathlib.Path(summarylog.__file__).parent, os.path.join(out, "summarylog"))
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
        env["PYTHONPATH"] = out
        for attempt in range(2):  # MindSpore's dataset pipeline fails now and then under load
            r = subprocess.run([py, str(script), os.path.join(out, "runs"), str(rounds),
                                str(epochs)], capture_output=True, text=True, timeout=3600,
                               env=env, cwd=out)
            if r.returncode == 0:
                break
            ctx.log(f"mindspore_collector: attempt {attempt + 1} failed: "
                    f"{r.stderr.strip().splitlines()[-1:]}")
        if r.returncode != 0:
            raise RuntimeError(f"ms_overhead.py failed: {r.stderr[-2000:]}")
        data = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    steps = data["steps"]

    def added(which: str, key: str) -> list[float]:
        """Seconds each run of ``which`` took over the same round's run without."""
        return [max(x[key] - b[key], 1e-3) for x, b in zip(data[which], data["none"])]

    def ms_step(xs: list[float]) -> str:
        if len(xs) < 4:
            return f"{st.median(xs) / steps * 1e3:.2f}"
        q1, q2, q3 = st.quantiles(xs, n=4)
        return f"{q2 / steps * 1e3:.2f} ({q1 / steps * 1e3:.2f}-{q3 / steps * 1e3:.2f})"

    inv = lambda xs: [1.0 / x for x in xs]  # noqa: E731
    rows = []
    for key, what in (("wall", "wall"), ("cpu", "CPU")):
        ours, theirs = added("ours", key), added("mindspore", key)
        rows.append(Row(
            "mindspore_collector", f"Model.train + summarylog SummaryCollector ({what})",
            f"Model.train + MindSpore {data['version']} SummaryCollector", f"1/s {what} overhead",
            inv(ours), inv(theirs), primary=key == "wall",
            note=f"{len(ours)} rounds of {steps} steps, {what} ms added a step, median "
                 f"(middle half): MindSpore's {ms_step(theirs)}, summarylog's {ms_step(ours)}; "
                 f"without a collector {st.median(x[key] for x in data['none']):.2f} s a run",
            extra=data if key == "wall" else {}))
    return rows


@bench("jax_collector", goal=0.97, unit="steps/s", peer="the same jitted loop without logging",
       description="jitted Flax MLP step loop with the JAX SummaryCollector at default settings")
def bench_jax_collector(ctx: Context) -> list[Row]:
    """Steps/s of a jitted Flax MLP loop with summarylog's JAX collector vs
    without; counts device reads (syncs) made on the training thread."""
    import threading

    jax = need_peer("jax")
    nn = need_peer("flax.linen")
    optax = need_peer("optax")
    import numpy as np

    from ..adapters.jax import SummaryCollector

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(10)(nn.relu(nn.Dense(256)(nn.relu(nn.Dense(256)(x)))))

    block = ctx.pick(_BLOCK_STEPS, 100)
    model = MLP()
    x = np.random.default_rng(0).normal(size=(64, 256)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 10, 64)
    tx = optax.sgd(0.01)

    def loss_fn(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()

    @jax.jit
    def train_step(p, s):
        loss, grads = jax.value_and_grad(loss_fn)(p)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    # Device reads made inside sc.step() on the training thread: summarylog's
    # read points (values.to_numpy / resolve_scalar, also under the name the
    # JAX collector reads with: np.asarray takes a JAX array through the
    # buffer protocol, past any Python method) and the array's own read methods.
    # The loop's own reads are not counted.
    from .. import values as values_mod
    from ..adapters import jax as jax_adapter

    main = threading.current_thread()
    syncs = {"n": 0, "in_step": False}
    array_type = type(jax.numpy.zeros(1))
    patched: list[tuple[Any, str, Any]] = [
        (values_mod, "to_numpy", values_mod.to_numpy),
        (values_mod, "resolve_scalar", values_mod.resolve_scalar),
        (jax_adapter, "to_numpy", jax_adapter.to_numpy),
        *((array_type, name, getattr(array_type, name)) for name in
          ("__array__", "item", "block_until_ready", "tolist", "__float__")
          if hasattr(array_type, name))]

    def spy(orig: Any) -> Any:
        def read(*a: Any, **k: Any) -> Any:
            if syncs["in_step"] and threading.current_thread() is main:
                syncs["n"] += 1
            return orig(*a, **k)
        return read

    def loop(use: bool, dirs: list[str]) -> _Loop:
        state = {"params": model.init(jax.random.PRNGKey(0), x[:1])}
        state["opt"] = tx.init(state["params"])
        d = tempfile.mkdtemp(prefix="slg-bench-jax-", dir=ctx.tmpdir)
        dirs.append(d)
        sc = SummaryCollector(d) if use else None

        def run(first: int, n: int) -> None:
            params, opt_state = state["params"], state["opt"]
            for i in range(first, first + n):
                params, opt_state, loss = train_step(params, opt_state)
                if sc is not None:
                    syncs["in_step"] = True
                    sc.step(i, loss=loss, params=params)
                    syncs["in_step"] = False
            jax.block_until_ready(params)
            state["params"], state["opt"] = params, opt_state

        return _Loop(run, sc.close if sc is not None else None)

    params = model.init(jax.random.PRNGKey(0), x[:1])
    jax.block_until_ready(train_step(params, tx.init(params)))  # compiled before anything
    dirs: list[str] = []
    for owner, name, orig in patched:
        setattr(owner, name, spy(orig))
    try:
        syncs["in_step"] = True  # the counter sees a read (it is not blind)
        values_mod.to_numpy(jax.numpy.ones(2))
        syncs["in_step"] = False
        assert syncs["n"] == 1, "the device-read counter missed a read"
        syncs["n"] = 0
        ctx.log(f"jax_collector: {ctx.round_count(_MIN_ROUNDS_JAX)} rounds of "
                f"{block}-step blocks")
        res, closes, note = _interleaved(ctx, {"none": loop(False, dirs), "ours": loop(True, dirs)},
                                         block, _MIN_ROUNDS_JAX)
    finally:
        for owner, name, orig in patched:
            setattr(owner, name, orig)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    per_s = lambda xs: [block / t for t in xs]  # noqa: E731
    return [Row("jax_collector", "jitted MLP loop + SummaryCollector", "the loop without logging",
                "steps/s", per_s(res["ours"]), per_s(res["none"]),
                note=f"ratio = median of the rounds' steps/s with / without the collector "
                     f"(loss, 5 histograms at step 1 and every 10th; close() included); "
                     f"{note}; {_unpaired(res['none'], res['ours'])}; "
                     f"{_spread(res['none'], res['ours'])}; "
                     f"device reads inside step() on the training thread: {syncs['n']} (goal 0)",
                extra={"training_thread_syncs": syncs["n"], "close_s": closes["ours"],
                       "block_steps": block}, paired=True)]
