"""One event file's values as tbparse-shaped column dicts (the leaves of SummaryReader).

Scalars come from the Reader's columnar C path; the other kinds from its decoded events,
only when the file holds tags that are not plain scalars.  Like tbparse (which runs one
EventAccumulator per file), every file is read on its own, its resume markers applied
within the file only."""

from __future__ import annotations

import contextlib
import mmap
import os
from typing import Any

import numpy as np

from .discovery import dialect_of, is_event_file
from .frames_pixels import decode_image
from .pb import len_field
from .reader import Reader

__all__ = ["AUDIO", "HISTOGRAMS", "HPARAMS", "IMAGES", "SCALARS", "TENSORS", "TEXT", "Leaf"]

SCALARS, TENSORS, HISTOGRAMS, IMAGES, AUDIO = "scalars", "tensors", "histograms", "images", "audio"
HPARAMS, TEXT = "hparams", "text"
_TEXT_SUFFIX = "/text_summary"  # torch and tensorboardX append it to text tags; tbparse drops it
_SSI = "_hparams_/session_start_info"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def decode_png(data: bytes) -> np.ndarray:
    """An encoded image as tbparse gives it (TensorFlow's decode_image): height x width x
    channels uint8, a GIF frames x height x width x 3 (frames_pixels has TensorFlow's
    rules).  Needs Pillow."""
    return decode_image(data)


def _simple_value_tags(path: str, tags: list[str]) -> set[str] | None:
    """Tags written as ``simple_value`` (a Value's tag field directly followed by field 2,
    fixed32); the others were written as scalars-plugin tensors.  None when the file
    cannot be searched as bytes (compressed): then every tag counts as simple."""
    if dialect_of(path) == "mindspore":  # MindSpore scalars are all scalar_value
        return None
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m[:4] == _ZSTD_MAGIC:
                return None
            return {t for t in tags
                    if m.find(len_field(1, t.encode("utf-8", "surrogateescape")) + b"\x15") >= 0}
    except (OSError, ValueError):  # empty file (mmap of 0 bytes) or unreadable
        return None


class Leaf:
    """The values of one event file, decoded once, by tbparse's kinds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.tensor_scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        #: kind -> tag -> list of (step, wall_time, value)
        self.events: dict[str, dict[str, list[tuple[int, float, Any]]]] = {
            TENSORS: {}, HISTOGRAMS: {}, TEXT: {}, IMAGES: {}, AUDIO: {}}
        self.hparams: dict[str, Any] = {}
        self.reports: dict[str, Any] = {}  #: the Reader's FileReport of the file, if read
        self.raw_text_tags: dict[str, None] = {}  #: as written (tbparse's text tags keep the suffix)
        if not is_event_file(os.path.basename(path)) or not os.path.isfile(path):
            return  # nothing to read in a FIFO, a device, or a file that is not an event file
        with contextlib.suppress(OSError):
            self._read()

    def _read(self) -> None:
        reader = Reader(self.path)
        runs = reader.runs()
        if not runs:
            return
        run = runs[0]
        tags = reader.scalar_tags(run)
        simple = _simple_value_tags(self.path, tags)
        for tag in tags:
            s = reader.scalars(run, tag)
            into = self.scalars if simple is None or tag in simple else self.tensor_scalars
            into[tag] = (s.step, s.wall_time, s.value)
        values = sum(len(s[0]) for s in (*self.scalars.values(), *self.tensor_scalars.values()))
        self.reports = reader.damage(run)
        records = sum(rep.records for rep in self.reports.values())
        # tag_kinds costs a pass only when some tag holds more than scalars; a file with
        # more records than scalars surely does: straight to the one decoding pass
        if records <= values + 1 and all(k == ["scalar"] for k in reader.tag_kinds(run).values()):
            return  # nothing but scalars: no Python decoding
        for ev in reader.events(run):
            self._add(ev)
        self.reports = reader.damage(run)  # with what decoding the values found

    def _add(self, ev: Any) -> None:
        if ev.kind == "histogram":
            self.events[HISTOGRAMS].setdefault(ev.tag, []).append((ev.step, ev.wall_time, ev.value))
        elif ev.kind == "text":
            self.raw_text_tags[ev.tag] = None
            tag = ev.tag.removesuffix(_TEXT_SUFFIX)
            value = np.asarray(ev.value)
            text = value.item() if value.size == 1 else value
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            self.events[TEXT].setdefault(tag, []).append((ev.step, ev.wall_time, text))
        elif ev.kind == "tensor":
            value = np.asarray(ev.value)
            self.events[TENSORS].setdefault(ev.tag, []).append(
                (ev.step, ev.wall_time, value.item() if value.shape == () else value))
        elif ev.kind == "image" and len(ev.value["pngs"]) == 1:
            self.events[IMAGES].setdefault(ev.tag, []).append((ev.step, ev.wall_time, ev.value))
        elif ev.kind == "hparams" and ev.tag == _SSI:
            # tbparse keeps the plugin content of the tag's last value
            self.hparams = dict((ev.value.get("session_start_info") or {}).get("hparams") or {})

    # -- tbparse's tag lists ----------------------------------------------------------
    def tags(self, kind: str) -> list[str]:
        if kind == SCALARS:
            return list(self.scalars)
        if kind == TENSORS:
            return list(self.tensor_scalars) + list(self.events[TENSORS])
        if kind == HPARAMS:
            return list(self.hparams)
        if kind == TEXT:
            return list(self.raw_text_tags)
        return list(self.events[kind])
