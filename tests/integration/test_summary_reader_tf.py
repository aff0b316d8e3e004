"""summarylog.SummaryReader against tbparse WITH TensorFlow (issue 23, point 1): tbparse
decodes images (tf.image.decode_image) and audio (tf.audio.decode_wav) only when TensorFlow
imports, and TensorFlow's own tf.summary writes TF2 runs (every value a plugin tensor).

TensorFlow's pins clash with the main venv's, so it lives in the ``tensorflow`` side venv
(tools/sidevenvs.py, tbparse/pandas/numpy/pyarrow pinned to the main venv's): there TensorFlow
writes runs (tests/integration/tf_oracle.py) and tbparse reads the whole logdir, every kind x
pivot x extra_columns set, pickling its DataFrames; here summarylog.SummaryReader reads the
same logdir and each frame must equal tbparse's (pandas.testing.assert_frame_equal, arrays in
object columns compared with np.array_equal, dtype and shape included).

Not compared: JPEG images (TensorFlow's fast inverse DCT rounds some pixels a few levels
away from Pillow's; no writer of these runs makes JPEGs)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import pickle
import subprocess
import warnings

import numpy as np
import pytest
from conftest import IN_CI, require_module
from venvs import require_venv, venv_env, venv_python

HERE = pathlib.Path(__file__).resolve().parent
ORACLE = HERE / "tf_oracle.py"
KINDS = ("scalars", "tensors", "histograms", "images", "audio", "hparams", "text")
ALL_EXTRA = ["dir_name", "file_name", "wall_time", "min", "max", "num", "sum", "sum_squares",
             "width", "height", "content_type", "length_frames", "sample_rate"]
EXTRAS = (None, ["wall_time"], ["dir_name", "file_name"], ALL_EXTRA)
SOURCES = ("tf2", "tf1", "tfimg", "torch", "tbx", "ours", ".")


@pytest.fixture(scope="module")
def tf_venv() -> pathlib.Path:
    return require_venv("tensorflow")


def _in_tf(venv: pathlib.Path, *args: str, cwd: str) -> None:
    """tf_oracle.py in the TensorFlow venv: -P and a cwd outside the checkout, so nothing
    of the source tree is importable there."""
    r = subprocess.run([str(venv_python(venv)), "-P", str(ORACLE), *args], capture_output=True,
                       text=True, cwd=cwd, timeout=600, env=venv_env(TF_CPP_MIN_LOG_LEVEL="2"))
    assert r.returncode == 0, r.stderr[-3000:]


def _log(w, rng: np.random.Generator, *, stereo: bool, audio: bool = True,
         video: bool = True) -> None:
    """The same kinds through any SummaryWriter-like ``w``."""
    if video:  # an animated GIF (torch and tensorboardX: a legacy image, through moviepy)
        w.add_video("clip", rng.integers(0, 256, (1, 3, 3, 6, 8), dtype=np.uint8), 0, fps=4)
    for i in range(4):
        w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_histogram("weights", np.linspace(-1, 1, 50) * (i + 1), i)
        w.add_image("pic", rng.integers(0, 256, (3, 5, 6), dtype=np.uint8), i)
        w.add_image("gray", rng.random((5, 6)), i, dataformats="HW")
        w.add_images("batch", rng.integers(0, 256, (4, 3, 5, 6), dtype=np.uint8), i)
        if audio:
            w.add_audio("mono", rng.uniform(-1, 1, 100), i, sample_rate=8000)
            if stereo:
                w.add_audio("stereo", rng.uniform(-1, 1, (80, 2)), i, sample_rate=16000)
        w.add_text("note", f"step {i} é ✓ 日本", i)
    w.add_scalar("loss", 9.5, 3)


@pytest.fixture(scope="module")
def logdir(tf_venv, tmp_path_factory):
    """tf2/tf1/tfimg by TensorFlow; torch, tensorboardX and summarylog runs written here."""
    root = tmp_path_factory.mktemp("tf-oracle")
    _in_tf(tf_venv, "write", str(root), cwd=str(root))
    tb = require_module("torch.utils.tensorboard")
    tbx = require_module("tensorboardX")
    from summarylog import SummaryWriter
    rng = np.random.default_rng(7)
    # the peers' add_video needs moviepy, tensorboardX's add_audio soundfile (both in the
    # test extra: under CI their absence fails here; elsewhere those values are not written)
    video = IN_CI or importlib.util.find_spec("moviepy") is not None
    tbx_audio = IN_CI or importlib.util.find_spec("soundfile") is not None
    for what, ok in (("add_video (moviepy)", video), ("tensorboardX add_audio (soundfile)",
                                                      tbx_audio)):
        if not ok:
            print(f"not written here, its package missing: {what}")
    w = tb.SummaryWriter(str(root / "torch"))
    _log(w, rng, stereo=False, video=video)  # torch's add_audio takes mono only
    w.add_hparams({"lr": 0.1, "opt": "adam", "layers": 3}, {"hp/metric": 0.5}, run_name="hp")
    w.close()
    w = tbx.SummaryWriter(str(root / "tbx"))
    _log(w, rng, stereo=True, audio=tbx_audio, video=video)
    w.add_hparams({"lr": 0.01, "opt": "sgd"}, {"hp/m": 1.0}, name="hp")
    w.close()
    w = SummaryWriter(str(root / "ours" / "a"))
    _log(w, rng, stereo=True)
    w.add_hparams({"lr": 0.2, "opt": "adamw"}, {"hp/metric": 0.25})
    w.close()
    return root


@pytest.fixture(scope="module")
def oracle(tf_venv, logdir):
    """tbparse (with TensorFlow) on every source x kind x pivot x extras, from the TF venv."""
    spec, out = logdir.parent / "tf-oracle-spec.json", logdir.parent / "tf-oracle.pickle"
    spec.write_text(json.dumps({"sources": list(SOURCES), "extras": list(EXTRAS)}))
    _in_tf(tf_venv, "read", str(logdir), str(out), str(spec), cwd=str(logdir.parent))
    with open(out, "rb") as f:
        return pickle.load(f)


# -- comparison ------------------------------------------------------------------------
def _is_nan(x) -> bool:
    return isinstance(x, float) and x != x


def _same(a, b) -> bool:
    """Equal cells: arrays by dtype, shape and np.array_equal (NaNs equal), lists
    element-wise, anything else by type family and value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b)))
    if _is_nan(a) or _is_nan(b):
        return _is_nan(a) and _is_nan(b)
    return type(a) is type(b) and a == b or (isinstance(a, (int, float, np.number))
                                              and isinstance(b, (int, float, np.number))
                                              and not isinstance(a, bool) and a == b)


