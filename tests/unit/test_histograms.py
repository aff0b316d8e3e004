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


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), bins=st.integers(1, 200),
       dtype=st.sampled_from([np.float16, np.float32, np.float64]),
       scale=st.sampled_from([1e-30, 1e-3, 1.0, 1e4, 1e30]),
       shift=st.sampled_from([0.0, 1.0, 1e3, -1e6]), jitter=st.sampled_from([0.0, 1e-9, 1e-3]))
def test_counts_exact_on_and_next_to_every_edge(seed, bins, dtype, scale, shift, jitter):
    """Values on every edge and one ulp either side, in every dtype the
    encoders use (float16 values get float16 edges in the MindSpore dialect),
    narrow ranges far from zero, and edges nudged off the exact grid: the
    fast bucket estimate must never be trusted where an edge is near."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = dtype(shift * scale)
        hi = dtype(shift * scale + scale * rng.uniform(0.5, 4))
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            return
        edges = np.linspace(lo, hi, bins + 1, dtype=dtype)
        if jitter:
            inner = edges[1:-1].astype(np.float64)
            inner += jitter * (hi - lo) / bins * rng.uniform(-1, 1, inner.size)
            edges[1:-1] = inner.astype(dtype)
    if not (np.isfinite(edges).all() and (np.diff(edges.astype(np.float64)) > 0).all()):
        return
    on = edges.astype(dtype)
    vals = np.concatenate([on, np.nextafter(on, dtype(np.inf)), np.nextafter(on, dtype(-np.inf)),
                           rng.uniform(float(lo), float(hi), 2000).astype(dtype)])
    a = as_float_array(vals)
    want, _ = np.histogram(a[np.isfinite(a)], bins=edges.astype(a.dtype))
    np.testing.assert_array_equal(equal_width_counts(a, edges), want)


def test_edges_must_increase():
    with pytest.raises(ValueError):
        equal_width_counts(np.ones(3), np.array([1.0, 1.0]))


class TestHistogramEventInC:
    """TensorBoardEncoder.histogram encodes float32/float64 values in one C
    call (csrc/histogram_event.c): byte-equal to protobuf serializing
    histogram_proto, over sizes, dtypes, bucket counts (0 = MindSpore's
    rule), wall times (-0.0), steps (negative, huge), tags and hard values."""

    @staticmethod
    def _reference(wall: float, step: int, tag: str, v: np.ndarray, bins: int) -> bytes:
        from summarylog._native import lib
        from summarylog.dialects.tensorboard import histogram_proto, value_event

        if bins <= 0:
            bins = lib.slg_ms_bins(value_stats(as_float_array(np.ravel(v))).finite)
        return value_event(wall, step, tag=tag, histo=histogram_proto(v, bins))

    def test_byte_equal_to_protobuf(self) -> None:
        from summarylog.dialects.tensorboard import TensorBoardEncoder

        enc = TensorBoardEncoder()
        rng = np.random.default_rng(1)
        for it in range(3000):
            n = int(rng.integers(1, 2000))
            kind = it % 8
            if kind == 0:
                v = rng.normal(size=n)
            elif kind == 1:
                v = rng.normal(size=n) * 1e-300
            elif kind == 2:
                v = np.full(n, rng.normal())
            elif kind == 3:
                v = rng.integers(-5, 5, n).astype(float)
            elif kind == 4:
                v = rng.normal(size=n)
                v[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf]
            elif kind == 5:
                v = np.array([0.0, -0.0] * (n // 2 + 1))
            elif kind == 6:
                v = rng.normal(size=n) * 1e30 + 1e35
            else:
                v = np.concatenate([rng.normal(size=n), [1e-40, -1e-40]])
            v = v.astype(np.float32 if it % 2 else np.float64)
            bins = int(rng.choice([0, 1, 2, 30, 64, 255]))
            wall = float(rng.choice([0.0, 1.7e9, -0.0]))
            step = int(rng.choice([0, 1, -5, 2**40]))
            tag = str(rng.choice(["", "a", "w/" * 100, "λ"]))
            assert enc.histogram(wall, step, tag, v, bins) == \
                self._reference(wall, step, tag, v, bins), (it, kind, v.dtype, n, bins)

    @pytest.mark.parametrize("values", [[np.nan, np.nan], [np.inf, -np.inf], [np.inf], []])
    def test_no_finite_value_follows_the_python_rules(self, values) -> None:
        from summarylog.dialects.tensorboard import TensorBoardEncoder

        from summarylog._native import ffi, lib

        v = np.array(values, np.float64)
        got = TensorBoardEncoder().histogram(1.0, 2, "t", v, 0)
        assert got == self._reference(1.0, 2, "t", v, 0)
        # made in C (as the binner makes it), not by the Python fallback
        out = ffi.new("char[]", 4096)
        n = lib.slg_tb_encode_histogram_event(ffi.from_buffer(v) if v.size else ffi.NULL, 1,
                                              v.size, 0, 1.0, 2, b"t", 1, out, 4096)
        assert ffi.buffer(out, n)[:] == got

    def test_ms_bins_rule(self) -> None:
        from summarylog._native import lib

        for n, want in [(0, 1), (1, 2), (5, 2), (6, 3), (10, 3), (11, 2), (879, 88),
                        (880, 89), (881, 90), (10**9, 90)]:
            assert lib.slg_ms_bins(n) == want, n
