"""The values a SummaryRecord takes, checked as MindSpore checks them, and
read to numpy on the background thread."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import math
import os
import re
import stat
import urllib.parse
from collections.abc import Mapping
from typing import Any

import numpy as np

from .checks import check_tag
from .dialects.mindspore import graph_bytes, lineage_message, message_of
from .pb import ms
from .records import MAX_PAYLOAD
from .values import Deferred, resolve_array, snapshot_array

log = logging.getLogger("summarylog")

SUMMARY_PLUGINS = ("scalar", "image", "tensor", "histogram")
LINEAGE_PLUGINS = ("train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data")
LANDSCAPE = "LANDSCAPE"
#: MindSpore 2.10 compares with its PluginEnum value, lowercase; its docstring says LANDSCAPE
_SPELLINGS = {"landscape": LANDSCAPE}
LATER = "_later"  # pool key of add_later() builders (not a plugin)
#: pending TensorBoard histograms that are views of a framework's memory are
#: written once this many bytes pile up: held, they keep its allocator from
#: reusing that memory, and its next outputs land on fresh pages
BORROWED_MAX = 1 << 20

ALL_PLUGINS = (*SUMMARY_PLUGINS, *LINEAGE_PLUGINS, "graph", LANDSCAPE)
SUMMARY_OP_NAME = re.compile(r"(.+)\[:(.+)\]")


class TagNameError(TypeError, ValueError):
    """A tag name that is not a non-empty str.  MindSpore documents TypeError
    and raises ValueError: this is both."""


def check_summary_tag(name: Any) -> str:
    if type(name) is str and name and name.isascii():  # (every collection's tags)
        return name
    try:
        return check_tag(name, "name")
    except (TypeError, ValueError) as exc:
        raise TagNameError(f"{name!r} is not a valid tag name: {exc}") from None


def pool_bytes(pool: Mapping[str, list[tuple[str, Any]]]) -> int:
    """Memory of a recorded step's values (arrays by size; others ~nothing)."""
    total = 0
    for plugin, entries in pool.items():
        if plugin == LATER:
            total += sum(e[1] for e in entries)
            continue
        for _, v in entries:
            if isinstance(v, Deferred):  # a framework tensor's private copy
                v = v.ref
            n = getattr(v, "nbytes", 64)
            total += n if isinstance(n, int) else 64
    return total


def export_name(tag: str, step: int) -> str:
    """The .npy file name of a tag's tensor at a step: the tag percent-quoted
    (no '/', NUL or other byte can reach the path), long tags cut and made
    unique with a hash, so the name fits any file system (<= 255 bytes)."""
    name = urllib.parse.quote(tag, safe="")
    if len(name) > 180:
        digest = hashlib.sha256(tag.encode("utf-8")).hexdigest()[:16]
        name = f"{name[:160]}~{digest}"
    return f"{name}_{step}.npy"


def real_subdir(base: str, *parts: str) -> str:
    """``base/parts...``, made where missing; a component that is a symlink
    or not a directory raises OSError (nothing is written through it)."""
    path = base
    for part in parts:
        path = os.path.join(path, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, "not a directory (or a symlink): refusing to export "
                          "there", path)
    return path


def summary_value(plugin: str, value: Any, copy: bool = True) -> Any:
    """The value of a summary plugin, checked as MindSpore checks it
    (ValueError for a wrong size or rank, TypeError for a wrong type): a
    numpy copy, or a Deferred copy of a framework tensor (read later, on the
    background thread, so the caller never waits for a device)."""
    if type(value) is np.ndarray and not copy:  # the caller's own copy (a collector's)
        snap, shape = value, value.shape
    elif isinstance(value, (str, bytes, Mapping)) or value is None:
        raise TypeError(f"the value of a {plugin!r} summary must be an array, tensor or number, "
                        f"got {type(value).__name__}")
    else:
        if plugin == "tensor":  # before any copy
            check_tensor_size(math.prod(getattr(value, "shape", ()) or (1,)))
        try:
            snap, shape = snapshot_array(value, "value", copy)
        except TypeError:
            raise
        except Exception as exc:
            raise TypeError(f"the value of a {plugin!r} summary must be an array, tensor or "
                            f"number: {exc}") from exc
    if isinstance(snap, np.ndarray) and snap.dtype.kind not in "biuf":
        raise TypeError(f"the value of a {plugin!r} summary must be numeric, got dtype {snap.dtype}")
    size = math.prod(shape)
    if plugin == "scalar":
        if size != 1:
            raise ValueError(f"a scalar summary takes one value, got shape {shape}")
    elif plugin == "image":
        if len(shape) != 4:
            raise ValueError(f"an image summary takes a 4-D NCHW array, got shape {shape}")
        if shape[1] not in (1, 3) or 0 in shape:
            raise ValueError(f"an image summary takes NCHW with 1 or 3 channels and no empty "
                             f"dimension, got shape {shape}")
    elif len(shape) == 0:  # tensor, histogram
        raise ValueError(f"a {plugin} summary takes an array with at least one dimension, "
                         f"got a 0-d value")
    elif plugin == "tensor":
        check_tensor_size(size)
    return snap


