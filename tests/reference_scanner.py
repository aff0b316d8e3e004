"""A small, independent, pure-Python reference for the record scanner.

Written from the classification rules (docs/format.md §1 and §2, the rules listed
in csrc/scanner.c's header comment), not from the C code, and with its own
table-driven CRC32C, so that it shares nothing with the native core.  It reads
a whole byte string at once; the native reader works in chunks and must give
the same answer for every chunk size.

Rules, for a record starting at ``pos`` (header = 8-byte LE length + 4-byte
masked CRC32C of those 8 bytes; then the payload; then its masked CRC32C):

* fewer than 12 bytes left: end; if any are left, tail ``zero_tail`` when they
  are all zero, else ``torn``;
* length CRC valid and the whole record fits in the data: a record; with a bad
  data CRC it is damage ``bad_data_crc`` (the whole record) and is skipped;
* otherwise the record is damaged at ``pos``.  Resync point: the first offset
  ``q > pos`` with a full header whose length CRC validates and whose record
  fits in the data (the data CRC is not looked at).

  - bad length CRC, resync point found: damage from ``pos`` to ``q``, kind
    ``zero_fill`` if every skipped byte is zero, else ``bad_length_crc``;
  - bad length CRC, none found: tail ``zero_tail`` if every byte from ``pos``
    to the end is zero, else damage ``bad_length_crc`` from ``pos`` to the end
    (and no tail);
  - valid length CRC but the record runs past the end, resync point found:
    damage ``length_past_eof`` from ``pos`` to ``q``;
  - the same, none found: tail ``torn`` at ``pos``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = [
    "crc32c",
    "masked_crc32c",
    "frame",
    "header",
    "scan",
    "ScanResult",
    "RefDamage",
    "RefTail",
]

_POLY = 0x82F63B78  # Castagnoli, reflected


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C (init/xorout 0xFFFFFFFF, reflected), one table lookup per byte."""
    c = crc ^ 0xFFFFFFFF
    t = _TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
assert masked_crc32c(bytes(8)) == 0x07980329


def header(length: int) -> bytes:
    """The 12-byte header for a payload of ``length`` bytes (any u64)."""
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", masked_crc32c(raw))


def frame(payload: bytes) -> bytes:
    """One complete record."""
    return header(len(payload)) + payload + struct.pack("<I", masked_crc32c(payload))


class RefDamage(NamedTuple):
    offset: int
    kind: str
    length: int


class RefTail(NamedTuple):
    offset: int
    kind: str
    length: int


class ScanResult(NamedTuple):
    payloads: list[bytes]
    damage: list[RefDamage]
    tail: RefTail | None
    #: offset of each returned payload's record (its header), same order
    record_offsets: list[int]


def scan(data: bytes, verify: bool = True) -> ScanResult:
    """Classify ``data`` (a whole record stream).  Returns payloads, damage
    list and tail (None at a clean end or after damage that reaches the end)."""
    data = bytes(data)
    n = len(data)
    header_cache: dict[int, bool] = {}

    def length_at(q: int) -> int:
        return struct.unpack_from("<Q", data, q)[0]

    def header_valid(q: int) -> bool:
        ok = header_cache.get(q)
        if ok is None:
            ok = masked_crc32c(data[q : q + 8]) == struct.unpack_from("<I", data, q + 8)[0]
            header_cache[q] = ok
        return ok

    def record_fits(q: int) -> bool:
        return q + 16 + length_at(q) <= n

    def sync_point(after: int) -> int | None:
        for q in range(after, n - 11):
            if header_valid(q) and record_fits(q):
                return q
        return None

    payloads: list[bytes] = []
    offsets: list[int] = []
    damage: list[RefDamage] = []
    tail: RefTail | None = None
    pos = 0
    while pos < n:
        left = n - pos
        if left < 12:
            zero = not any(data[pos:])
            tail = RefTail(pos, "zero_tail" if zero else "torn", left)
            break
        if header_valid(pos) and record_fits(pos):
            length = length_at(pos)
            payload = data[pos + 12 : pos + 12 + length]
            (stored,) = struct.unpack_from("<I", data, pos + 12 + length)
            if verify and masked_crc32c(payload) != stored:
                damage.append(RefDamage(pos, "bad_data_crc", length + 16))
            else:
                payloads.append(payload)
                offsets.append(pos)
            pos += length + 16
            continue
        length_crc_ok = header_valid(pos)
        q = sync_point(pos + 1)
        if q is not None:
            if length_crc_ok:
                kind = "length_past_eof"
            elif not any(data[pos:q]):
                kind = "zero_fill"
            else:
                kind = "bad_length_crc"
            damage.append(RefDamage(pos, kind, q - pos))
            pos = q
            continue
        if length_crc_ok:
            tail = RefTail(pos, "torn", n - pos)
        elif not any(data[pos:]):
            tail = RefTail(pos, "zero_tail", n - pos)
        else:
            damage.append(RefDamage(pos, "bad_length_crc", n - pos))
        break
    return ScanResult(payloads, damage, tail, offsets)
