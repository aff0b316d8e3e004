"""summarylog._speedups.pack_log: the packed record when it applies, None
(the Writer's careful path) whenever anything differs, and log() results
identical either way."""

from __future__ import annotations

import collections
import struct

import numpy as np
import pytest

from summarylog import Reader, Writer
from summarylog._speedups import pack_log

KEYS = ("a", "b", "c")


def test_packs_plain_numbers_in_the_drain_layout():
    out = pack_log({"a": 1.5, "b": 2, "c": -3.25}, KEYS, 7, 42, 1000.5)
    assert out == struct.pack("<IIqdddd", 7, 0, 42, 1000.5, 1.5, 2.0, -3.25)


@pytest.mark.parametrize("scalars", [
    {"a": 1.0, "b": 2.0},  # a tag missing
    {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0},  # one more
    {"b": 2.0, "a": 1.0, "c": 3.0},  # other order
    {"a": 1.0, "b": 2.0, "x": 3.0},  # other name
    {"a": 1.0, "b": True, "c": 3.0},  # bool: the careful path decides
    {"a": 1.0, "b": np.float32(2), "c": 3.0},  # numpy scalar
    {"a": 1.0, "b": 10 ** 400, "c": 3.0},  # too big for a double
    {"a": 1.0, "b": "2", "c": 3.0},  # junk: the careful path raises
    collections.OrderedDict(a=1.0, b=2.0, c=3.0),  # not exactly a dict
])
def test_anything_unusual_falls_back(scalars):
    assert pack_log(scalars, KEYS, 0, 1, 1.0) is None


def test_step_and_walltime_outside_the_fast_path():
    ok = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert pack_log(ok, KEYS, 0, 2 ** 63, 1.0) is None
    assert pack_log(ok, KEYS, 0, 1, 1) is None
    assert pack_log(ok, KEYS, 0, True, 1.0) is None
    assert pack_log(ok, (), 0, 1, 1.0) is None
    with pytest.raises(TypeError):
        pack_log(ok, KEYS, 0, 1)


def test_equal_but_distinct_key_objects_match():
    keys = tuple("".join(["x", str(i)]) for i in range(3))
    fresh = {"".join(["x", str(i)]): float(i) for i in range(3)}
    assert pack_log(fresh, keys, 0, 1, 1.0) is not None


def test_log_gives_the_same_values_through_both_paths(tmp_path):
    with Writer(tmp_path) as w:
        for step in range(50):
            vals = {"a": step * 0.5, "b": step, "c": -1.0}
            if step % 7 == 3:
                vals["b"] = np.float64(step)  # careful path mid-stream
            if step % 11 == 5:
                vals = {"c": -1.0, "a": step * 0.5, "b": step}  # other order
            w.log(vals, step=step)
    r = Reader(tmp_path)
    (run,) = r.runs()
    for tag, want in (("a", np.arange(50) * 0.5), ("b", np.arange(50.0)), ("c", -np.ones(50))):
        col = r.scalars(run, tag)
        np.testing.assert_array_equal(col.step, np.arange(50))
        np.testing.assert_array_equal(col.value, want)
