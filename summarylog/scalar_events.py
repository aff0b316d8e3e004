"""A queued scalar event is one little-endian bytes record (also packed by
csrc/pyext/speedups.c)::

    u32 key, u32 0, i64 step, f64 wall_time, f64 value[k]

``key`` indexes a set of ``k`` tags.  Bytes are not tracked by the garbage collector,
so the hot loop queues no collectable objects; runs of records become columns for one
native call.
"""

from __future__ import annotations

import struct
import threading
from array import array
from typing import Any, Callable

import numpy as np

from .checks import check_tag

__all__ = ["ScalarEvents", "HEAD"]

HEAD = 24  # bytes before the values
_HEAD_FIELDS = [("key", "<u4"), ("pad", "<u4"), ("step", "<i8"), ("wall", "<f8")]
_MAX_CACHED_SETS = 1024


class ScalarEvents:
    """The tags and key sets of one writer's scalar events (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tag_ids: dict[str, int] = {}
        self._tag_data = bytearray()
        self._tag_offsets = array("Q", [0])
        self._key_tids: list[np.ndarray] = []  # tag ids of each key set
        #: tag -> (key index of the one-tag set, its packer): add_scalar's lookup
        self.single: dict[str, tuple[int, Callable[..., bytes]]] = {}
        self._sets: dict[tuple[str, ...], tuple[int, Callable[..., bytes]]] = {}
        self._layouts: dict[int, np.dtype] = {}  # record layout by value count

    def _tag_id(self, tag: str) -> int:  # under self._lock
        tid = self._tag_ids.get(tag)
        if tid is None:
            tid = self._tag_ids[tag] = len(self._tag_ids)
            self._tag_data += tag.encode("utf-8")
            self._tag_offsets.append(len(self._tag_data))
        return tid

    def key_set(self, tags: tuple[str, ...], name: str = "tag") -> tuple[int, Callable[..., bytes]]:
        """``(key, pack)`` of checked tags: ``pack(key, 0, step, wall, *values)`` packs."""
        if all(type(t) is str for t in tags):
            entry = self._sets.get(tags)
            if entry is not None:
                return entry
        for tag in tags:
            check_tag(tag, name if len(tags) == 1 else f"scalars key {tag!r}")
        with self._lock:
            entry = self._sets.get(tags)
            if entry is None:
                ids = np.array([self._tag_id(t) for t in tags], np.uint32)
                entry = (len(self._key_tids), struct.Struct("<IIqd" + "d" * len(tags)).pack)
                self._key_tids.append(ids)
                if len(self._sets) < _MAX_CACHED_SETS or len(tags) == 1:
                    self._sets[tags] = entry
                if len(tags) == 1:
                    self.single[tags[0]] = entry
        return entry

    def tag_table(self) -> tuple[bytes, array]:
        """Every tag's UTF-8 bytes, concatenated, and their offsets."""
        with self._lock:
            return bytes(self._tag_data), array("Q", self._tag_offsets)

    def columns(self, run: list[bytes]) -> tuple[int, Any, Any, Any, Any, Any]:
        """``(n, walls, steps, counts, tag_ids, values)`` of consecutive records."""
        n, size = len(run), len(run[0])
        if all(len(r) == size for r in run):  # the usual run: one layout, numpy views
            k = (size - HEAD) // 8
            layout = self._layouts.get(k)
            if layout is None:
                layout = self._layouts[k] = np.dtype(_HEAD_FIELDS + [("vals", "<f8", (k,))])
            rec = np.frombuffer(b"".join(run), layout)
            vals = np.ascontiguousarray(rec["vals"]).reshape(-1)
        else:  # records of several sizes (add_scalar and log() interleaved)
            rec = np.frombuffer(b"".join([r[:HEAD] for r in run]), np.dtype(_HEAD_FIELDS))
            vals = np.frombuffer(b"".join([r[HEAD:] for r in run]), "<f8")
        keys = rec["key"]
        if (keys == keys[0]).all():
            tids = self._key_tids[int(keys[0])]
            ids, counts = np.tile(tids, n), np.full(n, len(tids), np.uint32)
        else:
            sets = [self._key_tids[int(i)] for i in keys]
            ids, counts = np.concatenate(sets), np.array([len(t) for t in sets], np.uint32)
        return (n, np.ascontiguousarray(rec["wall"]), np.ascontiguousarray(rec["step"]),
                counts, ids, vals)
