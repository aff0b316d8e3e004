"""SummaryWriter's scalars, images and text, as torch.utils.tensorboard and tensorboardX
name and encode them, through summarylog.Writer (one route to the disk)."""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any, Mapping

import numpy as np

from ..checks import MAX_VALUE_BYTES, check_size, check_step, check_tag
from ..dialects.tensorboard import text_event
from ..reader import Reader
from ..values import snapshot_scalar
from .base import SummaryWriterBase, check_sub_run
from .images import check_image_tensor, png_payloads, to_hwc_uint8

__all__ = ["BasicMethods"]


def _check_scalar_call(tag: Any, scalar_value: Any, global_step: Any, walltime: Any) -> None:
    """Raise the error of a refused add_scalar call, naming the peers' arguments."""
    check_tag(tag)
    check_step(global_step, "global_step")
    if walltime is not None and (isinstance(walltime, bool)
                                 or not isinstance(walltime, numbers.Real)
                                 or not math.isfinite(walltime)):
        raise TypeError(f"walltime must be a finite number of seconds, got {walltime!r}")
    snapshot_scalar(scalar_value, "scalar_value")


def _image_payloads(wall: float, step: int, tag: str, arr: np.ndarray,
                    fmt: str) -> list[bytes]:
    return png_payloads(wall, step, tag, to_hwc_uint8(arr, fmt))


def _text_payloads(wall: float, step: int, tag: str, text: str) -> list[bytes]:
    return [text_event(wall, step, tag, text, (1,))]  # a 1-vector, as the peers write it


class BasicMethods(SummaryWriterBase):
    """add_scalar, add_scalars, add_image, add_images, add_text, export_scalars_to_json."""

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False, *, display_name: str = "",
                   summary_description: str = "") -> None:
        """Log one scalar: a number, or a one-element array or tensor on any device (read
        on the background thread, without a device sync).  ``new_style`` writes it as a
        tensor (float64 with ``double_precision``); ``display_name`` and
        ``summary_description`` (tensorboardX) go into its metadata."""
        if (new_style or double_precision or display_name or summary_description
                or self._defaults or not self.write_to_disk):
            self.add_scalar_form(tag, scalar_value, global_step, walltime, new_style,
                                 double_precision, display_name, summary_description)
            return
        try:
            (self._w or self._open()).add_scalar(tag, scalar_value, global_step, walltime)
        except (TypeError, ValueError):
            _check_scalar_call(tag, scalar_value, global_step, walltime)
            raise

    def add_scalar_form(self, tag: str, scalar_value: Any, global_step: Any, walltime: Any,
                        new_style: bool, double_precision: bool, display_name: str,
                        summary_description: str) -> None:
        """add_scalar with metadata or as a tensor (plugins.PluginMethods writes those)."""
        _check_scalar_call(tag, scalar_value, global_step, walltime)
        step, wall = self.at(global_step, walltime)
        self.writer.add_scalar(tag, scalar_value, step, wall)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Log several scalars under ``main_tag``, each key in its own sub-run
        ``<log_dir>/<main_tag>_<key>`` (``/`` in main_tag made ``_``), as torch names
        them, so TensorBoard draws them in one chart."""
        check_tag(main_tag, "main_tag")
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError(f"tag_scalar_dict must be a mapping of tag to value, "
                            f"got {type(tag_scalar_dict).__name__}")
        step, wall = self.at(global_step, walltime)
        values = {}
        for key, value in tag_scalar_dict.items():
            check_tag(key, "tag_scalar_dict key")
            run = check_sub_run(f"{main_tag.replace('/', '_')}_{key}", "tag_scalar_dict key")
            values[run] = snapshot_scalar(
                value, f"tag_scalar_dict[{key!r}]")
        # every value and sub-run checked before any is logged
        for w, value in [(self.sub_writer(run), value) for run, value in values.items()]:
            w.add_scalar(main_tag, value, step, wall)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log an image: uint8 as it is, other dtypes taken as [0, 1] (scaled by 255 and
        clipped); 1 channel shown as gray RGB; ``dataformats`` e.g. CHW, HWC, HW."""
        self._add_image(tag, img_tensor, global_step, walltime, dataformats, (2, 3))

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid image of up to 8 columns (as the peers)."""
        self._add_image(tag, img_tensor, global_step, walltime, dataformats, (3, 4))

    def _add_image(self, tag: str, img: Any, global_step: Any, walltime: Any, dataformats: Any,
                   ndims: tuple[int, ...]) -> None:
        check_tag(tag)
        if ndims == (3, 4) and not (isinstance(dataformats, str) and "N" in dataformats.upper()):
            raise ValueError(f"dataformats must name the batch axis N, got {dataformats!r}")
        if ndims == (2, 3) and isinstance(dataformats, str) and "N" in dataformats.upper():
            raise ValueError(f"dataformats of add_image has no N (use add_images), "
                             f"got {dataformats!r}")
        arr, fmt = check_image_tensor(img, dataformats, ndims)
        step, wall = self.at(global_step, walltime)
        w = self.writer
        w.submit(_image_payloads, wall, step, tag, arr, fmt)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log markdown text under ``<tag>/text_summary`` (the peers' tag)."""
        check_tag(tag)
        if not isinstance(text_string, str):
            raise TypeError(f"text_string must be a str, got {type(text_string).__name__}")
        if len(text_string) > MAX_VALUE_BYTES // 4:
            check_size(len(text_string.encode("utf-8", "surrogatepass")), "text_string")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_text_payloads, wall, step, f"{tag}/text_summary", text_string,
                           nbytes=len(text_string))

    def export_scalars_to_json(self, path: str | os.PathLike[str]) -> None:
        """Write ``{sub-run directory: [[wall_time, step, value], ...]}`` for the
        add_scalars values this writer logged since the last export (tensorboardX).
        The values are read back from the files, not kept in memory."""
        self.flush()
        out: dict[str, list[list[float]]] = {}
        for run, files in self.sub_run_files().items():
            rows: list[list[float]] = []
            for f in files:
                reader = Reader(f, purge=False)
                for tag in reader.scalar_tags("."):
                    s = reader.scalars(".", tag)
                    rows += [[float(t), int(st), float(v)]
                             for t, st, v in zip(s.wall_time, s.step, s.value)]
            new = rows[self._exported.get(run, 0):]
            self._exported[run] = len(rows)
            if new:
                out[os.path.join(self.log_dir, run)] = new
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f)
