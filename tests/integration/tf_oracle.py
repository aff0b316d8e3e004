"""The TensorFlow side of tests/integration/test_summary_reader_tf.py, run in the
``tensorflow`` side venv as ``python -P tf_oracle.py write|read ...`` (cwd outside the
checkout: nothing of summarylog or the main venv is imported here).

``write LOGDIR``: runs written by TensorFlow itself: ``LOGDIR/tf2`` through ``tf.summary``
(TF2: every value a tensor with its plugin's metadata) and hparams through
``tensorboard.plugins.hparams.api``; ``LOGDIR/tf1`` through ``tf.compat.v1.summary`` in a
graph and a FileWriter (the legacy simple_value, histo, image and audio values);
``LOGDIR/tfimg``: legacy images of every PNG colour type and bit depth, GIFs and a BMP.

``read LOGDIR OUT.pickle SPEC.json``: tbparse.SummaryReader on each source of the spec,
with TensorFlow importable (so images and audio are decoded by TensorFlow's own
decode_image and decode_wav), for every kind x pivot x extra_columns set: a dict of
DataFrames (or the exception's type and text) pickled for the main venv to compare."""

from __future__ import annotations

import json
import os
import pickle
import struct
import sys
import warnings
import zlib

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
        # a tensor before the first scalar: tbparse lists tensor tags in the file's order
        tf.summary.histogram("first", np.arange(4.0), step=0)
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
            tf.summary.histogram("const", np.full(5, 2.5), step=i)  # one value: singular
            tf.summary.histogram("empty", np.zeros(0), step=i)
        # generic tensors of every dtype tbparse's make_ndarray knows, and unicode tags
        for name, value in (("t_int32", np.arange(6, dtype=np.int32).reshape(2, 3)),
                            ("t_int64", np.array([-(2 ** 40), 7])), ("t_uint8", np.arange(4, dtype=np.uint8)),
                            ("t_f16", np.array([0.5, -1.25], np.float16)), ("t_f64", np.float64(1 / 3)),
                            ("t_bool", np.array([True, False])), ("t_str", np.array([b"a", "é".encode()])),
                            ("t_empty", np.zeros((0, 3), np.float32)), ("t_i8", np.array([-3], np.int8))):
            tf.summary.write(name, tf.constant(value), step=0)
        tf.summary.scalar("损失/é", 0.5, step=0)
        # two values of a tag at one step (pivot merges them into a list)
        tf.summary.scalar("loss", 9.5, step=3)
        tf.summary.histogram("weights", np.arange(5.0), step=3)
        tf.summary.image("gray", rng.integers(0, 256, (1, 5, 6, 1), dtype=np.uint8), step=3)
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


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _png(w: int, h: int, depth: int, ctype: int, rows: bytes, extra: bytes = b"") -> bytes:
    """A PNG made by hand (Pillow writes few of the colour type x bit depth pairs)."""
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + extra
            + _chunk(b"IDAT", zlib.compress(rows)) + _chunk(b"IEND", b""))


def odd_images(rng) -> dict[str, bytes]:
    """Encoded images of every PNG colour type and bit depth (palettes with and without
    tRNS, colour-key tRNS), animated GIFs (transparency, disposal 1 and 2) and a BMP."""
    import io

    from PIL import Image
    w, h = 7, 5
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}

    def rows(depth: int, ctype: int) -> bytes:
        if depth < 8:  # packed samples, rows padded to a byte
            per = 8 // depth
            vals = rng.integers(0, 2 ** depth, (h, -(-w // per) * per))
            packed = np.zeros((h, vals.shape[1] // per), np.uint8)
            for k in range(per):
                packed |= (vals[:, k::per] << (8 - depth * (k + 1))).astype(np.uint8)
            return b"".join(b"\x00" + r.tobytes() for r in packed)
        arr = rng.integers(0, 2 ** depth, (h, w * channels[ctype])).astype(
            ">u2" if depth == 16 else np.uint8)
        return b"".join(b"\x00" + r.tobytes() for r in arr)

    out = {f"gray{d}": _png(w, h, d, 0, rows(d, 0)) for d in (1, 2, 4, 8, 16)}
    for d in (8, 16):
        for ctype, name in ((2, "rgb"), (4, "gray_alpha"), (6, "rgba")):
            out[f"{name}{d}"] = _png(w, h, d, ctype, rows(d, ctype))
    for d in (1, 2, 4, 8):
        plte = _chunk(b"PLTE", rng.integers(0, 256, 3 * 2 ** d, dtype=np.uint8).tobytes())
        trns = _chunk(b"tRNS", rng.integers(0, 256, max(1, 2 ** d // 2), dtype=np.uint8).tobytes())
        out[f"pal{d}"] = _png(w, h, d, 3, rows(d, 3), plte)
        out[f"pal{d}_trns"] = _png(w, h, d, 3, rows(d, 3), plte + trns)
    out["gray8_key"] = _png(w, h, 8, 0, rows(8, 0), _chunk(b"tRNS", struct.pack(">H", 7)))
    out["rgb8_key"] = _png(w, h, 8, 2, rows(8, 2), _chunk(b"tRNS", struct.pack(">HHH", 1, 2, 3)))
    out["gray16_key"] = _png(w, h, 16, 0, rows(16, 0), _chunk(b"tRNS", struct.pack(">H", 300)))

    def save(frames, fmt: str, **kw) -> bytes:
        b = io.BytesIO()
        frames[0].save(b, fmt, save_all=len(frames) > 1, append_images=frames[1:], **kw)
        return b.getvalue()
    rgb = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for _ in range(3)]
    few = [Image.fromarray((rng.integers(0, 4, (h, w)) * 60).astype(np.uint8), "L").convert("P")
           for _ in range(3)]
    out["gif_one"] = save(rgb[:1], "GIF")
    out["gif_anim"] = save(rgb, "GIF", duration=250, loop=0)
    out["gif_disposal1"] = save(few, "GIF", transparency=0, disposal=1)
    out["gif_disposal2"] = save(few, "GIF", transparency=0, disposal=2)
    out["bmp"] = save(rgb[:1], "BMP")
    return out


def write_odd_images(d: str) -> None:
    """Legacy Summary.Image values of odd encodings, by TensorFlow's FileWriter (torch's
    and tensorboardX's add_video write GIFs so; other tools any PNG)."""
    tf = _tf()
    rng = np.random.default_rng(2)
    with tf.Graph().as_default():
        fw = tf.compat.v1.summary.FileWriter(d)
        for step in range(2):
            values = [tf.compat.v1.Summary.Value(tag=name, image=tf.compat.v1.Summary.Image(
                height=5, width=7, colorspace=3, encoded_image_string=data))
                for name, data in odd_images(rng).items()]
            fw.add_summary(tf.compat.v1.Summary(value=values), step)
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
        write_odd_images(os.path.join(args[0], "tfimg"))
    elif cmd == "read":
        read(*args)
    else:
        raise SystemExit(f"unknown command {cmd!r}")
