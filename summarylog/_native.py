"""The only importer of cffi: owns ``ffi``/``lib`` of the compiled core (C API:
``csrc/summarylog_api.h``) and turns its ``-errno`` results into exceptions."""

from __future__ import annotations

import os
from typing import Any, NoReturn

from ._native_lib import ffi, lib  # type: ignore[import-not-found]

__all__ = ["ffi", "lib", "raise_errno", "as_buffer", "CRC_IMPLS"]

#: Names of the CRC32C implementations, by SLG_CRC_* value.
CRC_IMPLS = {lib.SLG_CRC_PORTABLE: "portable", lib.SLG_CRC_SSE42: "sse4.2",
             lib.SLG_CRC_ARM64: "arm64"}


def raise_errno(rc: int, path: str | None = None) -> NoReturn:
    """Raise the OSError subclass for a ``-errno`` result (ENOENT becomes
    FileNotFoundError, EACCES PermissionError; ENOSPC keeps its errno)."""
    raise OSError(-rc, os.strerror(-rc), *(() if path is None else (path,)))


def as_buffer(data: Any, name: str = "data") -> Any:
    """A zero-copy ``char[]`` view of any C-contiguous buffer-protocol object
    (bytes pass straight through: cffi accepts them for ``const char *``)."""
    if type(data) is bytes:
        return data
    try:
        return ffi.from_buffer(data)
    except TypeError:
        raise TypeError(
            f"{name} must be a bytes-like object (buffer protocol), got {type(data).__name__}"
        ) from None
    except BufferError as exc:
        raise ValueError(f"{name} must be a C-contiguous buffer: {exc}") from None
