"""MindSpore's histogram rule in C (slg_ms_histogram, behind histogram_bytes and the
collectors' lane) against a numpy reference of the rule as numpy 1 (MindSpore's
numpy) computes it: edges by np.linspace in float64 cast to the values' dtype,
widths in that dtype, non-finite values counted apart, in every numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarylog.dialects.mindspore import histogram_bytes
from summarylog.pb import ms


def _bins(finite: int) -> int:
    if finite == 0:
        return 1
    if finite <= 5:
        return 2
    if finite <= 10:
        return 3
    return finite // 10 + 1 if finite <= 880 else 90


def reference(values: np.ndarray) -> ms.Histogram:
    src = np.asarray(values)
    dtype = src.dtype if src.dtype.kind == "f" else np.dtype(np.float64)
    flat = src.ravel().astype(np.float32 if src.dtype == np.float16 else
                              (src.dtype if src.dtype.kind == "f" else np.float64))
    fin = flat[np.isfinite(flat)]
    h = ms.Histogram(count=flat.size, nan_count=int(np.isnan(flat).sum()),
                     pos_inf_count=int(np.isposinf(flat).sum()),
                     neg_inf_count=int(np.isneginf(flat).sum()))
    if fin.size:
        lo, hi = dtype.type(fin.min()), dtype.type(fin.max())
        if lo == hi:
            lo, hi = lo - dtype.type(0.5), hi + dtype.type(0.5)
        bins = _bins(fin.size)
        edges = np.linspace(float(lo), float(hi), bins + 1).astype(dtype)  # numpy 1's result
        if not edges[-1] > edges[0]:
            raise ValueError("edges collapse")  # as summarylog has always refused them
        counts, _ = np.histogram(fin.astype(np.float64), edges.astype(np.float64))
        for left, width, count in zip(edges[:-1], np.diff(edges), counts):
            h.buckets.add(left=float(left), width=float(width), count=int(count))
        h.max, h.min, h.sum = float(fin.max()), float(fin.min()), float(fin.astype(np.float64).sum())
    else:
        h.max = h.min = h.sum = 0.0
    return h


_special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3e38])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e6, 1e6, width=32), _special), min_size=0, max_size=1200),
       st.sampled_from([np.float32, np.float64, np.float16, np.int32]))
def test_c_rule_is_the_reference(values, dtype):
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.asarray(values, np.float64)
        if np.dtype(dtype).kind == "i":
            arr = np.nan_to_num(arr, posinf=0, neginf=0).astype(dtype)
        else:
            arr = arr.astype(dtype)
    try:
        want = reference(arr)
    except ValueError:  # edges that collapse (one huge value): no histogram either way
        with pytest.raises(ValueError, match="collapse"):
            histogram_bytes(arr)
        return
    got = ms.Histogram.FromString(histogram_bytes(arr))
    assert got.count == want.count and got.nan_count == want.nan_count
    assert (got.pos_inf_count, got.neg_inf_count) == (want.pos_inf_count, want.neg_inf_count)
    assert [(b.left, b.width, b.count) for b in got.buckets] == \
        [(b.left, b.width, b.count) for b in want.buckets]
    assert (got.max, got.min) == (want.max, want.min)
    np.testing.assert_allclose(got.sum, want.sum, rtol=1e-9, atol=1e-9)
