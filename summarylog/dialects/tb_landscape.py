"""A loss landscape in the TensorBoard dialect: three Summary.Values of one event.

* ``<tag>``: the landscape itself, exactly: its LossLandscape message (the bytes the
  MindSpore dialect writes) in a scalar string tensor, plugin ``loss_landscape``.
  This is what :class:`summarylog.Reader` reads back, in both dialects the same.
* ``<tag>_VERTEX``, ``_FACE``, ``_COLOR``: the mesh plugin's surface (name ``<tag>``),
  for TensorBoard's Mesh dashboard.  Display geometry in a fixed box (the
  dashboard's camera clips tiny or huge scenes): X = x scaled to [-1, 1], Y = loss
  scaled to [0, 1] over its finite values (1 where not finite, coloured grey),
  Z = -y scaled to [-1, 1] (Y is up in the dashboard); the training path as small
  red triangles just above the surface.  Indices stay below 65536 (the dashboard
  holds faces as Uint16): a bigger grid is drawn with every k-th row and column, a
  path of over 5 461 points with every k-th point (first and last kept).
* ``<tag>/contour``: a contour image (dialects.landscape_png) for the Images dashboard.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..pb import tb
from ..png import encode_png
from .landscape_png import PATH_COLOR, contour_image, loss_colors, unit_loss

__all__ = ["PLUGIN", "landscape_values", "landscape_of_tensor", "landscape_of_bytes",
           "mesh_parts", "MAX_VERTICES"]

PLUGIN = "loss_landscape"  #: the exact value's plugin name (MindInsight's name for it)
MAX_VERTICES = 65536  #: the Mesh dashboard keeps face indices as Uint16
_DT_STRING = tb.DataType.values_by_name["DT_STRING"].number
_MESH_KIND = {"VERTEX": 1, "FACE": 2, "COLOR": 3}  # MeshPluginData.ContentType
_MESH_CONFIG = json.dumps({
    "camera": {"cls": "PerspectiveCamera", "fov": 60, "near": 0.01, "far": 100,
               "position": [1.3, 1.5, 1.9], "lookAt": [0.0, 0.2, 0.0]},
    "material": {"cls": "MeshStandardMaterial", "roughness": 1, "metalness": 0,
                 "side": 2},  # THREE.DoubleSide: visible from below too
    # lit from above (the dashboard's default light comes from below the surface)
    "lights": [{"cls": "AmbientLight", "color": "#ffffff", "intensity": 1.2},
               {"cls": "DirectionalLight", "color": "#ffffff", "intensity": 1.0,
                "position": [1.0, 3.0, 2.0]}],
}, sort_keys=True)


def _picked(n: int, k: int) -> int:
    """How many indices :func:`_picks` keeps of n."""
    return (n - 1) // k + 1 + (1 if (n - 1) % k else 0)


def _stride(n: int, budget: int, m: int = 1) -> int:
    """The smallest step k whose picks of n, times those of m, fit in ``budget``
    (at least 1 kept of each: the first and last, 2 once n >= 2)."""
    lo, hi = 1, max(n, m, 1)  # hi always fits: it keeps at most 2 x 2
    while lo < hi:  # the count only falls as k grows
        mid = (lo + hi) // 2
        if _picked(n, mid) * _picked(m, mid) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _picks(n: int, k: int) -> np.ndarray:
    """Every k-th index of n, the last one always in."""
    idx = np.arange(0, n, k)
    return idx if idx[-1] == n - 1 else np.append(idx, n - 1)


def _box(v: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """``v`` scaled so that the axis' finite range maps to [-1, 1]."""
    a = axis[np.isfinite(axis)]
    if not a.size:
        return np.zeros_like(v)
    lo, hi = float(a.min()), float(a.max())
    with np.errstate(over="ignore", invalid="ignore"):
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        out = (v - mid) / half if half > 0 and math.isfinite(half) else np.zeros_like(v)
    return np.clip(np.nan_to_num(out), -1.0, 1.0)


