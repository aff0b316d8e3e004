"""Argument checks of SummaryWriter's plugin methods, on the caller's thread: each
refusal a TypeError/ValueError naming the peers' argument; each array kept as a
private copy (framework tensors cloned without a device sync, read later)."""

from __future__ import annotations

import json
import math
import numbers
from typing import Any, Mapping

import numpy as np

from ..checks import check_size, check_tag
from ..dialects.tb_bins import MAX_BINS, RULES
from ..values import Deferred, framework_of, snapshot_array, to_numpy

__all__ = ["numeric_array", "check_bins", "check_max_bins", "small_vector",
           "real_number", "check_count", "layout_charts", "check_tags", "json_config"]


def _dtype_kind(value: Any) -> str:
    """numpy's dtype kind of an array or a framework tensor, without reading it."""
    if framework_of(value) == "torch":
        if value.dtype.is_complex:
            return "c"
        if value.dtype.is_floating_point:
            return "f"
        return "b" if str(value.dtype) == "torch.bool" else "i"
    try:
        kind = np.dtype(value.dtype).kind
    except TypeError:  # a framework dtype numpy does not know (bfloat16 and friends)
        return "f"
    return "f" if kind == "V" else kind


def numeric_array(value: Any, name: str, kinds: str = "biuf",
                  empty_ok: bool = False) -> tuple[np.ndarray | Deferred, tuple[int, ...], int]:
    """A private copy of a numeric array-like (a Deferred clone of a framework
    tensor), its shape and its size in bytes."""
    if value is None:
        raise TypeError(f"{name} must be an array or tensor, got None")
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be numeric, got {type(value).__name__}")
    snap, shape = snapshot_array(value, name)
    kind = _dtype_kind(value if isinstance(snap, Deferred) else snap)
    if kind not in kinds:
        raise TypeError(f"{name} must be {'numeric' if kinds == 'biuf' else 'of kind ' + kinds}, "
                        f"got dtype {getattr(value, 'dtype', getattr(snap, 'dtype', '?'))}")
    if not empty_ok and math.prod(shape) == 0:
        raise ValueError(f"{name} must not be empty, got shape {shape}")
    if isinstance(snap, np.ndarray):
        itemsize = snap.dtype.itemsize
    elif hasattr(value, "element_size"):  # torch
        itemsize = int(value.element_size())
    else:
        itemsize = int(getattr(getattr(value, "dtype", None), "itemsize", 8) or 8)
    nbytes = math.prod(shape) * itemsize
    check_size(nbytes, name)
    return snap, shape, nbytes


def check_bins(bins: Any) -> int | str | np.ndarray:
    """add_histogram's ``bins``: an int in [1, MAX_BINS], ``'tensorflow'``, a numpy
    rule name, or increasing edges."""
    if isinstance(bins, bool):
        raise TypeError("bins must be an int, a str or a sequence of edges, got bool")
    if isinstance(bins, numbers.Integral):
        if not 1 <= int(bins) <= MAX_BINS:
            raise ValueError(f"bins must be in [1, {MAX_BINS}], got {bins}")
        return int(bins)
    if isinstance(bins, str):
        if bins != "tensorflow" and bins not in RULES:
            raise ValueError(f"bins must be 'tensorflow' or one of numpy's rules "
                             f"{', '.join(RULES)}, got {bins!r}")
        return bins
    try:
        edges = np.array(to_numpy(bins, "bins"), dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"bins must be an int, a str or a sequence of edges, "
                        f"got {type(bins).__name__}") from None
    if edges.ndim != 1 or not 2 <= edges.size <= MAX_BINS + 1:
        raise ValueError(f"bins as edges must be 1-D with 2 to {MAX_BINS + 1} values, "
                         f"got shape {edges.shape}")
    if np.isnan(edges).any() or (np.diff(edges) < 0).any():
        raise ValueError("bins as edges must increase monotonically")
    return edges


def check_max_bins(max_bins: Any) -> int | None:
    if max_bins is None:
        return None
    if isinstance(max_bins, bool) or not isinstance(max_bins, numbers.Integral):
        raise TypeError(f"max_bins must be an int or None, got {type(max_bins).__name__}")
    if max_bins < 1:
        raise ValueError(f"max_bins must be positive, got {max_bins}")
    return int(max_bins)


def check_count(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def real_number(value: Any, name: str) -> float:
    """A number, or a one-element numeric array or tensor, as a float (read now)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        arr = to_numpy(value, name)
    except TypeError:
        raise TypeError(f"{name} must be a number, got {type(value).__name__}") from None
    if arr.size != 1 or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a number, got an array of shape {arr.shape} "
                        f"and dtype {arr.dtype}")
    return float(arr.reshape(()))


def small_vector(value: Any, name: str) -> np.ndarray:
    """A short 1-D numeric vector (copied now as float64)."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a 1-D array, list or tensor, got {type(value).__name__}")
    arr = to_numpy(value, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim > 1 and sum(d > 1 for d in arr.shape) > 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    check_size(arr.size * 8, name)
    return np.array(arr, dtype=np.float64).ravel()


def layout_charts(layout: Any) -> list[tuple[str, list[tuple[str, str, list[str]]]]]:
    """add_custom_scalars' ``layout`` ``{category: {title: [kind, [tags]]}}`` as
    ``[(category, [(title, kind, tags), ...]), ...]``; a ``"Margin"`` chart needs
    exactly three tags (value, lower, upper)."""
    if not isinstance(layout, Mapping):
        raise TypeError(f"layout must be a dict of category to charts, got {type(layout).__name__}")
    out = []
    for category, charts in layout.items():
        check_tag(category, "layout key (a category)")
        if not isinstance(charts, Mapping):
            raise TypeError(f"layout[{category!r}] must be a dict of chart title to "
                            f"[kind, tags], got {type(charts).__name__}")
        kept = []
        for title, spec in charts.items():
            where = f"layout[{category!r}][{title!r}]"
            if not isinstance(title, str):
                raise TypeError(f"layout[{category!r}] keys (chart titles) must be str, "
                                f"got {type(title).__name__}")
            if not isinstance(spec, (list, tuple)) or len(spec) < 2:
                raise TypeError(f"{where} must be [kind, tags] with kind 'Multiline' or "
                                f"'Margin', got {spec!r}")
            kind, tags = spec[0], spec[1]
            tags = list(check_tags(tags, f"{where}[1]"))
            if kind == "Margin" and len(tags) != 3:
                raise ValueError(f"{where}: a Margin chart takes 3 tags (value, lower, upper), "
                                 f"got {len(tags)}")
            kept.append((title, kind if isinstance(kind, str) else str(kind), tags))
        out.append((category, kept))
    return out


def check_tags(tags: Any, name: str) -> list[str]:
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)):
        raise TypeError(f"{name} must be a list of tags, got {type(tags).__name__}")
    for t in tags:
        if not isinstance(t, str):
            raise TypeError(f"{name} must hold str tags, got {type(t).__name__}")
    return list(tags)


def json_config(config_dict: Any) -> str:
    """add_mesh's ``config_dict`` as the peers store it: sorted JSON, ``"{}"`` for None."""
    if config_dict is None:
        return "{}"
    if not isinstance(config_dict, Mapping):
        raise TypeError(f"config_dict must be a dict, got {type(config_dict).__name__}")
    try:
        return json.dumps(config_dict, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"config_dict must be JSON-serializable: {exc}") from None
