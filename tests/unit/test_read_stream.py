"""read_stream.iter_scalars: a run's scalars in fixed-size chunks, with the values and
order of Reader.scalars (rotated files, damaged tails, several tags, resume markers,
zstd, MindSpore with purge=False).  Peak memory: tests/reliability/test_stream_memory.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

import summarylog
from summarylog import Reader, SummaryRecord
from summarylog.read_stream import ScalarChunk, iter_scalars

from conftest import require_module


def _joined(chunks: list[ScalarChunk]) -> tuple[np.ndarray, ...]:
    names = chunks[-1].tags if chunks else []
    cat = (lambda a: np.concatenate(a) if a else np.empty(0))
    tags = np.array(names, object)[cat([c.tag for c in chunks]).astype(np.int64)]
    return (cat([c.step for c in chunks]), cat([c.wall_time for c in chunks]),
            cat([c.value for c in chunks]), tags)


def assert_same_as_reader(path, run: str = ".", purge: bool = True,
                          chunks=(1, 7, 1000, 65536)) -> int:
    """Every tag's stream (all tags at once, and one tag) equals Reader.scalars."""
    r = Reader(path, purge=purge)
    files = r.files(run)
    total = 0
    for chunk in chunks:
        got = list(iter_scalars(files, chunk=chunk, purge=purge))
        assert all(len(c.step) == chunk for c in got[:-1])  # fixed size, last may be short
        assert all(0 < len(c.step) <= chunk for c in got)
        step, wall, value, tags = _joined(got)
        total = len(step)
        for tag in r.scalar_tags(run):
            exp = r.scalars(run, tag)
            sel = tags == tag
            np.testing.assert_array_equal(step[sel], exp.step)
            np.testing.assert_array_equal(wall[sel], exp.wall_time)
            np.testing.assert_array_equal(value[sel], exp.value)
            one = list(iter_scalars(files, tag, chunk=chunk, purge=purge))
            assert all(len(c.step) == chunk for c in one[:-1])
            s1, w1, v1, t1 = _joined(one)
            np.testing.assert_array_equal(s1, exp.step)
            np.testing.assert_array_equal(v1, exp.value)
            assert set(t1) <= {tag}
        assert sum(len(r.scalars(run, t).step) for t in r.scalar_tags(run)) == total
    return total


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_rotated_files_several_tags_and_resumes(tmp_path, compression) -> None:
    if compression:
        require_module("zstandard")
    with summarylog.Writer(tmp_path, max_file_size=4096, compression=compression) as w:
        for s in range(3000):
            w.log({"loss": s * 0.5, "acc": 1 / (s + 1)}, step=s)
            if s % 7 == 0:
                w.add_scalar("lr", s, step=s)
            if s % 100 == 99:
                w.flush()  # rotation happens at flushes
    for purge_step in (2000, 500):  # two resumes: the second drops part of the first
        with summarylog.Writer(tmp_path, max_file_size=4096, compression=compression,
                               purge_step=purge_step) as w:
            for s in range(purge_step, purge_step + 700):
                w.log({"loss": -s, "new": s}, step=s)
                if s % 100 == 99:
                    w.flush()
    assert len(Reader(tmp_path).files(".")) > 10
    n = assert_same_as_reader(tmp_path, purge=True)
    m = assert_same_as_reader(tmp_path, purge=False, chunks=(13, 65536))
    assert n < m
    print(f"{n} values streamed with the resume rule, {m} without")


def test_many_markers_and_tags(tmp_path) -> None:
    """More markers than the decoder's per-call list, interleaved with many tags."""
    for k in range(40):
        with summarylog.Writer(tmp_path, purge_step=k * 10) as w:
            for s in range(k * 10, k * 10 + 25):
                w.log({f"t{s % 13}": float(s), "x": k}, step=s)
    assert_same_as_reader(tmp_path, chunks=(1, 5, 100))


def test_damaged_and_torn_files(tmp_path) -> None:
    """Damage in the middle and a torn tail: read up to the damage, reported, same
    values as the Reader."""
    with summarylog.Writer(tmp_path, max_file_size=20000) as w:
        for s in range(3000):
            w.log({"a": s, "b": -s}, step=s)
            if s % 100 == 99:
                w.flush()
    files = Reader(tmp_path).files(".")
    with open(files[1], "r+b") as f:  # a flipped byte in the middle of a record
        f.seek(5000)
        b = f.read(1)
        f.seek(5000)
        f.write(bytes([b[0] ^ 0xFF]))
    with open(files[0], "rb") as f:
        head = f.read(30)
    with open(files[-1], "ab") as f:  # a torn tail: the start of a record
        f.write(head)
    assert_same_as_reader(tmp_path)
    reports: dict = {}
    list(iter_scalars(files, chunk=100, reports=reports))
    assert [os.path.basename(p) for p in reports] == [os.path.basename(p) for p in files]
    assert reports[files[1]].damage and reports[files[-1]].tail is not None
    want = Reader(tmp_path).damage(".")
    assert [(r.damage, r.tail, r.records) for r in reports.values()] == \
        [(want[p].damage, want[p].tail, want[p].records) for p in files]


def test_event_with_more_values_than_a_chunk(tmp_path) -> None:
    with summarylog.Writer(tmp_path) as w:
        for s in range(5):
            w.log({f"t{i:03d}": i * s for i in range(300)}, step=s)
    assert_same_as_reader(tmp_path, chunks=(1, 64, 299, 300, 301))


def test_mindspore_streams_without_purge_only(tmp_path) -> None:
    with SummaryRecord(tmp_path) as rec:
        for s in range(50):
            rec.add_value("scalar", "loss", np.float32(s))
            rec.record(s)
    files = Reader(tmp_path).files(".")
    with pytest.raises(ValueError, match="purge=False"):
        iter_scalars(files)
    assert assert_same_as_reader(tmp_path, purge=False) == 50


def test_arguments_are_checked(tmp_path) -> None:
    with pytest.raises(TypeError, match="chunk"):
        iter_scalars([], chunk=1.5)
    with pytest.raises(TypeError, match="chunk"):
        iter_scalars([], chunk=True)
    with pytest.raises(ValueError, match="chunk"):
        iter_scalars([], chunk=0)
    with pytest.raises(TypeError, match="tag"):
        iter_scalars([], tag=b"x")
    assert list(iter_scalars([])) == []
    with pytest.raises(FileNotFoundError):
        list(iter_scalars([str(tmp_path / "events.out.tfevents.1.missing")]))
