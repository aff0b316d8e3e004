"""One TensorBoard event file as TensorBoard's EventAccumulator holds it (what tbparse's
``raw_tags`` and ``raw_events`` return), without TensorBoard: its event records (frozen
dataclasses of the same names, fields and values as TensorBoard 2.x's), its tag lists,
its first plugin content per tag, and its purge of orphaned data after a restart.

Unlike EventAccumulator, damage does not end the read: the records past a damaged
region are read too, and records that are not Events are skipped and counted."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from google.protobuf.message import DecodeError

from .pb import tb
from .records import RecordReader

__all__ = ["RAW_EVENT_TYPES", "RAW_TAG_TYPES", "AudioEvent", "HistogramEvent",
           "HistogramValue", "ImageEvent", "RawLog", "ScalarEvent", "TensorEvent",
           "file_version_number"]


@dataclasses.dataclass(frozen=True)
class ScalarEvent:
    wall_time: float
    step: int
    value: float


@dataclasses.dataclass(frozen=True)
class HistogramValue:
    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limit: list[float]
    bucket: list[float]


@dataclasses.dataclass(frozen=True)
class HistogramEvent:
    wall_time: float
    step: int
    histogram_value: HistogramValue


@dataclasses.dataclass(frozen=True)
class ImageEvent:
    wall_time: float
    step: int
    encoded_image_string: bytes
    width: int
    height: int


@dataclasses.dataclass(frozen=True)
class AudioEvent:
    wall_time: float
    step: int
    encoded_audio_string: bytes
    content_type: str
    sample_rate: float
    length_frames: int


@dataclasses.dataclass(frozen=True)
class TensorEvent:
    wall_time: float
    step: int
    tensor_proto: Any  #: summarylog.pb.tb.TensorProto, wire-compatible with TensorFlow's


# EventAccumulator's reservoirs, in the order its Tags() lists them; "distributions"
# (compressed histograms) holds the histograms' tags
_STORES = ("images", "audio", "histograms", "scalars", "tensors")
_PURGED = ("images", "audio", "histograms", "scalars")  # tensors survive a purge there too
#: event_type values of get_raw_tags (tbparse's list)
RAW_TAG_TYPES = ("images", "audio", "histograms", "scalars", "tensors", "graph",
                 "meta_graph", "run_metadata", "hparams", "text")
#: event_type values of get_raw_events
RAW_EVENT_TYPES = ("images", "audio", "histograms", "scalars", "tensors", "hparams", "text")
_PLUGINS = ("hparams", "text")
_START = 1  # SessionLog.START


def file_version_number(text: str) -> float:
    """EventAccumulator's reading of ``brain.Event:N`` (-1 when not a number)."""
    try:
        return float(text.split("brain.Event:")[-1])
    except ValueError:
        return -1.0


