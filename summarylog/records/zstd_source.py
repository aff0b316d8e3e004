"""The decompressed stream of a file of zstd frames, for RecordReader.

zstd can expand a few bytes into 128 KiB (one block), so a fixed amount of input bounds
nothing: a 32 KiB step of a "bomb" decodes to about a GiB.  Before each step,
:class:`_FrameWalker` reads the frame and block headers ahead of the decoder (RFC 8878
§3.1) up to where the blocks may produce :data:`OUT_BUDGET` bytes; the decoder is fed up
to there.  Skippable frames (§3.1.2) produce nothing and are valid anywhere.
"""

from __future__ import annotations

import bisect
import os
import re
from typing import Callable

__all__ = ["ZstdSource", "ZSTD_MAGIC", "starts_zstd", "UNKNOWN_END", "OUT_BUDGET"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UNKNOWN_END = 0xFFFFFFFFFFFFFFFF
#: decompressed bytes one decoding step may produce (plus at most one block)
OUT_BUDGET = 1 << 20
_STEP = 1 << 15  # compressed bytes fed per step at most
_BLOCK_MAX = 1 << 17  # a block never decodes to more (RFC 8878 Block_Maximum_Size)
_BLIND = 64  # bytes fed at a time where the walker cannot follow the structure
_FCS_SIZE = (0, 2, 4, 8)
_DID_SIZE = (0, 1, 2, 4)
_SKIPPABLE = re.compile(rb"[\x50-\x5f]\x2a\x4d\x18")  # a skippable frame's magic
_FRAME_MAGIC = re.compile(re.escape(ZSTD_MAGIC) + b"|" + _SKIPPABLE.pattern)  # any frame's


def starts_zstd(head: bytes) -> bool:
    """Whether bytes start a zstd stream: a frame, or a skippable frame."""
    return _FRAME_MAGIC.match(head) is not None


class _FrameWalker:
    """Frame and block headers read ahead of the decoder: how much output feeding
    it up to a position can make."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reset(0)

    def reset(self, pos: int) -> None:
        """A frame starts at compressed offset pos."""
        self.pos = pos  # the next header to read
        self.state = "frame"  # what is at pos: "frame", "block" or "checksum"
        self.checksum = False
        self.lost = False  # the bytes are no zstd structure it knows

    def _element(self, head: bytes) -> tuple[int, int] | None:
        """(compressed length, most output) of the element starting with head; None
        when its header is not all in the file yet, or (lost set) no zstd structure."""
        if self.state == "checksum":
            self.state = "frame"
            return 4, 0
        if self.state == "block":
            if len(head) < 3:
                return None
            h = int.from_bytes(head[:3], "little")
            kind, size = (h >> 1) & 3, h >> 3
            if kind == 3:  # reserved block type
                self.lost = True
                return None
            self.state = ("checksum" if self.checksum else "frame") if h & 1 else "block"
            if kind == 1:  # RLE: one byte repeated size times
                return 4, size
            return 3 + size, size if kind == 0 else _BLOCK_MAX
        if len(head) < 5:
            return None
        if _SKIPPABLE.match(head):
            return (8 + int.from_bytes(head[4:8], "little"), 0) if len(head) >= 8 else None
        d = head[4]
        if head[:4] != ZSTD_MAGIC or d & 0x08:  # not a frame, or its reserved bit set
            self.lost = True
            return None
        single = (d >> 5) & 1
        self.checksum = bool(d & 0x04)
        self.state = "block"
        return 5 + (0 if single else 1) + _DID_SIZE[d & 3] + (_FCS_SIZE[d >> 6] or single), 0

    def limit(self, cpos: int, size: int) -> int:
        """A compressed offset past cpos (< size) the decoder may be fed up to for at
        most OUT_BUDGET bytes of output (plus a block it was fed part of before)."""
        end = min(cpos + _STEP, size)
        if self.lost:
            return min(cpos + _BLIND, end)
        base = self.pos
        window = os.pread(self.fd, end - base + 8, base) if base < end else b""
        out = 0
        while self.pos < end and out < OUT_BUDGET:
            at = self.pos - base
            el = self._element(window[at : at + 8])
            if el is None:
                if self.lost:
                    return min(max(self.pos, cpos + _BLIND), end)
                return end  # a header cut by the end of the file: it makes nothing yet
            length, most = el
            self.pos += length
            out += most
        return max(cpos + 1, min(self.pos, end))


class ZstdSource:
    """The decompressed stream of a file of zstd frames, decoded in bounded steps;
    ``damage(offset, length)`` is called for a frame that does not decode
    (compressed offsets), and reading goes on at the next frame."""

    def __init__(self, fd: int, damage: Callable[[int, int], None]) -> None:
        import zstandard

        self.fd = fd
        self._zstd = zstandard
        self._dctx = zstandard.ZstdDecompressor()
        self._dobj = self._dctx.decompressobj()
        self._walker = _FrameWalker(fd)
        self._frame_start = 0  # compressed offset of the frame being decoded
        self._cpos = 0  # compressed bytes fed
        self._out = bytearray()
        self._out_base = 0
        self._damage = damage
        self._frames = [(0, 0)]  # (decompressed, compressed offset) of frame starts: rewind points
        self._quiet = False  # while re-decoding: damage was reported already
        self.zero_tail = 0  #: compressed bytes of zeros where the next frame should start (0: none)
        self._end_seen: tuple[int, int] | None = None  # (compressed size, end) by end_before
        self.largest_step = 0  #: the most output one decoding step made (bytes)

    def _frame_at(self, cpos: int) -> None:
        d = self._out_base + len(self._out)
        if self._frames[-1][0] <= d and self._frames[-1][1] < cpos:
            self._frames.append((d, cpos))

    def _new_frame(self, cpos: int, walked: bool = False) -> None:
        """Decode a new frame from compressed offset cpos (``walked``: fed up to it)."""
        self._dobj = self._dctx.decompressobj()
        self._frame_start = cpos
        if not walked:
            self._cpos = cpos
        if not walked or self._walker.lost:
            self._walker.reset(cpos)

    def _drop_to(self, pos: int) -> None:
        """Forget the output before ``pos`` (decompressed offset)."""
        drop = min(len(self._out), pos - self._out_base)
        del self._out[:drop]
        self._out_base += drop

    def _rewind(self, pos: int) -> None:
        """Decode again from the last frame start before ``pos`` (damage not reported twice)."""
        dpos, cpos = self._frames[bisect.bisect_right(self._frames, (pos, float("inf"))) - 1]
        self._new_frame(cpos)
        self._out = bytearray()
        self._out_base = dpos
        self._quiet = True
        try:
            while self._out_base + len(self._out) < pos and self._pump():
                self._drop_to(pos)
        finally:
            self._quiet = False
        self._drop_to(pos)

    def _resync(self) -> bool:
        """Skip a frame that does not decode, to the next frame magic (damage); False
        when only zeros follow to the end: a tail a writer may still fill, not damage."""
        start = self._frame_start + 1
        magic: re.Match[bytes] | None = None
        while ((chunk := os.pread(self.fd, 1 << 20, start))
               and not (magic := _FRAME_MAGIC.search(chunk))):
            start += max(1, len(chunk) - 3)
        nxt = start + magic.start() if magic else os.fstat(self.fd).st_size
        if magic is None and nxt > self._frame_start and self._zeros_to_end(self._frame_start):
            self.zero_tail = nxt - self._frame_start
            self._new_frame(self._frame_start)
            return False
        if not self._quiet:
            self._damage(self._frame_start, nxt - self._frame_start)
        self._new_frame(nxt)
        self._frame_at(nxt)
        return True

    def _zeros_to_end(self, start: int) -> bool:
        """Whether the file holds only zero bytes from ``start`` to its end."""
        while (chunk := os.pread(self.fd, 1 << 20, start)) and chunk.count(0) == len(chunk):
            start += len(chunk)
        return not chunk

    def _pump(self) -> bool:
        """Decode one bounded step; False when no compressed input is left (for now)."""
        size = os.fstat(self.fd).st_size
        if self._cpos >= size:
            return False
        limit = self._walker.limit(self._cpos, size)
        chunk = os.pread(self.fd, limit - self._cpos, self._cpos)
        if not chunk:
            return False
        before = len(self._out)
        try:
            self._out += self._dobj.decompress(chunk)
        except self._zstd.ZstdError:
            return self._resync()
        self.zero_tail = 0
        self._cpos += len(chunk)
        while self._dobj.eof:
            rest = self._dobj.unused_data
            self._new_frame(self._cpos - len(rest), walked=True)
            self._frame_at(self._frame_start)
            if not rest:
                break
            try:
                self._out += self._dobj.decompress(rest)
            except self._zstd.ZstdError:
                self._resync()
                break
        self.largest_step = max(self.largest_step, len(self._out) - before)
        return True

    def end_before(self, pos: int, end: int) -> int | None:
        """Where the stream ends if before ``end`` (decompressed offsets), else None.
        The output decoded ahead is not kept: a lying record header costs time, not memory."""
        top = self._out_base + len(self._out)
        if top >= end:
            return None
        size = os.fstat(self.fd).st_size
        if self._end_seen is not None and self._end_seen[0] == size:  # found before
            return self._end_seen[1] if self._end_seen[1] < end else None
        zero_tail = self.zero_tail
        self._quiet = True  # what it finds is reported when read for real
        try:
            while top < end and self._pump():
                top = self._out_base + len(self._out)
                self._out_base = top
                self._out = bytearray()
        finally:
            self._quiet = False
        self._rewind(pos)
        self.zero_tail = zero_tail
        if top < end:  # the whole stream, as the file is now
            self._end_seen = (size, top)
            return top
        return None

    def pending(self) -> int:
        """Compressed bytes of a frame begun but not finished (a torn tail)."""
        return self._cpos - self._frame_start if not self._dobj.eof else 0

    def read(self, pos: int, want: int) -> tuple[bytes, int]:
        if pos < self._out_base:  # back to a tail's start, already dropped
            self._rewind(pos)
        self._drop_to(pos)  # what the scanner is done with
        while len(self._out) < want:
            if not self._pump():  # all there is for now: the data ends here
                return bytes(self._out[:want]), self._out_base + len(self._out)
        return bytes(self._out[:want]), UNKNOWN_END
