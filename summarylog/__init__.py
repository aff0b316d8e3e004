"""summarylog: a framework-agnostic event-log SDK for training loops, with a
native C core (CRC32C, TFRecord framing, buffered writing, scanning).
``import summarylog`` imports no ML framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import CorruptRecordError, SummarylogError

if TYPE_CHECKING:  # what the lazy __getattr__ below returns, for type checkers
    from . import records
    from .dataset import export_dataset
    from .reader import Reader
    from .sql import query
    from .summary_reader import SummaryReader
    from .summary_record import SummaryRecord
    from .summary_writer import SummaryWriter
    from .writer import Writer

__all__ = ["__version__", "native_info", "Writer", "SummaryWriter", "Reader", "SummaryReader",
           "SummaryRecord", "SummarylogError", "CorruptRecordError", "records", "query",
           "export_dataset"]


def native_info() -> dict[str, str]:
    """Facts about the native core: its version and CRC32C implementation."""
    from ._native import ffi, lib
    from .records import crc32c_impl, crc32c_impls

    return {"version": ffi.string(lib.slg_version()).decode(), "crc32c": crc32c_impl(),
            "crc32c_available": ",".join(crc32c_impls())}


_LAZY = {"Writer": ".writer", "SummaryWriter": ".summary_writer",
         "SummaryRecord": ".summary_record", "Reader": ".reader",
         "SummaryReader": ".summary_reader", "records": ".records", "query": ".sql",
         "export_dataset": ".dataset"}


def __getattr__(name: str) -> object:
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module 'summarylog' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name], __name__)
    return module if name == "records" else getattr(module, name)
