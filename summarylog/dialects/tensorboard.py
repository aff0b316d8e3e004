"""The TensorBoard dialect: event payloads TensorBoard reads as they are (conventions:
docs/format.md §6).  hparams are written as session start and end info in the run
itself, with no experiment record: TensorBoard then builds the experiment from every
run's hparams, so runs with different keys all show.
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._native import ffi, lib
from ..events import Event
from ..histograms import as_float_array, equal_width_counts, value_stats
from ..pb import message_class, tb
from ..png import encode_png

__all__ = ["TensorBoardEncoder", "FILE_VERSION", "DTYPES", "text_event"]

FILE_VERSION = "brain.Event:2"
WRITER_NAME = "summarylog"

#: numpy dtype -> TensorFlow DataType number (``DT_`` and the name in capitals but floats')
_FLOATS = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}
DTYPES: dict[np.dtype, int] = {
    np.dtype(k): tb.DataType.values_by_name[_FLOATS.get(k, "DT_" + k.upper())].number
    for k in (*_FLOATS, "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "bool", "complex64", "complex128")
}
_DT_STRING = tb.DataType.values_by_name["DT_STRING"].number
_BLOB_SEQUENCE = tb.DataClass.values_by_name["DATA_CLASS_BLOB_SEQUENCE"].number
_TENSOR = tb.DataClass.values_by_name["DATA_CLASS_TENSOR"].number


def plugin_metadata(plugin: str, content: bytes = b"", data_class: int = 0,
                    **fields: Any) -> Any:
    """A SummaryMetadata naming ``plugin`` (``fields``: display_name and friends)."""
    return tb.SummaryMetadata(data_class=data_class,
                              plugin_data={"plugin_name": plugin, "content": content}, **fields)


_IMAGES_MD = plugin_metadata("images", tb.ImagePluginData(version=0).SerializeToString(),
                             _BLOB_SEQUENCE)
_TEXT_MD = plugin_metadata("text", tb.TextPluginData(version=0).SerializeToString(), _TENSOR)


def value_event(wall_time: float, step: int, **value: Any) -> bytes:
    """A serialized Event holding one Summary.Value made of ``value``'s fields."""
    ev = tb.Event(wall_time=wall_time, step=step)
    ev.summary.value.add(**value)
    return ev.SerializeToString()


def protobuf_value_class() -> Any:
    """google.protobuf.Value (an hparam's value) from summarylog's pool."""
    from google.protobuf import struct_pb2  # noqa: F401  (the pool has Value)

    return message_class("google.protobuf.Value")


def histogram_proto(values: np.ndarray, bins: int) -> Any:
    """HistogramProto of ``values``: ``bins`` equal-width buckets over the finite
    range; ±inf counted in the edge buckets; NaN only in ``num``."""
    flat = np.ravel(values)
    if flat.dtype.kind not in "fiub":
        raise TypeError(f"values must be numeric, got dtype {flat.dtype}")
    if flat.dtype.kind != "f":
        flat = flat.astype(np.float64)
    arr = as_float_array(flat)
    st = value_stats(arr)
    n_pos_inf, n_neg_inf = st.pos_inf_count, st.neg_inf_count
    h = tb.HistogramProto(num=float(flat.size))
    if st.finite:
        lo, hi = st.min, st.max
        h.min, h.max, h.sum, h.sum_squares = lo, hi, st.sum, st.sum_squares
        if lo == hi:
            # one zero-width bucket, as TensorBoard's own summary does: no empty edge
            # buckets whose limits lie outside [min, max]
            h.bucket_limit.append(hi)
            h.bucket.append(float(st.finite + n_neg_inf + n_pos_inf))
        else:
            # edges as np.histogram(finite, bins, range=(lo, hi)) makes them
            edges = np.linspace(lo, hi, bins + 1, dtype=flat.dtype)
            counts = equal_width_counts(arr, edges).astype(np.float64)
            counts[0] += n_neg_inf
            counts[-1] += n_pos_inf
            h.bucket_limit.extend(edges[1:].astype(np.float64).tolist())
            h.bucket.extend(counts.tolist())
    elif n_pos_inf or n_neg_inf:
        h.min = -math.inf if n_neg_inf else math.inf
        h.max = math.inf if n_pos_inf else -math.inf
        if n_neg_inf and n_pos_inf:
            h.bucket_limit.extend([0.0, math.inf])
            h.bucket.extend([float(n_neg_inf), float(n_pos_inf)])
        else:  # only one sign: one bucket, no empty one
            h.bucket_limit.append(h.max)
            h.bucket.append(float(n_neg_inf + n_pos_inf))
    return h


