"""How a part's rows (one table per tag, in tag order) are cut into row groups.

A tag of at least :data:`GROUP_MIN` rows (a full page) gets row groups of its own: their
statistics let a filter on the tag skip the others'.  Smaller tags share row groups of
about that size: each row group costs every reader a setup (footer entry, dictionary
pages, a zstd context), and a group-by over every tag of many small runs pays it per
row group (docs/datasets.md weighs the two).  No row group holds more than
:data:`GROUP_MAX` rows."""

from __future__ import annotations

from typing import Iterator

__all__ = ["GROUP_MIN", "GROUP_MAX", "row_groups"]

GROUP_MIN = 1 << 17  # scalar_parquet's page: a row group of this size is one page a column
GROUP_MAX = 1 << 20


def row_groups(counts: list[int]) -> Iterator[list[tuple[int, int, int]]]:
    """The row groups over tags of ``counts`` rows: each a list of (tag index, first
    row, end row) slices, in tag order; empty tags are left out."""
    small: list[tuple[int, int, int]] = []
    rows = 0
    for i, n in enumerate(counts):
        if n >= GROUP_MIN:
            if small:
                yield small
                small, rows = [], 0
            for a in range(0, n, GROUP_MAX):
                yield [(i, a, min(n, a + GROUP_MAX))]
        elif n:
            small.append((i, 0, n))
            rows += n
            if rows >= GROUP_MIN:
                yield small
                small, rows = [], 0
    if small:
        yield small
