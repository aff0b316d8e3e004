"""Values from any framework (numpy, Python numbers, torch, jax, MindSpore,
TensorFlow) without importing one.  A value in a framework tensor is not read
on the caller's thread: the snapshots return a :class:`Deferred` private copy
(made without a device sync) that the writer resolves on its own thread
(MindSpore's are read at once: a copy of a MindSpore Tensor reads it anyway)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["Deferred", "snapshot_scalar", "resolve_scalar", "snapshot_array", "resolve_array",
           "to_numpy", "framework_of"]


def framework_of(x: Any) -> str | None:
    """'torch', 'jax', 'mindspore', 'tensorflow' or None, from the type's module."""
    for cls in type(x).__mro__[:4]:  # MindSpore's Parameter is made in module "abc"
        root = (cls.__module__ or "").split(".", 1)[0]
        if root in ("torch", "jax", "jaxlib", "mindspore", "tensorflow"):
            return "jax" if root == "jaxlib" else root
    return None


class Deferred:
    """A framework value kept by reference until the writer's thread reads it."""

    __slots__ = ("ref", "name")

    def __init__(self, ref: Any, name: str) -> None:
        self.ref = ref
        self.name = name

    def __repr__(self) -> str:
        return f"Deferred({type(self.ref).__name__})"


def _torch_detached(x: Any) -> Any:
    return x.detach() if x.requires_grad else x  # torch calls release the GIL: only if needed


def _private(x: Any, fw: str, copy: bool = True) -> Any:
    """Framework value ``x`` as the writer may read it later: torch a clone
    (queued on the tensor's stream: no host sync); jax and TF values are
    immutable.  (MindSpore's are read at once: any copy of a Tensor reads it to
    the host, and MindSpore keeps every ``Parameter.copy()`` for good.)"""
    if fw == "torch":
        return x.detach().clone() if copy else _torch_detached(x)
    return x


def snapshot_scalar(value: Any, name: str = "value") -> float | Deferred:
    """A float now, or a Deferred for framework tensors (resolved later).
    TypeError (naming ``name``) for non-numeric values, ValueError for arrays
    that do not hold exactly one element."""
    t = type(value)
    if t is float or t is int or t is np.bool_ or isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.size != 1:
            raise ValueError(f"{name} must hold exactly one element, got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
        return float(arr.reshape(()))
    fw = framework_of(value)
    if fw is not None and hasattr(value, "shape"):
        shape = tuple(value.shape)
        if math.prod(shape) != 1:
            raise ValueError(f"{name} must hold exactly one element, got shape {shape}")
        if fw == "torch" and value.is_complex():
            raise TypeError(f"{name} must be real, got a complex tensor")
        if fw == "mindspore":
            return float(to_numpy(value, name).reshape(()))
        return Deferred(_private(value, fw), name)
    raise TypeError(f"{name} must be a real number or a one-element tensor, got {t.__name__}")


def resolve_scalar(d: Deferred) -> float:
    """Read a Deferred (on the writer's thread); may wait for the device."""
    x = d.ref
    fw = framework_of(x)
    if fw == "torch":
        return float(x.item())
    return float(np.asarray(x).reshape(()))


def snapshot_array(value: Any, name: str = "value",
                   copy: bool = True) -> tuple[np.ndarray | Deferred, tuple[int, ...]]:
    """``(snapshot, shape)``: a numpy copy now, or a :class:`Deferred` private
    copy of a framework tensor (a torch clone made without a sync) read later
    by :func:`resolve_array`.  ``copy=False``: the value is already the
    caller's private copy.  TypeError (naming ``name``) for non-arrays."""
    fw = framework_of(value)
    if fw is not None and fw != "mindspore" and hasattr(value, "shape"):
        return Deferred(_private(value, fw, copy), name), tuple(int(d) for d in value.shape)
    arr = to_numpy(value, name)
    arr = np.array(arr, copy=True) if copy else np.asarray(arr)  # (numpy 1 has no copy=None)
    return arr, arr.shape


def resolve_array(x: np.ndarray | Deferred) -> np.ndarray:
    """The numpy array of a :func:`snapshot_array` result (on a background
    thread; may wait for the device)."""
    if isinstance(x, Deferred):
        return to_numpy(x.ref, x.name)
    return x


def to_numpy(x: Any, name: str = "values") -> np.ndarray:
    """A numpy array from numpy, lists, numbers or any framework's tensor
    (copied off the device; bfloat16 and friends become float32)."""
    if isinstance(x, np.ndarray):
        return x
    fw = framework_of(x)
    if fw == "torch":
        # each torch call releases the GIL, and taking it back on a background
        # thread can hold up the training thread: only the calls needed
        t = _torch_detached(x)
        if t.dtype.is_floating_point and t.dtype.itemsize < 4 and str(t.dtype) != "torch.float16":
            t = t.float()
        return (t if t.device.type == "cpu" else t.cpu()).numpy()
    if fw == "mindspore":
        return np.asarray(x.asnumpy())
    if fw == "tensorflow":
        return np.asarray(x.numpy())
    try:
        arr = np.asarray(x)
    except Exception as exc:
        raise TypeError(f"{name} must be array-like, got {type(x).__name__}: {exc}") from None
    kind = arr.dtype.kind  # (one attribute: JAX collections read six arrays through here)
    if kind in "biuf":
        return arr
    if kind == "O":
        raise TypeError(f"{name} must be numeric array-like, got {type(x).__name__} of objects")
    if kind == "V" or arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    return arr
