"""The TensorFlow side of tests/integration/test_summary_reader_tf.py, run in the
``tensorflow`` side venv as ``python -P tf_oracle.py write|read ...`` (cwd outside the
checkout: nothing of summarylog or the main venv is imported here).

``write LOGDIR``: runs written by TensorFlow itself: ``LOGDIR/tf2`` through ``tf.summary``
(TF2: every value a tensor with its plugin's metadata) and hparams through
``tensorboard.plugins.hparams.api``; ``LOGDIR/tf1`` through ``tf.compat.v1.summary`` in a
graph and a FileWriter (the legacy simple_value, histo, image and audio values).

``read LOGDIR OUT.pickle SPEC.json``: tbparse.SummaryReader on each source of the spec,
with TensorFlow importable (so images and audio are decoded by TensorFlow's own
decode_image and decode_wav), for every kind x pivot x extra_columns set: a dict of
DataFrames (or the exception's type and text) pickled for the main venv to compare."""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings

import numpy as np

KINDS = ("scalars", "tensors", "histograms", "images", "audio", "hparams", "text")


def _tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no start-up chatter on stderr
    import tensorflow as tf
    return tf


def write_tf2(d: str) -> None:
    tf = _tf()
    from tensorboard.plugins.hparams import api as hp
    rng = np.random.default_rng(0)
    w = tf.summary.create_file_writer(d)
    with w.as_default():
        hp.hparams({"lr": 0.1, "opt": "adam", "layers": 3, "bn": True})
        for i in range(4):
            tf.summary.scalar("loss", 1.0 / (i + 1), step=i)
            tf.summary.scalar("train/acc", i * 0.125, step=i)
            tf.summary.histogram("weights", np.linspace(-1, 1, 50) * (i + 1), step=i, buckets=7)
            # four images, three kept (max_outputs); a gray one; a single RGBA one
            tf.summary.image("pics", rng.integers(0, 256, (4, 5, 6, 3), dtype=np.uint8),
                             step=i, max_outputs=3)
            tf.summary.image("gray", rng.integers(0, 256, (1, 5, 6, 1), dtype=np.uint8), step=i)
            tf.summary.image("rgba", rng.integers(0, 256, (1, 3, 4, 4), dtype=np.uint8), step=i)
            tf.summary.audio("mono", rng.uniform(-1, 1, (3, 100, 1)).astype(np.float32), 8000,
                             step=i, max_outputs=2)
            tf.summary.audio("stereo", rng.uniform(-1, 1, (1, 80, 2)).astype(np.float32), 16000,
                             step=i)
            tf.summary.text("note", f"step {i} é ✓ 日本", step=i)
        tf.summary.scalar("loss", 9.5, step=3)  # two values at one step
    w.close()


def write_tf1(d: str) -> None:
    tf = _tf()
    rng = np.random.default_rng(1)
    g = tf.Graph()
    with g.as_default():
        v1 = tf.compat.v1
        x = v1.placeholder(tf.float32, [])
        img = v1.placeholder(tf.uint8, [4, 5, 6, 3])
        gray = v1.placeholder(tf.uint8, [1, 5, 6, 1])
        mono = v1.placeholder(tf.float32, [3, 100, 1])
        stereo = v1.placeholder(tf.float32, [1, 80, 2])
        merged = v1.summary.merge([
            v1.summary.scalar("loss", x),
            v1.summary.histogram("weights", x * tf.linspace(-1.0, 1.0, 50)),
            v1.summary.image("pics", img, max_outputs=3),
            v1.summary.image("gray", gray),
            v1.summary.audio("mono", mono, 8000, max_outputs=2),
            v1.summary.audio("stereo", stereo, 16000),
            v1.summary.text("note", tf.strings.format("héllo ✓ {}", x)),
        ])
        fw = v1.summary.FileWriter(d)
        with v1.Session() as sess:
            for i in range(4):
                feed = {x: i + 1.0,
                        img: rng.integers(0, 256, (4, 5, 6, 3), dtype=np.uint8),
                        gray: rng.integers(0, 256, (1, 5, 6, 1), dtype=np.uint8),
                        mono: rng.uniform(-1, 1, (3, 100, 1)),
                        stereo: rng.uniform(-1, 1, (1, 80, 2))}
                fw.add_summary(sess.run(merged, feed), i)
        fw.close()


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 (the oracle's failure is data for the test)
        return ("error", type(exc).__name__, str(exc)[:300])


def read(logdir: str, out: str, spec_file: str) -> None:
    """tbparse on each source x pivot x extras of the spec; every kind of each reader."""
    _tf()  # tbparse decodes images and audio only when TensorFlow imports
    import tbparse
    with open(spec_file) as f:
        spec = json.load(f)
    frames: dict[tuple, object] = {}
    tags: dict[str, object] = {}
    children: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in spec["sources"]:
            path = os.path.normpath(os.path.join(logdir, source))
            for pivot in (False, True):
                for i, extra in enumerate(spec["extras"]):
                    kw = {"pivot": pivot, "event_types": set(KINDS),
                          "extra_columns": None if extra is None else set(extra)}
                    r = tbparse.SummaryReader(path, **kw)
                    for kind in KINDS:
                        frames[source, kind, pivot, i] = _outcome(lambda r=r, k=kind: getattr(r, k))
                    if not pivot and extra is None:
                        tags[source] = _outcome(r.get_tags)
                        children[source] = list(r.children)
    with open(out, "wb") as f:
        pickle.dump({"frames": frames, "tags": tags, "children": children}, f)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "write":
        write_tf2(os.path.join(args[0], "tf2"))
        write_tf1(os.path.join(args[0], "tf1"))
    elif cmd == "read":
        read(*args)
    else:
        raise SystemExit(f"unknown command {cmd!r}")
