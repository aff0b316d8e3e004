"""Protobuf classes of summarylog's schemas (``proto/``), built at import in a
private pool: ``tb`` the TensorBoard dialect (wire-compatible with
tensorboard.*), ``ms`` the MindSpore one (summary, lineage and anf_ir,
wire-compatible with MindSpore's and MindInsight's)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

from ._descriptors import FILE_DESCRIPTOR_SET

__all__ = ["POOL", "message_class", "tb", "ms", "varint", "len_field", "fields"]

POOL = descriptor_pool.DescriptorPool()
_FILES = descriptor_pb2.FileDescriptorSet.FromString(FILE_DESCRIPTOR_SET).file
for _file in _FILES:
    POOL.Add(_file)


def message_class(full_name: str) -> Any:
    """The message class for ``full_name`` (e.g. ``"summarylog.tb.Event"``)."""
    desc = POOL.FindMessageTypeByName(full_name)
    try:
        from google.protobuf.message_factory import GetMessageClass
    except ImportError:  # protobuf < 4.22
        from google.protobuf.message_factory import MessageFactory

        return MessageFactory(POOL).GetPrototype(desc)
    return GetMessageClass(desc)


def _messages(package: str) -> SimpleNamespace:
    """Every top-level message class of ``package``."""
    return SimpleNamespace(**{m.name: message_class(f"{package}.{m.name}")
                              for f in _FILES if f.package == package for m in f.message_type})


#: TensorBoard dialect classes.
tb = _messages("summarylog.tb")
tb.DataType = POOL.FindEnumTypeByName("summarylog.tb.DataType")
tb.DataClass = POOL.FindEnumTypeByName("summarylog.tb.DataClass")

#: MindSpore dialect classes (summary, lineage, anf_ir).
ms = _messages("summarylog.ms")
ms.DataType = POOL.FindEnumTypeByName("summarylog.ms.DataType")
# nested messages by name (the pure-Python protobuf runtime, which MindSpore
# selects, does not attach nested classes to their parents)
ms.Value = message_class("summarylog.ms.Summary.Value")
ms.Histogram = message_class("summarylog.ms.Summary.Histogram")


def varint(x: int) -> bytes:
    """A protobuf varint (x >= 0)."""
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def len_field(field: int, body: bytes) -> bytes:
    """A length-delimited protobuf field: key, length, body."""
    return varint(field << 3 | 2) + varint(len(body)) + body


def _read_varint(b: bytes, i: int) -> tuple[int, int]:
    r = shift = 0
    while shift < 64:
        c = b[i]  # IndexError past the end: malformed
        i += 1
        r |= (c & 0x7F) << shift
        if c < 0x80:
            return r, i
        shift += 7
    raise ValueError("varint too long")


def _skip(b: bytes, i: int, wt: int) -> int:
    """Past the value of wire type ``wt`` at ``i`` (a group: past its end,
    iteratively, so nesting costs no recursion)."""
    depth = 0
    while True:
        if wt == 0:
            i = _read_varint(b, i)[1]
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
        elif wt == 2:
            size, i = _read_varint(b, i)
            i += size
        elif wt == 3:
            depth += 1
        elif wt != 4 or not depth:
            raise ValueError("bad wire type")
        else:
            depth -= 1
        if not depth:
            return i
        key, i = _read_varint(b, i)
        wt = key & 7


def fields(b: bytes) -> list[tuple[int, int, int, int]]:
    """(field, start, body_start, end) of each field of a message (groups:
    their whole extent).  ValueError/IndexError when malformed."""
    out, i, n = [], 0, len(b)
    while i < n:
        start = i
        key, i = _read_varint(b, i)
        field, wt = key >> 3, key & 7
        body = _read_varint(b, i)[1] if wt == 2 else i
        i = _skip(b, i, wt)
        if i > n or field == 0:
            raise ValueError("field past the end")
        out.append((field, start, body, i))
    return out
