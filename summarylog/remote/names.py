"""Object names of a listing as safe local paths inside a mirror.

An object store names objects with any bytes; a mirror writes them as files.  A
name that could leave the mirror (``..``, an absolute part, NUL or control
characters), a part too long for a file name, or a name too deep is refused
(reported, never written).  Parts starting with ``.`` are hidden: the live-tail
objects a writer keeps under ``<run>/.summarylog-tail/`` are not event files
of the run: the mirror reads one as its segment's file until the sealed segment is listed.
"""

from __future__ import annotations

import re

__all__ = ["NAME_MAX", "MAX_DEPTH", "TAIL_PREFIX", "split_name", "is_hidden", "tail_segment"]

NAME_MAX = 255  #: bytes of one path component on Linux file systems
MAX_DEPTH = 64  #: directories a mirrored name may nest (a hostile listing may go deeper)
TAIL_PREFIX = ".summarylog-tail"  #: the writer's live-tail prefix inside a run
_BAD = re.compile(r"[\x00-\x1f\x7f]")


def split_name(rel: str) -> list[str]:
    """The parts of ``rel`` (a name relative to the mirrored root, ``/``-separated),
    or ValueError saying why it cannot be a local path inside the mirror."""
    parts = rel.split("/")
    if len(parts) > MAX_DEPTH:
        raise ValueError(f"nested {len(parts)} deep (at most {MAX_DEPTH})")
    for p in parts:
        if p in ("", ".", ".."):
            raise ValueError("has an empty, '.' or '..' part")
        if _BAD.search(p):
            raise ValueError("has NUL or control characters")
        if len(p.encode("utf-8", "surrogateescape")) > NAME_MAX:
            raise ValueError(f"has a part longer than {NAME_MAX} bytes")
    return parts


def tail_segment(parts: list[str]) -> list[str] | None:
    """For a live tail's parts (``[..., ".summarylog-tail", "<segment>.tail"]``), the
    parts of the segment it is a prefix of (``[..., "<segment>"]``); else None."""
    if len(parts) >= 2 and parts[-2] == TAIL_PREFIX and parts[-1].endswith(".tail"):
        segment = parts[-1][:-len(".tail")]
        if segment and not is_hidden("/".join(parts[:-2])) and not segment.startswith("."):
            return [*parts[:-2], segment]
    return None


def is_hidden(rel: str) -> bool:
    """Whether any part of ``rel`` starts with ``.`` (a live tail, a writer's scratch)."""
    return any(p.startswith(".") for p in rel.split("/"))