def tensor_proto(array: np.ndarray) -> Any:
    """TensorProto keeping dtype and shape; values as raw little-endian bytes."""
    arr = np.asarray(array)
    t = tb.TensorProto()
    for d in arr.shape:  # a scalar has no tensor_shape at all, as TensorFlow writes it
        t.tensor_shape.dim.add(size=int(d))
    if arr.dtype.kind in "US" or arr.dtype == object:
        t.dtype = _DT_STRING
        t.string_val.extend(s.encode() if isinstance(s, str) else bytes(s)
                            for s in arr.ravel().tolist())
        return t
    dt = DTYPES.get(arr.dtype.newbyteorder("=") if arr.dtype.byteorder not in "=|" else arr.dtype)
    if dt is None:
        raise TypeError(f"unsupported tensor dtype {arr.dtype}")
    t.dtype = dt
    t.tensor_content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
    return t


def hparam_value(name: str, v: Any) -> Any:
    """An hparam as a google.protobuf.Value: bool, number or string; TypeError naming
    ``hparams[name]`` for anything else."""
    Value = protobuf_value_class()
    if isinstance(v, bool) or type(v) is np.bool_:
        return Value(bool_value=bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)):
        return Value(number_value=float(v))
    if isinstance(v, str):
        return Value(string_value=v)
    raise TypeError(f"hparams[{name!r}] must be bool, int, float or str, got {type(v).__name__}")


def text_event(wall_time: float, step: int, tag: str, text: str,
               shape: Sequence[int] = ()) -> bytes:
    """A text event: one string, a scalar as tf.summary writes it, or ``shape=(1,)`` as
    torch's and tensorboardX's writers do (the Text tab draws that as a table)."""
    t = tb.TensorProto(dtype=_DT_STRING, tensor_shape={"dim": [{"size": d} for d in shape]},
                       string_val=[text.encode("utf-8")])
    return value_event(wall_time, step, tag=tag, metadata=_TEXT_MD, tensor=t)


