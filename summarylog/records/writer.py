"""RecordWriter: payloads in, TFRecord records on disk, through the native buffered writer
(``slg_writer_*``) and its flusher thread; what a crash can lose: the README's durability
table.  ``compression="zstd"`` writes one zstd frame per flush (``zstd -d`` gives a plain
TFRecord file): a crash loses at most the block not yet flushed.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
from array import array
from typing import Any, Iterable, NamedTuple

from .._native import as_buffer, ffi, lib, raise_errno

__all__ = ["RecordWriter", "WriterStats", "DURABILITY", "ON_FULL", "MAX_PAYLOAD"]

log = logging.getLogger("summarylog")

DURABILITY = {
    "none": lib.SLG_DURABILITY_NONE,
    "flush": lib.SLG_DURABILITY_FLUSH,
    "fsync": lib.SLG_DURABILITY_FSYNC,
}
ON_FULL = {"block": lib.SLG_ON_FULL_BLOCK, "drop": lib.SLG_ON_FULL_DROP}
#: the largest payload one record may carry (bytes): 2 GiB - 1
MAX_PAYLOAD: int = lib.SLG_MAX_PAYLOAD
_MANY_SLICE = 4096  # payloads per native call in write_many
# id() is the object's address only in CPython: the list fast path needs it
_HAS_ID_ADDRESSES = sys.implementation.name == "cpython"


class WriterStats(NamedTuple):
    """A snapshot of a RecordWriter's counters (bytes are file bytes)."""

    records_accepted: int  #: records framed into the buffer
    records_written: int  #: records that reached the OS
    bytes_written: int  #: file bytes that reached the OS
    records_dropped: int  #: dropped because the buffer was full (on_full="drop")
    records_lost: int  #: lost to I/O errors
    bytes_lost: int
    flushes: int  #: write rounds that wrote something
    fsyncs: int  #: fdatasync calls
    errors: int  #: I/O errors seen
    blocked_seconds: float  #: time callers waited for buffer space
    buffered_bytes: int  #: accepted, not yet at the OS
    file_size: int  #: bytes in the file
    last_errno: int  #: errno of the latest I/O error, 0 if none
    closed: bool


