"""CRC32C and TFRecord's masked CRC, computed by the native core
(``slg_crc32c`` / ``slg_masked_crc32c``) without copying the input."""

from __future__ import annotations

import operator
from typing import Any

from .._native import CRC_IMPLS, as_buffer, lib

__all__ = ["crc32c", "masked_crc32c", "mask", "unmask", "crc32c_impl", "crc32c_impls",
           "use_crc32c_impl"]

_IMPL_BY_NAME = {name: value for value, name in CRC_IMPLS.items()}


def crc32c(data: Any, value: int = 0) -> int:
    """CRC32C (Castagnoli) of ``data`` (any C-contiguous buffer, not copied),
    continuing from ``value``, the CRC of the data before it (0 to start).
    Returns an int in [0, 2**32); ``crc32c(b, crc32c(a)) == crc32c(a + b)``."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"value must be an int, got {type(value).__name__}") from None
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"value must be in [0, 2**32), got {value}")
    buf = as_buffer(data)
    return lib.slg_crc32c(value, buf, len(buf))


def masked_crc32c(data: Any) -> int:
    """TFRecord's masked CRC32C of ``data``: ``mask(crc32c(data))``."""
    buf = as_buffer(data)
    return lib.slg_masked_crc32c(buf, len(buf))


def mask(crc: int) -> int:
    """Rotate right by 15 and add 0xA282EAD8 (mod 2**32), as TFRecord does."""
    return lib.slg_crc_mask(crc)


def unmask(masked: int) -> int:
    """Invert :func:`mask`."""
    return lib.slg_crc_unmask(masked)


def crc32c_impl() -> str:
    """The implementation in use: ``"sse4.2"``, ``"arm64"`` or ``"portable"``."""
    return CRC_IMPLS[lib.slg_crc32c_impl()]


def crc32c_impls() -> list[str]:
    """The implementations this build and CPU can run."""
    return [name for value, name in CRC_IMPLS.items() if lib.slg_crc32c_has_impl(value)]


def use_crc32c_impl(name: str | None) -> str:
    """Force an implementation for the whole process (``None``: the best one).

    The environment variable ``SUMMARYLOG_CRC32C=portable`` does the same for
    ``"portable"`` at start-up.  Returns the name now in use; raises
    ValueError for an unknown name and RuntimeError if the CPU lacks it.
    """
    if name is not None and name not in _IMPL_BY_NAME:
        raise ValueError(f"name must be one of {sorted(_IMPL_BY_NAME)}, got {name!r}")
    if lib.slg_crc32c_select(lib.SLG_CRC_AUTO if name is None else _IMPL_BY_NAME[name]) < 0:
        raise RuntimeError(f"CRC32C implementation {name!r} is not available here")
    return crc32c_impl()


def _impl_crc(name: str, data: Any, value: int = 0) -> int:
    """Test hook: the CRC by one named implementation."""
    buf = as_buffer(data)
    return lib.slg_crc32c_with(_IMPL_BY_NAME[name], value, buf, len(buf))
