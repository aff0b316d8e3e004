"""The collector side of loss landscapes (summarylog.landscape.collect.LandscapeSaver),
with numpy parameters and no framework: the points, the files and their names,
train_metadata.json in MindSpore's schema, the bound on pending copies (wait or
drop), failed writes that never stop training, and planted links never followed."""

from __future__ import annotations

import json
import os
import threading
import time

import numpy as np
import pytest

from summarylog.landscape import DEFAULT_LANDSCAPE, TrainMetadata, checkpoints
from summarylog.landscape import collect as lc
from summarylog.landscape.collect import NEVER, LandscapeSaver

SETTINGS = {"landscape_size": 5, "unit": "step", "num_samples": 16,
            "create_landscape": {"train": True, "result": True},
            "intervals": [[1, 2, 3], [5, 7, 9, 11]]}


def _params(step: int) -> dict[str, np.ndarray]:
    return {"fc.weight": np.full((3, 2), step, np.float32), "fc.bias": np.arange(3.0) + step,
            "bn.moving_mean": np.float32([step, -step])}


def _loop(saver: LandscapeSaver, steps, net="Net", state=None):
    """A training loop's use of the saver: one compare per step, a copy at points."""
    state = {} if state is None else state
    for s in steps:
        state.update(_params(s))  # the parameters change in place after each step
        if s >= saver.next_step:
            saver.at(s, net, lambda: {k: v.copy() for k, v in state.items()},
                     lambda: sum(v.nbytes for v in state.values()))
    return state


@pytest.mark.parametrize("ext", [".ckpt", ".npz"])
def test_points_files_and_metadata(tmp_path, ext):
    saver = LandscapeSaver(tmp_path, SETTINGS, ext)
    assert (tmp_path / "ckpt_dir").is_dir()  # made at construction, as MindSpore
    state = _loop(saver, range(1, 14))
    path = saver.finish(13, "Net", lambda: {k: v.copy() for k, v in state.items()},
                        lambda: 0, step_per_epoch=6)
    saver.close()
    names = sorted(os.listdir(tmp_path / "ckpt_dir"))
    points = [1, 2, 3, 5, 7, 9, 11, 13]  # 13: the end of training, an extra point
    assert names == sorted([f"Net_{p}_step{ext}" for p in points] + ["train_metadata.json"])
    data = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert path == str(tmp_path / "ckpt_dir" / "train_metadata.json")
    assert list(data) == ["epoch_group", "model_params_file_map", "step_per_epoch", "unit",
                          "num_samples", "landscape_size", "create_landscape"]
    assert data["epoch_group"] == {"0": [1, 2, 3], "1": [5, 7, 9, 11]}
    assert data["model_params_file_map"] == {
        str(p): str(tmp_path / "ckpt_dir" / f"Net_{p}_step{ext}") for p in points}
    assert (data["step_per_epoch"], data["unit"], data["num_samples"],
            data["landscape_size"]) == (6, "step", 16, 5)
    for p in points:
        got = checkpoints.load(data["model_params_file_map"][str(p)])
        assert list(got) == list(_params(p))
        for k, v in _params(p).items():
            np.testing.assert_array_equal(got[k], v)
    meta = TrainMetadata.read(tmp_path)  # our reader takes it (the extra point ignored)
    assert meta.points() == [1, 2, 3, 5, 7, 9, 11]
    assert saver.errors == 0 and saver.waits == 0


def test_epoch_unit_and_skipped_steps(tmp_path):
    saver = LandscapeSaver(tmp_path, {**SETTINGS, "unit": "epoch"}, ".npz")
    assert saver.next_step == NEVER and saver.next_epoch == 1
    _loop(saver, [1, 2, 3])
    assert sorted(saver.saved) == []  # epochs are not steps
    saver2 = LandscapeSaver(tmp_path / "b", SETTINGS, ".npz")
    _loop(saver2, [1, 4, 6, 9, 30])  # step numbers that skip points: those are not saved
    saver2.drain()
    assert sorted(saver2.saved) == [1, 9] and saver2.next_step == NEVER
    saver2.close()


def test_end_point_already_saved_is_not_saved_again(tmp_path):
    saver = LandscapeSaver(tmp_path, SETTINGS, ".npz")
    _loop(saver, range(1, 12))
    calls = []
    saver.finish(11, "Net", lambda: calls.append(1) or _params(99), lambda: 0)
    saver.close()
    assert calls == []
    np.testing.assert_array_equal(checkpoints.load(saver.saved[11])["fc.bias"],
                                  _params(11)["fc.bias"])


def _slow_writes(monkeypatch, gate: threading.Event):
    real = checkpoints.save

    def slow(path, named):
        gate.wait(30)
        real(path, named)
    monkeypatch.setattr(lc.checkpoints, "save", slow)


