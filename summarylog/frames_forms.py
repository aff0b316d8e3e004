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

__all__ = ["TensorForms", "histogram_tensor", "image_tensor", "tensor_form_tags",
           "tensor_offsets"]

_TENSOR_KEY = b"\x42"  # Summary.Value field 8 (tensor), length-delimited
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def tensor_offsets(path: str, tags: list[str]) -> dict[str, int]:
    """Where each of ``tags`` first holds a tensor in the file (the byte offset of a
    Value's tag field directly followed by its tensor field: fields are serialized in
    number order, so nothing sits between them); tags never written as tensors are left
    out.  Empty for MindSpore files and for files not searchable as bytes (compressed,
    unreadable, not a regular file): their values keep the kind the Reader gives them."""
    if not tags or dialect_of(path) == "mindspore":
        return {}
    try:
        # non-blocking, and regular files only: a FIFO named like an event file must not hang
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            if m[:4] == _ZSTD_MAGIC:
                return {}
            found = {t: m.find(len_field(1, t.encode("utf-8", "surrogateescape")) + _TENSOR_KEY)
                     for t in tags}
            return {t: at for t, at in found.items() if at >= 0}
    except (OSError, ValueError):  # empty file (mmap of 0 bytes) or unreadable
        return {}
    finally:
        os.close(fd)


def tensor_form_tags(path: str, tags: list[str]) -> set[str]:
    """The ``tags`` written as tensors in the file (see :func:`tensor_offsets`)."""
    return set(tensor_offsets(path, tags))


class TensorForms:
    """One file's tags as tensors: whether a tag was written so (only images and
    histograms are asked: the kinds whose two forms the Reader decodes alike), and
    tensor tags in the file's order (tbparse lists them, and stacks their rows, so).
    Each tag is looked up once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset: dict[str, int | None] = {}

    def _look(self, tags: list[str]) -> None:
        missing = [t for t in dict.fromkeys(tags) if t not in self._offset]
        if missing:
            found = tensor_offsets(self.path, missing)
            self._offset.update({t: found.get(t) for t in missing})

    def tensor(self, tag: str) -> bool:
        self._look([tag])
        return self._offset[tag] is not None

    def order(self, tags: list[str]) -> list[str]:
        """``tags`` by their first tensor in the file; those not found after, as given."""
        self._look(tags)

        def first(tag: str) -> tuple[bool, int]:
            at = self._offset[tag]
            return at is None, at or 0
        return sorted(dict.fromkeys(tags), key=first)  # stable: the unfound keep their order


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
