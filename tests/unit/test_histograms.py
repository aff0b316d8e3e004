"""summarylog.histograms (csrc/histogram.c) against numpy: statistics and
equal-width counts, float32 and float64, with non-finite values and values
on the edges."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from summarylog.histograms import as_float_array, equal_width_counts, value_stats


@settings(max_examples=300, deadline=None)
@given(arr=st.one_of(
    hnp.arrays(np.float32, st.integers(0, 300), elements=st.floats(width=32, allow_nan=True)),
    hnp.arrays(np.float64, st.integers(0, 300)),
    hnp.arrays(np.float64, st.integers(1, 300), elements=st.sampled_from(
        [0.0, 0.1, 0.2, 0.3, 1.0, -1.0, 1e-300, np.inf, -np.inf, np.nan]))),
    bins=st.integers(1, 95))
def test_matches_numpy(arr, bins):
    a = as_float_array(arr)
    s = value_stats(a)
    finite = a[np.isfinite(a)]
    assert s.finite == finite.size
    assert s.nan_count == int(np.isnan(a).sum())
    assert (s.pos_inf_count, s.neg_inf_count) == (int(np.isposinf(a).sum()),
                                                  int(np.isneginf(a).sum()))
    if finite.size:
        assert (s.min, s.max) == (float(finite.min()), float(finite.max()))
        f64 = finite.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            total = f64.sum()
            scale = float(np.abs(f64).sum())
            lo, hi = a.dtype.type(s.min), a.dtype.type(s.max)
            span = hi - lo
        if np.isfinite(total) and np.isfinite(scale):
            # (summation order differs: numpy sums pairwise)
            assert s.sum == pytest.approx(float(total), rel=1e-9,
                                          abs=1e-12 * scale + 1e-300)
        if hi > lo and np.isfinite(span):
            with np.errstate(over="ignore", invalid="ignore"):
                edges = np.linspace(lo, hi, bins + 1, dtype=a.dtype)
            if np.isfinite(edges).all() and (np.diff(edges) > 0).all():
                with np.errstate(over="ignore", invalid="ignore"):
                    want, _ = np.histogram(finite, bins=edges)
                np.testing.assert_array_equal(equal_width_counts(a, edges), want)
    else:
        assert (s.min, s.max, s.sum) == (0.0, 0.0, 0.0)


def test_edges_must_increase():
    with pytest.raises(ValueError):
        equal_width_counts(np.ones(3), np.array([1.0, 1.0]))