def _check_positive(name: str, value: Any, kind: type = int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise TypeError(f"{name} must be {'a number' if kind is float else 'an int'}, "
                        f"got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


class RecordWriter:
    """Write TFRecord records to a new file, buffered in C.

    Args:
      path: the file to create; it must not exist (opened with O_EXCL: never truncates
        or appends).  With ``compression="zstd"``, ``.zst`` is appended unless present.
      flush_secs: the flusher writes the buffer at least this often (s; default 1.0).
      durability: ``"none"``, ``"flush"`` (default: ``close()`` fdatasyncs) or ``"fsync"``
        (every write round and ``flush()`` end with an fdatasync).
      compression: ``None`` (default) or ``"zstd"``.
      flush_bytes: buffered bytes that wake the flusher early (default 1 MiB).
      max_buffer: cap on buffered bytes (default 64 MiB; a larger record is taken alone);
        memory is up to twice this (one buffer fills while one is written).
      on_full: when the buffer is full, ``"block"`` (default) waits for the disk,
        ``"drop"`` drops the record and counts it.
      strict: True (default): an I/O error raises OSError (with the path) from the next
        call, ``flush()`` or ``close()``; False: counted in :attr:`stats`, logged once.
      mode: permission bits of the new file (default 0o644, before umask).

    Thread-safe: a record is never torn or interleaved with another.
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_secs: float = 1.0,
                 durability: str = "flush", compression: str | None = None,
                 flush_bytes: int = 1 << 20, max_buffer: int = 64 << 20,
                 on_full: str = "block", strict: bool = True, mode: int = 0o644) -> None:
        path = os.fspath(path)
        if not isinstance(path, str):
            raise TypeError(f"path must be str or PathLike[str], got {type(path).__name__}")
        _check_positive("flush_secs", flush_secs, float)
        _check_positive("flush_bytes", flush_bytes)
        _check_positive("max_buffer", max_buffer)
        for name, value, known in (("durability", durability, DURABILITY),
                                   ("on_full", on_full, ON_FULL)):
            if value not in known:
                raise ValueError(f"{name} must be one of {sorted(known)}, got {value!r}")
        if compression not in (None, "zstd"):
            raise ValueError(f"compression must be None or 'zstd', got {compression!r}")
        if compression == "zstd" and not path.endswith(".zst"):
            path += ".zst"
        self.path = path
        self.durability = durability
        self.compression = compression
        self.strict = bool(strict)
        self._warned = False
        self._closed = False
        out = ffi.new("slg_writer **")
        rc = lib.slg_writer_open(os.fsencode(path), mode, float(flush_secs), flush_bytes,
                                 max(max_buffer, 64), DURABILITY[durability], ON_FULL[on_full], out)
        if rc < 0:
            raise_errno(rc, path)
        self._h = ffi.gc(out[0], lib.slg_writer_free)
        self._pid = os.getpid()
        self._zstd = _ZstdBlocks(self, flush_secs, flush_bytes) if compression else None

    # -- writing -----------------------------------------------------------
    def _refuse_closed(self, what: str = "write to") -> None:
        if self._closed:
            raise ValueError(f"{what} closed RecordWriter ({self.path})")

    def write(self, payload: Any) -> bool:
        """Frame and buffer one payload (any bytes-like object): True if buffered,
        False if dropped (``on_full="drop"``)."""
        self._refuse_closed()
        if self._zstd is not None:
            return self._zstd.write(payload)
        buf = as_buffer(payload, "payload")
        rc = lib.slg_writer_write(self._h, buf, len(buf))
        return self.report(rc) if rc else True

    def write_many(self, payloads: Iterable[Any]) -> int:
        """Frame and buffer many payloads in one native call; returns how many were
        buffered (fewer only with ``on_full="drop"``)."""
        self._refuse_closed()
        if not isinstance(payloads, (list, tuple)):
            payloads = list(payloads)
        if self._zstd is not None:
            self._check_sizes(payloads)
            return sum(self._zstd.write(p) for p in payloads)
        accepted = ffi.new("uint64_t *")
        if type(payloads) is list and _HAS_ID_ADDRESSES:
            # C walks the list itself (csrc/python/pyobjects.c): no per-item Python
            rc = lib.slg_writer_write_pylist(self._h, ffi.cast("void *", id(payloads)), accepted)
            if rc != -errno.EINVAL:  # EINVAL: not all exact bytes, take the general path
                if rc:
                    self.report(rc)
                return int(accepted[0])
        self._check_sizes(payloads)
        total = 0
        # slices of a few thousand: joins stay in cache, no 100 MB temporaries
        for i in range(0, len(payloads), _MANY_SLICE):
            part = payloads[i : i + _MANY_SLICE]
            concat = b"".join(part)
            lens = array("Q", map(len, part))
            if sum(lens) != len(concat):  # memoryviews of wider items: count bytes
                lens = array("Q", (memoryview(p).nbytes for p in part))
            rc = lib.slg_writer_write_many(self._h, concat, ffi.from_buffer("uint64_t[]", lens),
                                           len(part), accepted)
            total += int(accepted[0])
            if rc:
                self.report(rc)  # raises for errors (strict); drops were counted in C
        return total

    def write_framed(self, data: Any, records: int) -> None:
        """Buffer ``records`` records already framed back to back (compressed like the rest)."""
        self._refuse_closed()
        if self._zstd is not None:
            self._zstd.write_framed(data, records)
            return
        buf = as_buffer(data)
        rc = lib.slg_writer_write_raw(self._h, buf, len(buf), records)
        if rc:
            self.report(rc)

    # -- flushing and closing ----------------------------------------------
    def flush(self) -> None:
        """Return once everything written so far reached the OS (and the disk, with fsync)."""
        self._refuse_closed("flush of")
        if self._zstd is not None:
            self._zstd.flush()
        rc = lib.slg_writer_flush(self._h)
        if rc:
            self.report(rc)

    def close(self) -> None:
        """Flush, fdatasync (unless ``durability="none"``) and close.  Idempotent; raises
        (strict) the first I/O error not yet reported."""
        if self._closed:
            return
        try:
            if self._zstd is not None:
                self._zstd.close()
        finally:
            self._closed = True
            rc = lib.slg_writer_close(self._h)
        if rc and rc != -errno.ECHILD:  # a forked child's close only lets go of its descriptor
            self.report(rc)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def handle(self) -> Any:
        """The native ``slg_writer *`` the binner and scalar encoder frame into (while open)."""
        return self._h

    def abandon(self) -> None:
        """In a forked child: this is the parent's file; never flush or close it here."""
        self._closed = True

    @property
    def stats(self) -> WriterStats:
        """Counters; see :class:`WriterStats`."""
        st = ffi.new("slg_writer_stats *")
        lib.slg_writer_get_stats(self._h, st)
        return WriterStats(*(getattr(st, f) for f in WriterStats._fields[:9]),
                           st.blocked_ns / 1e9, st.buffered_bytes, st.file_size,
                           st.last_errno, bool(st.closed))

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RecordWriter {self.path!r} {state} durability={self.durability!r}>"

    # -- errors ------------------------------------------------------------
    def _check_sizes(self, payloads: Any) -> None:
        """All or nothing: one payload over MAX_PAYLOAD refuses the batch."""
        if any(memoryview(p).nbytes > MAX_PAYLOAD for p in payloads):
            self.report(-errno.EMSGSIZE)

    def report(self, rc: int) -> bool:
        """Report a native status code of a write into :attr:`handle`: False for a
        record dropped (``on_full="drop"``); an error raised (strict) or counted and
        logged once."""
        if rc == lib.SLG_DROPPED:
            return False
        if rc == -errno.EMSGSIZE:
            raise ValueError(f"payload: a record may carry at most {MAX_PAYLOAD} bytes "
                             f"(2 GiB - 1, protobuf's message limit); nothing was written "
                             f"to {self.path}")
        if rc == -errno.EBADF and self._closed:
            raise ValueError(f"RecordWriter is closed ({self.path})")
        if rc == -errno.ECHILD:  # a forked child's copy
            raise RuntimeError(f"RecordWriter {self.path} belongs to process {self._pid}, "
                               f"not this forked child ({os.getpid()}): open a new one here")
        if self.strict:
            raise_errno(rc, self.path)
        if not self._warned:
            self._warned = True
            log.warning("summarylog: I/O error on %s: %s (errno %d); records are being "
                        "lost, see RecordWriter.stats; logging once", self.path,
                        os.strerror(-rc), -rc)
        return True


class _ZstdBlocks:
    """Framed records pending in a block, compressed into one zstd frame per flush on
    a background thread and handed to the native writer as raw bytes."""

    def __init__(self, owner: RecordWriter, flush_secs: float, flush_bytes: int) -> None:
        import zstandard

        self._owner = owner
        self._cctx = zstandard.ZstdCompressor(level=3, write_content_size=True)
        self._lock = threading.Lock()
        self._pending = bytearray()
        self._records = 0
        self._flush_secs = flush_secs
        self._flush_bytes = flush_bytes
        self._wake = threading.Event()
        self._stop = False
        self._error = 0  # a strict writer's block error, raised by the next call
        self._io_lock = threading.Lock()  # one block compressed+written at a time, in order
        self._thread = threading.Thread(target=self._run, name="summarylog-zstd", daemon=True)
        self._thread.start()

    def write(self, payload: Any) -> bool:
        self._take_error()
        buf = as_buffer(payload, "payload")
        n = len(buf)
        if n > MAX_PAYLOAD:
            self._owner.report(-errno.EMSGSIZE)
        framed = bytearray(n + 16)
        lib.slg_frame(ffi.from_buffer(framed), buf, n)
        self.write_framed(framed, 1)
        return True

    def _take_error(self) -> None:
        """A block's write error (strict), raised from the next call."""
        if self._error:
            rc, self._error = self._error, 0
            self._owner.report(rc)

    def write_framed(self, data: Any, records: int) -> None:
        self._take_error()
        with self._lock:
            self._pending += data
            self._records += records
            big = len(self._pending) >= self._flush_bytes
        if big:
            self._wake.set()

    def _emit(self) -> None:
        with self._io_lock:
            with self._lock:
                block, records = self._pending, self._records
                self._pending, self._records = bytearray(), 0
            if block:
                frame = self._cctx.compress(bytes(block))
                rc = lib.slg_writer_write_raw(self._owner.handle, frame, len(frame), records)
                if rc == 0:
                    rc = lib.slg_writer_flush(self._owner.handle)
                if rc and not self._owner.strict:
                    self._owner.report(rc)
                elif rc:
                    self._error = rc

    def _run(self) -> None:
        while not self._stop:
            self._wake.wait(self._flush_secs)
            self._wake.clear()
            if not self._stop:
                self._emit()

    def flush(self) -> None:
        self._emit()
        self._take_error()

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join()
        self.flush()
