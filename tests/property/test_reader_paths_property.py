"""Property test: the Reader's one-call path for small files
(slg_tb_load_file + slg_columns_group) gives exactly what its general path
(RecordReader + slg_tb_decode_scalars) gives, on event files of scalar,
resume-marker and foreign records with random damage."""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference_scanner as ref
from summarylog import read_columns as columns_mod
from summarylog import reader as reader_mod
from summarylog.dialects.tensorboard import TensorBoardEncoder
from summarylog.pb import tb

_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                           HealthCheck.data_too_large])
_ENC = TensorBoardEncoder()


def _scalar(tag: str, step: int, value: float) -> bytes:
    ev = tb.Event(wall_time=1000.0 + step, step=step)
    ev.summary.value.add(tag=tag, simple_value=value)
    return ev.SerializeToString()


def _start(step: int) -> bytes:
    ev = tb.Event(wall_time=5.0, step=step)
    ev.session_log.status = tb.SessionLog.START
    return ev.SerializeToString()


_payload = st.one_of(
    st.builds(_scalar, st.sampled_from(["a", "b", "loss/x", "é"]), st.integers(0, 50),
              st.floats(width=32, allow_nan=False)),
    st.builds(_scalar, st.sampled_from(["a", "b"]), st.integers(0, 50), st.just(1.0)),
    st.builds(_start, st.integers(0, 50)),
    st.binary(max_size=40),  # not an Event (or a strange one)
)


@st.composite
def event_file(draw: Any) -> bytes:
    out = bytearray(ref.frame(tb.Event(wall_time=1.0, file_version="brain.Event:2")
                              .SerializeToString()))
    for payload in draw(st.lists(_payload, max_size=60)):
        rec = bytearray(ref.frame(payload))
        damage = draw(st.sampled_from(["ok"] * 10 + ["flip", "cut", "zeros"]))
        if damage == "flip":
            i = draw(st.integers(0, len(rec) - 1))
            rec[i] ^= 1 << draw(st.integers(0, 7))
        elif damage == "cut":
            rec = rec[: draw(st.integers(0, len(rec)))]
        elif damage == "zeros":
            rec = bytearray(len(rec))
        out += rec
    if draw(st.booleans()):
        out += bytes(draw(st.integers(0, 40)))  # a zero-filled tail
    return bytes(out)


def _read(path: str, small: int, purge: bool) -> tuple[Any, ...]:
    saved = columns_mod.SMALL_FILE
    columns_mod.SMALL_FILE = small
    try:
        r = reader_mod.Reader(path, purge=purge)
        cols = {t: tuple(np.asarray(a).tolist() for a in r.scalars(".", t))
                for t in r.scalar_tags(".")}
        (rep,) = r.damage(".").values()
        return cols, rep.records, rep.damage, rep.tail, rep.bad_events, rep.size, rep.bad_values
    finally:
        columns_mod.SMALL_FILE = saved


@pytest.mark.parametrize("purge", [True, False])
@_SETTINGS
@given(data=event_file())
def test_small_file_path_equals_general_path(data: bytes, purge: bool) -> None:
    fd, path = tempfile.mkstemp(suffix=".tfevents.1.host")
    try:
        os.write(fd, data)
        os.close(fd)
        fast = _read(path, 1 << 16, purge)
        general = _read(path, 0, purge)  # only empty files take the one-call path
        assert fast == general
    finally:
        os.unlink(path)
