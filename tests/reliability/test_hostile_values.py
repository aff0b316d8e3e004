"""Hostile tag names and values: nothing escapes the log directory, names
round-trip or are refused clearly, NaN/±Inf round-trip, and a record over
2 GiB - 1 is refused with nothing written."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord, Writer
from summarylog.records import MAX_PAYLOAD, RecordReader, RecordWriter
from summarylog.summary_record import TagNameError

HOSTILE = ["a/b", "../../../escape", "..", ".", "/abs/path", "x\0y", "tab\there", "λ/ü/😀",
           "%2F..%2F", "t" * 100_000]
NOT_UNICODE = b"bad\xff\xfe".decode("utf-8", "surrogateescape")  # as os.fsdecode gives


def _all_files(root) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def test_writer_hostile_tags(tmp_path, figure):
    logdir = tmp_path / "run"
    with Writer(logdir) as w:
        for i, tag in enumerate(HOSTILE):
            w.add_scalar(tag, float(i), i)
            # one kind per tag (TensorBoard keeps one plugin per tag)
            w.add_text("text/" + tag, f"text {i}", i)
            w.add_histogram("histogram/" + tag, np.arange(10.0), i)
            w.add_tensor("tensor/" + tag, np.full(3, i), i)
        for bad, exc in ((NOT_UNICODE, ValueError), (b"bytes", TypeError), ("", ValueError)):
            for call in (lambda: w.add_scalar(bad, 1.0), lambda: w.log({bad: 1.0}),
                         lambda: w.add_histogram(bad, [1.0]), lambda: w.add_text(bad, "t")):
                with pytest.raises(exc, match="tag|scalars"):
                    call()
    # one event file, inside the log directory; nothing anywhere else
    assert _all_files(tmp_path) == set(w.files) and os.path.dirname(w.files[0]) == str(logdir)
    r = Reader(logdir)
    (run,) = r.runs()
    for i, tag in enumerate(HOSTILE):
        s = r.scalars(run, tag)
        assert list(s.step) == [i] and list(s.value) == [float(i)], tag[:20]
    kinds: dict[str, set[str]] = {}
    for e in r.events(run):
        kinds.setdefault(e.tag, set()).add(e.kind)
    for tag in HOSTILE:
        assert kinds[tag] == {"scalar"}, (tag[:20], kinds[tag])
        for kind in ("text", "histogram", "tensor"):
            assert kinds[f"{kind}/{tag}"] == {kind}, (kind, tag[:20])
    figure(f"{len(HOSTILE)} hostile tags (/, .., NUL, 100 000 chars, ...) x 4 kinds round-trip "
           f"in one file inside the logdir; lone surrogates refused with ValueError, bytes with "
           f"TypeError")


def test_summary_record_export_stays_inside(tmp_path, figure):
    logdir = tmp_path / "ms"
    with SummaryRecord(str(logdir), export_options={"tensor_format": "npy"}) as rec:
        for i, tag in enumerate(HOSTILE):
            rec.add_value("tensor", tag, np.full((2, 2), float(i), np.float32))
            rec.add_value("scalar", tag, np.float32(i))
        rec.record(1)
        with pytest.raises(TagNameError):
            rec.add_value("scalar", NOT_UNICODE, np.float32(1))
    files = _all_files(tmp_path)
    assert all(f.startswith(str(logdir) + os.sep) for f in files), files
    npys = sorted(f for f in files if f.endswith(".npy"))
    assert len(npys) == len(HOSTILE)  # one each: no two tags collide
    assert all(len(os.path.basename(f).encode()) <= 255 for f in npys)
    assert {os.path.dirname(f) for f in npys} == {os.path.dirname(npys[0])}  # all in export_*/tensor
    got = sorted(float(np.load(f)[0, 0]) for f in npys)
    assert got == [float(i) for i in range(len(HOSTILE))]
    r = Reader(logdir)
    (run,) = r.runs()
    for i, tag in enumerate(HOSTILE):
        assert list(r.scalars(run, tag).value) == [float(i)], tag[:20]
    figure(f"MindSpore dialect + npy export: {len(HOSTILE)} hostile tags, {len(npys)} .npy files, "
           f"all inside the logdir, longest name {max(len(os.path.basename(f)) for f in npys)} B; "
           f"scalars round-trip")


@pytest.mark.parametrize("dialect", ["tensorboard", "mindinsight"])
def test_nan_and_inf_round_trip(tmp_path, dialect, figure):
    specials = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, 5e-324]
    hist = np.array([1.0, 2.0, 3.0, np.nan, np.inf, -np.inf, np.inf])
    if dialect == "tensorboard":
        with Writer(tmp_path) as w:
            for i, v in enumerate(specials):
                w.add_scalar("s", v, i)
            w.add_histogram("h", hist, 0)
    else:
        with SummaryRecord(str(tmp_path)) as rec:
            for i, v in enumerate(specials):
                rec.add_value("scalar", "s", np.float64(v))
                if i == 0:
                    rec.add_value("histogram", "h", hist)
                rec.record(i)
    r = Reader(tmp_path)
    (run,) = r.runs()
    got = r.scalars(run, "s").value
    # both formats store scalars as float32: 1e308 is +inf there, 5e-324 is 0
    with np.errstate(over="ignore"):
        want = np.array(specials, np.float32)
    np.testing.assert_array_equal(got.astype(np.float32), want)  # NaN == NaN here
    assert np.signbit(got[4])  # -0.0 kept
    (h,) = [e.value for e in r.events(run) if e.kind == "histogram"]
    assert h["num"] == 7 and h["min"] in (1.0, -math.inf) and h["max"] in (3.0, math.inf)
    if dialect == "tensorboard":  # infinities in the edge buckets, NaN only in num
        assert sum(h["counts"]) == 6
    else:  # MindSpore's histogram has a counter for each
        assert sum(h["counts"]) == 3
        assert (h["nan_count"], h["pos_inf_count"], h["neg_inf_count"]) == (1, 2, 1)
    figure(f"{dialect}: scalars NaN, +-Inf, -0.0, 1e308, 5e-324 and a histogram with NaN and "
           f"+-Inf round-trip (histogram num {h['num']}, min {h['min']}, max {h['max']})")


def test_record_over_2gib_refused(tmp_path, figure):
    huge = np.zeros(MAX_PAYLOAD + 1, np.uint8)  # not touched: no 2 GiB of RAM used
    path = str(tmp_path / "f.tfrecord")
    with RecordWriter(path) as rw:
        rw.write(b"before")
        rw.flush()
        size = os.path.getsize(path)
        with pytest.raises(ValueError, match="payload.*2 GiB - 1.*nothing was written"):
            rw.write(huge)
        with pytest.raises(ValueError, match="2 GiB - 1"):
            rw.write_many([b"a", b"b", huge])  # all or nothing
        with pytest.raises(ValueError, match="2 GiB - 1"):
            rw.write_many((b"a", memoryview(huge)))
        rw.flush()
        assert os.path.getsize(path) == size
        rw.write(b"after")
    with RecordReader(path) as rr:
        assert list(rr) == [b"before", b"after"] and rr.damage == [] and rr.tail is None
    # the Writer and SummaryRecord refuse it at the call, naming the argument
    big = np.broadcast_to(np.float32(0), (MAX_PAYLOAD // 4 + 1,))  # a view: no memory
    with Writer(tmp_path / "tb") as w:
        w.add_scalar("before", 1.0, 0)
        with pytest.raises(ValueError, match="tensor is .* bytes.*2 GiB - 1"):
            w.add_tensor("big", big)
        with pytest.raises(ValueError, match="graph_def is"):
            w.add_graph(memoryview(huge))
        w.add_scalar("after", 2.0, 1)
    r = Reader(tmp_path / "tb")
    assert set(r.tags(r.runs()[0])) == {"before", "after"}
    with SummaryRecord(str(tmp_path / "ms")) as rec:
        with pytest.raises(ValueError, match="2 GiB - 1"):
            rec.add_value("tensor", "big", big)
    figure(f"payloads of {MAX_PAYLOAD + 1} B refused by RecordWriter.write/write_many, "
           f"Writer.add_tensor/add_graph and SummaryRecord.add_value with ValueError; the file "
           f"kept exactly its records before and after")
