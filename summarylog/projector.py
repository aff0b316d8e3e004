"""The embedding projector's files, laid out as torch.utils.tensorboard and
tensorboardX lay them out, so TensorBoard's Projector loads them:

    <log_dir>/<step:05d>/<tag>/tensors.tsv     one row per point, tab-separated
    <log_dir>/<step:05d>/<tag>/metadata.tsv    one label per line (a header line
                                               first for several columns)
    <log_dir>/<step:05d>/<tag>/sprite.png      the thumbnails in a square grid
    <log_dir>/projector_config.pbtxt           one ``embeddings { ... }`` entry
                                               appended per call

:func:`check_embedding` runs on the caller's thread (checks, private copies);
:func:`write_embedding` on the writer's background thread (text, PNG, files).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import os
import posixpath
import warnings
from typing import Any, Sequence

import numpy as np

from .checks import check_size, check_tag
from .side_files import SideDir, check_no_link
from .values import to_numpy

__all__ = ["Embedding", "check_embedding", "embedding_dir_names", "write_embedding",
           "sprite_pixels", "tensors_tsv", "CONFIG_NAME"]

CONFIG_NAME = "projector_config.pbtxt"
#: the largest sprite side TensorBoard's projector shows
MAX_SPRITE_SIDE = 8192
_NAME_MAX = 255
_SPRITE_BLOCK = 1024  # thumbnails converted to pixels at a time (bounds the float64 copy)
_BAD_CELL = ("\n", "\r", "\t")


@dataclasses.dataclass
class Embedding:
    """One checked add_embedding call: private copies, ready to write."""

    step_dir: str  # "00000"
    tag_dir: str  # the tag with %, / and \\ escaped, as the peers name the directory
    tensor_name: str  # "<tag>:<step:05d>"
    mat: np.ndarray
    metadata: list[str] | None  # the lines of metadata.tsv
    label_img: np.ndarray | None  # (N, 1 or 3, H, W)

    @property
    def subdir(self) -> str:
        return posixpath.join(self.step_dir, self.tag_dir)


def embedding_dir_names(global_step: int, tag: str) -> tuple[str, str]:
    """(step directory, tag directory) of an embedding; the tag escaped as the peers
    escape it (``%`` -> ``%25``, ``/`` -> ``%2f``, ``\\`` -> ``%5c``), so it is one
    path component; ``.``, ``..`` and over-long names are refused."""
    escaped = tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")
    if escaped in (".", "..") or "\0" in escaped:
        raise ValueError(f"tag must not be '.', '..' or hold NUL (it names a directory), "
                         f"got {tag!r}")
    if len(escaped.encode("utf-8")) > _NAME_MAX:
        raise ValueError(f"tag is too long for a directory name ({len(escaped)} characters "
                         f"escaped, at most {_NAME_MAX} bytes): {tag[:40]!r}...")
    return str(global_step).zfill(5), escaped


def _metadata_lines(metadata: Any, n: int, metadata_header: Any) -> list[str]:
    if isinstance(metadata, (str, bytes)) or not hasattr(metadata, "__len__"):
        raise TypeError(f"metadata must be a list of labels (one per row of mat), "
                        f"got {type(metadata).__name__}")
    if isinstance(metadata, np.ndarray):
        metadata = metadata.tolist()
    elif hasattr(metadata, "shape"):  # a framework's tensor: its values, not their reprs
        metadata = to_numpy(metadata, "metadata").tolist()
    if len(metadata) != n:
        raise ValueError(f"metadata has {len(metadata)} labels but mat has {n} rows: "
                         f"one label per row")
    if metadata_header:
        if isinstance(metadata_header, (str, bytes)) or not hasattr(metadata_header, "__len__"):
            raise TypeError(f"metadata_header must be a list of column names, "
                            f"got {type(metadata_header).__name__}")
        width = len(metadata_header)
        rows = [[str(h) for h in metadata_header]]
        for i, row in enumerate(metadata):
            try:
                cells = [str(c) for c in row]
            except TypeError:
                raise TypeError(f"metadata[{i}] must be a list of {width} values (one per "
                                f"metadata_header column), got {type(row).__name__}") from None
            if len(cells) != width:
                raise ValueError(f"metadata[{i}] has {len(cells)} values but metadata_header "
                                 f"has {width} columns")
            rows.append(cells)
        lines = ["\t".join(r) for r in rows]
        cells_of = (c for r in rows for c in r)
    else:
        lines = [str(x) for x in metadata]
        cells_of = iter(lines)
    for cell in cells_of:
        if any(ch in cell for ch in _BAD_CELL):
            raise ValueError(f"metadata labels and metadata_header must not hold tabs or "
                             f"line breaks (they would split rows or columns of metadata.tsv), "
                             f"got {cell[:60]!r}")
    return lines


def _label_images(label_img: Any, n: int) -> np.ndarray:
    arr = to_numpy(label_img, "label_img")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"label_img must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 4:
        raise ValueError(f"label_img must be (N, C, H, W), got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"label_img has {arr.shape[0]} images but mat has {n} rows: "
                         f"one image per row")
    if arr.shape[1] not in (1, 3):
        raise ValueError(f"label_img must have 1 or 3 channels (N, C, H, W), got shape "
                         f"{arr.shape}")
    if arr.shape[2] == 0 or arr.shape[3] == 0:
        raise ValueError(f"label_img must not be empty, got shape {arr.shape}")
    check_size(arr.nbytes, "label_img")
    side = _sprite_shape(arr.shape)[1]
    if side > MAX_SPRITE_SIDE:
        warnings.warn(f"add_embedding: the sprite of label_img {arr.shape} is {side} pixels "
                      f"wide; TensorBoard's projector shows sprites up to {MAX_SPRITE_SIDE}",
                      stacklevel=4)
    return np.array(arr, copy=True)


def check_embedding(mat: Any, metadata: Any, label_img: Any, global_step: Any, tag: Any,
                    metadata_header: Any) -> Embedding:
    """The checked, privately copied arguments of add_embedding (the peers' names)."""
    check_tag(tag)
    if global_step is None:
        global_step = 0
    if isinstance(global_step, bool) or not isinstance(global_step, numbers.Integral):
        raise TypeError(f"global_step must be an int, got {type(global_step).__name__}")
    step_dir, tag_dir = embedding_dir_names(int(global_step), tag)
    arr = to_numpy(mat, "mat")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"mat must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"mat must be 2-D (N points, D features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"mat must have at least one row and one column, got shape {arr.shape}")
    check_size(arr.nbytes, "mat")
    n = arr.shape[0]
    lines = None if metadata is None else _metadata_lines(metadata, n, metadata_header)
    images = None if label_img is None else _label_images(label_img, n)
    return Embedding(step_dir, tag_dir, f"{tag}:{step_dir}", np.array(arr, copy=True),
                     lines, images)


def check_embedding_paths(log_dir: str, emb: Embedding) -> bool:
    """OSError when a link (or a file where a directory goes) sits where the embedding
    goes; True when its directory exists already (the peers warn then)."""
    check_no_link(os.path.join(log_dir, CONFIG_NAME), want_dir=False)
    step_path = os.path.join(log_dir, emb.step_dir)
    if not check_no_link(step_path, want_dir=True):
        return False
    return check_no_link(os.path.join(step_path, emb.tag_dir), want_dir=True)


# -- the background thread's part ----------------------------------------------------------

def tensors_tsv(mat: np.ndarray) -> list[bytes]:
    """tensors.tsv: each value as Python prints it (what the peers write), in blocks."""
    if mat.dtype.kind == "b":
        mat = mat.astype(np.uint8)  # the projector parses numbers, not True/False
    out = []
    for start in range(0, mat.shape[0], 4096):
        rows = mat[start:start + 4096].tolist()
        out.append(("\n".join("\t".join(map(str, r)) for r in rows) + "\n").encode("ascii"))
    return out


def _sprite_shape(nchw_shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(rows, columns, sprite height, sprite width): ceil(sqrt(N)) columns; the sprite
    square, and taller only when the thumbnails are taller than wide."""
    n, _c, h, w = nchw_shape
    cols = math.ceil(n ** 0.5)
    rows = -(-n // cols)
    return rows, cols, max(w * cols, h * rows), w * cols


def sprite_pixels(label_img: np.ndarray) -> np.ndarray:
    """The sprite (H, W, 3) uint8, as the peers compute it: each value times 255,
    clipped to [0, 255] and truncated; the grid filled row by row, the rest black."""
    n, c, h, w = label_img.shape
    rows, cols, height, width = _sprite_shape(label_img.shape)
    sprite = np.zeros((height, width, 3), np.uint8)
    for start in range(0, n, _SPRITE_BLOCK):
        block = label_img[start:start + _SPRITE_BLOCK].astype(np.float64)
        block = np.clip(np.nan_to_num(block * 255.0, nan=0.0), 0, 255).astype(np.uint8)
        block = np.transpose(block, (0, 2, 3, 1))  # NHWC
        for k, img in enumerate(block, start):
            y, x = divmod(k, cols)
            sprite[y * h:(y + 1) * h, x * w:(x + 1) * w] = img  # 1 channel broadcasts to 3
    return sprite


def config_entry(emb: Embedding) -> bytes:
    """The ``embeddings { ... }`` text of projector_config.pbtxt for ``emb``."""
    from google.protobuf import text_format

    from .pb import tb

    info = tb.EmbeddingInfo(tensor_name=emb.tensor_name,
                            tensor_path=posixpath.join(emb.subdir, "tensors.tsv"))
    if emb.metadata is not None:
        info.metadata_path = posixpath.join(emb.subdir, "metadata.tsv")
    if emb.label_img is not None:
        info.sprite.image_path = posixpath.join(emb.subdir, "sprite.png")
        info.sprite.single_image_dim.extend([emb.label_img.shape[3], emb.label_img.shape[2]])
    config = tb.ProjectorConfig()
    config.embeddings.append(info)
    return text_format.MessageToString(config).encode("utf-8")


def write_embedding(log_dir: str, emb: Embedding) -> list[bytes]:
    """Write the embedding's files, then append its config entry (so TensorBoard
    never reads an entry whose files are missing).  No event: returns []."""
    from .png import encode_png

    with contextlib.ExitStack() as stack:
        run = stack.enter_context(SideDir(log_dir))
        step = stack.enter_context(run.sub(emb.step_dir))
        where = stack.enter_context(step.sub(emb.tag_dir))
        if emb.metadata is not None:
            where.replace("metadata.tsv", ("\n".join(emb.metadata) + "\n").encode("utf-8"))
        if emb.label_img is not None:
            where.replace("sprite.png", encode_png(sprite_pixels(emb.label_img)))
        where.replace("tensors.tsv", tensors_tsv(emb.mat))
        run.append(CONFIG_NAME, config_entry(emb))
    return []
