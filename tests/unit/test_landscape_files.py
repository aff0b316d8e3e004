"""The files a loss landscape is computed from and the message it is written as
(summarylog.landscape.metadata, .checkpoints, .result): MindSpore's checks and
schema, each framework's checkpoint format, hostile files refused with clear errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from summarylog.landscape import (DEFAULT_LANDSCAPE, Landscape, TrainMetadata,
                                  check_collect_landscape, interval_tag, write_landscapes)
from summarylog.landscape import checkpoints
from summarylog.landscape.metadata import CKPT_DIR, METADATA_FILE, checkpoint_name


# -- collect_landscape ---------------------------------------------------------------

def test_defaults_are_mindsporess():
    s = check_collect_landscape(DEFAULT_LANDSCAPE)
    assert s == {"landscape_size": 40, "unit": "step", "num_samples": 2048,
                 "create_landscape": {"train": True, "result": True},
                 "intervals": [list(range(1, 10)), list(range(10, 20))]}
    assert check_collect_landscape(None) is None
    assert check_collect_landscape({}) is None  # MindSpore crashes at step 1 on {}


@pytest.mark.parametrize("value, exc, words", [
    ([1], TypeError, "collect_landscape must be a dict"),
    ({"size": 4, "intervals": [[1, 2, 3]]}, ValueError, "unsupported keys"),
    ({"landscape_size": 2, "intervals": [[1, 2, 3]]}, ValueError, "between 3 and 256"),
    ({"landscape_size": 257, "intervals": [[1, 2, 3]]}, ValueError, "between 3 and 256"),
    ({"landscape_size": True, "intervals": [[1, 2, 3]]}, TypeError, "landscape_size"),
    ({"unit": "batch", "intervals": [[1, 2, 3]]}, ValueError, "'step' or 'epoch'"),
    ({"unit": 1, "intervals": [[1, 2, 3]]}, TypeError, "unit"),
    ({"num_samples": 0, "intervals": [[1, 2, 3]]}, ValueError, "num_samples"),
    ({"num_samples": 1.5, "intervals": [[1, 2, 3]]}, TypeError, "num_samples"),
    ({"create_landscape": {"train": 1}, "intervals": [[1, 2, 3]]}, TypeError, "train"),
    ({"create_landscape": {"test": True}, "intervals": [[1, 2, 3]]}, ValueError, "'train'"),
    ({"landscape_size": 4}, TypeError, "intervals"),  # MindSpore: intervals has no default
    ({"intervals": [[1, 2]]}, ValueError, "at least three"),
    ({"intervals": [[1, 2, "3"]]}, TypeError, "ints"),
    ({"intervals": [[1, 2, True]]}, TypeError, "ints"),
    ({"intervals": [[1, 2, -3]]}, ValueError, ">= 0"),
    ({"intervals": []}, ValueError, "empty"),
    ({"intervals": [[1] * 600_000, [1] * 600_000]}, ValueError, "more than"),
])
def test_collect_landscape_checks(value, exc, words):
    with pytest.raises(exc, match=words):
        check_collect_landscape(value)


def test_partial_settings_check_only_what_is_given():
    assert check_collect_landscape({"landscape_size": 5}, partial=True) == {"landscape_size": 5}
    with pytest.raises(ValueError, match="between 3 and 256"):
        check_collect_landscape({"landscape_size": 1}, partial=True)


def test_checkpoint_name_is_one_component():
    assert checkpoint_name("LeNet5", 3, "step", ".ckpt") == "LeNet5_3_step.ckpt"
    for hostile in ("../../etc/x", "a/b", "..", "", "\0"):
        name = checkpoint_name(hostile, 1, "epoch", ".pt")
        assert "/" not in name and not name.startswith(".") and name.endswith("_1_epoch.pt")


# -- train_metadata.json -------------------------------------------------------------

def _run(tmp_path, ext=".npz", points=(1, 2, 3, 4)):
    s = check_collect_landscape({"intervals": [list(points)], "landscape_size": 5})
    meta = TrainMetadata.from_settings(s, step_per_epoch=7)
    os.makedirs(tmp_path / CKPT_DIR, exist_ok=True)
    for p in meta.points():
        f = tmp_path / CKPT_DIR / checkpoint_name("Net", p, "step", ext)
        checkpoints.save(f, {"fc.weight": np.full((2, 3), p, np.float32),
                             "fc.bias": np.arange(3, dtype=np.float32)})
        meta.model_params_file_map[str(p)] = str(f)
    meta.write(tmp_path)
    return meta


def test_metadata_round_trip_in_mindspore_key_order(tmp_path):
    meta = _run(tmp_path)
    raw = json.loads((tmp_path / CKPT_DIR / METADATA_FILE).read_text())
    assert list(raw) == ["epoch_group", "model_params_file_map", "step_per_epoch", "unit",
                         "num_samples", "landscape_size", "create_landscape"]
    assert raw["epoch_group"] == {"0": [1, 2, 3, 4]}
    back = TrainMetadata.read(tmp_path)
    assert back == meta


def test_moved_run_finds_its_checkpoints_by_name(tmp_path):
    _run(tmp_path / "a")
    os.rename(tmp_path / "a", tmp_path / "b")
    meta = TrainMetadata.read(tmp_path / "b")
    for p in meta.model_params_file_map.values():
        assert p.startswith(str(tmp_path / "b")) and os.path.isfile(p)


def test_override_replaces_given_keys(tmp_path):
    meta = _run(tmp_path)
    meta.override({"landscape_size": 3, "intervals": [[2, 3, 4]]})
    assert meta.landscape_size == 3 and meta.epoch_group == {0: [2, 3, 4]}
    with pytest.raises(ValueError, match="between 3 and 256"):
        meta.override({"landscape_size": 300})


@pytest.mark.parametrize("mutate, words", [
    (lambda d: d.pop("unit"), "missing"),
    (lambda d: d.update(extra=1), "unexpected"),
    (lambda d: d["model_params_file_map"].pop("3"), "no checkpoint for point 3"),
    (lambda d: d.update(epoch_group={"0": [1, 2]}), "at least three"),
    (lambda d: d.update(landscape_size=999), "between 3 and 256"),
    (lambda d: d.update(step_per_epoch="7"), "step_per_epoch"),
    (lambda d: d.update(epoch_group=[1, 2, 3]), "epoch_group"),
])
def test_bad_metadata_is_refused_with_the_reason(tmp_path, mutate, words):
    _run(tmp_path)
    path = tmp_path / CKPT_DIR / METADATA_FILE
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=words):
        TrainMetadata.read(tmp_path)


def test_missing_huge_or_foreign_metadata(tmp_path):
    with pytest.raises(FileNotFoundError, match="collect_landscape"):
        TrainMetadata.read(tmp_path)
    (tmp_path / CKPT_DIR).mkdir()
    path = tmp_path / CKPT_DIR / METADATA_FILE
    path.write_bytes(b"{" * 100)
    with pytest.raises(ValueError, match="not JSON"):
        TrainMetadata.read(tmp_path)
    with open(path, "wb") as f:  # sparse: no disk used, but bigger than any real metadata
        f.truncate(65 << 20)
    with pytest.raises(ValueError, match="larger than"):
        TrainMetadata.read(tmp_path)
    path.unlink()
    os.mkfifo(path)  # a FIFO must not block the read
    with pytest.raises(ValueError, match="not a regular file"):
        TrainMetadata.read(tmp_path)


def test_planted_links_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / CKPT_DIR)  # the ckpt_dir itself
    meta = TrainMetadata.from_settings(check_collect_landscape({"intervals": [[1, 2, 3]]}))
    with pytest.raises(OSError):
        meta.write(run)
    assert os.listdir(outside) == []
    os.unlink(run / CKPT_DIR)
    (run / CKPT_DIR).mkdir()
    victim = outside / "victim.json"
    victim.write_text("keep")
    os.symlink(victim, run / CKPT_DIR / METADATA_FILE)  # the JSON: replaced, not followed
    meta.write(run)
    assert victim.read_text() == "keep"
    assert not os.path.islink(run / CKPT_DIR / METADATA_FILE)
    os.unlink(run / CKPT_DIR / METADATA_FILE)
    os.symlink(victim, run / CKPT_DIR / METADATA_FILE)
    with pytest.raises(OSError):  # and a read does not follow one either
        TrainMetadata.read(run)


# -- checkpoints ---------------------------------------------------------------------

@pytest.mark.parametrize("ext", [".ckpt", ".npz", ".pt"])
def test_checkpoint_round_trip(tmp_path, ext):
    if ext == ".pt":
        pytest.importorskip("torch")
    named = {"a.weight": np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32),
             "a.bias": np.arange(4, dtype=np.float64), "step": np.array(7, np.int64),
             "mask": np.array([True, False])}
    path = tmp_path / f"Net_1_step{ext}"
    checkpoints.save(path, named)
    back = checkpoints.load(path)
    assert list(back) == list(named)
    for k in named:
        assert back[k].dtype == named[k].dtype and np.array_equal(back[k], named[k])


def test_damaged_ckpt_is_refused_not_trusted(tmp_path):
    path = tmp_path / "Net_1_step.ckpt"
    checkpoints.save(path, {"w": np.ones((64, 64), np.float32)})
    data = path.read_bytes()
    rng = np.random.default_rng(1)
    refused = 0
    for cut in range(0, len(data), 97):  # every truncation: an error, never a bad array
        (tmp_path / "cut.ckpt").write_bytes(data[:cut])
        try:
            out = checkpoints.load(tmp_path / "cut.ckpt")
        except ValueError:
            refused += 1
            continue
        assert out == {} or np.array_equal(out["w"], np.ones((64, 64), np.float32))
    for _ in range(300):  # random byte flips: parsed or refused with ValueError, never a crash
        b = bytearray(data[:200])
        for i in rng.integers(0, len(b), 4):
            b[i] = rng.integers(0, 256)
        (tmp_path / "flip.ckpt").write_bytes(bytes(b))
        try:
            checkpoints.load(tmp_path / "flip.ckpt")
        except ValueError:
            refused += 1
    # a length field claiming far more than the file holds
    (tmp_path / "huge.ckpt").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    with pytest.raises(ValueError, match="claims"):
        checkpoints.load(tmp_path / "huge.ckpt")
    print(f"damaged .ckpt: {refused} of {len(data) // 97 + 1 + 300} damaged files refused "
          f"with ValueError, none crashed")


def test_unknown_extension_and_pickles_refused(tmp_path):
    with pytest.raises(ValueError, match="no checkpoint format"):
        checkpoints.save(tmp_path / "x.bin", {"w": np.ones(1)})
    with pytest.raises(ValueError, match="no checkpoint format"):
        checkpoints.load(tmp_path / "x.bin")
    obj = np.array([{"evil": 1}], dtype=object)
    np.savez(tmp_path / "p.npz", w=obj)
    with pytest.raises(ValueError):  # allow_pickle=False
        checkpoints.load(tmp_path / "p.npz")["w"]


def test_save_never_writes_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "Net_1_step.npz")
    checkpoints.save(tmp_path / "Net_1_step.npz", {"w": np.ones(2)})
    assert victim.read_text() == "keep"
    assert not os.path.islink(tmp_path / "Net_1_step.npz")


def test_pytree_names_round_trip():
    jnp = pytest.importorskip("jax.numpy")
    tree = {"params": {"Dense_0": {"kernel": jnp.ones((2, 3)), "bias": jnp.zeros(3)}},
            "extra": [jnp.ones(1)]}
    flat = checkpoints.flatten_pytree(tree)
    assert sorted(flat) == ["extra/0", "params/Dense_0/bias", "params/Dense_0/kernel"]
    back = checkpoints.unflatten_like(tree, {k: np.asarray(v) + 1 for k, v in flat.items()})
    assert float(back["params"]["Dense_0"]["bias"][0]) == 1.0
    with pytest.raises(KeyError, match="extra/0"):
        checkpoints.unflatten_like(tree, {k: v for k, v in flat.items() if k != "extra/0"})
    with pytest.raises(ValueError, match="shape"):
        checkpoints.unflatten_like(tree, {**flat, "extra/0": np.ones(2)})


# -- Landscape -----------------------------------------------------------------------

def _landscapes():
    x = np.linspace(-1.5, 2.0, 5)
    y = np.linspace(-0.5, 0.5, 4)
    z = np.add.outer(y ** 2, x ** 2)
    pca = Landscape(interval_tag([1, 4]), x, y, z, unit="epoch", step_per_epoch=12,
                    intervals=[1, 2, 3, 4], path_x=[1.0, 0.5, 0.25, 0.0],
                    path_y=[0.3, 0.1, 0.0, 0.0], path_z=[2.0, 1.0, 0.5, 0.1],
                    convergence_point=(0.0, 0.0, 0.1))
    rnd = Landscape(interval_tag([4]), np.linspace(-1, 1, 3), np.linspace(-1, 1, 3),
                    np.eye(3), decomposition="Random", convergence_point=(0.0, 0.0, 1.0))
    return pca, rnd


def test_landscape_message_layout_is_mindsporess():
    pca, rnd = _landscapes()
    assert pca.tag == "landscape_[1, 4]" and rnd.tag == "landscape_[4]"
    m = pca.to_message()
    assert list(m.landscape.z.dims) == [4, 5] and m.landscape.x.data_type == 12
    assert list(m.loss_path.intervals) == [1, 2, 3, 4] and m.loss_path.points.x.data_type == 11
    assert m.convergence_point.x.data_type == 5  # MindSpore's int origin of the path
    assert m.metadata.decomposition == "PCA" and m.metadata.unit == "epoch"
    r = rnd.to_message()
    assert not r.loss_path.intervals and not r.HasField("loss_path")
    for ls in (pca, rnd):
        back = Landscape.from_message(ls.tag, ls.to_message().SerializeToString())
        np.testing.assert_allclose(back.z, ls.z, rtol=1e-6)
        np.testing.assert_allclose(back.x, ls.x, rtol=1e-6)
        assert back.intervals == ls.intervals and back.decomposition == ls.decomposition
        assert back.is_final == (ls.decomposition == "Random")


def test_landscape_shape_checks():
    with pytest.raises(ValueError, match="len\\(y\\), len\\(x\\)"):
        Landscape("t", np.zeros(3), np.zeros(4), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="same length"):
        Landscape("t", np.zeros(2), np.zeros(2), np.zeros((2, 2)), path_x=[1], path_y=[1, 2],
                  path_z=[1])
    with pytest.raises(ValueError, match="decomposition"):
        Landscape("t", np.zeros(2), np.zeros(2), np.zeros((2, 2)), decomposition="SVD")
    from summarylog.pb import ms
    bad = ms.LossLandscape()
    bad.landscape.x.dims.append(3)
    bad.landscape.x.float_data.extend([1.0])
    with pytest.raises(ValueError, match="holds 1 values"):
        Landscape.from_message("t", bad)


def test_write_landscapes_one_event_each_at_step_zero(tmp_path):
    from summarylog import Reader

    tags = write_landscapes(tmp_path, _landscapes())
    assert tags == ["landscape_[1, 4]", "landscape_[4]"]
    got = [(e.tag, e.step) for e in Reader(tmp_path).events(".") if e.kind == "landscape"]
    assert got == [("landscape_[1, 4]", 0), ("landscape_[4]", 0)]


def test_written_in_the_runs_own_dialect(tmp_path):
    """A PyTorch or JAX run (TensorBoard files) gets TensorBoard landscapes, a
    MindSpore run or an empty directory MindSpore's, unless a format is given."""
    import summarylog

    tb_run, ms_run = tmp_path / "tb", tmp_path / "ms"
    with summarylog.Writer(tb_run) as w:
        w.add_scalar("loss", 1.0, 1)
    ms_run.mkdir()
    for run in (tb_run, ms_run):
        write_landscapes(run, _landscapes()[1:])
    assert sum("tfevents" in f for f in os.listdir(tb_run)) == 2
    assert any(f.endswith("_MS") for f in os.listdir(ms_run))
    assert not any("tfevents" in f for f in os.listdir(ms_run))
    write_landscapes(ms_run, _landscapes()[1:], format="tensorboard")
    assert any("tfevents" in f for f in os.listdir(ms_run))
