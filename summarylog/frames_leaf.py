"""One event file's values as tbparse-shaped column dicts (the leaves of SummaryReader).

Scalars come from the Reader's columnar C path; the other kinds from its decoded events,
only when the file holds tags that are not plain scalars.  Like tbparse (which runs one
EventAccumulator per file), every file is read on its own, its resume markers applied
within the file only."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from .discovery import is_event_file
from .frames_forms import TensorForms, value_offsets
from .frames_media import WavError, audio_of_value, decode_wav
from .frames_pixels import decode_image
from .frames_raw import file_version_number
from .read_histograms import Histograms
from .reader import Reader

__all__ = ["AUDIO", "HISTOGRAMS", "HPARAMS", "IMAGES", "SCALARS", "TENSORS", "TEXT", "ImageError",
           "Leaf", "decode_png"]

SCALARS, TENSORS, HISTOGRAMS, IMAGES, AUDIO = "scalars", "tensors", "histograms", "images", "audio"
HPARAMS, TEXT = "hparams", "text"
_TEXT_SUFFIX = "/text_summary"  # torch and tensorboardX append it to text tags; tbparse drops it
_SSI = "_hparams_/session_start_info"
_PURGED = (IMAGES, AUDIO)  # what EventAccumulator purges on a restart, besides the
# scalars and histograms (the Reader's columns apply the rule to those)


class ImageError(ValueError):
    """Bytes Pillow cannot decode as an image, with why."""


def decode_png(data: bytes) -> np.ndarray:
    """An encoded image as tbparse gives it (TensorFlow's decode_image): height x width x
    channels uint8, a GIF frames x height x width x 3 (frames_pixels has TensorFlow's
    rules).  Needs Pillow.  :class:`ImageError` (a ValueError) for bytes that are not an
    image Pillow reads."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("SummaryReader.images needs Pillow: pip install pillow") from None
    # Pillow reports a bad image by many types (OSError, SyntaxError, EOFError, ...)
    try:
        return decode_image(data)
    except (OSError, SyntaxError, EOFError, ValueError, IndexError,
            Image.DecompressionBombError) as exc:
        raise ImageError(f"not an image Pillow decodes: {exc}") from exc


def _simple_value_tags(path: str, tags: list[str]) -> set[str] | None:
    """Tags written as ``simple_value`` (a Value's tag field directly followed by field 2,
    fixed32); the others were written as scalars-plugin tensors.  None when the file
    cannot be searched as bytes (MindSpore's, compressed): then every tag counts as simple."""
    found = value_offsets(path, tags, b"\x15")
    return None if found is None else set(found)


class Leaf:
    """The values of one event file, decoded once, by tbparse's kinds."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.tensor_scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        #: kind -> tag -> list of (step, wall_time, value)
        self.events: dict[str, dict[str, list[tuple[int, float, Any]]]] = {
            TENSORS: {}, TEXT: {}, IMAGES: {}, AUDIO: {}}
        self.histograms: dict[str, Histograms] = {}  #: tag -> its histo values, columnar
        self.hparams: dict[str, Any] = {}
        self.reports: dict[str, Any] = {}  #: the Reader's FileReport of the file, if read
        self.raw_text_tags: dict[str, None] = {}  #: as written (tbparse's text tags keep the suffix)
        self.bad_media = 0  #: audio (WAV) and images that do not decode (left out, reported)
        self.forms = TensorForms(path)  #: tensor tags in the file's order
        self._version2 = False  # a "brain.Event:2" file: SessionLog START purges
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
        unpurged: Reader | None = None  # EventAccumulator never purges tensors
        for tag in tags:
            plain = simple is None or tag in simple
            if not plain and unpurged is None:
                unpurged = Reader(self.path, purge=False)
            s = (reader if plain or unpurged is None else unpurged).scalars(run, tag)
            (self.scalars if plain else self.tensor_scalars)[tag] = (s.step, s.wall_time, s.value)
        # histograms in C: their columns hold only TensorBoard's histo (tbparse's
        # histograms); the Python pass below reads just the tags of other kinds
        kinds = reader.tag_kinds(run)
        values = sum(len(s[0]) for s in (*self.scalars.values(), *self.tensor_scalars.values()))
        records = sum(rep.records for rep in reader.damage(run).values())
        if records > values + 1 or any(k != ["scalar"] for k in kinds.values()):
            # (tags whose histograms a restart dropped whole stay listed, as in tbparse)
            self.histograms = reader.histogram_columns(run).series
        # a histogram tag the C columns (legacy histo only) lack was written as plugin
        # tensors (TF2): a tensor to tbparse, decoded below
        need = [t for t, k in kinds.items() if k not in (["scalar"], ["histogram"])
                or k == ["histogram"] and t not in self.histograms]
        for ev in reader.events(run, tags=need) if need else ():
            self._add(ev)
        self.reports = reader.damage(run)  # with what decoding the values found

    def _add(self, ev: Any) -> None:
        if ev.kind == "file_version":
            self._version2 = file_version_number(str(ev.value)) >= 2
        elif ev.kind == "session_log" and self._version2 and ev.value.get("status") == "start":
            self._purge(ev.step)
        elif ev.kind in ("histogram", "image") and "tensor" in ev.value:
            # tbparse (EventAccumulator) files a plugin tensor as a tensor, whatever its plugin
            self.events[TENSORS].setdefault(ev.tag, []).append(
                (ev.step, ev.wall_time, ev.value["tensor"]))
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
        elif ev.kind == "other" and isinstance(ev.value, bytes):
            self._add_audio(ev)
        elif ev.kind == "hparams" and ev.tag == _SSI:
            # tbparse keeps the plugin content of the tag's last value
            self.hparams = dict((ev.value.get("session_start_info") or {}).get("hparams") or {})

    def _purge(self, step: int) -> None:
        """EventAccumulator's restart rule inside one file: a START at ``step`` drops the
        histograms, images and audio read before it at steps >= ``step`` (tensors and
        text stay, as there; legacy files' out-of-order rule is not applied here)."""
        for kind in _PURGED:
            for tag, values in self.events[kind].items():
                self.events[kind][tag] = [v for v in values if v[0] < step]

    def _add_audio(self, ev: Any) -> None:
        """An audio value (the Reader passes it on undecoded) decoded now, as tbparse's
        DataFrame holds it; one that does not decode is left out and counted."""
        try:
            audio = audio_of_value(ev.value)
        except DecodeError:  # not expected: the Reader re-serialized the value
            audio = None
        if audio is None:
            return
        values = self.events[AUDIO].setdefault(ev.tag, [])  # the tag is listed even so
        try:
            samples, _ = decode_wav(audio["encoded_audio_string"])
        except WavError:
            self.note_bad_value()
            return
        values.append((ev.step, ev.wall_time, {**audio, "samples": samples}))

    def note_bad_value(self) -> None:
        """Count a value of the file that does not decode (a WAV, an image)."""
        self.bad_media += 1

    def file_reports(self) -> dict[str, Any]:
        """The Reader's per-file reports, with the values that did not decode here
        added to ``bad_values`` (copies: the Reader's own are left as they are)."""
        if not self.bad_media or not self.reports:
            return dict(self.reports)
        out = dict(self.reports)
        path = self.path if self.path in out else next(iter(out))
        out[path] = dataclasses.replace(out[path], bad_values=out[path].bad_values + self.bad_media)
        return out

    # -- tbparse's tag lists ----------------------------------------------------------
    def tags(self, kind: str) -> list[str]:
        if kind == SCALARS:
            return list(self.scalars)
        if kind == TENSORS:  # in the file's order, as tbparse lists them
            return self.forms.order([*self.tensor_scalars, *self.events[TENSORS]])
        if kind == HPARAMS:
            return list(self.hparams)
        if kind == TEXT:
            return list(self.raw_text_tags)
        if kind == HISTOGRAMS:
            return list(self.histograms)
        return list(self.events[kind])