class TensorBoardEncoder:
    """Event payloads in TensorBoard's dialect."""

    name = "tensorboard"

    def file_header(self, wall_time: float) -> bytes:
        return tb.Event(wall_time=wall_time, file_version=FILE_VERSION,
                        source_metadata={"writer": WRITER_NAME}).SerializeToString()

    def purge_marker(self, wall_time: float, step: int) -> list[bytes]:
        """TensorBoard's resume marker: purge earlier events with step >= step."""
        a = tb.Event(wall_time=wall_time, step=step, file_version=FILE_VERSION)
        b = tb.Event(wall_time=wall_time, step=step, session_log={"status": 1})  # START
        return [a.SerializeToString(), b.SerializeToString()]

    def scalars(self, wall_time: float, step: int, tags: Sequence[str],
                values: Sequence[float]) -> bytes:
        ev = tb.Event(wall_time=wall_time, step=step)
        for tag, v in zip(tags, values):
            ev.summary.value.add(tag=tag, simple_value=v)
        return ev.SerializeToString()

    def write_scalar_columns(self, rw: Any, columns: tuple[Any, ...],
                             tag_table: tuple[bytes, Any]) -> tuple[int, int]:
        """Scalar events of ScalarEvents.columns(), encoded in C and framed into ``rw``:
        ``(events taken, native status)``; the caller reports the status."""
        n, walls, steps, counts, ids, vals = columns
        tag_data, offsets = tag_table
        args = (n, ffi.from_buffer("double[]", walls), ffi.from_buffer("int64_t[]", steps),
                ffi.from_buffer("uint32_t[]", counts), ffi.from_buffer("uint32_t[]", ids),
                ffi.from_buffer("double[]", vals), tag_data,
                ffi.from_buffer("uint64_t[]", offsets), len(offsets) - 1)
        if rw.compression is None:  # framed straight into the native buffer
            accepted = ffi.new("uint64_t *")
            rc = lib.slg_writer_write_tb_scalars(rw.handle, *args, accepted)
            return int(accepted[0]), rc
        need = lib.slg_tb_encode_scalars(ffi.NULL, 0, *args)
        out = bytearray(need)
        lib.slg_tb_encode_scalars(ffi.from_buffer(out), need, *args)
        rw.write_framed(out, n)
        return n, 0

    def histogram(self, wall_time: float, step: int, tag: str, values: np.ndarray,
                  bins: int) -> bytes:
        """A histogram event; ``bins <= 0``: MindSpore's bucket rule.  Float values
        are encoded in one C call, what it hands back by :func:`histogram_proto`."""
        if values.dtype == np.float32 or values.dtype == np.float64:
            arr = as_float_array(values)
            tag_b = tag.encode("utf-8")
            cap = lib.slg_tb_histogram_event_bound(len(tag_b), bins)
            out = ffi.new("char[]", cap)
            n = lib.slg_tb_encode_histogram_event(
                ffi.from_buffer("char[]", arr), arr.dtype == np.float64, arr.size, bins,
                wall_time, step, tag_b, len(tag_b), out, cap)
            if n >= 0 and n != lib.SLG_HIST_FALLBACK:
                return ffi.buffer(out, n)[:]
            if n < 0:
                raise OSError(-n, f"slg_tb_encode_histogram_event: {os.strerror(-n)}")
        if bins <= 0:
            bins = lib.slg_ms_bins(value_stats(as_float_array(np.ravel(values))).finite)
        return value_event(wall_time, step, tag=tag, histo=histogram_proto(values, bins))

    def images(self, wall_time: float, step: int, tag: str, pngs: Sequence[bytes],
               height: int, width: int, channels: int) -> bytes:
        t = tb.TensorProto(dtype=_DT_STRING, tensor_shape={"dim": [{"size": 2 + len(pngs)}]},
                           string_val=[str(width).encode(), str(height).encode(), *pngs])
        return value_event(wall_time, step, tag=tag, metadata=_IMAGES_MD, tensor=t)

    def text(self, wall_time: float, step: int, tag: str, text: str) -> bytes:
        return text_event(wall_time, step, tag, text)

    def tensor(self, wall_time: float, step: int, tag: str, array: np.ndarray) -> bytes:
        md = tb.SummaryMetadata(data_class=_TENSOR)
        return value_event(wall_time, step, tag=tag, metadata=md, tensor=tensor_proto(array))

    def graph(self, wall_time: float, graph: bytes, step: int | None = None) -> bytes:
        """An Event holding a serialized GraphDef (TensorBoard's Graphs tab)."""
        return tb.Event(wall_time=wall_time, graph_def=graph).SerializeToString()

    def summary(self, wall_time: float, step: int,
                values: Iterable[tuple[str, str, Any]]) -> list[bytes]:
        """A recorded step's values (see dialects.base): scalars in one event, histograms
        by MindSpore's bucket rule, images as MindSpore's grid, a landscape as
        :meth:`landscape` writes it."""
        from .mindspore import image_grid

        out, tags, floats = [], [], []
        for plugin, tag, value in values:
            if plugin == "scalar":
                tags.append(tag)
                floats.append(float(value))
            elif plugin == "image":
                grid = image_grid(value)
                out.append(self.images(wall_time, step, tag, [encode_png(grid)],
                                       grid.shape[0], grid.shape[1], 3))
            elif plugin == "tensor":
                out.append(self.tensor(wall_time, step, tag, value))
            elif plugin == "histogram":
                out.append(self.histogram(wall_time, step, tag, value, 0))
            elif plugin in ("LANDSCAPE", "landscape"):
                out.append(self.landscape(wall_time, step, tag, value))
            else:
                raise ValueError(f"no summary plugin {plugin!r}")
        return [self.scalars(wall_time, step, tags, floats)] + out if tags else out

    def landscape(self, wall_time: float, step: int, tag: str, message: Any) -> bytes:
        """One event of a loss landscape (a LossLandscape message): the exact value,
        a mesh and a contour image (dialects.tb_landscape)."""
        from .tb_landscape import landscape_values

        ev = tb.Event(wall_time=wall_time, step=step)
        ev.summary.value.extend(landscape_values(tag, message))
        return ev.SerializeToString()

    def hparams(self, wall_time: float, hparams: Mapping[str, Any],
                metrics: Sequence[str]) -> list[bytes]:
        start = tb.SessionStartInfo(start_time_secs=wall_time)
        for name, v in hparams.items():
            start.hparams[name].CopyFrom(hparam_value(name, v))
        end = tb.SessionEndInfo(status=1, end_time_secs=wall_time)  # STATUS_SUCCESS
        out = []
        for key, info in (("session_start_info", start), ("session_end_info", end)):
            data = tb.HParamsPluginData(version=0, **{key: info}).SerializeToString()
            out.append(value_event(wall_time, 0, tag=f"_hparams_/{key}",
                                   metadata=plugin_metadata("hparams", data)))
        return out