def check_tensor_size(size: int) -> None:
    if size * 4 > MAX_PAYLOAD - 4096:  # float32 values for MindInsight
        raise ValueError(f"a tensor summary of {size} values would be over 2 GiB - 1 encoded "
                         f"(protobuf's message limit); nothing was recorded")


def resolve(plugin: str, snap: Any) -> np.ndarray:
    """The numpy value of a checked summary value (background thread)."""
    if type(snap) is np.ndarray and snap.dtype.kind in "iuf" and plugin != "scalar":
        return snap  # numbers on the host already (a collector's copies): as they are
    arr = resolve_array(snap)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"a {plugin} summary must be numeric, got dtype {arr.dtype}")
    if plugin == "scalar":
        return arr.reshape(())
    if plugin == "histogram" and arr.dtype.kind == "b":
        return arr.astype(np.uint8)
    return arr


def canonical_plugin(plugin: Any) -> Any:
    """The one internal name of a plugin: ``"landscape"`` (MindSpore's) and
    ``"LANDSCAPE"`` (its docs') are both :data:`LANDSCAPE`; others as given.
    SummaryRecord.add_value keys its pool by this name (the sinks look only there),
    so it must call this before :func:`pool_item`."""
    return _SPELLINGS.get(plugin, plugin) if isinstance(plugin, str) else plugin


def landscape_message(name: str, value: Any) -> Any:
    """A landscape value (a :class:`summarylog.landscape.Landscape`, a
    LossLandscape message of either pool, its bytes or its JSON dict) as our
    LossLandscape, checked: ValueError when its grids do not fit together
    (nothing a viewer could draw)."""
    from .landscape.result import Landscape

    if isinstance(value, Landscape):
        return value.to_message()
    from google.protobuf.message import DecodeError

    try:
        msg = message_of(ms.LossLandscape, value, "landscape")
        Landscape.from_message(name, msg)
    except (ValueError, DecodeError) as exc:  # (json_format's ParseError is a ValueError)
        raise ValueError(f"landscape {name!r} is not a loss landscape: {exc}") from None
    return msg


def pool_item(plugin: Any, name: Any, value: Any, tensorboard: bool) -> Any:
    """``value`` as SummaryRecord.add_value() keeps it for ``plugin`` (a canonical
    name: :func:`canonical_plugin`; another spelling here would be pooled where no
    sink looks, so it is refused), checked."""
    if not isinstance(plugin, str) or plugin not in ALL_PLUGINS:
        raise ValueError(f"No such plugin of {plugin!r} (plugins: {', '.join(ALL_PLUGINS)})")
    if plugin in LINEAGE_PLUGINS:
        return lineage_message(plugin, value)
    if plugin == "graph":
        if not (isinstance(value, (bytes, bytearray)) or hasattr(value, "SerializeToString")):
            raise TypeError(f"a graph must be a GraphProto or its bytes, "
                            f"got {type(value).__name__}")
        if not tensorboard:
            return graph_bytes(value)
        # TensorBoard: a GraphDef, kept as bytes
        return value.SerializeToString() if hasattr(value, "SerializeToString") else bytes(value)
    check_summary_tag(name)
    if plugin == LANDSCAPE:
        return landscape_message(name, value)
    return summary_value(plugin, value)


def graph_of(network: Any) -> Any:
    """A graph value for ``network``, or None: MindSpore Cells through their
    graph proto (graph mode only); graph messages or bytes as they are."""
    if network is None:
        return None
    if isinstance(network, (bytes, bytearray)) or hasattr(network, "SerializeToString"):
        return network
    if hasattr(network, "get_func_graph_proto"):  # a MindSpore Cell (graph mode)
        try:
            return network.get_func_graph_proto()  # ModelProto bytes, or None
        except Exception as exc:  # pragma: no cover - depends on MindSpore's internals
            log.warning("summarylog: no graph from %s: %s", type(network).__name__, exc)
    return None


def check_export_options(opts: Any) -> dict[str, Any] | None:
    if opts is None:
        return None
    if not isinstance(opts, Mapping):
        raise TypeError(f"export_options must be a dict or None, got {type(opts).__name__}")
    for k, v in opts.items():
        if k != "tensor_format":
            raise ValueError(f"export_options: unknown option {k!r} (only 'tensor_format')")
        if v is not None and v != "npy":
            raise ValueError(f"export_options: tensor_format must be 'npy' or None, got {v!r}")
    return dict(opts)
