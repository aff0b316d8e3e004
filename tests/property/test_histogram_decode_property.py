"""Property test: the columnar histogram decoder (slg_decode_histograms through
Reader.histogram_columns) gives exactly what decoding every event with protobuf in
Python gives (Reader.events, then the Reader's resume rule), on event files of both
dialects holding histograms (packed and unpacked buckets, a histo field seen twice,
a oneof overridden), scalars, resume markers and foreign records, with random damage;
and the Python-side growth of the columns (tiny first sizes) loses nothing."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_scanner as ref
from summarylog import read_histograms
from summarylog.pb import len_field, ms, tb, varint
from summarylog.read_columns import purge_keep
from summarylog.reader import Reader

_SETTINGS = settings(deadline=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_TAGS = st.sampled_from(["w", "b", "layer/0", "é"])
_F64 = st.floats(allow_nan=False, width=64)
_STATS = ("min", "max", "num", "sum", "sum_squares")


def _tb_histo(tag: str, step: int, stats: list[float], limits: list[float],
              counts: list[float], packed: bool, twice: bool) -> bytes:
    h = tb.HistogramProto(min=stats[0], max=stats[1], num=stats[2], sum=stats[3],
                          sum_squares=stats[4], bucket_limit=limits, bucket=counts)
    body = h.SerializeToString()
    if not packed:  # the same numbers, one unpacked field each
        body = b"".join(varint(1 << 3 | 1) + np.float64(s).tobytes() for s in stats)
        body += b"".join(varint(6 << 3 | 1) + np.float64(x).tobytes() for x in limits)
        body += b"".join(varint(7 << 3 | 1) + np.float64(x).tobytes() for x in counts)
    value = len_field(1, tag.encode()) + len_field(5, body)
    if twice:  # a second histo: merged into the first (numbers replaced, buckets appended)
        value += len_field(5, tb.HistogramProto(min=-7.0, bucket_limit=[1.0],
                                                bucket=[2.0]).SerializeToString())
    ev = tb.Event(wall_time=1000.0 + step, step=step).SerializeToString()
    return ev + len_field(5, len_field(1, value))


def _tb_other(tag: str, step: int, kind: int) -> bytes:
    ev = tb.Event(wall_time=2.0, step=step)
    if kind == 0:
        ev.summary.value.add(tag=tag, simple_value=1.5)
    elif kind == 1:  # a histo overridden by a later oneof member: a scalar
        v = ev.summary.value.add(tag=tag)
        v.histo.min = 3.0
        v.simple_value = 2.0
    else:
        ev.session_log.status = tb.SessionLog.START
    return ev.SerializeToString()


def _ms_histogram(tag: str, step: int, buckets: list[tuple[float, float, int]],
                  nan: int) -> bytes:
    h = ms.Histogram(nan_count=nan, max=9.0, min=-9.0, sum=1.25, count=len(buckets) + nan)
    for left, width, count in buckets:
        h.buckets.add(left=left, width=width, count=count)
    ev = ms.Event(wall_time=3.0 + step, step=step)
    ev.summary.value.add(tag=tag, histogram=h)
    return ev.SerializeToString()


_tb_payload = st.one_of(
    st.builds(_tb_histo, _TAGS, st.integers(0, 30), st.lists(_F64, min_size=5, max_size=5),
              st.lists(_F64, max_size=12), st.lists(_F64, max_size=12), st.booleans(),
              st.booleans()),
    st.builds(_tb_other, _TAGS, st.integers(0, 30), st.integers(0, 2)),
    st.binary(max_size=40),
)
_ms_payload = st.one_of(
    st.builds(_ms_histogram, _TAGS, st.integers(0, 30),
              st.lists(st.tuples(_F64, _F64, st.integers(-5, 1 << 40)), max_size=10),
              st.integers(0, 3)),
    st.binary(max_size=40),
)


@st.composite
def event_file(draw: Any, payload: Any) -> bytes:
    out = bytearray()
    for p in draw(st.lists(payload, max_size=40)):
        rec = bytearray(ref.frame(p))
        damage = draw(st.sampled_from(["ok"] * 10 + ["flip", "cut"]))
        if damage == "flip":
            rec[draw(st.integers(0, len(rec) - 1))] ^= 1 << draw(st.integers(0, 7))
        elif damage == "cut":
            rec = rec[: draw(st.integers(0, len(rec)))]
        out += rec
    return bytes(out)


def _reference(r: Reader, tag: str, purge: bool) -> list[tuple[Any, ...]]:
    """``tag``'s histograms from every event decoded in Python, the resume rule applied."""
    rows, purges = [], []
    for ev in r.events("."):
        if ev.kind == "session_log" and ev.value["status"] == "start":
            purges.append((len(rows), ev.step))
        elif ev.kind == "histogram" and ev.tag == tag:
            v = ev.value
            rows.append((ev.step, ev.wall_time,
                         tuple(np.nan if v[k] is None else float(v[k]) for k in _STATS),
                         tuple(v["limits"]), tuple(v["counts"])))
    if purge and purges:
        keep = purge_keep(np.array([r[0] for r in rows], np.int64), purges)
        rows = [row for row, k in zip(rows, keep) if k]
    return rows


def _columns(h: Any) -> list[tuple[Any, ...]]:
    return [(int(s), float(w), tuple(float(x) for x in st[:5]), tuple(lim.tolist()),
             tuple(c.tolist()))
            for s, w, st, lim, c in zip(h.step, h.wall_time, h.stats, h.limits(), h.counts())]


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    # NaN-aware equality of nested tuples of numbers
    return np.array_equal(np.array(repr(a)), np.array(repr(b)))


def _check(data: bytes, name: str, purge: bool) -> None:
    d = tempfile.mkdtemp()
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data)
    r = Reader(d, purge=purge)
    if not r.runs():
        return
    got = r.histogram_columns(".")
    mindspore = name.startswith("x.summary")
    for tag in {ev.tag for ev in r.events(".") if ev.kind == "histogram"} | set(got.series):
        if tag in got.other and tag not in got.series:
            continue  # only the events path (and Reader.histograms) reads these
        want = _reference(r, tag, purge)
        if mindspore and purge and want:  # MindInsight's rule: last per step, step order
            last = {row[0]: row for row in want}
            want = [last[s] for s in sorted(last)]
        mine = _columns(got.series[tag]) if tag in got.series else []
        assert _same(mine, want), (tag, mine, want)
        if want:
            assert _same(_columns(r.histograms(".", tag)), want)
        else:  # every value purged: no such tag, as for scalars
            with pytest.raises(KeyError):
                r.histograms(".", tag)


@pytest.mark.parametrize("purge", [True, False])
@_SETTINGS
@given(data=event_file(_tb_payload))
def test_tensorboard_histograms_equal_protobuf(data: bytes, purge: bool) -> None:
    saved = read_histograms._FIRST_ROWS, read_histograms._FIRST_BUCKETS
    read_histograms._FIRST_ROWS = read_histograms._FIRST_BUCKETS = 1  # every record grows them
    try:
        _check(data, "events.out.tfevents.1.host", purge)
    finally:
        read_histograms._FIRST_ROWS, read_histograms._FIRST_BUCKETS = saved


@pytest.mark.parametrize("purge", [True, False])
@_SETTINGS
@given(data=event_file(_ms_payload))
def test_mindspore_histograms_equal_protobuf(data: bytes, purge: bool) -> None:
    _check(data, "x.summary.1", purge)
