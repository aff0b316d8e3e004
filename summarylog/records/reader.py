"""RecordReader: TFRecord files (plain or zstd) back into payloads, validated by the
native scanner (``slg_scan``).  Damage and unfinished tails are reported as
docs/format.md §2-3 classifies them; no length read from the file is trusted (zstd
output is bounded per step by :mod:`.zstd_source`); only regular files are read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from typing import Any, Callable, Iterator, NamedTuple

from .._native import ffi, lib
from ..errors import CorruptRecordError
from .scratch import give_buffer, give_spans, take_buffer, take_spans
from .zstd_source import UNKNOWN_END as _UNKNOWN_END
from .zstd_source import ZSTD_MAGIC, ZstdSource, starts_zstd

__all__ = ["RecordReader", "Damage", "Tail", "ZSTD_MAGIC"]

_KINDS = {getattr(lib, f"SLG_DAMAGE_{kind.upper()}"): kind  # Damage.kind by SLG_DAMAGE_*
          for kind in ("bad_length_crc", "bad_data_crc", "length_past_eof", "zero_fill")}
TAIL_KINDS = {lib.SLG_SCAN_TORN: "torn", lib.SLG_SCAN_ZERO_TAIL: "zero_tail"}  #: Tail.kind
_SPANS = 1 << 16
DAMAGE_SLOTS = 256
#: damaged regions a reader or report lists; past it they are only counted
DAMAGE_CAP = 1000
SMALL_FILE = 1 << 16  # files up to this size are read whole when opened (bytes)
_PREADV = getattr(os, "preadv", None)  # not on every platform: there, bytes as read
# id() is the object's address only in CPython: the C list builder needs it
_HAS_ID_ADDRESSES = sys.implementation.name == "cpython"


class Damage(NamedTuple):
    """One damaged region that was skipped."""

    offset: int  #: first byte (zstd: decompressed offset; "bad_zstd_frame": compressed)
    kind: str  #: "bad_length_crc", "bad_data_crc", "length_past_eof", "zero_fill", "bad_zstd_frame"
    length: int  #: bytes skipped


class Tail(NamedTuple):
    """An unfinished end of file: bytes that are not (yet) a whole record."""

    offset: int  #: where the unfinished record starts; reading resumes here
    kind: str  #: "torn" (partial record) or "zero_tail" (zero-filled)
    length: int  #: bytes from offset to the end of the data


def damage_list(dmg: Any, n: int) -> list[Damage]:
    """The first ``n`` entries of a ``slg_damage[]`` as :class:`Damage`."""
    flat = memoryview(ffi.buffer(dmg)).cast("q")[: 3 * n].tolist()  # offset, length, kind|pad
    return [Damage(flat[i], _KINDS[flat[i + 2] & 0xFFFFFFFF], flat[i + 1])
            for i in range(0, len(flat), 3)]


class _PlainSource:
    """A plain file's bytes, read into one buffer kept for the reader's life (and then
    for the thread's next reader, see :mod:`.scratch`): :meth:`read` returns a
    ``char[]`` view of it, valid until the next read or :meth:`release`."""

    def __init__(self, fd: int, first: bytes | None = None) -> None:
        self.fd = fd
        self._first = first  # a small file's content, read with its header: no second read
        self._buf: bytearray | None = None
        self._cbuf: Any = None  # a char[] over _buf (views are slices of it, not memoryviews)

    def read(self, pos: int, want: int) -> tuple[Any, int]:
        first, self._first = self._first, None
        if first is not None and pos == 0 and want >= len(first):
            return first, len(first)
        size = os.fstat(self.fd).st_size
        n = max(0, min(want, size - pos))
        if not n or _PREADV is None:
            data = os.pread(self.fd, n, pos) if n else b""
            return data, pos + len(data) if len(data) < n else size
        if self._buf is None or len(self._buf) < n:
            self.release()
            self._buf = take_buffer(n)
            self._cbuf = ffi.from_buffer("char[]", self._buf)
        with memoryview(self._buf) as whole, whole[:n] as view:
            got = _PREADV(self.fd, [view], pos)
        return self._cbuf[0:got], pos + got if got < n else size

    def release(self) -> None:
        """Hand the buffer on: nothing read from this source is used afterwards."""
        if self._buf is not None:
            self._cbuf = None
            give_buffer(self._buf)
            self._buf = None


def _bytes(buf: Any, start: int, end: int) -> bytes:
    """Bytes [start, end) of a buffer :meth:`_PlainSource.read` or ZstdSource returned."""
    return ffi.buffer(buf)[start:end] if isinstance(buf, ffi.CData) else buf[start:end]


class RecordReader:
    """Read the payloads of a TFRecord file (plain or zstd-compressed).

    Args:
      path: the file (a FIFO, socket or device is refused with an OSError, no wait).
      strict: raise CorruptRecordError at the first damage (default False: record it).
      verify: check data CRCs (default True; length CRCs are always checked).
      chunk_size: bytes read per step (default 8 MiB; a longer record is read whole
        once its length is known to fit in the file).

    Iterating yields payloads from :attr:`offset` to the current end of the file;
    iterate again, or :meth:`follow`, for records appended later.  Not thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str], *, strict: bool = False,
                 verify: bool = True, chunk_size: int = 8 << 20) -> None:
        self.path = os.fspath(path)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
            raise TypeError(f"chunk_size must be an int, got {type(chunk_size).__name__}")
        if chunk_size < 64:
            raise ValueError(f"chunk_size must be >= 64, got {chunk_size}")
        self.strict = strict
        self._chunk = chunk_size
        self._fd = -1
        # O_NONBLOCK: opening a FIFO must not wait; the open descriptor decides
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, "Is a directory", self.path)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device "
                              "is never read as an event file)", self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.size = st.st_size  #: the file's size when opened (bytes)
        small = st.st_size <= SMALL_FILE
        head = os.pread(fd, st.st_size if small else 4, 0)
        self.compressed = starts_zstd(head) or (self.path.endswith(".zst") and not head)
        self._pending_zstd: list[Damage] = []
        self._source: Any = (
            ZstdSource(fd, lambda at, n: self._pending_zstd.append(Damage(at, "bad_zstd_frame", n)))
            if self.compressed else _PlainSource(fd, head if small else None))
        self._state = ffi.new("slg_scan_state *", {"verify_data": 1 if verify else 0})
        # span slots: one per 16 bytes of file at most (a small file needs few)
        self._nspans, self._spans = take_spans(
            max(64, min(_SPANS, st.st_size // 16 + 1)) if not self.compressed else _SPANS)
        self._dmg = ffi.new("slg_damage[]", DAMAGE_SLOTS)
        self._nsp = ffi.new("uint64_t *")
        self._ndm = ffi.new("uint64_t *")
        #: damaged regions skipped so far, in file order: the first DAMAGE_CAP (a crafted
        #: file holds one per 16 bytes), the rest counted in damage_past_cap
        self.damage: list[Damage] = []
        self.damage_past_cap = 0
        self.tail: Tail | None = None  #: the unfinished end after the latest read, or None
        self.records_read = 0  #: payloads returned so far

    @property
    def offset(self) -> int:
        """Offset where the next record starts (decompressed, for zstd)."""
        return int(self._state.pos) if not self._state.resyncing else int(self._state.damage_start)

    def add_damage(self, d: Damage) -> None:
        """Record a damage from :meth:`scan_batches` (CorruptRecordError in strict mode)."""
        if len(self.damage) < DAMAGE_CAP:
            self.damage.append(d)
        else:
            self.damage_past_cap += 1
        if self.strict:
            raise CorruptRecordError(self.path, d.offset, d.kind, d.length)

    def read(self) -> Iterator[bytes]:
        """Yield every whole record from :attr:`offset` to the end of the data
        as it is now, then set :attr:`tail`."""
        sview = memoryview(ffi.buffer(self._spans)).cast("Q")
        for buf, base, n, batch in self.scan_batches():
            if n and not batch and _HAS_ID_ADDRESSES:  # the common case: C makes the bytes
                out: list[bytes] = []
                if lib.slg_spans_to_pylist(buf, base, self._spans, n,
                                           ffi.cast("void *", id(out))) < 0:
                    raise MemoryError("slg_spans_to_pylist")
                self.records_read += n
                yield from out
                continue
            j = 0
            flat = sview[: 2 * n].tolist()  # offset, length of each record
            for start, length in zip(flat[::2], flat[1::2]):
                # damage first: strict mode raises before yielding what follows it
                while j < len(batch) and batch[j].offset < start:
                    self.add_damage(batch[j])
                    j += 1
                self.records_read += 1
                yield _bytes(buf, start - base, start - base + length)
            for d in batch[j:]:
                self.add_damage(d)

    __iter__ = read

    def scan_batches(self) -> Iterator[tuple[Any, int, int, list[Damage]]]:
        """The scanner's raw output, for native decoders: ``(buf, base, n, damage)``
        per scan step; :attr:`spans` ``[0:n]`` locate the payloads in ``buf`` (file
        bytes from ``base``: bytes or a ``char[]``, valid until the next step).  The
        caller records ``damage`` (see :meth:`read`)."""
        if self._fd < 0:
            raise ValueError(f"read from closed RecordReader ({self.path})")
        st, spans, dmg, nsp, ndm = self._state, self._spans, self._dmg, self._nsp, self._ndm
        self.tail = None
        buf, data_end = self._source.read(st.pos, self._chunk)
        base = st.pos
        while True:
            rc = lib.slg_scan(st, buf, len(buf), base, data_end, 0, spans, self._nspans, nsp,
                              dmg, DAMAGE_SLOTS, ndm)
            if rc < 0:  # pragma: no cover - internal contract
                raise RuntimeError(f"slg_scan: bad arguments ({rc})")
            while self._pending_zstd:
                self.add_damage(self._pending_zstd.pop(0))
            yield buf, base, int(nsp[0]), damage_list(dmg, ndm[0]) if ndm[0] else []
            if rc == lib.SLG_SCAN_SPANS_FULL:
                continue
            if rc == lib.SLG_SCAN_NEED_MORE:
                want = self._chunk
                known_end = None  # a zstd stream's end, found by decoding ahead
                rel = st.pos - base
                head = _bytes(buf, rel, rel + 12)
                if len(head) == 12 and lib.slg_masked_crc32c(head, 8) == int.from_bytes(
                        head[8:], "little"):
                    # a valid header (its record fits the data, or the end is unknown)
                    length = int.from_bytes(head[:8], "little")
                    if not self.compressed or length + 16 <= want:
                        want = max(want, length + 16)
                    else:
                        # the stream's end is unknown: decode ahead, output not kept (a bomb)
                        known_end = self._source.end_before(st.pos, st.pos + length + 16)
                        if known_end is None and length > lib.SLG_MAX_PAYLOAD:
                            # no writer makes such a record: damage, not held
                            known_end = min(st.pos + 15 + length, _UNKNOWN_END - 1)
                        elif known_end is None:
                            want = length + 16
                buf, data_end = self._source.read(st.pos, want)
                base = st.pos
                if known_end is not None and data_end == _UNKNOWN_END:
                    data_end = known_end
                continue
            if rc in TAIL_KINDS:
                self.tail = Tail(int(st.pos), TAIL_KINDS[rc], base + len(buf) - int(st.pos))
            elif self.compressed and self._source.zero_tail:
                # zeros where the next frame should start (preallocated, or a crash)
                self.tail = Tail(int(st.pos), "zero_tail", self._source.zero_tail)
            elif self.compressed and self._source.pending():
                # the stream ends inside a zstd frame: its records are not here yet
                self.tail = Tail(int(st.pos), "torn", self._source.pending())
            return

    @property
    def largest_step(self) -> int:
        """The most bytes one decompression step produced (0: not zstd)."""
        return self._source.largest_step if self.compressed else 0

    @property
    def spans(self) -> Any:
        """The ``slg_span[]`` that :meth:`scan_batches` fills."""
        return self._spans

    def follow(self, poll_secs: float = 0.5, idle_timeout: float | None = None,
               stop: Callable[[], bool] | None = None) -> Iterator[bytes]:
        """Yield records as a writer appends them, polling every ``poll_secs`` (s); ends
        after ``idle_timeout`` s with no new record (None: never) or when ``stop()``."""
        last = time.monotonic()
        while True:
            before = self.records_read
            yield from self.read()
            now = time.monotonic()
            if self.records_read != before:
                last = now
            if (stop is not None and stop()) or (
                    idle_timeout is not None and now - last >= idle_timeout):
                return
            time.sleep(poll_secs)

    def close(self) -> None:
        """Close the file.  Idempotent."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            if not self.compressed:
                self._source.release()
            give_spans(self._spans, self._nspans)

    def __enter__(self) -> "RecordReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
