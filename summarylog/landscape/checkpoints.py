"""Parameter snapshots for loss landscapes, in each framework's own format, read back
as ``{name: numpy array}`` without that framework when it can be avoided:

- ``.ckpt``: MindSpore's checkpoint protobuf (``Checkpoint{Value{tag, TensorProto}}``),
  written and read here by its wire format, so ``mindspore.load_checkpoint`` reads ours
  and we read MindSpore's without importing MindSpore;
- ``.pt``: ``torch.save`` of a ``{name: tensor}`` dict (read with ``weights_only=True``);
- ``.npz``: numpy's, for JAX/flax pytrees flattened to ``"a/b/kernel"`` names
  (read with ``allow_pickle=False``).

Every length read from a file is checked against the bytes that are there."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["EXTENSIONS", "save", "load", "flatten_pytree", "unflatten_like"]

#: framework -> file extension
EXTENSIONS = {"mindspore": ".ckpt", "torch": ".pt", "jax": ".npz", "numpy": ".npz"}
_MS_TYPES = {"Float16": np.float16, "Float32": np.float32, "Float64": np.float64,
             "Int8": np.int8, "Int16": np.int16, "Int32": np.int32, "Int64": np.int64,
             "UInt8": np.uint8, "UInt16": np.uint16, "UInt32": np.uint32, "UInt64": np.uint64,
             "Bool": np.bool_}
_MS_NAMES = {np.dtype(v): k for k, v in _MS_TYPES.items()}
_MAX_DIMS = 64
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def save(path: str | os.PathLike[str], named: Mapping[str, Any]) -> None:
    """Write ``named`` (name -> array-like on the host) to ``path`` in the format its
    extension names, through a fresh file renamed over ``path`` (never through a link)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1]
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            if ext == ".ckpt":
                f.write(_ckpt_bytes(named))
            elif ext == ".pt":
                import torch

                torch.save({k: torch.as_tensor(np.asarray(v)) if not isinstance(v, torch.Tensor)
                            else v for k, v in named.items()}, f)
            elif ext == ".npz":
                np.savez(f, **{k: np.asarray(v) for k, v in named.items()})
            else:
                raise ValueError(f"path: no checkpoint format for {ext!r} "
                                 f"(one of .ckpt, .pt, .npz)")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """``{name: array}`` from a checkpoint written by :func:`save` (or by MindSpore's
    ``save_checkpoint``); ValueError on a damaged or foreign file."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1]
    if ext == ".ckpt":
        with open(path, "rb") as f:
            return _ckpt_arrays(f.read(), path)
    if ext == ".pt":
        import torch

        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, Mapping):
            raise ValueError(f"{path}: not a dict of tensors")
        return {str(k): v.detach().cpu().numpy() for k, v in state.items()
                if isinstance(v, torch.Tensor)}
    if ext == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    raise ValueError(f"{path}: no checkpoint format for {ext!r} (one of .ckpt, .pt, .npz)")


def _key_name(k: Any) -> str:
    for attr in ("key", "name", "idx"):  # jax's DictKey, GetAttrKey, SequenceKey
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def flatten_pytree(tree: Any) -> dict[str, Any]:
    """A JAX pytree's leaves by path name (``"Dense_0/kernel"``): the names of the
    ``.npz`` a JAX collector saves, and of :func:`unflatten_like`."""
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {"/".join(_key_name(k) for k in path) or "_": leaf for path, leaf in leaves}


def unflatten_like(template: Any, named: Mapping[str, Any]) -> Any:
    """``template``'s pytree with each leaf replaced by ``named``'s array of the same
    path name (KeyError naming it when missing; ValueError on a shape change)."""
    import jax

    paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    leaves = []
    for path, leaf in paths:
        name = "/".join(_key_name(k) for k in path) or "_"
        if name not in named:
            raise KeyError(f"the checkpoint has no parameter {name!r}")
        arr = named[name]
        if tuple(np.shape(arr)) != tuple(np.shape(leaf)):
            raise ValueError(f"parameter {name!r}: the checkpoint's shape {np.shape(arr)} is not "
                             f"the model's {np.shape(leaf)}")
        leaves.append(arr)
    return jax.tree_util.tree_unflatten(treedef, leaves)


# -- MindSpore's checkpoint protobuf, by hand: three small messages ---------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _ckpt_bytes(named: Mapping[str, Any]) -> bytes:
    parts = []
    for name, value in named.items():
        arr = np.asarray(value)  # (ascontiguousarray would make a scalar 1-D)
        kind = _MS_NAMES.get(arr.dtype)
        if kind is None:
            raise TypeError(f"named[{name!r}]: dtype {arr.dtype} has no MindSpore type")
        dims = b"".join(_varint(1 << 3) + _varint(int(d)) for d in arr.shape)
        tensor = dims + _field(2, kind.encode()) + _field(3, arr.astype(arr.dtype.newbyteorder("<"),
                                                                         copy=False).tobytes(order="C"))
        parts.append(_field(1, _field(1, str(name).encode()) + _field(2, tensor)))
    return b"".join(parts)


class _Wire:
    def __init__(self, buf: memoryview, where: str) -> None:
        self.buf, self.pos, self.where = buf, 0, where

    def varint(self) -> int:
        n = shift = 0
        while True:
            if self.pos >= len(self.buf) or shift > 63:
                raise ValueError(f"{self.where}: truncated or overlong varint")
            b = self.buf[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def fields(self):  # (number, wire type, value: int or memoryview)
        while self.pos < len(self.buf):
            key = self.varint()
            num, wt = key >> 3, key & 7
            if wt == 0:
                yield num, wt, self.varint()
            elif wt == 2:
                n = self.varint()
                if n > len(self.buf) - self.pos:
                    raise ValueError(f"{self.where}: a field claims {n} bytes, "
                                     f"{len(self.buf) - self.pos} are left")
                yield num, wt, self.buf[self.pos:self.pos + n]
                self.pos += n
            elif wt in (1, 5):
                size = 8 if wt == 1 else 4
                if size > len(self.buf) - self.pos:
                    raise ValueError(f"{self.where}: truncated fixed field")
                self.pos += size
                yield num, wt, None
            else:
                raise ValueError(f"{self.where}: wire type {wt} is not a checkpoint's")


def _ckpt_arrays(data: bytes, where: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for num, wt, value in _Wire(memoryview(data), where).fields():
        if num != 1 or wt != 2:
            continue
        name, tensor = None, None
        for n2, w2, v2 in _Wire(value, where).fields():
            if n2 == 1 and w2 == 2:
                name = bytes(v2).decode("utf-8", "replace")
            elif n2 == 2 and w2 == 2:
                tensor = v2
        if name is None or tensor is None:
            continue  # a map tensor or a foreign value: not a parameter we can use
        dims, kind, content = [], None, None
        for n3, w3, v3 in _Wire(tensor, where).fields():
            if n3 == 1 and w3 == 0:
                dims.append(v3)
            elif n3 == 1 and w3 == 2:  # packed dims
                w = _Wire(v3, where)
                while w.pos < len(w.buf):
                    dims.append(w.varint())
            elif n3 == 2 and w3 == 2:
                kind = bytes(v3).decode("ascii", "replace")
            elif n3 == 3 and w3 == 2:
                content = v3
        if kind not in _MS_TYPES or content is None or len(dims) > _MAX_DIMS:
            raise ValueError(f"{where}: parameter {name!r} has an unknown type {kind!r} "
                             f"or no data")
        dt = np.dtype(_MS_TYPES[kind]).newbyteorder("<")
        dims = [d if d < 1 << 63 else d - (1 << 64) for d in dims]
        count = 1
        for d in dims:
            if d < 0:
                raise ValueError(f"{where}: parameter {name!r} has a negative dimension")
            count *= d
        if count * dt.itemsize != len(content):
            raise ValueError(f"{where}: parameter {name!r}: shape {dims} needs "
                             f"{count * dt.itemsize} bytes, the file has {len(content)}")
        out[name] = np.frombuffer(content, dt).astype(dt.newbyteorder("="), copy=True).reshape(dims)
    return out