def _show(x) -> str:
    if isinstance(x, np.ndarray):
        flat = x.ravel()[:6].tolist()
        return f"ndarray({x.dtype}, shape={x.shape}, first={flat})"
    if isinstance(x, list):
        return f"list[{len(x)}]({', '.join(_show(y) for y in x[:3])})"
    return f"{type(x).__name__}({x!r:.120})"


def _token(x):
    """An array or list cell as a short token, so pandas compares the rest of the frame."""
    if isinstance(x, np.ndarray):
        return f"<ndarray {x.dtype} {x.shape}>"
    if isinstance(x, list):
        return f"<list {len(x)}>"
    return x


def assert_frames_equal(ours, theirs) -> None:
    """assert_frame_equal, with array and list cells compared by :func:`_same` first (the
    first differing cell named: column, row, both values)."""
    pd = require_module("pandas")
    pd.testing.assert_index_equal(ours.columns, theirs.columns, obj="columns")
    assert len(ours) == len(theirs), f"rows: ours {len(ours)}, tbparse {len(theirs)}"
    nested = []
    for col in theirs.columns:
        if ours[col].dtype == object or theirs[col].dtype == object:
            for row, (a, b) in enumerate(zip(ours[col], theirs[col])):
                if isinstance(a, (np.ndarray, list)) or isinstance(b, (np.ndarray, list)):
                    if not _same(a, b):
                        raise AssertionError(f"column {col!r} row {row}: ours {_show(a)}, "
                                             f"tbparse {_show(b)}")
                    nested.append(col)
    if nested:
        cols = sorted(set(nested))
        ours, theirs = ours.copy(), theirs.copy()
        for col in cols:
            ours[col] = ours[col].map(_token).astype(object)
            theirs[col] = theirs[col].map(_token).astype(object)
    pd.testing.assert_frame_equal(ours, theirs)


