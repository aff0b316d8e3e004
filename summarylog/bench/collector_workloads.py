"""Training-loop overhead of the SummaryCollectors, side by side.

- ``torch_collector``: a small PyTorch MLP loop with summarylog's collector
  at default settings against the same loop without it (goal: within 3 %),
  and against the loop logging the same values with
  ``torch.utils.tensorboard`` (informational);
- ``mindspore_collector``: a MindSpore ``Model.train`` run (384 steps) with
  MindSpore's own SummaryCollector and with summarylog's, against none;
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


# One round's with/without ratio moves by several per cent on a small VM from
# the machine alone (on this 2-core VM the middle half of PyTorch's rounds
# spans about +-1.5 %, jitted JAX's +-4 to +-8 %: its XLA threads are
# scheduled differently from run to run, 3500-4400 steps/s for the same
# loop): the collector benches run at least this many rounds (outside
# --quick) whatever --repeat says, so that their median speaks to a 3 % goal
# (the median of N rounds moves about 1.25 / sqrt(N) of one round's spread:
# +-0.5 % for PyTorch at 15, +-1 % for JAX at 81).  A JAX round costs ~1 s, a
# PyTorch round ~5 s (torch.utils.tensorboard's run included).
_MIN_ROUNDS_TORCH = 15
_MIN_ROUNDS_JAX = 81


def _torch_loop(ctx: Context, steps: int,
                closes: dict[str, list[float]]) -> Callable[[str | None], float]:
    """The timed loop (close() included); ``closes[mode]`` gets close()'s
    share of each run, so the note can give the steady-state ratio too."""
    torch = need_peer("torch")
    from torch import nn

    def run(mode: str | None) -> float:
        torch.manual_seed(0)
        torch.set_num_threads(1)
        model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        d = tempfile.mkdtemp(prefix="slg-bench-coll-", dir=ctx.tmpdir)
        try:
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
            t0 = time.perf_counter()
            for i in range(1, steps + 1):
                loss = loss_fn(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if hook is not None:
                    hook(i, loss)
            t1 = time.perf_counter()
            if close is not None:
                close()
            t2 = time.perf_counter()
            closes.setdefault(str(mode), []).append(t2 - t1)
            return t2 - t0
        finally:
            shutil.rmtree(d, ignore_errors=True)

    return run


@bench("torch_collector", goal=0.97, unit="steps/s", peer="the same loop without logging",
       description="PyTorch MLP loop with the SummaryCollector at default settings")
def bench_torch_collector(ctx: Context) -> list[Row]:
    """Steps/s of an MLP loop with summarylog's collector vs without it, and
    vs torch.utils.tensorboard logging the same values."""
    steps = ctx.pick(2000, 200)
    closes: dict[str, list[float]] = {}
    loop = _torch_loop(ctx, steps, closes)
    loop(None)  # warm-up
    candidates = {"none": lambda: loop(None), "ours": lambda: loop("ours")}
    tb_status = "ok"
    try:
        need_peer("tensorboard")
        candidates["torch_tb"] = lambda: loop("torch_tb")
    except PeerMissing as exc:
        tb_status = str(exc)
    ctx.log(f"torch_collector: {steps} steps per loop, "
            f"{ctx.round_count(_MIN_ROUNDS_TORCH)} rounds")
    res = ctx.rounds(candidates, at_least=_MIN_ROUNDS_TORCH)
    per_s = lambda xs: [steps / x for x in xs]  # noqa: E731
    rows = [Row("torch_collector", "MLP loop + SummaryCollector", "the loop without logging",
                "steps/s", per_s(res["ours"]), per_s(res["none"]),
                note=f"ratio = median over {len(res['ours'])} rounds of steps/s with / without "
                     "the collector in the same round (default settings: loss, input, 5 "
                     "histograms at step 1 and every 10th; close() included); >= 0.97 is "
                     "within 3 %; "
                     + _unpaired(res["none"], res["ours"]) + "; "
                     + _spread(res["none"], res["ours"]) + "; "
                     + _steady(res["none"], res["ours"], closes["ours"]),
                extra={"close_s": closes["ours"]}, paired=True)]
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


def _steady(none: list[float], ours: list[float], closes: list[float]) -> str:
    """The (paired) ratio without close() (the run's one-off drain, fsync and lineage)."""
    import statistics as st

    ratio = st.median(n / (t - c) for n, t, c in zip(none, ours, closes))
    return f"without close() ({st.median(closes) * 1e3:.0f} ms, once per run) {ratio:.3f}x"


@bench("mindspore_collector", goal=5.0, unit="1/s overhead",
       peer="MindSpore's own SummaryCollector",
       description="MindSpore Model.train, 384 steps: overhead of each SummaryCollector")
def bench_mindspore_collector(ctx: Context) -> list[Row]:
    """Added wall time of MindSpore's SummaryCollector vs summarylog's on the
    same Model.train run (figures are 1/overhead: the ratio is how many times
    less summarylog adds)."""
    py = _mindspore_python()
    if py is None:
        raise PeerMissing("missing (a Python with MindSpore: set SUMMARYLOG_MINDSPORE_PYTHON "
                          "or run the test suite once to make .venvs/mindspore)")
    script = pathlib.Path(__file__).with_name("ms_overhead.py")
    out = tempfile.mkdtemp(prefix="slg-bench-ms-", dir=ctx.tmpdir)
    try:
        repeat = ctx.pick(max(ctx.repeat, 3), 1)
        # MindSpore's own environment: nothing of ours on its import path
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
        for attempt in range(2):  # MindSpore's dataset pipeline fails now and then under load
            r = subprocess.run([py, str(script), out, str(repeat), "1" if ctx.quick else "0"],
                               capture_output=True, text=True, timeout=1800, env=env)
            if r.returncode == 0:
                break
            ctx.log(f"mindspore_collector: attempt {attempt + 1} failed: "
                    f"{r.stderr.strip().splitlines()[-1:]}")
        if r.returncode != 0:
            raise RuntimeError(f"ms_overhead.py failed: {r.stderr[-2000:]}")
        data = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    base = data["none"]
    over = lambda xs: [max(x - b, 1e-3) for x, b in zip(xs, base)]  # noqa: E731
    ours, theirs = over(data["ours"]), over(data["mindspore"])
    inv = lambda xs: [1.0 / x for x in xs]  # noqa: E731
    import statistics as st

    return [Row("mindspore_collector", "Model.train + summarylog SummaryCollector",
                f"Model.train + MindSpore {data['version']} SummaryCollector", "1/s overhead",
                inv(ours), inv(theirs),
                note=f"{data['steps']} steps; median wall s: none {st.median(base):.2f}, "
                     f"MindSpore's {st.median(data['mindspore']):.2f}, "
                     f"summarylog's {st.median(data['ours']):.2f}; ratio = MindSpore's added "
                     f"time / summarylog's",
                extra=data)]


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

    steps = ctx.pick(2000, 200)
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

    closes: list[float] = []

    def run(use: bool) -> float:
        params = model.init(jax.random.PRNGKey(0), x[:1])
        state = tx.init(params)
        params, state, loss = train_step(params, state)  # compiled before timing
        jax.block_until_ready(loss)
        d = tempfile.mkdtemp(prefix="slg-bench-jax-", dir=ctx.tmpdir)
        sc = SummaryCollector(d) if use else None
        try:
            t0 = time.perf_counter()
            for i in range(1, steps + 1):
                params, state, loss = train_step(params, state)
                if sc is not None:
                    syncs["in_step"] = True
                    sc.step(i, loss=loss, params=params)
                    syncs["in_step"] = False
            jax.block_until_ready(params)
            t1 = time.perf_counter()
            if sc is not None:
                sc.close()
            t2 = time.perf_counter()
            if use:
                closes.append(t2 - t1)
            return t2 - t0
        finally:
            shutil.rmtree(d, ignore_errors=True)

    run(False)
    for owner, name, orig in patched:
        setattr(owner, name, spy(orig))
    try:
        syncs["in_step"] = True  # the counter sees a read (it is not blind)
        values_mod.to_numpy(jax.numpy.ones(2))
        syncs["in_step"] = False
        assert syncs["n"] == 1, "the device-read counter missed a read"
        syncs["n"] = 0
        ctx.log(f"jax_collector: {steps} steps per loop, "
                f"{ctx.round_count(_MIN_ROUNDS_JAX)} rounds")
        res = ctx.rounds({"none": lambda: run(False), "ours": lambda: run(True)},
                         at_least=_MIN_ROUNDS_JAX)
    finally:
        for owner, name, orig in patched:
            setattr(owner, name, orig)
    per_s = lambda xs: [steps / t for t in xs]  # noqa: E731
    return [Row("jax_collector", "jitted MLP loop + SummaryCollector", "the loop without logging",
                "steps/s", per_s(res["ours"]), per_s(res["none"]),
                note=f"ratio = median over {len(res['ours'])} rounds of steps/s with / without "
                     f"in the same round "
                     f"(loss, 5 histograms at step 1 and every 10th; close() included); "
                     f"{_unpaired(res['none'], res['ours'])}; "
                     f"{_spread(res['none'], res['ours'])}; "
                     f"{_steady(res['none'], res['ours'], closes)}; "
                     f"device reads inside step() on the training thread: {syncs['n']} (goal 0)",
                extra={"training_thread_syncs": syncs["n"], "close_s": closes}, paired=True)]
