"""Per-thread scratch memory for RecordReader: the buffer a plain file's bytes are read
into and the scanner's span slots, handed back when a reader closes and taken by the
next one the thread opens.

A reader of many files in turn (an export, a thread of the Reader's pool) would
otherwise allocate a file's worth of fresh memory for each: the allocator returns it
to the system when freed, and the kernel zeroes every page again when it is touched
(the figures are in docs/datasets.md).  A thread keeps at most one of each, the buffer
only up to :data:`KEEP_BYTES`."""

from __future__ import annotations

import threading
from typing import Any

from .._native import ffi

__all__ = ["take_buffer", "give_buffer", "take_spans", "give_spans", "KEEP_BYTES"]

KEEP_BYTES = 8 << 20  #: the largest buffer a thread keeps (RecordReader's default chunk)
# span slots are written by the scanner before they are read: no need to clear them
_new_uncleared = ffi.new_allocator(should_clear_after_alloc=False)


class _Kept(threading.local):
    def __init__(self) -> None:
        self.buffer: bytearray | None = None
        self.spans: tuple[int, Any] | None = None


_kept = _Kept()


def take_buffer(n: int) -> bytearray:
    """A buffer of at least ``n`` bytes: this thread's kept one when large enough."""
    buf = _kept.buffer
    if buf is not None and len(buf) >= n:
        _kept.buffer = None
        return buf
    return bytearray(n)


def give_buffer(buf: bytearray) -> None:
    """Keep ``buf`` for the thread's next reader (when it is not too large); the giver
    must not use it, nor any view of it, afterwards."""
    if len(buf) <= KEEP_BYTES and (_kept.buffer is None or len(_kept.buffer) < len(buf)):
        _kept.buffer = buf


def take_spans(n: int) -> tuple[int, Any]:
    """(slots, a ``slg_span[]`` of that many, at least ``n``; contents undefined)."""
    kept = _kept.spans
    if kept is not None and kept[0] >= n:
        _kept.spans = None
        return kept
    return n, _new_uncleared("slg_span[]", n)


def give_spans(spans: Any, n: int) -> None:
    """Keep the ``n`` slots of ``spans`` for the thread's next reader."""
    if _kept.spans is None or _kept.spans[0] < n:
        _kept.spans = (n, spans)
