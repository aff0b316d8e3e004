"""One listing of a URL sorted into what a reader may take: event and lineage files as
safe local names, hidden objects (a writer's live tails among them), and what was refused.
The mirror polls with it, and the engines (:mod:`summarylog.engine_runs`) find runs with
it, so both refuse the same hostile names and stop at the same ``max_objects``."""

from __future__ import annotations

import dataclasses
import errno
from typing import Any, Callable, Mapping

from ..discovery import is_event_file, is_lineage_file
from .names import is_hidden, split_name, tail_segment

__all__ = ["Listing", "sort_listing", "local_parts"]


@dataclasses.dataclass
class Listing:
    #: remote path -> (its name's parts below the root, listed size): event and lineage files
    files: dict[str, tuple[list[str], int]] = dataclasses.field(default_factory=dict)
    #: hidden objects: name below the root -> size
    hidden: dict[str, int] = dataclasses.field(default_factory=dict)
    #: a live tail's segment (remote path) -> (the tail's remote path, size)
    tails: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)
    #: refused names and the files past ``max_objects``: OSErrors naming URLs
    errors: list[OSError] = dataclasses.field(default_factory=list)


def local_parts(name: str, url: str) -> list[str]:
    """The parts of ``name`` (below the root) as a local path, or OSError naming ``url``
    when the name cannot be one (:func:`~summarylog.remote.names.split_name`)."""
    try:
        return split_name(name)
    except ValueError as exc:
        raise OSError(errno.EINVAL, f"object name refused: {exc}", url) from None


def sort_listing(found: Mapping[str, Mapping[str, Any]], rel: Callable[[str], str],
                 url: Callable[[str], str], root_url: str, max_objects: int) -> Listing:
    """``found`` (fsspec ``find(detail=True)``) sorted; ``rel`` gives a remote path's
    name below the root, ``url`` its URL to report."""
    out = Listing()
    over = 0
    for path, info in found.items():
        if info.get("type", "file") != "file":
            continue
        name = rel(path) or path.rsplit("/", 1)[-1]
        size = int(info.get("size") or 0)
        try:
            parts = local_parts(name, url(path))
        except OSError as exc:
            out.errors.append(exc)
            continue
        if is_hidden(name):
            out.hidden[name] = size
            seg = tail_segment(parts)
            if seg is not None and is_event_file(seg[-1]):
                out.tails[path.rsplit("/", 2)[0] + "/" + seg[-1]] = (path, size)
        elif is_event_file(parts[-1]) or is_lineage_file(parts[-1]):
            if len(out.files) == max_objects:
                over += 1
                continue
            out.files[path] = (parts, size)
    if over:
        out.errors.append(OSError(errno.EFBIG, f"{over} event files past the first "
                                  f"{max_objects} (remote_options max_objects) are not read",
                                  root_url))
    return out
