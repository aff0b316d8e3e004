"""summarylog.landscape with JAX: jit(vmap) over the grid points matches the brute-force
numpy reference on a tiny MLP (PCA and seeded Random), from .npz checkpoints of a
params pytree and a train_metadata.json; worker processes (spawned) give the same
result; hostile inputs."""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import landscape_reference as ref  # noqa: E402

from summarylog.landscape import TrainMetadata  # noqa: E402
from summarylog.landscape import checkpoints as ckpt_io  # noqa: E402
from summarylog.landscape.compute import LandscapeError, compute, from_checkpoints  # noqa: E402

N = 6
BATCHES = ref.data(4, 8, seed=7)


def to_tree(p):
    """The reference's torch-layout parameters as a flax-style pytree."""
    return {"fc1": {"bias": p["fc1.bias"], "kernel": p["fc1.weight"].T.copy()},
            "fc2": {"bias": p["fc2.bias"], "kernel": p["fc2.weight"].T.copy()}}


def flat(p):  # the names the .npz holds, in JAX's (sorted) leaf order
    return ckpt_io.flatten_pytree(to_tree(p))


def np_loss(named, batch):
    x, y = batch
    h = np.maximum(x @ named["fc1/kernel"] + named["fc1/bias"], 0)
    return float(np.mean((h @ named["fc2/kernel"] + named["fc2/bias"] - y) ** 2))


def jax_loss(params, batch):
    x, y = batch
    h = jax.nn.relu(x @ params["fc1"]["kernel"] + params["fc1"]["bias"])
    return jnp.mean((h @ params["fc2"]["kernel"] + params["fc2"]["bias"] - y) ** 2)


def _mean(named):
    return sum(np_loss(named, b) for b in BATCHES) / len(BATCHES)


def _run(tmp_path, pts):
    d = tmp_path / "run"
    files = {}
    for i, p in enumerate(pts, 1):
        path = d / "ckpt_dir" / f"MLP_{i}_step.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        ckpt_io.save(path, flat(p))
        files[str(i)] = str(path)
    TrainMetadata(epoch_group={0: [1, 2, 3, 4, 5]}, model_params_file_map=files,
                  step_per_epoch=5, num_samples=32, landscape_size=N).write(d)
    return d


def test_compute_matches_the_reference(tmp_path):
    pts = ref.trajectory(5)
    d = _run(tmp_path, pts)
    template = to_tree(pts[0])
    t0 = time.perf_counter()
    ls = compute(d, jax_loss, params=template, data=BATCHES, seed=4, progress=False)
    dt = time.perf_counter() - t0
    assert [x.tag for x in ls] == ["landscape_[1, 5]", "landscape_[5]"]
    named = [flat(p) for p in pts]
    fn = list(named[0])
    xs, ys, z, coefs, path = ref.pca_reference(named, fn, _mean, N)
    np.testing.assert_allclose(ls[0].x, xs, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ls[0].z, z, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ls[0].path_z, path, rtol=1e-5, atol=1e-6)
    axis, zr = ref.random_reference(named[-1], fn, _mean, N, 4)
    np.testing.assert_allclose(ls[1].z, zr, rtol=1e-5, atol=1e-6)
    print(f"jax: 2 landscapes {N}x{N} (jit+vmap, compile included): {dt:.2f} s; max |dz| "
          f"vs reference {np.abs(ls[0].z - z).max():.2e}")


def test_processes_give_the_same_result():
    pts = [to_tree(p) for p in ref.trajectory(4)]
    kw = dict(params=pts[0], data=BATCHES, landscape_size=N, seed=1, progress=False)
    one = from_checkpoints(pts, jax_loss, **kw)
    t0 = time.perf_counter()
    two = from_checkpoints(pts, jax_loss, processes=2, **kw)
    print(f"jax on 2 spawned processes: {time.perf_counter() - t0:.1f} s")
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.z, b.z)


def test_points_per_call_pads_and_loss_without_data():
    pts = [to_tree(p) for p in ref.trajectory(4)]
    kw = dict(params=pts[0], landscape_size=N, seed=1, progress=False,
              create_landscape={"train": True, "result": False})
    (a,) = from_checkpoints(pts, jax_loss, data=BATCHES, **kw)
    (b,) = from_checkpoints(pts, jax_loss, data=BATCHES, points_per_call=4, **kw)
    np.testing.assert_allclose(a.z, b.z, rtol=1e-6)

    def whole(params):
        return sum(jax_loss(params, bt) for bt in BATCHES) / len(BATCHES)

    (c,) = from_checkpoints(pts, whole, **kw)
    np.testing.assert_allclose(a.z, c.z, rtol=1e-5)


def test_hostile_inputs():
    pts = [to_tree(p) for p in ref.trajectory(4)]

    def boom(params, batch):
        raise RuntimeError("bad batch")

    with pytest.raises(LandscapeError, match="loss_fn raised RuntimeError: bad batch"):
        from_checkpoints(pts, boom, params=pts[0], data=BATCHES, progress=False)
    with pytest.raises(TypeError, match="scalar"):
        from_checkpoints(pts, lambda p, b: b[0] @ p["fc1"]["kernel"], params=pts[0],
                         data=BATCHES, progress=False)
    with pytest.raises(ValueError, match="no leaf of params 'fc1/bias'"):
        from_checkpoints([{"other": p["fc1"]} for p in pts], jax_loss, params=pts[0],
                         data=BATCHES, progress=False, framework="jax")
    with pytest.raises(LandscapeError, match="inf"):
        from_checkpoints(pts, lambda p, b: jax_loss(p, b) / 0.0, params=pts[0], data=BATCHES,
                         progress=False)
