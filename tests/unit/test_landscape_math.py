"""summarylog.landscape's math (PCA and Random planes) and its numpy evaluator, checked
against the brute-force reference of MindSpore's formulas on a tiny MLP; the grid split
across processes gives the same result; hostile inputs give clear errors."""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import landscape_reference as ref  # noqa: E402

from summarylog.landscape import TrainMetadata  # noqa: E402
from summarylog.landscape import checkpoints as ckpt_io  # noqa: E402
from summarylog.landscape.compute import LandscapeError, compute, from_checkpoints  # noqa: E402
from summarylog.landscape.directions import pca_plane, random_plane, random_source  # noqa: E402

N = 5
BATCHES = ref.data(4, 8, seed=7)
FN = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def _close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=what)


def test_pca_landscape_matches_the_reference():
    pts = ref.trajectory(6)
    t0 = time.perf_counter()
    (ls,) = from_checkpoints(pts, ref.np_loss, data=BATCHES, landscape_size=N,
                             create_landscape={"train": True, "result": False}, progress=False)
    dt = time.perf_counter() - t0
    xs, ys, z, coefs, path = ref.pca_reference(pts, FN, ref.mean_loss(BATCHES), N)
    _close(ls.x, xs, "x")
    _close(ls.y, ys, "y")
    _close(ls.z, z, "z")
    _close(np.stack([ls.path_x, ls.path_y], 1), coefs, "path coefficients")
    _close(ls.path_z, path, "path losses")
    assert ls.tag == "landscape_[1, 6]" and ls.intervals == [1, 2, 3, 4, 5, 6]
    assert ls.convergence_point[:2] == (0.0, 0.0) and ls.convergence_point[2] == ls.path_z[-1]
    assert ls.path_x[-1] == 0 and ls.path_y[-1] == 0
    print(f"numpy PCA landscape {N}x{N}, 6 checkpoints: {dt:.3f} s; max |dz| vs reference "
          f"{np.abs(ls.z - z).max():.2e}")


def test_random_landscape_matches_the_reference_when_seeded():
    final = ref.trajectory(4)[-1]
    (ls,) = from_checkpoints([final], ref.np_loss, data=BATCHES, landscape_size=N, seed=3,
                             create_landscape={"train": False, "result": True}, progress=False)
    axis, z = ref.random_reference(final, FN, ref.mean_loss(BATCHES), N, 3)
    _close(ls.x, axis, "x")
    _close(ls.z, z, "z")
    assert ls.tag == "landscape_[1]" and ls.is_final and ls.decomposition == "Random"
    c = N // 2
    assert ls.convergence_point == (ls.x[c], ls.y[c], ls.z[c, c])
    # unseeded draws come from numpy's global RNG, as MindSpore's: seeding it reproduces
    np.random.seed(3)
    (again,) = from_checkpoints([final], ref.np_loss, data=BATCHES, landscape_size=N,
                                create_landscape={"train": False, "result": True},
                                progress=False)
    np.testing.assert_array_equal(again.z, ls.z)


def test_unselected_tensors_stay_at_the_final_parameters():
    pts = ref.trajectory(5, extra=True)
    plane = pca_plane(pts, [n for n in pts[-1] if ref.ms_rule(n)], N)
    assert not np.any(plane.v["bn.moving_mean"]) and not np.any(plane.w["global_step"])
    p = plane.point(0.3, -0.2)
    np.testing.assert_array_equal(p["bn.moving_mean"], pts[-1]["bn.moving_mean"])
    assert p["global_step"].dtype == np.int32
    # the random plane draws over every tensor (MindSpore's order), then zeroes those
    rnd = random_plane(pts[-1], FN, N, random_source(0))
    assert not np.any(rnd.v["bn.moving_mean"])
    for n in FN:
        assert np.linalg.norm(rnd.v[n]) == pytest.approx(np.linalg.norm(pts[-1][n]), rel=1e-5)


def test_processes_give_the_same_result(tmp_path):
    pts = ref.trajectory(5)
    kw = dict(data=BATCHES, landscape_size=7, seed=1, progress=False)
    one = from_checkpoints(pts, ref.np_loss, **kw)
    t0 = time.perf_counter()
    three = from_checkpoints(pts, ref.np_loss, processes=3, **kw)
    dt = time.perf_counter() - t0
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a.z, b.z)
        if a.path_z is not None:
            np.testing.assert_array_equal(a.path_z, b.path_z)
    print(f"two 7x7 numpy landscapes on 3 processes: {dt:.2f} s, identical to one process")