class RawLog:
    """EventAccumulator's view of one event file, read once.

    A file whose name holds no ``tfevents`` is not read (EventAccumulator does not take
    it for an event file): its tag lists are empty.  OSError when it cannot be opened."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._items: dict[str, dict[str, list[Any]]] = {k: {} for k in _STORES}
        self._metadata_tags: set[str] = set()
        self._content: dict[str, dict[str, bytes]] = {}  # plugin -> tag -> first content
        self._graph = self._meta_graph = False
        self._run_metadata: dict[str, bytes] = {}
        self._file_version: float | None = None
        self._last_step = -1
        self.records = 0  #: records read
        self.bad_events = 0  #: records with valid CRCs that are not Events
        if "tfevents" in os.path.basename(path) and os.path.isfile(path):
            self._read()

    def _read(self) -> None:
        with RecordReader(self.path) as rr:
            for payload in rr:
                self.records += 1
                try:
                    ev = tb.Event.FromString(payload)
                except DecodeError:
                    self.bad_events += 1
                    continue
                self._event(ev)

    def _event(self, ev: Any) -> None:
        which = ev.WhichOneof("what")
        if which == "file_version":
            self._file_version = file_version_number(ev.file_version)
        self._maybe_purge(ev, which)
        if which == "graph_def":
            self._graph = True
        elif which == "meta_graph_def":
            # EventAccumulator takes any parsed metagraph for one holding the graph
            self._meta_graph = self._graph = True
        elif which == "tagged_run_metadata":
            self._run_metadata[ev.tagged_run_metadata.tag] = ev.tagged_run_metadata.run_metadata
        elif which == "summary":
            for v in ev.summary.value:
                self._value(ev, v)

    def _value(self, ev: Any, v: Any) -> None:
        if v.HasField("metadata") and v.tag not in self._metadata_tags:
            self._metadata_tags.add(v.tag)  # only a tag's first metadata counts
            plugin = v.metadata.plugin_data
            if plugin.plugin_name:
                self._content.setdefault(plugin.plugin_name, {})[v.tag] = plugin.content
        which = v.WhichOneof("value")
        w, s = ev.wall_time, ev.step
        if which == "simple_value":
            self._add("scalars", v.tag, ScalarEvent(w, s, v.simple_value))
        elif which == "histo":
            h = v.histo
            self._add("histograms", v.tag, HistogramEvent(w, s, HistogramValue(
                h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket))))
        elif which == "image":
            im = v.image
            self._add("images", v.tag, ImageEvent(w, s, im.encoded_image_string, im.width,
                                                  im.height))
        elif which == "audio":
            a = v.audio
            self._add("audio", v.tag, AudioEvent(w, s, a.encoded_audio_string, a.content_type,
                                                 a.sample_rate, a.length_frames))
        elif which == "tensor":  # old plugin-asset tensors have only a node name
            self._add("tensors", v.tag or v.node_name, TensorEvent(w, s, v.tensor))

    def _add(self, store: str, tag: str, item: Any) -> None:
        self._items[store].setdefault(tag, []).append(item)

    def _maybe_purge(self, ev: Any, which: str | None) -> None:
        """EventAccumulator's purge of orphaned data: for files of version 2 and later,
        a SessionLog START at step N drops every value of step >= N; for older ones a
        summary of a step below the latest drops its tags' values of step >= N."""
        if self._file_version and self._file_version >= 2:
            if which == "session_log" and ev.session_log.status == _START:
                self._purge(ev.step, None)
        elif ev.step < self._last_step and which == "summary":
            for v in ev.summary.value:
                self._purge(ev.step, v.tag)
        else:
            self._last_step = ev.step

    def _purge(self, step: int, tag: str | None) -> None:
        for store in _PURGED:
            items = self._items[store]
            # as EventAccumulator's reservoir: an empty tag filters every tag
            for t in ([tag] if tag else list(items)):
                if t in items:
                    items[t] = [e for e in items[t] if e.step < step]

    # -- what tbparse's raw accessors return -----------------------------------------
    def tags(self) -> dict[str, Any]:
        """EventAccumulator.Tags() with tbparse's ``hparams`` and ``text`` lists."""
        out: dict[str, Any] = {k: list(self._items[k]) for k in _STORES[:4]}
        out["distributions"] = list(self._items["histograms"])
        out["tensors"] = list(self._items["tensors"])
        out["graph"], out["meta_graph"] = self._graph, self._meta_graph
        out["run_metadata"] = list(self._run_metadata)
        for plugin in _PLUGINS:
            out[plugin] = list(self._content.get(plugin, {}))
        return out

    def events(self, kind: str, tag: str) -> Any:
        """The records of one tag (a list), or a tag's plugin content (``hparams``);
        KeyError for a tag (or plugin) not in the file, as EventAccumulator."""
        if kind == "hparams":
            if kind not in self._content:
                raise KeyError(f"Plugin {kind!r} could not be found.")
            return self._content[kind][tag]
        return list(self._items["tensors" if kind == "text" else kind][tag])
