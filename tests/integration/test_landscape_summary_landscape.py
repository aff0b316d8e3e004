"""summarylog.landscape's SummaryLandscape against MindSpore 2.10's own, on the same
checkpoints (saved by MindSpore's SummaryCollector in a real Model.train, graph mode):
the same landscapes, on one process and on two workers; the same checkpoints computed
from the main venv with a numpy loss (the "from checkpoints alone" path) match too;
MindSpore's own landscape file read back as Landscape objects and rewritten byte for
byte but the wall time (tests/data/ms210_landscape is one such file, kept so the unit
tests need no MindSpore); the drop-in's argument checks."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import summarylog
from summarylog import Reader
from summarylog.landscape import Landscape, write_landscapes
from summarylog.landscape.compute import compute
from summarylog.landscape.summary_landscape import SummaryLandscape
from summarylog.pb import ms
from summarylog.records import RecordReader
from venvs import require_venv, venv_env

SCRIPT = pathlib.Path(__file__).resolve().parent / "landscape_scripts" / "ms_landscape.py"
SIZE = 3  # (MindSpore evaluates a point in about a second: the grid stays small)
SAMPLES = 64


def _python() -> str:
    env = os.environ.get("SUMMARYLOG_MINDSPORE_PYTHON")  # as the bench: any MindSpore Python
    if env:
        return env
    return str(require_venv("mindspore") / "bin" / "python")


@pytest.fixture(scope="module")
def ms_run(tmp_path_factory):
    py = _python()
    out = tmp_path_factory.mktemp("ms_landscape")
    # this summarylog (the installed one) first on MindSpore's import path
    os.symlink(pathlib.Path(summarylog.__file__).parent, out / "summarylog")
    r = subprocess.run([py, str(SCRIPT), str(out / "run"), "graph", str(SIZE),
                        "mindspore,ours,ours2", str(SAMPLES)], capture_output=True, text=True, cwd=str(out),
                       timeout=1800, env=venv_env(PYTHONPATH=str(out)))
    assert r.returncode == 0, r.stderr[-4000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"MindSpore {info['version']} SummaryLandscape, 3 landscapes {SIZE}x{SIZE}, graph "
          f"mode: {info['mindspore']:.1f} s; summarylog's drop-in {info['ours']:.1f} s "
          f"({info['mindspore'] / info['ours']:.1f}x), on 2 spawned workers "
          f"{info['ours2']:.1f} s")
    return out / "run", info


def _landscapes(d):
    return {e.tag: Landscape.from_message(e.tag, e.value)
            for e in Reader(d).events(".") if e.kind == "landscape"}


def _same(a, b, exact=False):
    check = np.testing.assert_array_equal if exact else (
        lambda p, q: np.testing.assert_allclose(p, q, rtol=2e-5, atol=2e-6))
    for f in ("x", "y", "z"):
        check(getattr(a, f), getattr(b, f))
    if a.path_z is not None:
        for f in ("path_x", "path_y", "path_z"):
            check(getattr(a, f), getattr(b, f))
    assert a.intervals == b.intervals and a.decomposition == b.decomposition
    assert (a.unit, a.step_per_epoch) == (b.unit, b.step_per_epoch)
    np.testing.assert_allclose(a.convergence_point, b.convergence_point, rtol=2e-5, atol=1e-6)


def test_drop_in_gives_mindspores_landscapes(ms_run):
    run, _ = ms_run
    theirs = _landscapes(run / "mindspore")
    assert sorted(theirs) == ["landscape_[1, 4]", "landscape_[5, 8]", "landscape_[8]"]
    for which in ("ours", "ours2"):
        ours = _landscapes(run / which)
        assert sorted(ours) == sorted(theirs)
        for tag in theirs:
            _same(ours[tag], theirs[tag])
        zmax = max(np.abs(ours[t].z - theirs[t].z).max() for t in theirs)
        print(f"{which}: max |dz| vs MindSpore's own {zmax:.2e}")


def _records(path):
    with RecordReader(str(path)) as rr:
        return [bytes(r) for r in rr]


def test_mindspore_made_landscapes_read_and_rewritten(ms_run, tmp_path):
    run, _ = ms_run
    [theirs_file] = [p for p in (run / "mindspore").iterdir() if p.name.endswith("_MS")]
    tags = ["landscape_[1, 4]", "landscape_[5, 8]", "landscape_[8]"]
    got = Reader(str(run / "mindspore")).landscapes(".")
    assert list(got) == tags
    for tag, [(step, ls)] in got.items():
        assert step == 0 and ls.z.shape == (SIZE, SIZE) and np.isfinite(ls.z).all(), tag
    assert [got[t][0][1].decomposition for t in tags] == ["PCA", "PCA", "Random"]
    theirs = _records(theirs_file)
    values = [v for rec in theirs[1:] for v in ms.Event.FromString(rec).summary.value]
    assert [v.tag for v in values] == tags
    for v in values:
        ls = Landscape.from_message(v.tag, v.loss_landscape)
        assert ls.to_message().SerializeToString() == v.loss_landscape.SerializeToString()
    write_landscapes(tmp_path / "ours", [got[t][0][1] for t in tags])
    [ours_file] = [p for p in (tmp_path / "ours").iterdir() if p.name.endswith("_MS")]
    ours = _records(ours_file)
    assert len(ours) == len(theirs)
    assert all(a[9:] == b[9:] for a, b in zip(ours, theirs))  # all but the wall time
    print(f"MindSpore 2.10's fresh landscapes ({', '.join(tags)}): read, and rewritten as "
          f"{sum(map(len, ours))} bytes equal to MindSpore's but the wall time")


def _data():
    rng = np.random.default_rng(0)  # the script's generator, first 256 samples
    xs, ys = [], []
    for _ in range(256):
        x = rng.normal(size=16).astype(np.float32)
        xs.append(x)
        ys.append(np.array([x[:8].sum() * 0.5 - x[8:].sum() * 0.25], np.float32))
    x, y = np.stack(xs), np.stack(ys)
    return [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]


def ms_mlp_loss(p, batch):
    x, y = batch
    h = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
    return float(np.mean((h @ p["fc2.weight"].T + p["fc2.bias"] - y) ** 2))


def test_mindspore_checkpoints_alone_with_a_numpy_loss(ms_run):
    run, _ = ms_run
    theirs = _landscapes(run / "mindspore")
    # seed=0 draws what np.random.seed(0) then MindSpore's draws give
    ours = {ls.tag: ls for ls in compute(run, ms_mlp_loss, data=_data(), seed=0, write=False,
                                         progress=False)}
    assert sorted(ours) == sorted(theirs)
    for tag in theirs:
        _same(ours[tag], theirs[tag])


class _Metric:
    def clear(self):
        pass


def _meta_run(tmp_path):
    from landscape_reference import trajectory

    from summarylog.landscape import TrainMetadata
    from summarylog.landscape import checkpoints as ckpt_io

    files = {}
    for i, p in enumerate(trajectory(3), 1):
        path = tmp_path / "ckpt_dir" / f"Net_{i}_step.ckpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        ckpt_io.save(path, p)
        files[str(i)] = str(path)
    TrainMetadata(epoch_group={0: [1, 2, 3]}, model_params_file_map=files, num_samples=8,
                  landscape_size=3).write(tmp_path)


def test_drop_in_checks(tmp_path):
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    sl = SummaryLandscape(tmp_path)
    assert (tmp_path / "ckpt_dir").is_dir()
    with pytest.raises(FileNotFoundError, match="train_metadata.json"):
        sl.gen_landscapes_with_multi_process(lambda: None)
    with pytest.raises(TypeError, match="device_ids"):
        sl.gen_landscapes_with_multi_process(lambda: None, device_ids="0")
    with pytest.raises(ValueError, match='"device_ids" should be between 0 and 7, but got 8'):
        sl.gen_landscapes_with_multi_process(lambda: None, device_ids=[0, 8])
    with pytest.raises(TypeError, match="callback_fn"):
        sl.gen_landscapes_with_multi_process(None)
    _meta_run(tmp_path)
    with pytest.raises(ValueError, match="landscape_size"):
        sl.gen_landscapes_with_multi_process(lambda: None, {"landscape_size": 300})
    with pytest.raises(ValueError, match="'Loss'"):
        sl.gen_landscapes_with_multi_process(lambda: (None, None, None, {"Acc": _Metric()}),
                                             progress=False)
    with pytest.raises(TypeError, match=r"\(model, network, dataset, metrics\)"):
        sl.gen_landscapes_with_multi_process(lambda: 3, progress=False)
    with pytest.raises(RuntimeError, match="callback_fn raised FileNotFoundError"):
        sl.gen_landscapes_with_multi_process(lambda: open("/nonexistent/x"), progress=False)
    # nothing written by a call that failed
    assert not [f for f in os.listdir(tmp_path) if "summary" in f]
    sl.clean_ckpt()
    assert not (tmp_path / "ckpt_dir").exists()
