"""The MindSpore dialect: summary and lineage records MindInsight reads, packaged as
MindSpore's summary adapter does (docs/format.md §7.4).  One difference: uint8 images
keep their pixel values (MindSpore's grid rescales them by 255/256).
"""

from __future__ import annotations

import math
import struct
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._native import ffi, lib
from ..events import Event
from ..histograms import as_float_array, value_stats
from ..pb import fields, len_field, ms, varint
from ..png import encode_png
from .tensorboard import tensor_elements

__all__ = [
    "VERSION", "MindSporeEncoder", "histogram_buckets", "histogram_bytes", "image_grid",
    "tensor_proto", "decode_event", "decode_lineage", "lineage_message",
]

VERSION = "MindSpore.Event:1"
MAX_BUCKETS = 90
_WALL = struct.Struct("<Bd")  # an Event's wall_time: key and double

#: numpy dtype -> anf_ir DataType number (``DT_`` and the dtype's name in capitals)
DTYPES: dict[np.dtype, int] = {
    np.dtype(k): ms.DataType.values_by_name["DT_" + k.upper()].number
    for k in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64")
}
_NP_OF_DT = {v: k for k, v in DTYPES.items()}
#: a lineage plugin's member of LineageEvent
_LINEAGE_FIELD = {"train_lineage": "train_lineage", "eval_lineage": "evaluation_lineage",
                  "dataset_graph": "dataset_graph", "custom_lineage_data": "user_defined_info"}


# ---- packaging ---------------------------------------------------------------------

def _step_field(step: int) -> bytes:
    """An Event's int64 step (field 2), as protobuf writes it."""
    return b"\x10" + varint(step & 0xFFFFFFFFFFFFFFFF)


def histogram_bytes(values: np.ndarray) -> bytes:
    """A serialized Summary.Histogram of ``values`` by MindSpore's rule: equal widths over
    [min, max] (widened by 0.5 each side when min == max); non-finite values counted
    apart.  Made by the C core (``slg_ms_histogram``, which the collectors' lane uses
    too), byte for byte as protobuf would (tested): as messages they are slow under the
    pure-Python protobuf MindSpore selects.  Edges are np.linspace's in float64 cast
    to the values' dtype, as numpy 1 (MindSpore's) makes them for any numpy."""
    src = np.asarray(values)
    arr = as_float_array(src)
    edges = widths = ffi.NULL
    bins = 0
    if src.dtype == np.float16:  # edges and widths in float16 (the values' dtype)
        st = value_stats(arr)
        if st.finite:
            bins = lib.slg_ms_bins(st.finite)
            lo, hi = np.float16(st.min), np.float16(st.max)
            if lo == hi:
                lo, hi = lo - np.float16(0.5), hi + np.float16(0.5)
            e16 = np.linspace(float(lo), float(hi), bins + 1).astype(np.float16)
            edges = ffi.from_buffer("double[]", e16.astype(np.float64))
            widths = ffi.from_buffer("double[]", np.diff(e16).astype(np.float64))
    out = bytearray(lib.SLG_MS_HISTOGRAM_MAX)
    n = lib.slg_ms_histogram(ffi.from_buffer(arr), arr.dtype.itemsize == 8, arr.size, edges,
                             widths, bins, ffi.from_buffer(out), len(out))
    if n < 0:
        raise ValueError(f"no histogram: the {src.dtype} bucket edges of these values "
                         f"collapse (values too large for their precision)")
    return bytes(out[:n])


