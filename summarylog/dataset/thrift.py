"""Thrift's compact protocol, the encoding of Parquet's page headers and footer, as
far as :mod:`.scalar_parquet` writes it: structs of integers, booleans, binaries,
structs and lists of them.  A struct is a list of ``(field id, kind, value)``
(``None`` values left out); kinds are ``"i16"``, ``"i32"``, ``"i64"``, ``"bin"``,
``"bool"``, ``"struct"`` and ``"list:<kind>"``; a struct's or list's value may be given
already encoded (bytes, from :func:`value`), for the parts every file repeats."""

from __future__ import annotations

from typing import Any

__all__ = ["struct", "value", "uvarint"]

_TYPE = {"bool": 1, "i16": 4, "i32": 5, "i64": 6, "bin": 8, "list": 9, "struct": 12}
_INTS = ("i16", "i32", "i64")
_BYTE = [bytes((i,)) for i in range(256)]  # a struct holds mostly one-byte varints


def _code(kind: str) -> int:
    return _TYPE[kind.split(":", 1)[0]]


_CODES = {k: _code(k) for k in ("i16", "i32", "i64", "bin", "struct", "list:i32", "list:bin",
                                "list:struct")}


def uvarint(n: int) -> bytes:
    """``n`` >= 0 as an unsigned LEB128 varint."""
    if n < 0x80:
        return _BYTE[n]
    if n < 1 << 21:  # sizes and offsets in a footer: two or three bytes
        if n < 1 << 14:
            return bytes((n & 0x7F | 0x80, n >> 7))
        return bytes((n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def value(kind: str, v: Any) -> bytes:
    """``v`` encoded as a field of ``kind`` (without the field's header)."""
    if kind in _INTS:
        return uvarint((v << 1) ^ (v >> 63))
    if isinstance(v, bytes) and kind != "bin":
        return v
    if kind == "bin":
        data = v.encode() if isinstance(v, str) else bytes(v)
        return uvarint(len(data)) + data
    if kind == "struct":
        return struct(v)
    if kind.startswith("list:"):
        elem = kind[5:]
        code = _CODES.get(elem) or _code(elem)
        head = _BYTE[len(v) << 4 | code] if len(v) < 15 else _BYTE[0xF0 | code] + uvarint(len(v))
        return head + b"".join([value(elem, x) for x in v])
    raise ValueError(f"unknown thrift kind {kind!r}")


def struct(fields: list[tuple[int, str, Any]]) -> bytes:
    """A struct's fields (ids ascending) and its stop byte."""
    out = []
    last = 0
    for fid, kind, v in fields:
        if v is None:
            continue
        if kind == "bool":
            code = 1 if v else 2
        else:
            code = _CODES.get(kind) or _code(kind)
        delta = fid - last
        out.append(_BYTE[delta << 4 | code] if 0 < delta <= 15
                   else _BYTE[code] + uvarint((fid << 1) ^ (fid >> 63)))
        if kind != "bool":
            out.append(value(kind, v))
        last = fid
    out.append(b"\x00")
    return b"".join(out)
