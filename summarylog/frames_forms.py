"""The form a tag's values were written in, which decides tbparse's kind for them.

tbparse files values as TensorBoard's EventAccumulator does: by the Summary.Value field
that holds them, not by plugin.  A legacy ``image`` / ``histo`` value is an image /
histogram; the same data written as a plugin ``tensor`` (TF2's ``tf.summary``, and
summarylog's own image writer) is a tensor, its value the tensor as tbparse's make_ndarray
gives it.  The Reader decodes both forms to the same event, so the form is looked up in
the file's bytes, as frames_leaf does for simple-value scalars."""

from __future__ import annotations

import mmap
import os
import stat
from typing import Any

import numpy as np

from .discovery import dialect_of
from .pb import len_field

__all__ = ["TensorForms", "histogram_tensor", "image_tensor", "tensor_form_tags"]

_TENSOR_KEY = b"\x42"  # Summary.Value field 8 (tensor), length-delimited
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def tensor_form_tags(path: str, tags: list[str]) -> set[str]:
    """The ``tags`` written as tensors in the file (a Value's tag field directly followed
    by its tensor field: fields are serialized in number order, so nothing sits between
    them).  Empty for MindSpore files and for files not searchable as bytes (compressed,
    unreadable): their values keep the kind the Reader gives them."""
    if not tags or dialect_of(path) == "mindspore":
        return set()
    try:
        # non-blocking, and regular files only: a FIFO named like an event file must not hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return set()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return set()
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            if m[:4] == _ZSTD_MAGIC:
                return set()
            keys = {t: len_field(1, t.encode("utf-8", "surrogateescape")) + _TENSOR_KEY
                    for t in tags}
            return {t for t, key in keys.items() if m.find(key) >= 0}
    except (OSError, ValueError):  # empty file (mmap of 0 bytes) or unreadable
        return set()
    finally:
        os.close(fd)


class TensorForms:
    """Whether a tag of one file was written as tensors, looked up once per tag (only
    tags of images and histograms are asked about: the kinds whose two forms decode alike)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._known: dict[str, bool] = {}

    def tensor(self, tag: str) -> bool:
        if tag not in self._known:
            self._known[tag] = bool(tensor_form_tags(self.path, [tag]))
        return self._known[tag]


def image_tensor(value: dict[str, Any]) -> np.ndarray:
    """An images-plugin tensor (width, height, then the encoded images) as tbparse holds
    it: a 1-D object array of bytes."""
    out = np.empty(2 + len(value["pngs"]), dtype=object)
    out[:] = [str(int(value["width"])).encode(), str(int(value["height"])).encode(),
              *value["pngs"]]
    return out


def histogram_tensor(value: dict[str, Any]) -> np.ndarray:
    """A histograms-plugin tensor (rows of left edge, right edge, count) as tbparse holds
    it, float64 k x 3.  The Reader keeps the right edges and the first left edge (``min``);
    each other left edge is the previous right edge, as TensorBoard's writer makes them
    (one linspace of edges)."""
    right = np.asarray(value["limits"], np.float64)
    counts = np.asarray(value["counts"], np.float64)
    if not len(right):
        return np.zeros((0, 3), np.float64)
    left = np.concatenate([[float(value["min"])], right[:-1]])
    return np.stack([left, right, counts], axis=1)
