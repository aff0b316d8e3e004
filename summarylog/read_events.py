"""Every value of an event file as :class:`~summarylog.events.Event` objects.

An event whose values do not all decode is taken apart at the wire level and
each value decoded on its own, so one bad value never hides the others; what
still fails is counted (``bad_values``, ``bad_events``), never dropped silently."""

from __future__ import annotations

import dataclasses

from .pb import fields, len_field
from .discovery import dialect_of
from .events import Event

__all__ = ["EventDecoder"]

_SUMMARY, _VALUE, _TAG = 5, 1, 1  # Event.summary, Summary.value, Value.tag (both dialects)


def is_utf8(x: str | bytes) -> bool:
    try:
        x.decode("utf-8") if isinstance(x, bytes) else x.encode("utf-8")
    except UnicodeError:
        return False
    return True


class EventDecoder:
    """Decodes one file's records, counting what does not decode."""

    def __init__(self, path: str, plugins: dict[str, str], values: bool = True) -> None:
        if dialect_of(path) == "tensorboard":
            from .dialects.tensorboard import decode_event
        else:
            from .dialects.mindspore import decode_event
        self._decode = decode_event
        self._plugins = plugins
        self._values = values
        self.bad_events = 0  #: records that are not Events
        self.bad_values = 0  #: values lost, or kept with a non-UTF-8 tag

    def decode(self, payload: bytes) -> list[Event]:
        try:
            events = self._decode(payload, self._plugins, self._values)
        except Exception:
            return self._salvage(payload)
        self._count_tags(events)
        return events

    def _count_tags(self, events: list[Event]) -> None:
        self.bad_values += sum(not ev.tag.isascii() and not is_utf8(ev.tag) for ev in events)

    def _one(self, rest: bytes, value: bytes, plugins: dict[str, str]) -> list[Event] | None:
        """The event ``rest`` (without its summary) holding one value; None if it fails."""
        try:
            return self._decode(rest + len_field(_SUMMARY, len_field(_VALUE, value)), plugins,
                                self._values)
        except Exception:
            return None

    def _salvage(self, payload: bytes) -> list[Event]:
        """The values of an event that does not decode whole, one by one."""
        try:
            top = fields(payload)
            summaries = [payload[b:e] for f, _, b, e in top if f == _SUMMARY]
            values = [s[b:e] for s in summaries for f, _, b, e in fields(s) if f == _VALUE]
        except (ValueError, IndexError):
            summaries = []
        if not summaries:  # malformed, or not a summary: nothing to take apart
            self.bad_events += 1
            return []
        rest = b"".join(payload[s:e] for f, s, _, e in top if f != _SUMMARY)
        out: list[Event] = []
        for value in values:
            one = self._one(rest, value, self._plugins)
            if one is not None:
                self._count_tags(one)
            else:
                self.bad_values += 1
                one = self._without_bad_tag(rest, value)
            out.extend(one)
        return out

    def _without_bad_tag(self, rest: bytes, value: bytes) -> list[Event]:
        """A value rejected only for a tag that is not UTF-8, under its
        surrogate-escaped tag; [] for any other defect."""
        try:
            vf = fields(value)
        except (ValueError, IndexError):
            return []
        tags = [value[b:e] for f, _, b, e in vf if f == _TAG]
        if not tags or is_utf8(tags[-1]):
            return []
        stripped = b"".join(value[s:e] for f, s, _, e in vf if f != _TAG)
        tag = tags[-1].decode("utf-8", "surrogateescape")
        events = self._one(rest, stripped, {}) or []
        return [dataclasses.replace(ev, tag=tag) for ev in events]
