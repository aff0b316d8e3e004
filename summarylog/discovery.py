"""Finding runs, for the Reader and every command: the directories under a path that
hold event files (:func:`is_event_file`).  A run's name is its path relative to the root
(``"."``: the root itself); its files are sorted by name with numbers compared as
numbers, so rotated segments and per-rank files merge in order.

The walk is iterative (no depth limit), follows symbolic links and enters each
directory once, keyed by its own device and inode (link loops end).  What
cannot be listed is reported as an ``OSError`` naming the path.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any, NamedTuple

__all__ = ["Discovery", "discover", "is_event_file", "is_lineage_file", "dialect_of",
           "natural_key"]

_EVENT_NAME = re.compile(r"(tfevents|zevents)")
_MS_NAME = re.compile(r"summary\.\d+")  # MindSpore summary and lineage files (as MindInsight)
_LINEAGE_SUFFIX = "_lineage"
_NUM = re.compile(r"(\d+)")


def is_event_file(name: str) -> bool:
    """True for event files: names TensorBoard reads (``tfevents``),
    summarylog's zstd segments (``zevents``) and MindSpore summary files
    (``summary.<digits>``, as MindInsight finds them; not ``_lineage``)."""
    base = os.path.basename(name)
    return bool(_EVENT_NAME.search(base) or
                (_MS_NAME.search(base) and not base.endswith(_LINEAGE_SUFFIX)))


def is_lineage_file(name: str) -> bool:
    """True for MindSpore lineage files (``summary.<digits>…_lineage``)."""
    base = os.path.basename(name)
    return base.endswith(_LINEAGE_SUFFIX) and _MS_NAME.search(base) is not None


def dialect_of(name: str) -> str:
    """``"tensorboard"`` or ``"mindspore"``: how an event file is read,
    from its name (a file never mixes dialects)."""
    return "tensorboard" if _EVENT_NAME.search(os.path.basename(name)) else "mindspore"


def natural_key(name: str) -> list[Any]:
    """Sort key of a file name: its digit runs compared as numbers."""
    return [int(p) if p.isdigit() else p for p in _NUM.split(os.path.basename(name))]


class Discovery(NamedTuple):
    """What one walk found."""

    runs: dict[str, list[str]]  #: run name -> event files, in reading order
    lineage: dict[str, list[str]]  #: run name -> MindSpore lineage files
    errors: list[OSError]  #: what could not be listed or examined, each naming its path


def _named(exc: OSError, path: str) -> OSError:
    """exc with its filename set (DirEntry methods may leave it unset)."""
    return exc if exc.filename is not None else type(exc)(exc.errno, exc.strerror or str(exc), path)


def _regular(e: os.DirEntry[str]) -> bool:
    """Whether to read an entry named like an event file; OSError for a FIFO, socket
    or device (never opened: it could block)."""
    if e.is_file():
        return True
    if e.is_symlink() and not os.path.exists(e.path):
        return False
    raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device is never read "
                  "as an event file)", e.path)


def discover(path: str) -> Discovery:
    """Every run under path (a file, a run directory or a root of runs)."""
    runs: dict[str, list[str]] = {}
    lineage: dict[str, list[str]] = {}
    errors: list[OSError] = []
    if os.path.isfile(path):
        lin = is_lineage_file(path)
        return Discovery({".": [] if lin else [path]}, {".": [path]} if lin else {}, errors)
    try:
        root_st = os.stat(path)
    except OSError as exc:
        return Discovery(runs, lineage, [_named(exc, path)])
    seen = {(root_st.st_dev, root_st.st_ino)}
    stack = [(path, "")]
    while stack:
        d, rel = stack.pop()
        try:
            with os.scandir(d) as it:  # one listing per directory, file types with it
                entries = list(it)
        except OSError as exc:
            errors.append(_named(exc, d))
            continue
        files, subdirs, lin = [], [], []
        for e in entries:
            try:
                if e.is_dir():
                    # the entry's own device: a mount point's inode is another filesystem's
                    st = e.stat()
                    key = (st.st_dev, st.st_ino)
                    if key not in seen:
                        seen.add(key)
                        subdirs.append(e.name)
                elif (event := is_event_file(e.name)) or is_lineage_file(e.name):
                    if _regular(e):
                        (files if event else lin).append(e.path)
            except OSError as exc:
                errors.append(_named(exc, e.path))
        name = rel or "."
        if files or lin:
            runs[name] = sorted(files, key=natural_key) if len(files) > 1 else files
        if lin:
            lineage[name] = sorted(lin, key=natural_key)
        for sub in sorted(subdirs, reverse=True):
            stack.append((os.path.join(d, sub), f"{rel}/{sub}" if rel else sub))
    return Discovery(runs, lineage, errors)
