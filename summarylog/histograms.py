"""Histogram arithmetic for both dialects, in C without the GIL (csrc/histogram.c): statistics,
and equal-width counts that match ``np.histogram(values, bins=edges)``."""

from __future__ import annotations

import errno
from typing import NamedTuple

import numpy as np

from ._native import ffi, lib

__all__ = ["ValueStats", "value_stats", "equal_width_counts", "as_float_array"]


class ValueStats(NamedTuple):
    finite: int
    nan_count: int
    pos_inf_count: int
    neg_inf_count: int
    min: float  #: over the finite values (0.0 when there are none)
    max: float
    sum: float  #: float64 sum of the finite values
    sum_squares: float


def as_float_array(values: np.ndarray) -> np.ndarray:
    """``values`` as a contiguous 1-D float32/float64 array (float16 to float32, others to 64)."""
    flat = np.ravel(values)
    if flat.dtype in (np.float32, np.float64):
        return np.ascontiguousarray(flat)
    return flat.astype(np.float32 if flat.dtype == np.float16 else np.float64)


def _ptr(arr: np.ndarray) -> tuple[object, int]:
    return ffi.from_buffer("char[]", arr), 1 if arr.dtype == np.float64 else 0


def value_stats(arr: np.ndarray) -> ValueStats:
    """Statistics of a float32/float64 array from :func:`as_float_array`."""
    out = ffi.new("slg_value_stats_t *")
    lib.slg_value_stats(*_ptr(arr), arr.size, out)
    return ValueStats._make(getattr(out, f) for f in ValueStats._fields)  # ints and floats


def equal_width_counts(arr: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """int64 counts of ``arr`` between equal-width ``edges`` as ``np.histogram`` (no non-finite)."""
    e = np.ascontiguousarray(edges, dtype=np.float64)
    bins = len(e) - 1
    counts = np.empty(bins, np.int64)
    rc = lib.slg_histogram_counts(*_ptr(arr), arr.size, ffi.from_buffer("double[]", e), bins,
                                  ffi.from_buffer("int64_t[]", counts))
    if rc == -errno.ENOMEM:
        raise MemoryError(f"no memory for the counts of {bins} buckets")
    if rc < 0:
        raise ValueError(f"edges must be increasing, got [{e[0]}, {e[-1]}] in {bins} buckets")
    return counts
