"""Thrift's compact protocol, the encoding of Parquet's page headers and footer, as
far as :mod:`.scalar_parquet` writes it: structs of integers, booleans, binaries,
structs and lists of them.  A struct is a list of ``(field id, kind, value)``
(``None`` values left out); kinds are ``"i16"``, ``"i32"``, ``"i64"``, ``"bin"``, ``"bool"``,
``"struct"`` and ``"list:<kind>"``."""

from __future__ import annotations

from typing import Any

__all__ = ["struct", "uvarint"]

_TYPE = {"bool": 1, "i16": 4, "i32": 5, "i64": 6, "bin": 8, "list": 9, "struct": 12}


def uvarint(n: int) -> bytes:
    """``n`` >= 0 as an unsigned LEB128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def _value(kind: str, v: Any) -> bytes:
    if kind in ("i16", "i32", "i64"):
        return _zigzag(v)
    if kind == "bin":
        data = v.encode() if isinstance(v, str) else bytes(v)
        return uvarint(len(data)) + data
    if kind == "struct":
        return struct(v)
    if kind.startswith("list:"):
        elem = kind[5:]
        code = _TYPE[elem.split(":", 1)[0]]
        head = bytes([len(v) << 4 | code]) if len(v) < 15 else bytes([0xF0 | code]) + uvarint(len(v))
        return head + b"".join(_value(elem, x) for x in v)
    raise ValueError(f"unknown thrift kind {kind!r}")


def struct(fields: list[tuple[int, str, Any]]) -> bytes:
    """A struct's fields (ids ascending) and its stop byte."""
    out = bytearray()
    last = 0
    for fid, kind, v in fields:
        if v is None:
            continue
        code = (1 if v else 2) if kind == "bool" else _TYPE[kind.split(":", 1)[0]]
        delta = fid - last
        out += bytes([delta << 4 | code]) if 0 < delta <= 15 else bytes([code]) + _zigzag(fid)
        if kind != "bool":
            out += _value(kind, v)
        last = fid
    out.append(0)
    return bytes(out)
