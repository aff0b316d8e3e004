"""The linear resume rule (summarylog.read_columns.purge_keep) equals its
quadratic definition: a marker (index, step) drops every point before index
whose step is >= step."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from summarylog.read_columns import purge_keep


@given(st.lists(st.integers(-5, 20), max_size=60),
       st.lists(st.tuples(st.integers(0, 70), st.integers(-5, 20)), min_size=1, max_size=12))
def test_purge_keep_matches_the_definition(steps: list[int],
                                           markers: list[tuple[int, int]]) -> None:
    arr = np.array(steps, np.int64)
    markers = sorted(markers, key=lambda m: m[0])  # the loader finds them in file order
    keep = np.ones(len(arr), bool)
    for index, step in markers:
        keep[:index] &= arr[:index] < step
    np.testing.assert_array_equal(purge_keep(arr, markers), keep)