def payload_of_event(ev: Any) -> bytes | None:
    """A TensorBoard event record for one plain :class:`~summarylog.events.Event` of
    any dialect (for conversion), or None for kinds TensorBoard has no place for."""
    k, wall, step, tag, v = ev.kind, ev.wall_time, ev.step, ev.tag, ev.value
    enc = TensorBoardEncoder()
    if k == "scalar":
        return value_event(wall, step, tag=tag, simple_value=float(v))
    if k == "histogram":
        h = tb.HistogramProto(min=v["min"], max=v["max"], num=v["num"], sum=v["sum"] or 0.0,
                              sum_squares=v.get("sum_squares") or 0.0,
                              bucket_limit=v["limits"], bucket=v["counts"])
        return value_event(wall, step, tag=tag, histo=h)
    if k == "image":
        return enc.images(wall, step, tag, v["pngs"], v["height"], v["width"], 0)
    if k == "text":
        return enc.text(wall, step, tag, str(v))
    if k == "tensor":
        return enc.tensor(wall, step, tag, np.asarray(v))
    if k == "landscape":
        return enc.landscape(wall, step, tag, v.to_message())
    return None


# ---- decoding -----------------------------------------------------------------

_SESSION_STATUS = {0: "unspecified", 1: "start", 2: "stop", 3: "checkpoint"}
_EVENT_KIND = {"file_version": "file_version", "session_log": "session_log",
               "graph_def": "graph", "meta_graph_def": "graph"}
_NP_OF_DT = {v: k for k, v in DTYPES.items()}
_DT_BFLOAT16 = tb.DataType.values_by_name["DT_BFLOAT16"].number


#: most elements a tensor expands to past the values it holds: a few bytes can't claim GiBs
MAX_EXPANDED_ELEMENTS = 1 << 20


def tensor_elements(shape: list[int], present: int) -> int:
    """The element count of a shape; ValueError for a negative dimension, or for more
    than MAX_EXPANDED_ELEMENTS elements where only ``present`` values are stored."""
    if any(d < 0 for d in shape):
        raise ValueError(f"tensor shape {shape} has a negative dimension")
    size = math.prod(shape)
    if size > max(present, MAX_EXPANDED_ELEMENTS):
        raise ValueError(f"tensor shape {shape} needs {size} elements but holds {present} "
                         f"(expansion is capped at {MAX_EXPANDED_ELEMENTS})")
    return size


def _expanded(arr: np.ndarray, shape: list[int]) -> np.ndarray:
    size = tensor_elements(shape, arr.size)
    if arr.size == 1 and size > 1:  # TF's repeated-last-value packing
        arr = np.repeat(arr, size)
    return arr


def _tensor_to_numpy(t: Any) -> np.ndarray:
    shape = [d.size for d in t.tensor_shape.dim]
    if t.dtype == _DT_STRING:
        return np.array(list(t.string_val), dtype=object).reshape(shape)
    if t.dtype == _DT_BFLOAT16:  # no numpy dtype: widen the bits to float32
        bits = (np.frombuffer(t.tensor_content, "<u2").astype(np.uint32) if t.tensor_content
                else np.array(list(t.half_val), np.uint32))
        return _expanded((bits << 16).view(np.float32), shape).reshape(shape)
    dt = _NP_OF_DT.get(t.dtype)
    if dt is None:
        raise ValueError(f"unsupported tensor dtype {t.dtype}")
    if t.tensor_content:
        return np.frombuffer(t.tensor_content, dt.newbyteorder("<")).astype(dt).reshape(shape)
    for field in ("float_val", "double_val", "int_val", "int64_val", "bool_val", "uint32_val",
                  "uint64_val", "half_val"):
        vals = getattr(t, field)
        if len(vals):
            if field == "half_val":
                vals = np.array(vals, np.uint16).view(np.float16)
            return _expanded(np.array(vals), shape).astype(dt).reshape(shape)
    tensor_elements(shape, 0)
    return np.zeros(shape, dt)


