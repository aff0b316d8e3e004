"""The summarylog exception tree."""

from __future__ import annotations


class SummarylogError(Exception):
    """Base class of every error summarylog raises on its own account."""


class CorruptRecordError(SummarylogError, ValueError):
    """A record stream is damaged (raised only by readers in strict mode).
    ``path``: the file; ``offset``: where the damage starts (in the
    decompressed stream of a zstd file, except for ``"bad_zstd_frame"``);
    ``kind``: the damage class, e.g. ``"bad_length_crc"``; ``length``: bytes
    skipped."""

    def __init__(self, path: str, offset: int, kind: str, length: int) -> None:
        super().__init__(f"{path}: {kind} at byte {offset} ({length} bytes)")
        self.path = path
        self.offset = offset
        self.kind = kind
        self.length = length
