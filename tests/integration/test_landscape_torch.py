"""summarylog.landscape with PyTorch: vmap over the grid points matches the brute-force
numpy reference on a tiny MLP (PCA and seeded Random), from .pt checkpoints and a
train_metadata.json, on one or several processes; train vs eval mode; a loss_fn vmap
cannot batch falls back to point by point; hostile inputs."""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import landscape_reference as ref  # noqa: E402

from summarylog.landscape import TrainMetadata  # noqa: E402
from summarylog.landscape import checkpoints as ckpt_io  # noqa: E402
from summarylog.landscape.compute import LandscapeError, compute, from_checkpoints  # noqa: E402

N = 6
FN = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
BATCHES = ref.data(4, 8, seed=7)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 5)
        self.fc2 = torch.nn.Linear(5, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mse(model, batch):
    x, y = batch
    return torch.nn.functional.mse_loss(model(x), y)


def _tbatches():
    return [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in BATCHES]


def _run(tmp_path, pts):
    d = tmp_path / "run"
    files = {}
    for i, p in enumerate(pts, 1):
        path = d / "ckpt_dir" / f"MLP_{i}_step.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        ckpt_io.save(path, {k: torch.from_numpy(v) for k, v in p.items()})
        files[str(i)] = str(path)
    TrainMetadata(epoch_group={0: [1, 2, 3, 4], 1: [4, 5, 6, 7]}, model_params_file_map=files,
                  step_per_epoch=7, num_samples=32, landscape_size=N).write(d)
    return d


def test_compute_matches_the_reference(tmp_path):
    pts = ref.trajectory(7)
    d = _run(tmp_path, pts)
    model = MLP()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    t0 = time.perf_counter()
    ls = compute(d, mse, model=model, data=_tbatches(), seed=5, progress=False)
    dt = time.perf_counter() - t0
    assert [x.tag for x in ls] == ["landscape_[1, 4]", "landscape_[4, 7]", "landscape_[7]"]
    loss = ref.mean_loss(BATCHES)
    for lsc, interval in zip(ls[:2], ([1, 2, 3, 4], [4, 5, 6, 7])):
        xs, ys, z, coefs, path = ref.pca_reference([pts[i - 1] for i in interval], FN, loss, N)
        np.testing.assert_allclose(lsc.x, xs, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(lsc.z, z, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lsc.path_z, path, rtol=1e-5, atol=1e-6)
    axis, z = ref.random_reference(pts[-1], FN, loss, N, 5)
    np.testing.assert_allclose(ls[2].z, z, rtol=1e-5, atol=1e-6)
    # the model itself is untouched, and back in its own mode
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    assert model.training
    print(f"torch: 3 landscapes {N}x{N} (vmap): {dt:.2f} s; max |dz| vs reference "
          f"{np.abs(ls[2].z - z).max():.2e}")


def test_processes_give_the_same_result(tmp_path):
    pts = ref.trajectory(5)
    kw = dict(model=MLP(), data=_tbatches(), landscape_size=N, seed=2, progress=False)
    one = from_checkpoints(pts, mse, **kw)
    two = from_checkpoints(pts, mse, processes=2, **kw)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(one[0].path_z, two[0].path_z)


def test_loss_without_data_and_a_loss_vmap_cannot_batch():
    pts = ref.trajectory(4)
    tb = _tbatches()

    def whole(model):  # its own pass over the data
        return sum(mse(model, b) for b in tb) / len(tb)

    (a,) = from_checkpoints(pts, whole, model=MLP(), landscape_size=N, progress=False,
                            create_landscape={"train": True, "result": False})

    def itemised(model, batch):
        return float(mse(model, batch).item())  # .item() cannot run under vmap

    with pytest.warns(RuntimeWarning, match="point by point"):
        (b,) = from_checkpoints(pts, itemised, model=MLP(), data=tb, landscape_size=N,
                                progress=False, create_landscape={"train": True, "result": False})
    np.testing.assert_allclose(a.z, b.z, rtol=1e-6)
    xs, ys, z, _, _ = ref.pca_reference(pts, FN, ref.mean_loss(BATCHES), N)
    np.testing.assert_allclose(b.z, z, rtol=1e-5, atol=1e-6)


class Dropped(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 5)
        self.bn = torch.nn.BatchNorm1d(5)
        self.drop = torch.nn.Dropout(0.5)
        self.fc2 = torch.nn.Linear(5, 1)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


def test_train_and_eval_mode_with_batch_norm_and_dropout():
    rng = np.random.default_rng(0)
    base = {k: v.detach().numpy().copy() for k, v in Dropped().state_dict().items()}
    pts = []
    for t in range(4):
        p = {k: (v + rng.normal(size=v.shape).astype(np.float32) * 0.05 * t
                 if v.dtype == np.float32 else v) for k, v in base.items()}
        pts.append(p)
    model = Dropped().eval()
    kw = dict(model=model, data=_tbatches(), landscape_size=4, progress=False,
              create_landscape={"train": True, "result": False})
    ev1 = from_checkpoints(pts, mse, train=False, **kw)[0]
    ev2 = from_checkpoints(pts, mse, train=False, **kw)[0]
    np.testing.assert_array_equal(ev1.z, ev2.z)  # eval mode: no dropout, running stats
    tr = from_checkpoints(pts, mse, **kw)[0]  # train mode: dropout draws, batch statistics
    assert not np.array_equal(tr.z, ev1.z)
    assert not model.training  # its mode restored
    # batch norm's running stats are buffers: they stay at the checkpoint's, get no direction
    with torch.no_grad():
        model.load_state_dict({k: torch.from_numpy(v) for k, v in pts[-1].items()})
        ref_loss = np.mean([mse(model, b).item() for b in _tbatches()])
    assert ev1.path_z[-1] == pytest.approx(ref_loss, rel=1e-5)


def test_hostile_inputs(tmp_path):
    pts = ref.trajectory(4)
    with pytest.raises(ValueError, match="no tensor of the model .fc1.weight."):
        from_checkpoints([{k.replace("fc1", "x"): v for k, v in p.items()} for p in pts], mse,
                         model=MLP(), data=_tbatches(), progress=False)
    bad = [dict(p, **{"fc2.bias": np.zeros(2, np.float32)}) for p in pts]
    with pytest.raises(ValueError, match="fc2.bias"):
        from_checkpoints(bad, mse, model=MLP(), data=_tbatches(), progress=False)

    def boom(model, batch):
        raise KeyError("labels")

    with pytest.raises(LandscapeError, match="loss_fn raised KeyError"):
        from_checkpoints(pts, boom, model=MLP(), data=_tbatches(), progress=False)
    with pytest.raises(TypeError, match="scalar"):
        from_checkpoints(pts, lambda m, b: m(b[0]), model=MLP(), data=_tbatches(),
                         progress=False)
    with pytest.raises(LandscapeError, match="nan"):
        from_checkpoints(pts, lambda m, b: mse(m, b) * float("nan"), model=MLP(),
                         data=_tbatches(), progress=False)
    damaged = tmp_path / "x.pt"
    damaged.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match=r"checkpoints\[0\].*x.pt"):
        from_checkpoints([damaged] * 3, mse, model=MLP(), data=_tbatches(), progress=False)
    with pytest.raises(TypeError, match="model"):
        from_checkpoints(pts, mse, model="net", framework="torch", data=_tbatches(),
                         progress=False)


def test_checkpoints_of_parameters_only_keep_the_models_buffers():
    model = Dropped().eval()
    params = {k: v.detach().numpy().copy() for k, v in model.named_parameters()}
    rng = np.random.default_rng(1)
    pts = [{k: v + rng.normal(size=v.shape).astype(np.float32) * 0.05 * t
            for k, v in params.items()} for t in range(4)]
    (ls,) = from_checkpoints(pts, mse, model=model, data=_tbatches(), landscape_size=3,
                             train=False, progress=False,
                             create_landscape={"train": True, "result": False})
    with torch.no_grad():
        model.load_state_dict({k: torch.from_numpy(v) for k, v in pts[-1].items()}, strict=False)
        expect = np.mean([mse(model, b).item() for b in _tbatches()])
    assert ls.path_z[-1] == pytest.approx(expect, rel=1e-5)


def test_points_per_call_bounds_memory(monkeypatch):
    import summarylog.landscape.evaluate as ev

    pts = ref.trajectory(4)
    kw = dict(model=MLP(), data=_tbatches(), landscape_size=N, seed=3, progress=False)
    whole = from_checkpoints(pts, mse, **kw)
    monkeypatch.setattr(ev, "POINTS_BUDGET", 400)  # ~2 copies of the MLP's 36 floats
    assert ev.points_per_call(None, 36 * 4, N) == 2
    chunked = from_checkpoints(pts, mse, **kw)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a.z, b.z, rtol=1e-6)