_KIND_OF_PLUGIN = {"scalars": "scalar", "images": "image", "text": "text",
                   "histograms": "histogram", "loss_landscape": "landscape"}


def _decode_value(v: Any, plugins: dict[str, str], values: bool = True) -> tuple[str, Any]:
    from google.protobuf import json_format

    plugin = v.metadata.plugin_data.plugin_name if v.HasField("metadata") else ""
    if plugin:
        plugins[v.tag] = plugin
    else:
        plugin = plugins.get(v.tag, "")
    which = v.WhichOneof("value")
    if not values:  # the kind only (a tag listing): nothing converted
        if which in ("simple_value", "histo", "image"):
            return {"simple_value": "scalar", "histo": "histogram"}.get(which, which), None
        if plugin == "hparams":
            return "hparams", None
        return (_KIND_OF_PLUGIN.get(plugin, "tensor") if which == "tensor" else "other"), None
    if which == "simple_value":
        return "scalar", float(v.simple_value)
    if which == "histo":
        h = v.histo
        return "histogram", {"limits": list(h.bucket_limit), "counts": list(h.bucket),
                             "min": h.min, "max": h.max, "num": h.num, "sum": h.sum,
                             "sum_squares": h.sum_squares}
    if which == "image":
        return "image", {"width": v.image.width, "height": v.image.height,
                         "pngs": [v.image.encoded_image_string]}
    if plugin == "hparams":
        data = tb.HParamsPluginData.FromString(v.metadata.plugin_data.content)
        return "hparams", json_format.MessageToDict(data, preserving_proto_field_name=True)
    if which == "tensor":
        t = v.tensor
        if plugin == "scalars":
            return "scalar", float(_tensor_to_numpy(t).reshape(()))
        if plugin == "images":
            vals = list(t.string_val)
            return "image", {"width": int(vals[0] or 0), "height": int(vals[1] or 0),
                             "pngs": vals[2:], "tensor": _tensor_to_numpy(t)}
        if plugin == "text":
            arr = _tensor_to_numpy(t)
            if arr.ndim == 0:
                return "text", arr.item().decode("utf-8", "replace")
            return "text", np.vectorize(lambda b: b.decode("utf-8", "replace"))(arr)
        if plugin == "loss_landscape":
            from .tb_landscape import landscape_of_tensor

            return "landscape", landscape_of_tensor(v.tag, t)
        if plugin == "histograms":
            raw = _tensor_to_numpy(t)
            arr = raw.astype(np.float64).reshape(-1, 3)
            return "histogram", {"limits": arr[:, 1].tolist(), "counts": arr[:, 2].tolist(),
                                 "min": float(arr[0, 0]) if len(arr) else 0.0,
                                 "max": float(arr[-1, 1]) if len(arr) else 0.0,
                                 "num": float(arr[:, 2].sum()), "sum": None, "sum_squares": None,
                                 "tensor": raw}
        return "tensor", _tensor_to_numpy(t)
    return "other", v.SerializeToString()


def decode_event(payload: bytes, plugins: dict[str, str] | None = None,
                 values: bool = True) -> list[Any]:
    """Plain :class:`summarylog.events.Event` objects for one event record (one per
    Summary.Value, or one marker).  ``plugins`` carries each tag's plugin from its
    first value (TF2 writes it once per tag).  ``values=False``: kinds only."""
    plugins = {} if plugins is None else plugins
    ev = tb.Event.FromString(payload)
    which = ev.WhichOneof("what")
    if which == "summary":
        out = []
        for v in ev.summary.value:
            kind, value = _decode_value(v, plugins, values)
            out.append(Event(kind, v.tag, ev.step, ev.wall_time, value))
        return out
    if which is None:
        return []
    value = getattr(ev, which)
    if which == "session_log":
        value = {"status": _SESSION_STATUS.get(value.status, str(value.status)),
                 "checkpoint_path": value.checkpoint_path, "msg": value.msg}
    return [Event(_EVENT_KIND.get(which, "other"), "", ev.step, ev.wall_time, value)]
