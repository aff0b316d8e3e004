"""Where a file's tags first hold a plugin tensor, for tbparse's order of tensor tags.

tbparse files values as TensorBoard's EventAccumulator does: by the Summary.Value field
that holds them, and lists tensor tags (and stacks their rows) in the order the file first
holds each.  Scalars-plugin tensors come from the Reader's columns, which keep no file
order, so the first tensor of each tag is looked up in the file's bytes, as frames_leaf
does for simple-value scalars."""

from __future__ import annotations

import mmap
import os
import stat
from .discovery import dialect_of
from .pb import len_field

__all__ = ["TensorForms", "tensor_offsets", "value_offsets"]

_TENSOR_KEY = b"\x42"  # Summary.Value field 8 (tensor), length-delimited
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def value_offsets(path: str, tags: list[str], key: bytes) -> dict[str, int] | None:
    """Where each of ``tags`` first has a Summary.Value field starting with ``key`` right
    after its tag field (fields are serialized in number order, so nothing sits between
    them): the byte offset of that tag field; tags never so written are left out.  None
    for MindSpore files and for files not searchable as bytes (compressed, unreadable,
    not a regular file)."""
    if dialect_of(path) == "mindspore":
        return None
    try:
        # non-blocking, and regular files only: a FIFO named like an event file must not hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            if m[:4] == _ZSTD_MAGIC:
                return None
            found = {t: m.find(len_field(1, t.encode("utf-8", "surrogateescape")) + key)
                     for t in tags}
            return {t: at for t, at in found.items() if at >= 0}
    except (OSError, ValueError):  # empty file (mmap of 0 bytes) or unreadable
        return None
    finally:
        os.close(fd)


def tensor_offsets(path: str, tags: list[str]) -> dict[str, int]:
    """Where each of ``tags`` first holds a tensor in the file (:func:`value_offsets`);
    empty when the file cannot be searched."""
    return (value_offsets(path, tags, _TENSOR_KEY) or {}) if tags else {}


class TensorForms:
    """One file's tensor tags in the file's order (tbparse lists them, and stacks their
    rows, so).  Each tag is looked up once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset: dict[str, int | None] = {}

    def _look(self, tags: list[str]) -> None:
        missing = [t for t in dict.fromkeys(tags) if t not in self._offset]
        if missing:
            found = tensor_offsets(self.path, missing)
            self._offset.update({t: found.get(t) for t in missing})

    def order(self, tags: list[str]) -> list[str]:
        """``tags`` by their first tensor in the file; those not found after, as given."""
        self._look(tags)

        def first(tag: str) -> tuple[bool, int]:
            at = self._offset[tag]
            return at is None, at or 0
        return sorted(dict.fromkeys(tags), key=first)  # stable: the unfound keep their order
