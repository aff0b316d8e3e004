"""iter_scalars' chunked resume rule (read_stream.ResumeRule, applied chunk by chunk at
global indices) equals the Reader's whole-run rule (read_columns.purge_keep) for any
split of the points into chunks."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from summarylog.read_columns import purge_keep
from summarylog.read_stream import ResumeRule


@given(st.lists(st.integers(-5, 20), max_size=60),
       st.lists(st.tuples(st.integers(0, 70), st.integers(-5, 20)), max_size=12),
       st.integers(1, 61))
def test_chunked_rule_matches_the_whole_run_rule(steps: list[int],
                                                 markers: list[tuple[int, int]],
                                                 chunk: int) -> None:
    arr = np.array(steps, np.int64)
    markers = sorted(markers, key=lambda m: m[0])  # found in file order
    want = purge_keep(arr, markers) if markers else np.ones(len(arr), bool)
    rule = ResumeRule(markers)
    got = [rule.keep(first, arr[first : first + chunk]) for first in range(0, len(arr), chunk)]
    np.testing.assert_array_equal(np.concatenate(got) if got else np.ones(0, bool), want)
