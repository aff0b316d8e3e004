"""Bytes in, bytes out: CRC32C, TFRecord framing, the buffered native
writer and the damage-classifying scanner.  No knowledge of protobuf."""

from .crc import crc32c, crc32c_impl, crc32c_impls, mask, masked_crc32c, unmask, use_crc32c_impl
from .reader import Damage, RecordReader, Tail
from .writer import MAX_PAYLOAD, RecordWriter, WriterStats

__all__ = ["crc32c", "masked_crc32c", "mask", "unmask", "crc32c_impl", "crc32c_impls",
           "use_crc32c_impl", "RecordWriter", "WriterStats", "MAX_PAYLOAD", "RecordReader",
           "Damage", "Tail"]