def _ours(logdir: pathlib.Path, source: str, kind: str, pivot: bool, extra):
    from summarylog.summary_reader import SummaryReader
    path = os.path.normpath(os.path.join(str(logdir), source))
    r = SummaryReader(path, pivot=pivot, event_types=set(KINDS),
                      extra_columns=None if extra is None else set(extra))
    try:
        return getattr(r, kind)
    except Exception as exc:  # noqa: BLE001 (reported as a mismatch below)
        return ("error", type(exc).__name__, str(exc)[:300])


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("kind", KINDS)
def test_frames_equal_tbparse_with_tensorflow(logdir, oracle, source, kind):
    """Every pivot x extra_columns set of one kind on one source; all the differing
    options listed in the failure, each with its first difference."""
    bad, compared = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for pivot in (False, True):
            for i, extra in enumerate(EXTRAS):
                theirs = oracle["frames"][source, kind, pivot, i]
                ours = _ours(logdir, source, kind, pivot, extra)
                opt = f"pivot={pivot} extra={extra if extra != ALL_EXTRA else 'all'}"
                if isinstance(theirs, tuple):
                    bad.append(f"{opt}: tbparse raised {theirs[1]}: {theirs[2]}")
                    continue
                if isinstance(ours, tuple):
                    bad.append(f"{opt}: ours raised {ours[1]}: {ours[2]}")
                    continue
                try:
                    assert_frames_equal(ours, theirs)
                except AssertionError as exc:
                    first = " ".join(str(exc).split())[:700]
                    bad.append(f"{opt}: {ours.shape} vs tbparse {theirs.shape}: {first}")
                    continue
                compared.append(theirs.shape)
    rows = sum(s[0] for s in compared)
    cols = max((s[1] for s in compared), default=0)
    print(f"{kind} on {source}: {len(compared)}/{2 * len(EXTRAS)} option sets equal "
          f"({rows} rows, up to {cols} columns compared)")
    assert not bad, f"{kind} on {source} differs from tbparse+TensorFlow:\n" + "\n".join(bad)


@pytest.mark.parametrize("source", SOURCES)
def test_tags_and_children_equal_tbparse(logdir, oracle, source):
    from summarylog.summary_reader import SummaryReader
    path = os.path.normpath(os.path.join(str(logdir), source))
    ours = SummaryReader(path, event_types=set(KINDS))
    theirs = oracle["tags"][source]
    assert not isinstance(theirs, tuple), theirs
    assert list(ours.children) == oracle["children"][source]
    got = ours.get_tags()
    # tbparse lists hparams in the order of a protobuf map, which differs from one process
    # to the next (upb's hash seed): compared as sets (the frames themselves are sorted)
    got["hparams"] = sorted(got["hparams"])
    theirs = {**theirs, "hparams": sorted(theirs["hparams"])}
    diff = {k: (got.get(k), theirs.get(k)) for k in theirs if got.get(k) != theirs.get(k)}
    assert not diff, f"tags (ours, tbparse) differ on {source}: {diff}"
    print(f"tags on {source}: {sum(map(len, theirs.values()))} over {len(theirs)} kinds, "
          f"{len(oracle['children'][source])} children, equal to tbparse's")
