"""Protobuf classes of summarylog's schemas (``proto/``), built at import in a
private pool: ``tb`` the TensorBoard dialect (wire-compatible with
tensorboard.*), ``ms`` the MindSpore one (summary, lineage and anf_ir,
wire-compatible with MindSpore's and MindInsight's)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

from ._descriptors import FILE_DESCRIPTOR_SET

__all__ = ["POOL", "message_class", "tb", "ms", "varint", "len_field"]

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