def _run(tmp_path, pts, fmt=".npz"):
    d = tmp_path / "run"
    files = {}
    for i, p in enumerate(pts, 1):
        path = d / "ckpt_dir" / f"Net_{i}_step{fmt}"
        path.parent.mkdir(parents=True, exist_ok=True)
        ckpt_io.save(path, p)
        files[str(i)] = str(path)
    meta = TrainMetadata(epoch_group={0: [1, 2, 3], 1: [4, 5, 6]}, model_params_file_map=files,
                         step_per_epoch=6, num_samples=16, landscape_size=N)
    meta.write(d)
    return d


def test_compute_from_a_run_writes_mindspores_tags(tmp_path):
    pts = ref.trajectory(6, extra=True)
    d = _run(tmp_path, pts, ".ckpt")
    ls = compute(d, ref.np_loss, data=BATCHES, seed=0, progress=False)
    assert [x.tag for x in ls] == ["landscape_[1, 3]", "landscape_[4, 6]", "landscape_[6]"]
    # num_samples=16 with batches of 8: the first two batches, as MindSpore's take()
    xs, ys, z, _, _ = ref.pca_reference(pts[3:], FN, ref.mean_loss(BATCHES[:2]), N)
    _close(ls[1].z, z, "second interval")
    from summarylog import Reader

    r = Reader(d)
    assert {t for t, k in r.tags(".").items() if k == "landscape"} == {x.tag for x in ls}


def test_moved_run_and_progress_line(tmp_path, capfd):
    d = _run(tmp_path, ref.trajectory(6))
    moved = tmp_path / "moved"
    os.rename(d, moved)
    ls = compute(moved, ref.np_loss, data=BATCHES, seed=0, write=False,
                 collect_landscape={"create_landscape": {"train": True, "result": False},
                                    "intervals": [[1, 2, 3, 4]]})
    assert [x.tag for x in ls] == ["landscape_[1, 4]"]
    err = capfd.readouterr().err
    assert "landscape [1, 4] (PCA)" in err


# -- hostile inputs ---------------------------------------------------------------------