def graph_bytes(value: Any) -> bytes:
    """A serialized anf_ir GraphProto from a graph value: bytes are a serialized
    ModelProto (what MindSpore's graph executor returns, and what MindSpore's
    SummaryRecord takes), whose graph is taken as it is (a pure-Python protobuf
    parses it slowly); messages are a GraphProto or a ModelProto."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        try:  # the graph field's (4) occurrences, merged as protobuf merges them
            graph = b"".join(raw[b:e] for f, _, b, e in fields(raw) if f == 4)
            fields(graph)
        except (ValueError, IndexError):
            raise ValueError("graph bytes are not a serialized ModelProto") from None
        return graph
    if getattr(getattr(value, "DESCRIPTOR", None), "name", "") == "ModelProto":
        value = message_of(ms.ModelProto, value, "graph").graph
    return message_of(ms.GraphProto, value, "graph").SerializeToString()


def histogram_buckets(values: np.ndarray) -> Any:
    """:func:`histogram_bytes` as a Summary.Histogram message."""
    return ms.Histogram.FromString(histogram_bytes(values))


def image_grid(nchw: np.ndarray) -> np.ndarray:
    """MindSpore's image layout: an (H·rows, W·cols, 3) uint8 grid of the N
    images of an NCHW batch (1 or 3 channels), at most 8 columns."""
    n, c, h, w = nchw.shape
    if c == 1:
        nchw = np.repeat(nchw, 3, axis=1)
    cols = min(n, 8)
    rows = math.ceil(n / cols)
    tiles = np.zeros((rows * cols, 3, h, w), np.uint8 if nchw.dtype == np.uint8 else np.float64)
    tiles[:n] = nchw  # tile (r, k) of the grid is image r * cols + k
    hwc = tiles.reshape(rows, cols, 3, h, w).transpose(0, 3, 1, 4, 2).reshape(rows * h, cols * w, 3)
    if hwc.dtype == np.uint8:
        return np.ascontiguousarray(hwc)
    lo, hi = float(hwc.min()), float(hwc.max())
    if lo >= 0 and hi <= 1:
        scaled = hwc * 255
    elif hi == lo:
        scaled = hwc - lo
    else:
        scaled = (hwc - lo) * 255 / (hi - lo + 1)
    return np.ascontiguousarray(scaled.astype(np.float32).astype(np.uint8))


def tensor_proto(array: np.ndarray) -> Any:
    """anf_ir TensorProto of ``array``: every value in float_data (what MindInsight
    shows), and exactly in int64/uint64/double_data where float32 would round it."""
    arr = np.asarray(array)
    dt = DTYPES.get(arr.dtype)
    if dt is None:
        raise TypeError(f"tensor dtype {arr.dtype} has no MindSpore DataType")
    t = ms.TensorProto(data_type=dt, dims=[int(d) for d in arr.shape])
    flat = arr.reshape(-1)
    t.float_data.extend(flat.astype(np.float32).tolist())
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "f" and size == 8:
        t.double_data.extend(flat.tolist())
    elif (kind == "i" and size >= 4) or (kind == "u" and size == 4):
        t.int64_data.extend(flat.astype(np.int64).tolist())
    elif kind == "u" and size == 8:
        t.uint64_data.extend(flat.tolist())
    return t


def message_of(cls: Any, value: Any, what: str) -> Any:
    """``value`` as our ``cls``: from itself, the same message of another pool
    (MindSpore's own), its bytes, or a dict in protobuf's JSON form."""
    from google.protobuf import json_format
    from google.protobuf.message import Message

    if isinstance(value, cls):
        return value
    if isinstance(value, Message):
        name = value.DESCRIPTOR.name
        if name != cls.DESCRIPTOR.name:
            raise TypeError(f"{what} must be a {cls.DESCRIPTOR.name}, got a {name}")
        return cls.FromString(value.SerializeToString())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return cls.FromString(bytes(value))
    if isinstance(value, Mapping):
        return json_format.ParseDict(dict(value), cls())
    raise TypeError(f"{what} must be a {cls.DESCRIPTOR.name} message, its bytes or a dict, "
                    f"got {type(value).__name__}")


def lineage_message(plugin: str, value: Any) -> Any:
    """The lineage message of a SummaryRecord lineage plugin (``custom_lineage_data``
    also takes a plain ``{key: str | int | float}`` dict)."""
    if plugin == "custom_lineage_data" and isinstance(value, Mapping) and not (
            set(value) & {"user_info", "map_dict", "map_int32", "map_str", "map_double"}):
        return user_defined_info(value)
    return message_of(type(getattr(ms.LineageEvent(), _LINEAGE_FIELD[plugin])), value, plugin)


def user_defined_info(data: Mapping[str, Any]) -> Any:
    """UserDefinedInfo of ``{key: str | int | float}`` (else TypeError), one user_info
    entry per key as MindSpore packs it (MindInsight reads each one's first entry)."""
    info = ms.UserDefinedInfo()
    for key, v in data.items():
        if not isinstance(key, str):
            raise TypeError(f"custom lineage keys must be str, got {type(key).__name__}")
        one = info.user_info.add()
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise TypeError(f"custom lineage value of {key!r} must be str, int or float, "
                            f"got {type(v).__name__}")
        if isinstance(v, int):
            if not -2**31 <= v < 2**31:
                raise ValueError(f"custom lineage value of {key!r} must fit in int32, got {v}")
            one.map_int32[key] = v
        elif isinstance(v, float):
            one.map_double[key] = v
        else:
            one.map_str[key] = v
    return info


class MindSporeEncoder:
    """Payloads of MindSpore summary and lineage files."""

    name = "mindspore"

    def file_header(self, wall_time: float) -> bytes:
        return ms.Event(wall_time=wall_time, version=VERSION).SerializeToString()

    def summary(self, wall_time: float, step: int,
                values: Iterable[tuple[str, str, Any]]) -> list[bytes]:
        """One Event holding every value of a step (summarylog.dialects.base;
        a LossLandscape as message or bytes)."""
        out = []
        for plugin, tag, value in values:
            if plugin == "histogram":  # the Value framed by hand (histogram_bytes)
                out.append(len_field(1, tag.encode()) + len_field(9, histogram_bytes(value)))
                continue
            if plugin == "scalar":  # framed by hand too: tag 1, float32 scalar_value 3
                with np.errstate(over="ignore"):
                    f32 = np.float32(float(value)).tobytes()
                out.append(len_field(1, tag.encode()) + b"\x1d" + f32)
                continue
            v = ms.Value(tag=tag)
            if plugin == "image":
                grid = image_grid(value)
                v.image.height, v.image.width, v.image.colorspace = *grid.shape[:2], 3
                v.image.encoded_image = encode_png(grid)
            elif plugin == "tensor":
                v.tensor.CopyFrom(tensor_proto(value))
            elif plugin in ("LANDSCAPE", "landscape"):
                v.loss_landscape.CopyFrom(message_of(ms.LossLandscape, value, "landscape"))
            else:
                raise ValueError(f"no summary plugin {plugin!r}")
            out.append(v.SerializeToString())
        summary = b"".join(len_field(1, v) for v in out)
        ev = _WALL.pack(0x09, wall_time) + _step_field(step)
        return [ev + len_field(5, summary) if out else ev]

    def graph(self, wall_time: float, graph: Any, step: int | None = None) -> bytes:
        """An Event (step None: not set) of a GraphProto, a message or its bytes."""
        if not isinstance(graph, (bytes, bytearray)):
            graph = message_of(ms.GraphProto, graph, "graph").SerializeToString()
        return (_WALL.pack(0x09, wall_time) + (b"" if step is None else _step_field(step))
                + len_field(4, bytes(graph)))

    def lineage(self, wall_time: float, plugin: str, message: Any) -> bytes:
        """One LineageEvent (wall_time and the member) for a lineage plugin."""
        ev = ms.LineageEvent(wall_time=wall_time)
        getattr(ev, _LINEAGE_FIELD[plugin]).CopyFrom(message)
        return ev.SerializeToString()


def value_of_event(ev: Any) -> Any:
    """A Summary.Value for one plain :class:`~summarylog.events.Event` of any dialect
    (for conversion), or None for kinds MindInsight does not show.  Images keep their
    first PNG; histograms are merged pairwise down to the 90 buckets MindInsight takes."""
    k, tag, val = ev.kind, ev.tag, ev.value
    v = ms.Value(tag=tag)
    if k == "scalar":
        v.scalar_value = float(val)
    elif k == "image":
        if not val["pngs"]:
            return None
        v.image.height, v.image.width, v.image.colorspace = int(val["height"]), int(val["width"]), 3
        v.image.encoded_image = val["pngs"][0]
    elif k == "tensor":
        arr = np.asarray(val)
        if arr.dtype.kind not in "biuf":
            return None
        v.tensor.CopyFrom(tensor_proto(arr))
    elif k == "landscape":
        v.loss_landscape.CopyFrom(val.to_message())
    elif k == "histogram":
        if "buckets" in val:
            buckets = [tuple(b) for b in val["buckets"]]
        else:
            limits, counts = list(val["limits"]), list(val["counts"])
            lefts = [val["min"]] + limits[:-1]
            buckets = [(lo, hi - lo, c) for lo, hi, c in zip(lefts, limits, counts)
                       if math.isfinite(lo) and math.isfinite(hi)]
        while len(buckets) > MAX_BUCKETS:  # merge neighbours until MindInsight takes it
            pairs = zip(buckets[::2], buckets[1::2])  # an odd last one stays as it is
            buckets = ([(a[0], a[1] + b[1], a[2] + b[2]) for a, b in pairs]
                       + buckets[len(buckets) // 2 * 2:])
        h = v.histogram
        for left, width, count in buckets:
            h.buckets.add(left=float(left), width=float(width), count=int(round(count)))
        h.count = int(round(val["num"]))
        h.min, h.max, h.sum = float(val["min"]), float(val["max"]), float(val["sum"] or 0.0)
        for name in ("nan_count", "pos_inf_count", "neg_inf_count"):
            if val.get(name):
                setattr(h, name, int(val[name]))
    else:
        return None
    return v


def summary_of_values(wall_time: float, step: int, values: Sequence[Any]) -> bytes:
    """One summary Event holding Summary.Value messages (from value_of_event)."""
    return ms.Event(wall_time=wall_time, step=step, summary={"value": values}).SerializeToString()


# ---- decoding ------------------------------------------------------------------------

def tensor_to_numpy(t: Any) -> np.ndarray:
    """The array of an anf_ir TensorProto (exact fields preferred)."""
    shape = [int(d) for d in t.dims]
    dt = _NP_OF_DT.get(t.data_type, np.dtype(np.float32))
    # what the fields hold decides the cap: no expansion past it (tensor_elements)
    held = max(len(t.double_data), len(t.int64_data), len(t.uint64_data), len(t.int32_data),
               len(t.float_data), len(t.raw_data) // dt.itemsize)
    size = tensor_elements(shape, held)
    for field in ("double_data", "int64_data", "uint64_data", "int32_data", "float_data"):
        vals = getattr(t, field)
        if len(vals) == size:
            return np.array(vals).astype(dt).reshape(shape)
    if t.raw_data and len(t.raw_data) == size * dt.itemsize:
        return np.frombuffer(t.raw_data, dt.newbyteorder("<")).astype(dt).reshape(shape)
    if held or t.raw_data:  # data that does not fill the shape: malformed, not zeros
        raise ValueError(f"tensor data ({held} values) does not match its shape {shape}")
    return np.zeros(shape, dt)


def _histogram_dict(h: Any) -> dict[str, Any]:
    buckets = sorted(((b.left, b.width, b.count) for b in h.buckets))
    return {"limits": [left + width for left, width, _ in buckets],
            "counts": [float(c) for _, _, c in buckets],
            "buckets": [list(b) for b in buckets],
            "min": h.min, "max": h.max, "num": float(h.count), "sum": h.sum,
            "sum_squares": None, "nan_count": h.nan_count, "pos_inf_count": h.pos_inf_count,
            "neg_inf_count": h.neg_inf_count}


def _landscape(v: Any) -> Any:
    """A Summary.Value's landscape as a Landscape (ValueError: a bad value)."""
    from ..landscape.result import Landscape

    return Landscape.from_message(v.tag, v.loss_landscape)


#: Summary.Value field -> (Event kind, its value)
_DECODE = {
    "scalar_value": ("scalar", lambda v: float(v.scalar_value)),
    "image": ("image", lambda v: {"width": v.image.width, "height": v.image.height,
                                  "pngs": [v.image.encoded_image]}),
    "tensor": ("tensor", lambda v: tensor_to_numpy(v.tensor)),
    "histogram": ("histogram", lambda v: _histogram_dict(v.histogram)),
    "loss_landscape": ("landscape", lambda v: _landscape(v)),
}
_OTHER = ("other", lambda v: v.SerializeToString())


def decode_event(payload: bytes, plugins: dict[str, str] | None = None,
                 values: bool = True) -> list[Any]:
    """Plain :class:`summarylog.events.Event` objects for one summary record (as the
    TensorBoard dialect's; histograms also carry buckets and non-finite counts).
    ``values=False``: kinds only.  A tag that is not UTF-8 comes surrogate-escaped."""
    ev = ms.Event.FromString(payload)
    which = ev.WhichOneof("what")
    if which == "summary":
        out = []
        for v in ev.summary.value:
            kind, value_of = _DECODE.get(v.WhichOneof("value") or "", _OTHER)
            tag = v.tag
            if isinstance(tag, bytes):  # proto2 hands a non-UTF-8 string back as bytes
                tag = tag.decode("utf-8", "surrogateescape")
            out.append(Event(kind, tag, ev.step, ev.wall_time, value_of(v) if values else None))
        return out
    if which is None:
        return []
    kind = {"version": "file_version", "graph_def": "graph"}.get(which, "other")
    value = getattr(ev, which)
    return [Event(kind, "", ev.step, ev.wall_time,
                  value if which == "version" else value.SerializeToString())]


def decode_lineage(payload: bytes) -> tuple[str, float, dict[str, Any]]:
    """``(member, wall_time, fields)`` of one LineageEvent record; fields in protobuf's
    JSON form (proto field names)."""
    from google.protobuf import json_format

    ev = ms.LineageEvent.FromString(payload)
    which = ev.WhichOneof("what") or ""
    body = getattr(ev, which) if which else None
    fields = (json_format.MessageToDict(body, preserving_proto_field_name=True)
              if body is not None and not isinstance(body, str) else {})
    return which, ev.wall_time, fields


def user_info_dict(info: Mapping[str, Any]) -> dict[str, Any]:
    """``{key: value}`` of a UserDefinedInfo in JSON form, read as MindInsight does."""
    out: dict[str, Any] = {}
    entries: Sequence[Mapping[str, Any]] = [info, *info.get("user_info", [])]
    for entry in entries:
        for field in ("map_int32", "map_double", "map_str"):
            out.update(entry.get(field, {}))
    return out
