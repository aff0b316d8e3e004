"""Argument checks shared by the logging APIs: a bad argument raises
TypeError or ValueError naming it, before anything is queued."""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

import numpy as np

from .records import MAX_PAYLOAD
from .values import to_numpy

__all__ = ["MAX_VALUE_BYTES", "check_tag", "check_size", "check_step", "check_walltime",
           "check_flush_secs", "check_choice", "check_image"]

MAX_VALUE_BYTES = MAX_PAYLOAD - 4096  # room for the tag and the event's other fields
_time = time.time


def check_tag(tag: Any, name: str = "tag") -> str:
    if not isinstance(tag, str):
        raise TypeError(f"{name} must be a str, got {type(tag).__name__}")
    if not tag:
        raise ValueError(f"{name} must not be empty")
    if not tag.isascii():
        try:
            tag.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} must be valid Unicode text (it holds a lone surrogate, "
                             f"e.g. from undecodable bytes), got {tag!r}") from None
    return tag


def check_size(nbytes: int, name: str) -> None:
    """Refuse a value no event could carry (over 2 GiB - 1 encoded)."""
    if nbytes > MAX_VALUE_BYTES:
        raise ValueError(f"{name} is {nbytes} bytes: an event may carry at most "
                         f"{MAX_PAYLOAD} bytes (2 GiB - 1, protobuf's message limit); "
                         f"nothing was logged")


def check_step(step: Any, name: str = "step") -> int:
    if step is None:
        return 0
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(step).__name__}")
    step = int(step)
    if not -(1 << 63) <= step < (1 << 63):
        raise ValueError(f"{name} must fit in int64, got {step}")
    return step


def check_walltime(walltime: Any) -> float:
    if walltime is None:
        return _time()
    if isinstance(walltime, bool) or not isinstance(walltime, numbers.Real):
        raise TypeError(f"walltime must be a number (seconds), got {type(walltime).__name__}")
    walltime = float(walltime)
    if not math.isfinite(walltime):
        raise ValueError(f"walltime must be finite, got {walltime}")
    return walltime


def check_flush_secs(flush_secs: Any) -> float:
    """flush_secs as a float: a finite number of seconds > 0."""
    if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)):
        raise TypeError(f"flush_secs must be a number, got {type(flush_secs).__name__}")
    if not 0 < flush_secs < math.inf:
        raise ValueError(f"flush_secs must be a finite number of seconds > 0, got {flush_secs}")
    return float(flush_secs)


def check_choice(name: str, value: Any, choices: tuple[Any, ...]) -> Any:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_optional_size(name: str, value: Any, minimum: int = 1) -> int | None:
    """None, or an int >= ``minimum`` (a byte count)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_image(img: Any, dataformats: str, name: str) -> tuple[np.ndarray, list[int]]:
    """A copy of a checked image (batch) as it is laid out, and the axis order that
    makes it (N)HWC (applied later, on the background thread)."""
    arr = to_numpy(img, name)
    fmt = dataformats.upper()
    if sorted(fmt) not in (sorted("HW"), sorted("CHW"), sorted("NCHW")) or len(set(fmt)) != len(fmt):
        raise ValueError(f"dataformats must be a permutation of HW, CHW or NCHW, got {dataformats!r}")
    if arr.ndim != len(fmt):
        raise ValueError(f"{name} has shape {arr.shape}, which does not match dataformats {dataformats!r}")
    channels = arr.shape[fmt.index("C")] if "C" in fmt else 1
    if channels not in (1, 2, 3, 4):
        raise ValueError(f"{name} must have 1, 2, 3 or 4 channels, got {channels}")
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f" and arr.dtype != np.bool_:
        raise TypeError(f"{name} must be uint8 or float in [0, 1], got dtype {arr.dtype}")
    if "C" not in fmt:
        arr = arr[..., None]
        fmt += "C"
    target = "NHWC" if "N" in fmt else "HWC"
    return np.array(arr, copy=True), [fmt.index(c) for c in target]
