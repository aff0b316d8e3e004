"""summarylog.SummaryWriter as a drop-in: the peers' constructor and methods (names,
order, defaults), the run directory, reopening after close, sub-runs, images pixel for
pixel as torch makes them, bad input naming the peers' arguments."""

from __future__ import annotations

import inspect
import io
import json
import os
import re
import socket
import warnings

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog import SummaryWriter


def _torch_sw():
    require_module("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.utils.tensorboard import SummaryWriter as TorchSW
    return TorchSW


def _tbx_sw():
    return require_module("tensorboardX").SummaryWriter


def _events(logdir) -> list:
    r = summarylog.Reader(str(logdir))
    return [e for run in r.runs() for e in r.events(run) if e.kind != "file_version"]


def _public(cls) -> dict[str, inspect.Signature]:
    return {n: inspect.signature(getattr(cls, n)) for n in dir(cls)
            if not n.startswith("_") and callable(getattr(cls, n))}


# -- the API's shape ---------------------------------------------------------------------
@pytest.mark.parametrize("peer", ["torch", "tensorboardX"])
def test_every_peer_method_with_its_parameters(peer) -> None:
    """Every public method of the peer exists with each of its parameters; torch's in
    the same positional order with the same defaults."""
    cls = _torch_sw() if peer == "torch" else _tbx_sw()
    ours = _public(SummaryWriter)
    missing = []
    for name, sig in _public(cls).items():
        if name not in ours:
            missing.append(name)
            continue
        mine = ours[name].parameters
        for p in sig.parameters.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            assert p.name in mine, f"{peer} {name}() has {p.name!r}; ours: {list(mine)}"
            if peer == "torch":  # positions and defaults as torch's
                assert list(mine).index(p.name) == list(sig.parameters).index(p.name), \
                    (name, p.name)
                # a required one may have a default here: tensorboardX names it otherwise
                assert p.default is p.empty or mine[p.name].default == p.default, (name, p.name)
    assert not missing, f"methods of {peer}'s SummaryWriter missing: {missing}"
    print(f"{peer}: {len(_public(cls))} public methods, all present with their parameters")


def test_constructor_is_torchs() -> None:
    torch_params = inspect.signature(_torch_sw().__init__).parameters
    ours = inspect.signature(SummaryWriter.__init__).parameters
    assert list(ours)[:len(torch_params)] == list(torch_params)
    for name, p in torch_params.items():
        assert ours[name].default == p.default, name
    for name in ("logdir", "write_to_disk", "comet_config"):  # tensorboardX's
        assert name in ours


def test_type_checkers_see_the_classes() -> None:
    import typing

    hints = typing.get_type_hints(summarylog.__getattr__)
    assert hints["return"] is object  # the lazy hook itself
    import summarylog as pkg

    src = inspect.getsource(pkg)
    for name in ("Writer", "SummaryWriter", "Reader", "SummaryRecord"):
        assert re.search(rf"from \.\w+ import {name}\b", src), name
        assert name in pkg.__all__


# -- the run directory -------------------------------------------------------------------
def test_default_log_dir_as_the_peers(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        name = os.path.basename(w.log_dir)
        assert os.path.dirname(w.log_dir) == "runs"
        assert re.fullmatch(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+_lr0\.1", name), name
        assert name.endswith(f"_{socket.gethostname()}_lr0.1")
        assert w.get_logdir() == w.logdir == w.log_dir
        assert os.path.isdir(w.log_dir)  # made at construction, as the peers do
    TorchSW = _torch_sw()
    t = TorchSW(comment="_lr0.1")
    t.close()
    assert os.path.basename(t.log_dir)[15:] == name[15:]  # same but for the seconds


def test_logdir_keyword_and_conflict(tmp_path) -> None:
    with SummaryWriter(logdir=str(tmp_path / "a")) as w:
        assert w.log_dir == str(tmp_path / "a")
    with pytest.raises(ValueError, match="log_dir and logdir"):
        SummaryWriter(str(tmp_path / "a"), logdir=str(tmp_path / "b"))
    sw = SummaryWriter("memory://bucket/run", spool_dir=str(tmp_path / "spool"))
    assert sw.log_dir == "memory://bucket/run"  # a URL (issue 25), not a local folder
    sw.close()
    with pytest.raises(ValueError, match="max_queue"):
        SummaryWriter(str(tmp_path / "c"), max_queue=0)
    with pytest.raises(ValueError, match="comet_config"):
        SummaryWriter(str(tmp_path / "c"), comet_config={"disabled": False})
    with pytest.raises(TypeError, match="flush_secs"):
        SummaryWriter(str(tmp_path / "c"), flush_secs="soon")


def test_writer_options_and_flush_cap(tmp_path) -> None:
    with SummaryWriter(str(tmp_path), flush_secs=120, durability="fsync",
                       filename_suffix=".x") as w:
        assert w.writer.flush_secs == 1.0  # the peers' 120 s never delays our writer
        assert w.writer.durability == "fsync"
        w.add_scalar("a", 1.0, 0)
    assert all(f.endswith(".x") for f in os.listdir(tmp_path))
    with SummaryWriter(str(tmp_path / "b"), flush_secs=0.25) as w:
        assert w.writer.flush_secs == 0.25


def test_write_to_disk_false_writes_nothing(tmp_path) -> None:
    d = tmp_path / "none"
    with SummaryWriter(str(d), write_to_disk=False) as w:
        w.add_scalar("a", 1.0, 0)
        w.add_scalars("m", {"x": 1.0}, 0)
        w.add_image("i", np.zeros((3, 4, 4)), 0)
        w.add_text("t", "x", 0)
        with pytest.raises(TypeError, match="scalar_value"):
            w.add_scalar("a", "not a number", 0)  # still checked
    assert not d.exists()


def test_logging_after_close_opens_a_new_file(tmp_path) -> None:
    w = SummaryWriter(str(tmp_path), purge_step=5)
    w.add_scalar("loss", 1.0, 5)
    w.close()
    w.close()  # idempotent
    w.add_scalar("loss", 2.0, 6)
    w.add_scalars("m", {"a": 1.0}, 6)
    w.flush()
    w.close()
    files = sorted(f for f in os.listdir(tmp_path) if f.startswith("events"))
    assert len(files) == 2
    r = summarylog.Reader(str(tmp_path))
    assert r.scalars(".", "loss").value.tolist() == [1.0, 2.0]
    purges = [e for e in r.events(".") if e.kind == "session_log"]
    assert len(purges) == 1 and purges[0].step == 5  # the purge marker once, as the peers
    assert r.scalars("m_a", "m").value.tolist() == [1.0]


# -- scalars -----------------------------------------------------------------------------
def test_add_scalar_accepts_what_the_peers_accept(tmp_path) -> None:
    torch = require_module("torch")
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("v", 1, 0)
        w.add_scalar("v", np.float32(2.5), 1)
        w.add_scalar("v", np.array([3.0]), 2)
        w.add_scalar("v", torch.tensor(4.0, requires_grad=True) * 1, 3)
        w.add_scalar("v", torch.tensor([[5.0]], dtype=torch.float64), np.int64(4))
        w.add_scalar("v", 6.0)  # global_step None: step 0, as the peers
        w.add_scalar("v", 7.0, 7, walltime=1_700_000_000.5)
    s = summarylog.Reader(str(tmp_path)).scalars(".", "v")
    assert s.value.tolist() == [1, 2.5, 3, 4, 5, 6, 7]
    assert s.step.tolist() == [0, 1, 2, 3, 4, 0, 7]
    assert s.wall_time[-1] == 1_700_000_000.5


@pytest.mark.parametrize("args,exc,word", [
    (("", 1.0, 0), ValueError, "tag"),
    ((3, 1.0, 0), TypeError, "tag"),
    (("a", "x", 0), TypeError, "scalar_value"),
    (("a", np.ones(3), 0), (TypeError, ValueError), "scalar_value"),
    (("a", 1.0, "0"), TypeError, "global_step"),
    (("a", 1.0, 1.5), TypeError, "global_step"),
    (("a", 1.0, 1 << 64), ValueError, "global_step"),
    (("a", 1.0, 0, float("nan")), TypeError, "walltime"),
])
def test_bad_scalar_names_the_argument_and_keeps_what_was_logged(tmp_path, args, exc,
                                                                   word) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("kept", 1.0, 0)
        with pytest.raises(exc, match=word):
            w.add_scalar(*args)
        w.add_scalar("kept", 2.0, 1)
    assert summarylog.Reader(str(tmp_path)).scalars(".", "kept").value.tolist() == [1.0, 2.0]


def test_add_scalars_sub_runs_named_as_torch(tmp_path) -> None:
    TorchSW = _torch_sw()
    vals = {"xsinx": 0.5, "xcosx": 0.25, "tanx": 1.0}
    for cls, d in ((TorchSW, tmp_path / "torch"), (SummaryWriter, tmp_path / "ours")):
        w = cls(str(d))
        for i in range(3):
            w.add_scalars("run_14h/loss", vals, i, walltime=100.0 + i)
        w.close()
    rt, ro = summarylog.Reader(str(tmp_path / "torch")), summarylog.Reader(str(tmp_path / "ours"))
    runs = [r for r in rt.runs() if r != "."]
    assert sorted(runs) == sorted(r for r in ro.runs() if r != ".")
    assert runs == sorted(f"run_14h_loss_{k}" for k in vals)
    for run in runs:
        assert ro.scalar_tags(run) == rt.scalar_tags(run) == ["run_14h/loss"]
        a, b = ro.scalars(run, "run_14h/loss"), rt.scalars(run, "run_14h/loss")
        assert a.value.tolist() == b.value.tolist() and a.step.tolist() == b.step.tolist()
        assert a.wall_time.tolist() == b.wall_time.tolist()


def test_add_scalars_refuses_escaping_keys_before_logging(tmp_path) -> None:
    with SummaryWriter(str(tmp_path / "run")) as w:
        with pytest.raises(ValueError, match="inside the run"):
            w.add_scalars("m", {"ok": 1.0, "/../../escape": 2.0}, 0)
        with pytest.raises(TypeError, match=r"tag_scalar_dict\['b'\]"):
            w.add_scalars("m", {"a": 1.0, "b": "x"}, 0)
        with pytest.raises(TypeError, match="tag_scalar_dict"):
            w.add_scalars("m", [1.0], 0)
    assert sorted(os.listdir(tmp_path)) == ["run"]
    assert not any(p.startswith("m_") for p in os.listdir(tmp_path / "run"))


def test_export_scalars_to_json_reads_back_what_was_logged(tmp_path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        for i in range(3):
            w.add_scalars("m", {"a": float(i), "b": 2.0 * i}, i, walltime=10.0 + i)
        w.export_scalars_to_json(str(tmp_path / "all.json"))
        w.add_scalars("m", {"a": 9.0}, 3, walltime=20.0)
        w.export_scalars_to_json(str(tmp_path / "new.json"))
    first = json.loads((tmp_path / "all.json").read_text())
    assert first == {str(tmp_path / "m_a"): [[10.0, 0, 0.0], [11.0, 1, 1.0], [12.0, 2, 2.0]],
                     str(tmp_path / "m_b"): [[10.0, 0, 0.0], [11.0, 1, 2.0], [12.0, 2, 4.0]]}
    assert json.loads((tmp_path / "new.json").read_text()) == {
        str(tmp_path / "m_a"): [[20.0, 3, 9.0]]}  # since the last export, as tensorboardX


def test_use_metadata_defaults(tmp_path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        with w.use_metadata(global_step=7, walltime=123.0):
            w.add_scalar("a", 1.0)
            w.add_text("t", "x")
            w.add_scalar("a", 2.0, 8)
        w.add_scalar("a", 3.0, walltime=5.0)
    evs = [(e.tag, e.step, e.wall_time) for e in _events(tmp_path)]
    assert evs == [("a", 7, 123.0), ("t/text_summary", 7, 123.0), ("a", 8, 123.0),
                   ("a", 0, 5.0)]


# -- images and text as torch makes them -------------------------------------------------
def _pixels(logdir) -> dict[str, np.ndarray]:
    from PIL import Image

    out = {}
    for e in _events(logdir):
        if e.kind == "image":
            out[e.tag] = np.asarray(Image.open(io.BytesIO(e.value["pngs"][0])))
    return out


def test_images_pixel_for_pixel_as_torch(tmp_path) -> None:
    torch = require_module("torch")
    require_module("PIL")
    rng = np.random.default_rng(3)
    cases = {
        "chw_float": (rng.random((3, 9, 7)) * 1.2 - 0.1, "CHW", False),
        "hwc_uint8": (rng.integers(0, 256, (9, 7, 3), dtype=np.uint8), "HWC", False),
        "gray_chw": (rng.random((1, 5, 6)).astype(np.float32), "CHW", False),
        "hw": (rng.random((5, 6)), "HW", False),
        "rgba": (rng.random((4, 5, 6)), "CHW", False),
        "torch_tensor": (torch.rand(3, 8, 8), "CHW", False),
        "batch": (rng.random((11, 3, 4, 5)), "NCHW", True),
        "batch_gray_nhwc": (rng.integers(0, 256, (3, 4, 5, 1), dtype=np.uint8), "NHWC", True),
    }
    TorchSW = _torch_sw()
    for cls, d in ((TorchSW, tmp_path / "torch"), (SummaryWriter, tmp_path / "ours")):
        w = cls(str(d))
        for tag, (img, fmt, batch) in cases.items():
            (w.add_images if batch else w.add_image)(tag, img, 1, dataformats=fmt)
        w.close()
    theirs, ours = _pixels(tmp_path / "torch"), _pixels(tmp_path / "ours")
    assert sorted(theirs) == sorted(ours) == sorted(cases)
    for tag in cases:
        assert ours[tag].shape == theirs[tag].shape, tag
        assert np.array_equal(ours[tag], theirs[tag]), tag
    print(f"{len(cases)} image layouts: pixels equal to torch's")


@pytest.mark.parametrize("call,exc,word", [
    (lambda w: w.add_image("i", np.zeros((3, 4)), 0), ValueError, "dataformats"),
    (lambda w: w.add_image("i", np.zeros((2, 4, 4)), 0), ValueError, "channels"),
    (lambda w: w.add_image("i", np.zeros((3, 4, 4)), 0, dataformats=5), TypeError, "dataformats"),
    (lambda w: w.add_image("i", np.zeros((0, 4, 4)), 0), ValueError, "img_tensor"),
    (lambda w: w.add_image("i", np.array([["a"]]), 0, dataformats="HW"), TypeError, "img_tensor"),
    (lambda w: w.add_images("i", np.zeros((3, 4, 4)), 0, dataformats="CHW"), ValueError,
     "dataformats"),
    (lambda w: w.add_text("t", 5, 0), TypeError, "text_string"),
    (lambda w: w.add_text("", "x", 0), ValueError, "tag"),
])
def test_bad_image_or_text_names_the_argument(tmp_path, call, exc, word) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("kept", 1.0, 0)
        with pytest.raises(exc, match=word):
            call(w)
    assert [e.tag for e in _events(tmp_path)] == ["kept"]


def test_image_is_copied_and_encoded_off_the_callers_thread(tmp_path, monkeypatch) -> None:
    import threading

    from summarylog.summary_writer import basic

    threads = []
    real = basic.to_hwc_uint8
    monkeypatch.setattr(basic, "to_hwc_uint8",
                        lambda *a: threads.append(threading.current_thread()) or real(*a))
    img = np.zeros((3, 4, 4), np.uint8)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("i", img, 0)
        img[:] = 255  # after the call: must not reach the file
    assert threads and threads[0] is not threading.main_thread()
    assert _pixels(tmp_path)["i"].max() == 0


def test_text_tag_as_the_peers(tmp_path) -> None:
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "**bold**", 3)
    (e,) = _events(tmp_path)
    assert (e.kind, e.tag, e.step) == ("text", "notes/text_summary", 3)
    assert e.value.shape == (1,) and e.value[0] == "**bold**"  # a 1-vector, as the peers


def test_sub_runs_never_follow_a_planted_link(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / "m_a")  # where add_scalars("m", {"a": ...}) would write
    with SummaryWriter(str(run)) as w:
        with pytest.raises(ValueError, match="symbolic link"):
            w.add_scalars("m", {"b": 1.0, "a": 1.0}, 0)  # nothing logged, "b" neither
        w.add_scalars("m", {"b": 2.0}, 1)
    assert list(outside.iterdir()) == []
    assert summarylog.Reader(str(run)).scalars("m_b", "m").step.tolist() == [1]