def mesh_parts(ls: Any) -> dict[str, np.ndarray]:
    """VERTEX [1, V, 3] float32, FACE [1, F, 3] int32 and COLOR [1, V, 3] uint8 of a
    landscape with at least a 2 x 2 grid (see the module docstring)."""
    ny, nx = ls.z.shape
    path = np.arange(0 if ls.path_x is None else ls.path_x.size)
    if path.size:  # at most a quarter of the vertices for the path's markers (3 each)
        path = _picks(path.size, _stride(path.size, MAX_VERTICES // 4 // 3))
    n_path = path.size
    k = _stride(ny, MAX_VERTICES - 3 * n_path, nx)
    rows, cols = _picks(ny, k), _picks(nx, k)
    t = unit_loss(ls.z)  # scaled over the whole grid, not the picked points
    tg = t[np.ix_(rows, cols)]
    gy, gx = np.meshgrid(ls.y[rows], ls.x[cols], indexing="ij")
    height = np.where(np.isfinite(tg), tg, 1.0)
    verts = [np.stack([_box(gx, ls.x), height, -_box(gy, ls.y)], -1).reshape(-1, 3)]
    colors = [loss_colors(tg).reshape(-1, 3)]
    r, c = len(rows), len(cols)
    a = (np.arange(r - 1)[:, None] * c + np.arange(c - 1)[None, :]).ravel()
    faces = [np.stack([a, a + 1, a + c], -1), np.stack([a + 1, a + c + 1, a + c], -1)]
    if n_path:
        # the loss at a path point, scaled as the grid's (its own range if the grid has none)
        finite = ls.z[np.isfinite(ls.z)]
        path_z = ls.path_z[path]
        ref = finite if finite.size else path_z[np.isfinite(path_z)]
        lo, hi = (float(ref.min()), float(ref.max())) if ref.size else (0.0, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            pz = (path_z - lo) / (hi - lo) if hi > lo else np.full(n_path, 0.5)
        pz = np.clip(np.nan_to_num(pz, nan=1.0, posinf=1.0, neginf=0.0), 0.0, 1.0) + 0.02
        px, pyz = _box(ls.path_x[path], ls.x), -_box(ls.path_y[path], ls.y)
        s = 0.04  # marker size in the box's units
        offs = np.array([(0.0, 0.0, s), (s, 0.0, -s), (-s, 0.0, -s)])  # counter-clockwise from +Y
        centers = np.stack([px, pz, pyz], -1)
        base = r * c
        verts.append((centers[:, None, :] + offs[None]).reshape(-1, 3))
        colors.append(np.tile(np.array(PATH_COLOR, np.uint8), (3 * n_path, 1)))
        faces.append(base + np.arange(3 * n_path).reshape(-1, 3))
    return {"VERTEX": np.concatenate(verts)[None].astype(np.float32),
            "FACE": np.concatenate(faces)[None].astype(np.int32),
            "COLOR": np.concatenate(colors)[None].astype(np.uint8)}


def _tensor(arr: np.ndarray) -> Any:
    from .tensorboard import tensor_proto

    return tensor_proto(arr)


def _metadata(plugin: str, content: bytes, description: str = "") -> Any:
    return tb.SummaryMetadata(plugin_data={"plugin_name": plugin, "content": content},
                              summary_description=description)


def _describe(ls: Any) -> str:
    finite = ls.z[np.isfinite(ls.z)]
    loss = (f"loss {finite.min():.6g} to {finite.max():.6g}" if finite.size
            else "no finite loss")
    where = f" over {ls.intervals[0]}..{ls.intervals[-1]} {ls.unit}" if ls.intervals else ""
    return (f"{ls.decomposition} landscape{where}: x {ls.x.min():.6g} to {ls.x.max():.6g}, "
            f"y {ls.y.min():.6g} to {ls.y.max():.6g}, {ls.z.shape[0]}x{ls.z.shape[1]} grid, "
            f"{loss}")


def landscape_values(tag: str, message: Any) -> list[Any]:
    """The Summary.Values of a landscape (a LossLandscape message; module docstring).
    A landscape whose grid is too small to draw (under 2 x 2) gets the exact value
    only; ValueError when the message is not a landscape."""
    from ..landscape.result import Landscape

    ls = Landscape.from_message(tag, message)
    exact = tb.TensorProto(dtype=_DT_STRING, string_val=[message.SerializeToString()])
    out = [tb.Summary.Value(tag=tag, metadata=_metadata(PLUGIN, b""), tensor=exact)]
    if min(ls.z.shape) < 2:
        return out
    desc = _describe(ls)
    parts = mesh_parts(ls)
    components = sum(1 << _MESH_KIND[k] for k in parts)
    for kind, arr in parts.items():
        content = tb.MeshPluginData(version=0, name=tag, content_type=_MESH_KIND[kind],
                                    components=components, shape=list(arr.shape),
                                    json_config=_MESH_CONFIG).SerializeToString()
        out.append(tb.Summary.Value(tag=f"{tag}_{kind}", metadata=_metadata("mesh", content, desc),
                                    tensor=_tensor(arr)))
    img = contour_image(ls)
    png = tb.TensorProto(dtype=_DT_STRING, tensor_shape={"dim": [{"size": 3}]},
                         string_val=[str(img.shape[1]).encode(), str(img.shape[0]).encode(),
                                     encode_png(img)])
    images = tb.ImagePluginData(version=0).SerializeToString()
    md = _metadata("images", images, desc)
    md.data_class = tb.DataClass.values_by_name["DATA_CLASS_BLOB_SEQUENCE"].number
    out.append(tb.Summary.Value(tag=f"{tag}/contour", metadata=md, tensor=png))
    return out


def landscape_of_tensor(tag: str, t: Any) -> Any:
    """The :class:`~summarylog.landscape.Landscape` of an exact value's tensor;
    ValueError when it holds no landscape."""

    if t.dtype != _DT_STRING or len(t.string_val) != 1:
        raise ValueError(f"a {PLUGIN} value holds one string, got dtype {t.dtype} with "
                         f"{len(t.string_val)} strings")
    return landscape_of_bytes(tag, bytes(t.string_val[0]))


def landscape_of_bytes(tag: str, raw: bytes) -> Any:
    """The Landscape of a serialized LossLandscape; ValueError for bytes that are
    not one (protobuf's DecodeError included)."""
    from google.protobuf.message import DecodeError

    from ..landscape.result import Landscape
    from ..pb import ms

    try:
        msg = ms.LossLandscape.FromString(raw)
    except DecodeError as exc:
        raise ValueError(f"landscape {tag!r} does not decode: {exc}") from None
    return Landscape.from_message(tag, msg)