def test_bad_metadata_missing_and_damaged_checkpoints(tmp_path):
    with pytest.raises(FileNotFoundError, match="train_metadata.json"):
        compute(tmp_path, ref.np_loss, data=BATCHES)
    d = _run(tmp_path, ref.trajectory(6), ".ckpt")
    meta = d / "ckpt_dir" / "train_metadata.json"
    good = meta.read_text()
    meta.write_text(json.dumps({**json.loads(good), "landscape_size": 1}))
    with pytest.raises(ValueError, match="landscape_size"):
        compute(d, ref.np_loss, data=BATCHES)
    meta.write_text(good)
    (d / "ckpt_dir" / "Net_2_step.ckpt").unlink()
    with pytest.raises(FileNotFoundError, match="step 2"):
        compute(d, ref.np_loss, data=BATCHES, progress=False)
    raw = (d / "ckpt_dir" / "Net_5_step.ckpt").read_bytes()
    (d / "ckpt_dir" / "Net_5_step.ckpt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="no checkpoint of step 9"):
        compute(d, ref.np_loss, data=BATCHES, collect_landscape={"intervals": [[4, 5, 9]]})
    with pytest.raises(ValueError, match="step 5.*Net_5_step.ckpt"):
        compute(d, ref.np_loss, data=BATCHES, progress=False,
                collect_landscape={"intervals": [[4, 5, 6]]})


def boom(p, batch):  # module level: picklable for spawned workers
    raise ZeroDivisionError("no")


def test_nan_losses_and_a_raising_loss_fn():
    pts = ref.trajectory(4)

    def nan_far(p, batch):
        return float("nan") if p["fc2.bias"][0] > pts[-1]["fc2.bias"][0] + 1e-3 else 1.0

    with pytest.raises(LandscapeError, match="loss_fn returned nan"):
        from_checkpoints(pts, nan_far, data=BATCHES, landscape_size=N, progress=False, seed=0)
    ls = from_checkpoints(pts, nan_far, data=BATCHES, landscape_size=N, progress=False,
                          seed=0, allow_nonfinite=True)
    assert np.isnan(ls[0].z).any() and np.isfinite(ls[0].z).any()

    with pytest.raises(LandscapeError, match="loss_fn raised ZeroDivisionError: no"):
        from_checkpoints(pts, boom, data=BATCHES, landscape_size=N, progress=False)
    with pytest.raises(LandscapeError, match="loss_fn raised ZeroDivisionError"):
        from_checkpoints(pts, boom, data=BATCHES, landscape_size=N, progress=False, processes=2)
    with pytest.raises(TypeError, match="loss_fn must return one number"):
        from_checkpoints(pts, lambda p, b: np.ones(3), data=BATCHES, landscape_size=N,
                         progress=False)


def test_argument_checks():
    pts = ref.trajectory(4)
    with pytest.raises(TypeError, match="loss_fn"):
        from_checkpoints(pts, "loss", data=BATCHES)
    with pytest.raises(ValueError, match="at least 3"):
        from_checkpoints(pts[:2], ref.np_loss, data=BATCHES)
    with pytest.raises(ValueError, match="landscape_size"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, landscape_size=2)
    with pytest.raises(TypeError, match="seed"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, seed="x")
    with pytest.raises(ValueError, match="processes"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, processes=0)
    with pytest.raises(ValueError, match="num_samples"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, num_samples=3)
    with pytest.raises(TypeError, match="data"):
        from_checkpoints(pts, ref.np_loss, data=5)
    with pytest.raises(ValueError, match="points"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, points=[1, 2])
    with pytest.raises(ValueError, match="all equal"):
        from_checkpoints([pts[0]] * 3, ref.np_loss, data=BATCHES)
    with pytest.raises(FileNotFoundError, match=r"checkpoints\[0\]"):
        from_checkpoints(["/nonexistent/a.npz"] * 3, ref.np_loss, data=BATCHES)


def die(p, batch):  # a worker that dies outright (a segfault, an OOM kill)
    if p["fc2.bias"][0] > -1e9:
        os._exit(3)
    return 0.0


def test_a_dying_worker_raises_instead_of_hanging():
    pts = ref.trajectory(4)
    t0 = time.perf_counter()
    with pytest.raises(LandscapeError, match="died"):
        from_checkpoints(pts, die, data=BATCHES, landscape_size=N, progress=False, processes=2)
    print(f"worker killed by os._exit(3): LandscapeError after {time.perf_counter() - t0:.2f} s")


def test_plain_progress_line_without_tqdm(monkeypatch, capfd):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    from_checkpoints(ref.trajectory(4), ref.np_loss, data=BATCHES, landscape_size=3, seed=0)
    err = capfd.readouterr().err
    assert "landscape [1, 4] (PCA): 13/13 points" in err and "landscape [4] (Random): 9/9" in err
    from_checkpoints(ref.trajectory(4), ref.np_loss, data=BATCHES, landscape_size=3, seed=0,
                     progress=False)
    assert capfd.readouterr().err == ""


def test_tensorboard_format_and_output_dir(tmp_path):
    d = _run(tmp_path, ref.trajectory(6))
    out = tmp_path / "tb"
    ls = compute(d, ref.np_loss, data=BATCHES, seed=0, progress=False, output=out,
                 format="tensorboard")
    assert len(ls) == 3
    files = os.listdir(out)
    assert any("tfevents" in f for f in files), files
    assert not [f for f in os.listdir(d) if "summary" in f or "tfevents" in f]


def test_filter_normalisation_scales_each_filter():
    pts = ref.trajectory(5)
    final = pts[-1]
    for plane in (random_plane(final, FN, N, random_source(2), normalization="filter"),
                  pca_plane(pts, FN, N, normalization="filter")):
        for n in FN:
            t, v = final[n], plane.v[n]
            if t.ndim >= 2:  # each row (filter) to its own norm
                np.testing.assert_allclose(np.linalg.norm(v, axis=1), np.linalg.norm(t, axis=1),
                                           rtol=1e-5)
            else:
                assert np.linalg.norm(v) == pytest.approx(np.linalg.norm(t), rel=1e-5)
    (a,) = from_checkpoints(pts, ref.np_loss, data=BATCHES, landscape_size=N, seed=0,
                            progress=False, normalization="filter",
                            create_landscape={"train": False, "result": True})
    (b,) = from_checkpoints(pts, ref.np_loss, data=BATCHES, landscape_size=N, seed=0,
                            progress=False, create_landscape={"train": False, "result": True})
    assert not np.allclose(a.z, b.z)
    with pytest.raises(ValueError, match="normalization"):
        from_checkpoints(pts, ref.np_loss, data=BATCHES, normalization="per-filter")
