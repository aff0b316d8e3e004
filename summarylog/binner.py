"""Histogram events (TensorBoard's, or MindSpore's one Event a step) binned, encoded
and written by a native thread
(csrc/binner.c, csrc/lane.c).  Binning is the CPU-heavy part of logging: there it
holds no GIL and runs at nice 19, so it only takes a CPU the training threads leave
idle (a Python thread would compete with them for both).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ._native import ffi, lib

if TYPE_CHECKING:
    from .records.writer import RecordWriter

__all__ = ["Binner", "HistogramJob", "Lane", "BINNABLE", "LOW_PRIORITY"]

#: dtypes the native encoder takes (others take the Python encoder)
BINNABLE = (np.dtype(np.float32), np.dtype(np.float64))
#: nice value of the binner's thread (0..19): the lowest priority there is
LOW_PRIORITY = 19


def _check(rc: int, call: str) -> None:
    if rc:
        raise OSError(-rc, f"{call}: {os.strerror(-rc)}")


class HistogramJob:
    """Histogram events of ``(tag, values, bins[, step, wall_time])`` entries for one
    file, in order (C-contiguous float32/64 arrays the job keeps alive; ``bins <= 0``:
    MindSpore's bucket rule; step and wall time per entry, or given at submit)."""

    __slots__ = ("rw", "tags", "n", "native", "_items", "_tags", "_views", "__weakref__")

    def __init__(self, rw: "RecordWriter", entries: Sequence[tuple[Any, ...]]) -> None:
        if rw.compression is not None:
            raise ValueError("the binner writes framed records: the file must not be compressed")
        self.rw = rw
        self.n = n = len(entries)
        self.tags = [e[0] for e in entries]
        tags = [t.encode("utf-8") for t in self.tags]
        self._tags = ffi.new("char[]", b"".join(tags) or b"\0")
        self._views: list[Any] = []
        fields: list[dict[str, Any]] = []
        off = 0
        for entry, tag in zip(entries, tags):
            arr = entry[1]
            if arr.dtype not in BINNABLE or not arr.flags.c_contiguous:
                raise TypeError(f"values of {entry[0]!r} must be C-contiguous float32 or "
                                f"float64, got {arr.dtype} (contiguous: {arr.flags.c_contiguous})")
            self._views.append(ffi.from_buffer(arr))
            fields.append({"values": self._views[-1], "n": arr.size, "bins": entry[2],
                           "tag": self._tags + off, "tag_len": len(tag),
                           "is_f64": arr.dtype.itemsize == 8})
            if len(entry) > 3:
                fields[-1].update(step=entry[3], wall_time=entry[4])
            off += len(tag)
        self._items = items = ffi.new("slg_hist_item[]", fields or 1)
        self.native = ffi.new("slg_hist_job *", {"writer": rw.handle, "items": items, "n": n})

    def fallbacks(self) -> list[int]:
        """Entries left to Python, not written (no finite value, or float32 edges collapsed)."""
        return [i for i in range(self.n) if self._items[i].status == lib.SLG_HIST_FALLBACK]

    def failed(self) -> list[tuple[str, str]]:
        """``(tag, reason)`` of the entries the encoder refused (not written)."""
        return [(tag, os.strerror(-it.status)) for tag, it in zip(self.tags, self._items)
                if it.status < 0]

    def report(self) -> tuple[int, int]:
        """After the job finished: ``(events written, made but not written)``; the
        write error is reported as the file's own writes report theirs."""
        job = self.native
        rc = job.write_status
        if rc < 0:
            self.rw.report(rc)
        return int(job.records), int(job.dropped)


class Binner:
    """A native thread at ``nice`` that bins, encodes and writes :class:`HistogramJob`
    batches and :class:`Lane` collections in order; lane collections reach the file
    within ``poll_secs``."""

    def __init__(self, nice: int = LOW_PRIORITY, poll_secs: float = 0.5) -> None:
        h = ffi.new("slg_binner **")
        _check(lib.slg_binner_open(nice, poll_secs, h), "slg_binner_open")
        self.handle = ffi.gc(h[0], lib.slg_binner_free)
        # queued jobs stay alive until finished: the thread reads their memory
        self._queued: dict[int, HistogramJob] = {}

    def submit(self, job: HistogramJob, step: int | None = None,
               wall_time: float | None = None) -> int:
        """Queue ``job`` (``step``, ``wall_time``: for every entry); returns its ticket.
        Its file must stay open until it finished."""
        stamp = step is not None
        rc = lib.slg_binner_submit(self.handle, job.native, stamp, step if stamp else 0,
                                   wall_time if stamp else 0.0)
        if rc == -errno.EBADF:
            raise ValueError("the binner is closed")
        _check(rc, "slg_binner_submit")
        ticket = int(job.native.ticket)
        self._queued[ticket] = job
        return ticket

    def done(self) -> int:
        """The latest ticket finished."""
        return int(lib.slg_binner_done(self.handle))

    def _let_go(self) -> None:
        done = self.done()
        for ticket in [t for t in self._queued if t <= done]:
            self._queued.pop(ticket, None)

    def wait(self, ticket: int) -> None:
        """Return once ``ticket`` finished (the GIL released meanwhile)."""
        _check(lib.slg_binner_wait(self.handle, ticket), "slg_binner_wait")
        self._let_go()

    def flush(self) -> None:
        """Return once every job queued before the call finished."""
        _check(lib.slg_binner_flush(self.handle), "slg_binner_flush")
        self._let_go()

    def close(self) -> None:
        """Finish the queued jobs and stop the thread.  Idempotent."""
        lib.slg_binner_close(self.handle)
        self._queued.clear()


class Lane:
    """A ring of ``slots`` private copies of ``entries`` (``(tag, array)`` views of
    C-contiguous float32/64 memory kept in place, e.g. a model's parameters), each
    collection copied and queued on a :class:`Binner` in one native call; its histogram
    events (MindSpore's rule) follow the ``scalar_tag`` event into ``rw``; with
    ``mindspore=True`` a collection is one MindSpore Event, as a recorded step.  Not
    thread-safe."""

    __slots__ = ("rw", "binner", "tags", "scalar_tag", "_arrays", "_h")

    def __init__(self, binner: Binner, rw: "RecordWriter", scalar_tag: str,
                 entries: Sequence[tuple[str, np.ndarray]], slots: int = 8,
                 mindspore: bool = False) -> None:
        if rw.compression is not None:
            raise ValueError("the binner writes framed records: the file must not be compressed")
        for tag, arr in entries:
            if arr.dtype not in BINNABLE or not arr.flags.c_contiguous:
                raise TypeError(f"the lane's {tag!r} must view C-contiguous float32 or float64 "
                                f"memory, got {arr.dtype}")
        self.rw, self.binner = rw, binner  # (kept alive while the lane is)
        self.tags = [e[0] for e in entries]
        self._arrays = [e[1] for e in entries]
        self.scalar_tag = scalar_tag
        tags = [t.encode("utf-8") for t in self.tags]
        stag = scalar_tag.encode("utf-8")
        h = ffi.new("slg_lane **")
        rc = lib.slg_lane_open(binner.handle, rw.handle, len(entries),
                               [a.ctypes.data for a in self._arrays],
                               [a.size for a in self._arrays],
                               bytes(a.dtype.itemsize == 8 for a in self._arrays),
                               b"".join(tags), list(map(len, tags)), stag, len(stag), slots,
                               lib.SLG_DIALECT_MS if mindspore else lib.SLG_DIALECT_TB, h)
        _check(rc, "slg_lane_open")
        self._h = ffi.gc(h[0], lib.slg_lane_free)

    def collect(self, scalar: float | None, step: int, wall_time: float) -> bool:
        """Copy the tensors now and queue the collection; False when not taken (no free
        slot, the binner closed, a forked child).  Reports an earlier write error."""
        rc = lib.slg_lane_collect(self._h, scalar is not None, scalar or 0.0, step, wall_time)
        if rc == 0:
            return True
        if rc > 0 or rc == -errno.ECHILD:
            return False
        self.rw.report(rc)  # queued; the error is an earlier one's
        return True

    def take_error(self) -> None:
        """Report a finished collection's write error, as :meth:`collect` does."""
        rc = lib.slg_lane_take_error(self._h)
        if rc and rc != -errno.ECHILD:
            self.rw.report(rc)

    @property
    def stats(self) -> dict[str, int]:
        """collections, busy (no free slot), events (written), dropped (made, not
        written), failed (refused by the encoder), pending, slots, slot_bytes."""
        st = ffi.new("slg_lane_stats *")
        lib.slg_lane_get_stats(self._h, st)
        return {k: getattr(st, k) for k in ("collections", "busy", "events", "dropped",
                                             "failed", "pending", "slots", "slot_bytes")}
