"""collect_landscape from the JAX SummaryCollector in a real jitted loop: the params
pytree saved as .npz (flatten_pytree names) at MindSpore's default points and at
custom step and epoch intervals, train_metadata.json, values equal to the params at
those steps, read on the saver's thread (not the training thread); collect_gradients;
the step cost with the collection on and off (printed)."""

from __future__ import annotations

import json
import os
import threading
import timeit

import numpy as np
import pytest

from conftest import require_module
from summarylog import Reader
from summarylog.landscape import checkpoints

jax = require_module("jax")
jnp = require_module("jax.numpy")

from summarylog.adapters.jax import SummaryCollector  # noqa: E402


def _init():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    return {"dense1": {"kernel": jax.random.normal(k1, (4, 5)) * 0.5, "bias": jnp.zeros(5)},
            "dense2": {"kernel": jax.random.normal(k2, (5, 1)) * 0.5, "bias": jnp.zeros(1)}}


def _loss(p, x, y):
    h = jnp.tanh(x @ p["dense1"]["kernel"] + p["dense1"]["bias"])
    return jnp.mean((h @ p["dense2"]["kernel"] + p["dense2"]["bias"] - y) ** 2)


@jax.jit
def _train_step(p, x, y):
    loss, g = jax.value_and_grad(_loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss, g


def _data(n=64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, x[:, :1] * 2 - x[:, 1:2]


def _train(d, epochs, batch=8, epoch_params=True, **kw):
    x, y = _data()
    params = _init()
    at_step, at_epoch, step = {}, {}, 0
    with SummaryCollector(d, network_name="MLP", batch_size=batch, dataset_size=len(x),
                          **kw) as sc:
        for _ in range(epochs):
            for i in range(0, len(x), batch):
                step += 1
                params, loss, grads = _train_step(params, x[i:i + batch], y[i:i + batch])
                sc.step(step, loss=loss, params=params, grads=grads)
                at_step[step] = checkpoints.flatten_pytree(jax.device_get(params))
            sc.epoch_end(params if epoch_params else None)
            at_epoch[sc.epoch] = at_step[step]
    return at_step, at_epoch


def _check(d, unit, points, truth, step_per_epoch, intervals):
    ckpt = d / "ckpt_dir"
    assert sorted(os.listdir(ckpt)) == sorted(
        [f"MLP_{p}_{unit}.npz" for p in points] + ["train_metadata.json"])
    meta = json.loads((ckpt / "train_metadata.json").read_text())
    assert meta["epoch_group"] == {str(i): v for i, v in enumerate(intervals)}
    assert meta["unit"] == unit and meta["step_per_epoch"] == step_per_epoch
    assert meta["model_params_file_map"] == {str(p): str(ckpt / f"MLP_{p}_{unit}.npz")
                                             for p in points}
    for p in points:
        got = checkpoints.load(meta["model_params_file_map"][str(p)])
        assert sorted(got) == ["dense1/bias", "dense1/kernel", "dense2/bias", "dense2/kernel"]
        for k, v in truth[p].items():
            np.testing.assert_array_equal(got[k], v, err_msg=f"{p} {k}")


def test_defaults_save_steps_1_to_19_and_the_end(tmp_path):
    at_step, _ = _train(tmp_path, epochs=3)  # 24 steps
    _check(tmp_path, "step", [*range(1, 20), 24], at_step, 8,
           [list(range(1, 10)), list(range(10, 20))])


def test_custom_step_intervals(tmp_path):
    intervals = [[2, 3, 5], [5, 8, 13]]
    at_step, _ = _train(tmp_path, epochs=2, collect_specified_data={
        "collect_landscape": {"unit": "step", "intervals": intervals, "landscape_size": 3}})
    _check(tmp_path, "step", [2, 3, 5, 8, 13, 16], at_step, 8, intervals)


@pytest.mark.parametrize("given", [True, False], ids=["epoch_end_params", "last_step_params"])
def test_epoch_unit(tmp_path, given):
    intervals = [[1, 2, 3]]
    _, at_epoch = _train(tmp_path, epochs=4, epoch_params=given, collect_specified_data={
        "collect_landscape": {"unit": "epoch", "intervals": intervals}})
    _check(tmp_path, "epoch", [1, 2, 3, 4], at_epoch, 8, intervals)


def test_arrays_are_read_on_the_saver_thread(tmp_path, monkeypatch):
    """The training thread keeps references; the device read (np.asarray in the .npz
    writer) happens on summarylog's thread."""
    from summarylog.landscape import collect as lc

    readers = []
    real = lc.checkpoints.save

    def spy(path, named):
        readers.append(threading.current_thread().name)
        assert all(isinstance(v, jax.Array) for v in named.values())  # not copied yet
        real(path, named)
    monkeypatch.setattr(lc.checkpoints, "save", spy)
    _train(tmp_path, epochs=1, collect_specified_data={
        "collect_landscape": {"unit": "step", "intervals": [[1, 2, 3]]}})
    assert readers and set(readers) == {"summarylog-landscape"}


def test_step_per_epoch_from_the_loop_when_sizes_are_unknown(tmp_path):
    x, y = _data(40)
    params = _init()
    with SummaryCollector(tmp_path, collect_specified_data={
            "collect_landscape": {"unit": "step", "intervals": [[1, 2, 3]]}}) as sc:
        step = 0
        for _ in range(2):
            for i in range(0, 40, 8):
                step += 1
                params, loss, _ = _train_step(params, x[i:i + 8], y[i:i + 8])
                sc.step(step, loss=loss, params=params)
            sc.epoch_end()
    meta = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert meta["step_per_epoch"] == 5 and "Net_1_step.npz" in os.listdir(tmp_path / "ckpt_dir")


def test_collect_gradients_histograms_the_gradients(tmp_path):
    x, y = _data()
    params = _init()
    grads_at = {}
    with SummaryCollector(tmp_path, collect_freq=4, collect_gradients=True,
                          format="mindinsight",
                          collect_specified_data={"collect_landscape": None}) as sc:
        for step in range(1, 9):
            i = (step - 1) * 8
            params, loss, grads = _train_step(params, x[i:i + 8], y[i:i + 8])
            sc.step(step, loss=loss, params=params, grads=grads)
            grads_at[step] = np.asarray(grads["dense1"]["kernel"])
    r = Reader(tmp_path)
    tags = r.tags(".")
    assert tags["dense1/kernel.grad/auto"] == "histogram"
    assert tags["dense1/kernel/auto"] == "histogram"
    got = {int(e.step): e.value for e in r.events(".") if e.tag == "dense1/kernel.grad/auto"}
    assert sorted(got) == [1, 4, 8]
    for step, h in got.items():
        assert h["sum"] == pytest.approx(float(grads_at[step].astype(np.float64).sum()),
                                         rel=1e-5, abs=1e-6)
    assert not (tmp_path / "ckpt_dir").exists()


def test_step_cost_with_landscape_on_and_off(tmp_path):
    params = _init()
    loss = jnp.float32(0.5)
    far = 10 ** 6
    collectors = {name: SummaryCollector(tmp_path / name, collect_freq=far,
                                         collect_specified_data={"collect_landscape": spec})
                  for name, spec in (("off", None), ("on", {"unit": "step", "intervals": [
                      [far, far + 1, far + 2]]}))}
    cost = {name: float("inf") for name in collectors}
    steps = {name: 1 for name in collectors}
    for sc in collectors.values():
        sc.step(1, loss=loss, params=params)
    n = 100_000
    for _ in range(5):  # interleaved: the machine's load falls on both alike
        for name, sc in collectors.items():
            first = steps[name] + 1
            steps[name] += n
            it = iter(range(first, first + n))
            t = timeit.timeit(lambda: sc.step(next(it), loss=loss, params=params), number=n)
            cost[name] = min(cost[name], t / n)
    for sc in collectors.values():
        sc.close()
    print(f"quiet JAX step(): {cost['off'] * 1e9:.0f} ns with collect_landscape off, "
          f"{cost['on'] * 1e9:.0f} ns on (a point not due; min of 5 x 100 000)")
