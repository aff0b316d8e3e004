"""The native binner and lanes (summarylog/binner.py over csrc/binner.c):
what they write is what the single-event encoder makes (itself checked
against protobuf in test_histograms.py), in order; the binner's thread runs
at nice 19; a lane's collections are the values at collect() time; a busy
lane says so; write errors are raised (strict files) or counted; the
Writer's histogram batches and stats go through them."""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading

import numpy as np
import pytest

from summarylog import Reader, Writer
from summarylog._native import lib
from summarylog.binner import Binner, HistogramJob, Lane
from summarylog.dialects.tensorboard import TensorBoardEncoder
from summarylog.records import RecordReader, RecordWriter


def _values(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    v = rng.normal(size=n).astype(dtype)
    kind = rng.integers(0, 6)
    if kind == 0 and n:
        v[rng.integers(0, n, max(1, n // 10))] = np.nan
    elif kind == 1 and n:
        v[: max(1, n // 7)] = np.inf
        v[-1] = -np.inf
    elif kind == 2:
        v[:] = np.nan  # no finite value
    elif kind == 3 and n:
        v[:] = 2.5  # one distinct value
    return v


def _payloads(path: str) -> list[bytes]:
    with RecordReader(path, strict=True) as r:
        return list(r)


def test_jobs_are_the_single_event_bytes_in_order(tmp_path) -> None:
    enc = TensorBoardEncoder()
    rng = np.random.default_rng(3)
    path = str(tmp_path / "events")
    binner = Binner()
    want: list[bytes] = []
    with RecordWriter(path) as rw:
        for j in range(40):
            entries = []
            for i in range(int(rng.integers(0, 6))):
                n = int(rng.choice([0, 1, 7, 1000, 20_000]))
                v = _values(rng, n, np.float32 if (i + j) % 2 else np.float64)
                bins = int(rng.choice([0, 1, 30, 64]))
                tag = str(rng.choice(["w", "λ/" * 20, ""]))
                entries.append((tag, v, bins))
                want.append(enc.histogram(2.5 + j, 10 * j, tag, v, bins))
            job = HistogramJob(rw, entries)
            ticket = binner.submit(job, step=10 * j, wall_time=2.5 + j)
            assert ticket == j + 1
            binner.wait(ticket)
            assert job.fallbacks() == [] and job.failed() == []
            assert job.report() == (len(entries), 0)
    binner.close()
    assert _payloads(path) == want


def test_entries_with_their_own_steps_and_refused_arrays(tmp_path) -> None:
    binner = Binner()
    with RecordWriter(str(tmp_path / "a")) as rw:
        v = np.arange(10, dtype=np.float32)
        job = HistogramJob(rw, [("a", v, 0, 5, 1.0), ("b", v, 3, 7, 2.0)])
        binner.wait(binner.submit(job))  # no stamp: each entry's own step and wall time
        assert job.report() == (2, 0)
        with pytest.raises(TypeError, match="'c'.*float32 or float64.*int64"):
            HistogramJob(rw, [("c", np.arange(3), 0)])
        with pytest.raises(TypeError, match="contiguous"):
            HistogramJob(rw, [("d", np.zeros((4, 4), np.float32)[:, 1], 0)])
    enc = TensorBoardEncoder()
    assert _payloads(str(tmp_path / "a")) == [enc.histogram(1.0, 5, "a", v, 0),
                                              enc.histogram(2.0, 7, "b", v, 3)]
    binner.close()
    with RecordWriter(str(tmp_path / "b")) as rw, pytest.raises(ValueError, match="closed"):
        binner.submit(HistogramJob(rw, [("a", v, 0)]))
    with RecordWriter(str(tmp_path / "c"), compression="zstd") as rw, \
            pytest.raises(ValueError, match="compressed"):
        HistogramJob(rw, [("a", v, 0)])


def _nice_of_threads() -> dict[int, int]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        out[int(tid)] = int(stat[stat.rindex(")") + 2:].split()[16])  # field 19: nice
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_the_binner_thread_runs_at_the_lowest_priority() -> None:
    before = set(_nice_of_threads())
    binner = Binner()
    for _ in range(200):  # (the thread sets its own, once it runs)
        new = {tid: nice for tid, nice in _nice_of_threads().items() if tid not in before}
        if list(new.values()) == [19]:
            break
        threading.Event().wait(0.005)
    binner.close()
    assert list(new.values()) == [19], new
    assert _nice_of_threads()[threading.get_native_id()] == 0  # the caller's is untouched


def _lane(binner: Binner, rw: RecordWriter, arrays: list[np.ndarray], slots: int = 3) -> Lane:
    return Lane(binner, rw, "loss/auto",
                [(f"p{i}/auto", a) for i, a in enumerate(arrays)], slots=slots)


def test_lane_collections_are_the_values_at_collect_time(tmp_path) -> None:
    rng = np.random.default_rng(1)
    arrays = [np.zeros(5000, np.float32), np.zeros((7, 3), np.float64)]
    binner = Binner(poll_secs=0.01)
    path = str(tmp_path / "events")
    seen = []
    with RecordWriter(path) as rw:
        lane = _lane(binner, rw, arrays)
        for k in range(25):
            for a in arrays:
                a[...] = _values(rng, a.size, a.dtype.type).reshape(a.shape)
            seen.append([a.copy() for a in arrays])
            loss = None if k % 5 == 4 else 0.5 + k
            while not lane.collect(loss, 10 * k, 100.0 + k):
                binner.flush()  # every slot queued: let the binner catch up
            for a in arrays:
                a[...] = 99.0  # changed right after: the lane copied before
        binner.flush()
        st = lane.stats
        assert st["collections"] == 25 and st["failed"] == 0
        assert st["events"] == 25 * 2 + 20 and st["slots"] == 3
    enc = TensorBoardEncoder()
    want = []
    for k, vals in enumerate(seen):
        if k % 5 != 4:
            want.append(enc.scalars(100.0 + k, 10 * k, ["loss/auto"], [0.5 + k]))
        want += [enc.histogram(100.0 + k, 10 * k, f"p{i}/auto", v.ravel(), 0)
                 for i, v in enumerate(vals)]
    got = _payloads(path)
    assert len(got) == len(want)
    for g, w in zip(got, want):  # scalar events: the same value, float32 as TensorBoard's
        assert g == w


def test_a_lane_with_every_slot_queued_is_busy_and_nothing_is_overwritten(tmp_path,
                                                                         figure) -> None:
    arr = np.arange(20_000, dtype=np.float32)
    binner = Binner(poll_secs=0.01)
    rw = RecordWriter(str(tmp_path / "events.out.tfevents.1.h"), max_buffer=4096)  # two events
    lane = _lane(binner, rw, [arr], slots=2)
    lib.slg_writer_inject_stall(rw.handle, 1)  # the disk takes nothing: the binner waits
    try:
        taken = 0
        for k in range(40):
            if not lane.collect(1.0, k, 1.0):
                break
            taken += 1
            threading.Event().wait(0.005)
        else:
            pytest.fail("the lane never said busy")
        assert lane.stats["busy"] == 1
    finally:
        lib.slg_writer_inject_stall(rw.handle, 0)
    binner.flush()
    assert lane.stats["events"] == 2 * taken
    rw.close()
    steps = [e.step for e in Reader(str(tmp_path)).events(".") if e.kind == "histogram"]
    assert steps == list(range(taken))
    figure(f"2 slots, disk stalled: {taken} collections taken, then busy (nothing "
           f"overwritten); all {taken} written once the disk came back")


@pytest.mark.parametrize("strict", [True, False])
def test_lane_write_errors_are_raised_or_counted(tmp_path, strict, caplog) -> None:
    arr = np.arange(100, dtype=np.float32)
    binner = Binner(poll_secs=0.01)
    rw = RecordWriter(str(tmp_path / "events"), strict=strict)
    lane = _lane(binner, rw, [arr])
    assert lane.collect(1.0, 1, 1.0)
    binner.flush()
    lib.slg_writer_close(rw.handle)  # the file closed under the lane (natively): writes fail
    assert lane.collect(2.0, 2, 1.0)
    binner.flush()
    with caplog.at_level(logging.WARNING, logger="summarylog"):
        if strict:
            with pytest.raises(OSError) as exc:
                lane.collect(3.0, 3, 1.0)  # queued; the error is step 2's
            assert exc.value.errno == errno.EBADF
        else:
            assert lane.collect(3.0, 3, 1.0)
            assert "I/O error" in caplog.text
    binner.flush()
    if strict:
        with pytest.raises(OSError):
            lane.take_error()  # step 3's
    lane.take_error()  # nothing left
    assert lane.stats["events"] == 2


def test_writer_histogram_batches_and_lanes_count_in_its_stats(tmp_path) -> None:
    enc = TensorBoardEncoder()
    w = Writer(str(tmp_path))
    items = [(1.0, 3, "f32", np.linspace(-1, 1, 1000, dtype=np.float32), 0),
             (1.0, 3, "ints", np.arange(10), 0),  # the Python encoder's
             (1.0, 3, "nan", np.array([np.nan, np.inf]), 0),
             (1.0, 4, "f64", np.arange(7, dtype=np.float64), 5)]
    w.pipeline.write_histograms(items)
    arr = np.ones(300, np.float32)
    lane = w.pipeline.open_lane("loss", [("h", arr)])
    assert lane is not None
    assert lane.collect(0.25, 9, 2.0) and lane.collect(None, 10, 3.0)
    w.close()  # waits for the lane's jobs
    assert w.stats["events"] == 4 + 3
    got = {(e.tag, e.step): e for e in Reader(str(tmp_path)).events(".")
           if e.kind in ("histogram", "scalar")}
    assert set(got) == {("f32", 3), ("ints", 3), ("nan", 3), ("f64", 4), ("loss", 9),
                        ("h", 9), ("h", 10)}
    payloads = _payloads(w.files[0])
    for wall, step, tag, v, bins in items:
        assert enc.histogram(wall, step, tag, v, bins) in payloads
    assert got[("loss", 9)].value == 0.25


def test_no_lane_where_the_binner_cannot_write(tmp_path) -> None:
    arr = np.ones(3, np.float32)
    entries = [("h", arr)]
    w = Writer(str(tmp_path / "a"))
    assert w.pipeline.open_lane("s", entries) is None  # no file yet
    w.add_scalar("x", 1.0, 0)
    w.flush()
    assert w.pipeline.open_lane("s", entries) is not None
    w.close()
    from summarylog import SummaryRecord

    with SummaryRecord(str(tmp_path / "r"), format="tensorboard") as rec:  # checks the tags
        rec.add_value("scalar", "x", 1.0)
        rec.record(1)
        rec.flush()
        for scalar_tag, tag in (("", "h"), ("s", "")):
            with pytest.raises(ValueError, match="tag"):
                rec.open_lane(scalar_tag, [(tag, arr)])
    assert w.pipeline.open_lane("s", entries) is None  # closed
    for kw in ({"compression": "zstd"}, {"max_file_size": 1 << 20}):
        w = Writer(str(tmp_path / str(len(kw))), **kw)
        w.add_scalar("x", 1.0, 0)
        w.flush()
        assert w.pipeline.open_lane("s", entries) is None
        w.close()


def test_a_full_buffer_with_on_full_drop_counts_what_the_binner_dropped(tmp_path,
                                                                        figure) -> None:
    """on_full="drop": a lane's collections that do not fit are dropped by the
    writer and counted (as the writer's own records are), never lost quietly."""
    arr = np.arange(20_000, dtype=np.float32)
    binner = Binner(poll_secs=0.01)
    rw = RecordWriter(str(tmp_path / "e"), max_buffer=4096, on_full="drop")
    lane = _lane(binner, rw, [arr], slots=4)
    lib.slg_writer_inject_stall(rw.handle, 1)
    try:
        for k in range(30):
            assert lane.collect(1.0, k, 1.0)  # the binner never waits: no slot stays queued
            binner.flush()
    finally:
        lib.slg_writer_inject_stall(rw.handle, 0)
    st = lane.stats
    assert st["dropped"] > 0 and st["events"] + st["dropped"] == 30 * 2, st
    assert rw.stats.records_dropped == st["dropped"]
    rw.close()
    assert len(_payloads(str(tmp_path / "e"))) == st["events"]
    figure(f"on_full=drop, 4 KiB buffer, disk stalled: of 60 events {st['events']} written, "
           f"{st['dropped']} dropped and counted (lane and file stats agree)")


def test_a_job_is_kept_alive_until_it_finished(tmp_path) -> None:
    """The binner holds a submitted job, and so the arrays it points at,
    until its thread finished it, whatever the caller does meanwhile (an
    exception between submit and wait, say)."""
    import gc
    import weakref

    binner = Binner(poll_secs=0.01)
    stalled = RecordWriter(str(tmp_path / "a"), max_buffer=4096)
    lib.slg_writer_inject_stall(stalled._h, 1)
    try:
        big = np.arange(50_000, dtype=np.float32)
        for i in range(3):  # the thread blocks in the full, stalled writer
            binner.submit(HistogramJob(stalled, [("b", big, 0)]), step=i, wall_time=1.0)
        rw = RecordWriter(str(tmp_path / "b"))
        arr = np.arange(1000, dtype=np.float32)
        job = HistogramJob(rw, [("h", arr, 0)])
        ticket = binner.submit(job, step=9, wall_time=1.0)
        alive = weakref.ref(job)
        del job, arr
        gc.collect()
        assert alive() is not None and binner.done() < ticket
    finally:
        lib.slg_writer_inject_stall(stalled._h, 0)
    binner.flush()
    gc.collect()
    assert alive() is None
    rw.close()
    stalled.close()
    assert len(_payloads(str(tmp_path / "b"))) == 1


def test_a_mindspore_lane_writes_each_collection_as_the_recorded_step(tmp_path) -> None:
    """A MindSpore-dialect lane: one Event a collection, the bytes MindSporeEncoder
    makes for the same step (the scalar, then each histogram by MindSpore's rule)."""
    from summarylog.dialects.mindspore import MindSporeEncoder

    rng = np.random.default_rng(2)
    arrays = [np.zeros(3000, np.float32), np.zeros((5, 4), np.float64), np.zeros(1, np.float32)]
    binner = Binner(poll_secs=0.01)
    path = str(tmp_path / "events.out.events.summary.1.h_MS")
    seen = []
    with RecordWriter(path) as rw:
        lane = Lane(binner, rw, "loss/auto", [(f"p{i}/auto", a) for i, a in enumerate(arrays)],
                    slots=3, mindspore=True)
        for k in range(20):
            for a in arrays:
                a[...] = _values(rng, a.size, a.dtype.type).reshape(a.shape)
            seen.append([a.copy() for a in arrays])
            loss = None if k % 4 == 3 else 0.25 * k - 1e39 * (k == 5)  # (an overflow: inf)
            while not lane.collect(loss, 7 * k - 3, 50.0 + k):
                binner.flush()
        binner.flush()
        st = lane.stats
        assert st["collections"] == 20 and st["events"] == 20 and st["failed"] == 0
    enc = MindSporeEncoder()
    want = []
    for k, vals in enumerate(seen):
        values = [] if k % 4 == 3 else [("scalar", "loss/auto", 0.25 * k - 1e39 * (k == 5))]
        values += [("histogram", f"p{i}/auto", v) for i, v in enumerate(vals)]
        want += enc.summary(50.0 + k, 7 * k - 3, values)
    assert _payloads(path) == want