def test_full_queue_waits_for_the_writer_and_loses_nothing(tmp_path, monkeypatch):
    """Copies pending past max_pending_bytes: the training thread waits (default), and
    every point is written."""
    gate = threading.Event()
    _slow_writes(monkeypatch, gate)
    nbytes = sum(v.nbytes for v in _params(1).values())
    saver = LandscapeSaver(tmp_path, SETTINGS, ".npz", max_pending_bytes=2 * nbytes)
    threading.Timer(0.3, gate.set).start()
    t0 = time.perf_counter()
    _loop(saver, range(1, 12))
    took = time.perf_counter() - t0
    saver.write_metadata()
    saver.close()
    assert sorted(saver.saved) == [1, 2, 3, 5, 7, 9, 11]
    assert saver.waits >= 1 and saver.dropped == []
    print(f"pending copies bounded at 2: training waited {saver.waits} times, "
          f"{saver.wait_seconds:.2f} s of {took:.2f} s, all 7 points written")


def test_full_queue_drops_with_a_warning_when_asked(tmp_path, monkeypatch, caplog):
    gate = threading.Event()
    _slow_writes(monkeypatch, gate)
    nbytes = sum(v.nbytes for v in _params(1).values())
    saver = LandscapeSaver(tmp_path, SETTINGS, ".npz", max_pending_bytes=nbytes,
                           on_full="drop")
    t0 = time.perf_counter()
    _loop(saver, range(1, 12))
    took = time.perf_counter() - t0
    gate.set()
    saver.write_metadata()
    saver.close()
    assert saver.saved and saver.dropped and saver.waits == 0
    assert sorted(saver.saved) + saver.dropped == sorted([1, 2, 3, 5, 7, 9, 11])
    assert "not saved" in caplog.text
    data = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert sorted(map(int, data["model_params_file_map"])) == sorted(saver.saved)
    print(f"on_full='drop': {len(saver.dropped)} of 7 points dropped, the loop never "
          f"waited ({took:.3f} s for 11 steps with the writer stuck)")


def test_a_failed_write_is_counted_and_training_goes_on(tmp_path, caplog):
    saver = LandscapeSaver(tmp_path, SETTINGS, ".ckpt")
    bad = {"w": np.array(["no", "dtype"], dtype=object)}  # no MindSpore type: save raises
    assert saver.save(1, "Net", lambda: bad, 8)
    _loop(saver, range(2, 12))
    saver.write_metadata()
    saver.close()
    assert saver.errors == 1 and 1 not in saver.saved and 2 in saver.saved
    assert "not written" in caplog.text
    data = json.loads((tmp_path / "ckpt_dir" / "train_metadata.json").read_text())
    assert "1" not in data["model_params_file_map"]
    assert not [n for n in os.listdir(tmp_path / "ckpt_dir") if n.endswith(".tmp")]


def test_strict_raises_the_failure_at_the_next_call(tmp_path):
    saver = LandscapeSaver(tmp_path, SETTINGS, ".ckpt", strict=True)
    saver.save(1, "Net", lambda: {"w": np.array([object()], dtype=object)}, 8)
    saver.drain()
    with pytest.raises(RuntimeError, match="could not be written"):
        saver.save(2, "Net", lambda: _params(2), 8)
    saver.close()


def test_planted_links_are_never_followed(tmp_path, caplog):
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / "ckpt_dir")  # the directory itself, planted
    saver = LandscapeSaver(run, SETTINGS, ".npz")
    _loop(saver, range(1, 4))
    saver.write_metadata()
    saver.close()
    assert os.listdir(outside) == [] and saver.errors == 4  # 3 points + the JSON
    assert "not usable" in caplog.text

    run2 = tmp_path / "run2"
    saver = LandscapeSaver(run2, SETTINGS, ".npz")
    victim = outside / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, run2 / "ckpt_dir" / "Net_1_step.npz")  # a checkpoint's name
    os.symlink(victim, run2 / "ckpt_dir" / "train_metadata.json")
    _loop(saver, range(1, 4))
    saver.write_metadata()
    saver.close()
    assert victim.read_bytes() == b"keep" and sorted(os.listdir(outside)) == ["victim"]
    assert not (run2 / "ckpt_dir" / "Net_1_step.npz").is_symlink()
    assert json.loads((run2 / "ckpt_dir" / "train_metadata.json").read_text())["unit"] == "step"


def test_a_directory_swapped_mid_write_is_not_followed(tmp_path, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    saver = LandscapeSaver(run, SETTINGS, ".npz")
    real = lc.checkpoints.save

    def swap_then_save(path, named):  # between the directory's check and the write
        os.rename(run / "ckpt_dir", run / "moved")
        os.symlink(outside, run / "ckpt_dir")
        real(path, named)
    monkeypatch.setattr(lc.checkpoints, "save", swap_then_save)
    saver.save(1, "Net", lambda: _params(1), 8)
    saver.close()
    assert os.listdir(outside) == [] and os.listdir(run / "moved") == ["Net_1_step.npz"]


def test_default_settings_save_steps_1_to_19(tmp_path):
    saver = LandscapeSaver(tmp_path, DEFAULT_LANDSCAPE, ".npz")
    _loop(saver, range(1, 40))
    saver.close()
    assert sorted(saver.saved) == list(range(1, 20))


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        LandscapeSaver(tmp_path, None, ".npz")
    with pytest.raises(ValueError, match="ext"):
        LandscapeSaver(tmp_path, SETTINGS, ".h5")
    with pytest.raises(ValueError, match="on_full"):
        LandscapeSaver(tmp_path, SETTINGS, ".npz", on_full="block")
