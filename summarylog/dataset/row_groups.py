"""How a part's rows (one table per tag, in tag order) are cut into row groups.

A tag of at least :data:`GROUP_MIN` rows gets row groups of its own: their statistics
let a filter on the tag skip the others' (a group-by over every tag pays a little for
the extra row groups; docs/datasets.md weighs the two).  A row group costs a few KiB (footer entry, dictionary pages, a fresh zstd
context), a few percent of a tag this size; smaller tags share row groups so they
don't pay it.  No row group holds more than :data:`GROUP_MAX` rows."""

from __future__ import annotations

from typing import Iterator

__all__ = ["GROUP_MIN", "GROUP_MAX", "row_groups"]

GROUP_MIN = 1 << 14
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
