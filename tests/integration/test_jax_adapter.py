"""The JAX SummaryCollector in real JAX + Flax + Optax training, summary()
inside jax.jit, and the CLU MetricWriter through CLU's own interface; read
back with summarylog.Reader."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module
from summarylog import Reader

jax = require_module("jax")
jnp = require_module("jax.numpy")
nn = require_module("flax.linen")
optax = require_module("optax")

from summarylog.adapters.jax import MetricWriter, SummaryCollector, named_leaves, summary  # noqa: E402


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(16)(x))
        summary("hidden_mean", h.mean(), "scalar")
        summary("hidden", h, "histogram")
        return nn.Dense(2)(h)


def _data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return x, y


def _train(d, fmt="tensorboard", steps=30, **kw):
    x, y = _data()
    model = MLP()
    sc = SummaryCollector(d, collect_freq=5, format=fmt, total_steps=steps,
                          optimizer_name="adam", loss_name="softmax_cross_entropy",
                          network_name="MLP", batch_size=32, epochs=1, dataset_size=len(x),
                          custom_lineage_data={"framework": "jax"}, **kw)
    params = model.init(jax.random.PRNGKey(0), x[:1])
    tx = optax.inject_hyperparams(optax.adam)(learning_rate=optax.linear_schedule(0.05, 0.01, steps))
    opt_state = tx.init(params)

    def loss_fn(p, xb, yb):
        logits = model.apply(p, xb)
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    @jax.jit
    def train_step(p, s, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss, grads

    losses = {}
    with sc:
        for step in range(1, steps + 1):
            i = (step * 32) % len(x)
            xb, yb = x[i:i + 32], y[i:i + 32]
            params, opt_state, loss, grads = train_step(params, opt_state, xb, yb)
            sc.step(step, loss=loss, params=params, grads=grads, opt_state=opt_state,
                    graph=(loss_fn, (params, xb, yb)))
            losses[step] = loss
        sc.evaluate_end({"accuracy": 0.9})
    return {k: float(v) for k, v in losses.items()}, params


@pytest.mark.parametrize("fmt", ["tensorboard", "mindinsight"])
def test_flax_optax_training(tmp_path, fmt):
    losses, params = _train(tmp_path, fmt,
                            collect_specified_data={"histogram_regular": r"params/Dense_0/"})
    r = Reader(tmp_path)
    s = r.scalars(".", "loss/auto")
    assert s.step.tolist() == [1, 5, 10, 15, 20, 25, 30]
    np.testing.assert_allclose(s.value, [losses[k] for k in s.step], rtol=1e-6)
    tags = r.tags(".")
    hist = {t for t, k in tags.items() if k == "histogram" and t.endswith("/auto")}
    assert hist == {"params/Dense_0/kernel/auto", "params/Dense_0/bias/auto"}
    assert set(named_leaves(params)) >= {"params/Dense_0/kernel", "params/Dense_1/kernel"}
    # in-jit summaries, at the collected steps
    assert r.scalars(".", "hidden_mean").step.tolist() == [1, 5, 10, 15, 20, 25, 30]
    assert tags["hidden"] == "histogram"
    graphs = [e for e in r.events(".") if e.kind == "graph"]
    assert len(graphs) == 1 and len(graphs[0].value) > 50
    if fmt == "mindinsight":
        (row,) = r.lineage()
        assert row["optimizer"] == "adam" and row["network"] == "MLP"
        assert row["learning_rate"] == pytest.approx(0.01 + (0.05 - 0.01) / 30, rel=1e-3)
        assert row["train_dataset_size"] == 256 and row["user_defined"] == {"framework": "jax"}
        assert row["metric"] == {"accuracy": 0.9}
        assert row["loss"] == pytest.approx(losses[30], rel=1e-6)
    else:
        hp = [e.value for e in r.events(".") if e.kind == "hparams"]
        start = [v for v in hp if "session_start_info" in v][0]["session_start_info"]["hparams"]
        assert start["optimizer"] == "adam" and start["framework"] == "jax"


def test_no_device_read_on_the_training_thread(tmp_path):
    """A collected step whose loss and parameters are still being computed
    (JAX's async dispatch) leaves them so: step() read nothing, the values
    are read later on summarylog's thread."""

    @jax.jit
    def slow_step(w):  # ~0.1-1 s of work, dispatched asynchronously
        w = jax.lax.fori_loop(0, 300, lambda i, a: jnp.tanh(a @ a * 1e-3), w)
        return {"w": w, "b": w[0]}, jnp.float32(0.5) * 2 + 0 * w.sum()

    w0 = jnp.ones((384, 384))
    jax.block_until_ready(slow_step(w0))  # compiled
    with SummaryCollector(tmp_path) as sc:
        params, loss = slow_step(w0)
        assert not loss.is_ready()  # still computing: a read would wait for it
        sc.step(1, loss=loss, params=params)
        assert not loss.is_ready() and not params["w"].is_ready()
        pending = sc.core.record._pool
        assert not pending.get("scalar") and not pending.get("histogram")
    r = Reader(tmp_path)
    assert r.scalars(".", "loss/auto").value.tolist() == [1.0]
    assert {t for t, k in r.tags(".").items() if k == "histogram"} == {"b/auto", "w/auto"}


def test_summary_costs_nothing_without_a_collector():
    @jax.jit
    def f(x):
        summary("x", x.sum())
        return x * 2

    jaxpr = jax.make_jaxpr(f)(jnp.ones(3))
    assert "callback" not in str(jaxpr)  # nothing emitted


def test_clu_metric_writer(tmp_path):
    require_module("clu")
    from summarylog.adapters.jax import _clu_interface

    iface = _clu_interface()
    assert iface is not None and issubclass(MetricWriter, iface.MetricWriter)
    w = MetricWriter(tmp_path)
    w.write_scalars(1, {"loss": 0.5, "acc": jnp.float32(0.25)})
    w.write_scalars(2, {"loss": 0.25, "acc": 0.5})
    w.write_images(2, {"img": np.random.default_rng(0).random((2, 8, 8, 3))})
    w.write_texts(2, {"note": "hello"})
    w.write_histograms(2, {"w": np.arange(100.0)}, num_buckets={"w": 10})
    w.write_hparams({"lr": 0.1, "arch": "mlp"})
    w.write_videos(2, {"v": np.zeros((1, 2, 4, 4, 3))})
    w.write_audios(2, {"a": np.zeros((1, 10, 1))}, sample_rate=8000)
    w.write_summaries(3, {"t": np.arange(4)})
    w.flush()
    w.close()
    r = Reader(tmp_path)
    assert r.scalars(".", "loss").value.tolist() == [0.5, 0.25]
    assert r.scalars(".", "acc").value.tolist() == [0.25, 0.5]
    tags = r.tags(".")
    assert (tags["img"], tags["note"], tags["w"], tags["t"]) == ("image", "text", "histogram",
                                                                  "tensor")
    (h,) = [e.value for e in r.events(".") if e.tag == "w"]
    assert len(h["counts"]) == 10 and sum(h["counts"]) == 100


def test_jax_memory_is_let_go_soon(tmp_path, monkeypatch):
    """The histograms of JAX arrays are views of JAX's memory: summarylog
    writes them once about 1 MiB of them piles up, instead of holding up to
    8 MiB for one batch.  Held, they keep JAX's allocator from reusing that
    memory; its next outputs then land on fresh pages (12 000 page faults
    per run of the bench's MLP loop, against ~300).  Arrays of summarylog's
    own (the PyTorch collector's copies) still go out in larger batches."""
    from summarylog import SummaryRecord
    from summarylog.pipeline import Pipeline

    batches: list[tuple[int, int]] = []  # (borrowed bytes, own bytes) per native call
    orig = Pipeline.write_histograms

    def spy(self, items):
        borrowed = sum(it[3].nbytes for it in items if not it[3].flags.owndata)
        batches.append((borrowed, sum(it[3].nbytes for it in items) - borrowed))
        return orig(self, items)

    monkeypatch.setattr(Pipeline, "write_histograms", spy)
    one = 256 * 256 * 4  # 256 KiB a step
    with SummaryRecord(tmp_path / "jax", format="tensorboard") as rec:
        rec._wake_bytes = 1 << 30  # only close() wakes the thread: every step in one go
        for step in range(1, 21):
            a = jnp.full((256, 256), float(step))
            rec.add_later(lambda a=a: [("histogram", "w", a)], nbytes=one)
            rec.record(step)
    assert sum(b for b, _ in batches) == 20 * one
    assert len(batches) >= 5 and max(b for b, _ in batches) <= (1 << 20) + one, batches
    batches.clear()
    with SummaryRecord(tmp_path / "own", format="tensorboard") as rec:
        rec._wake_bytes = 1 << 30
        for step in range(1, 21):
            arr = np.full((256, 256), float(step), np.float32)
            rec.add_later(lambda arr=arr: [("histogram", "w", arr)], nbytes=one, owned=True)
            rec.record(step)
    assert [own for _, own in batches] == [20 * one]  # one batch, at close()
    hists = [e for e in Reader(tmp_path / "jax").events(".") if e.kind == "histogram"]
    assert [(e.tag, e.step, e.value["max"]) for e in hists] == \
        [("w", s, float(s)) for s in range(1, 21)]  # all written, in order


def test_named_leaves_of_trees_whose_metadata_holds_arrays():
    """Leaf names are cached per tree structure; a structure whose node
    metadata can't be compared (a static field holding an array) is named
    afresh each time instead of failing."""

    @jax.tree_util.register_pytree_node_class
    class Static:
        def __init__(self, w, meta):
            self.w, self.meta = w, meta

        def tree_flatten(self):
            return (self.w,), self.meta

        @classmethod
        def tree_unflatten(cls, meta, children):
            return cls(children[0], meta)

    for i in range(3):
        tree = {"layer": Static(jnp.full((2,), float(i)), np.arange(3))}
        named = named_leaves(tree)
        assert list(named) == ["layer/0"] and float(named["layer/0"][0]) == i
    assert list(named_leaves({"a": jnp.ones(2), "b": {"c": jnp.zeros(1)}})) == ["a", "b/c"]


def test_steps_between_collections_take_the_short_path(tmp_path):
    """Between collections step() leaves the core alone (step numbers may
    skip and go back: those calls take the full path); the last loss
    (lineage) follows every step; a closed collector still raises."""
    from unittest import mock

    sc = SummaryCollector(tmp_path, collect_freq=5, format="mindinsight", network_name="MLP",
                          optimizer_name="sgd")
    steps = [1, 2, 3, 4, 5, 6, 7, 9, 12, 3, 13, 16, 17]
    with mock.patch.object(sc.core, "step", wraps=sc.core.step) as core_step:
        for s in steps:
            assert sc.step(s, loss=jnp.float32(s)) == (s in (1, 5))
    assert [c.args[0] for c in core_step.call_args_list] == [1, 5, 12, 3, 16]
    assert sc.last_step == 17
    sc.close()
    with pytest.raises(ValueError, match="closed"):
        sc.step(18, loss=jnp.float32(18))
    r = Reader(tmp_path)
    assert r.scalars(".", "loss/auto").step.tolist() == [1, 5]
    (row,) = r.lineage()
    assert row["loss"] == 17.0
