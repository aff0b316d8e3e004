"""The export's incremental state, kept beside the dataset (``_summarylog/state.json``,
written whole and last): per run its key, its live parts, and per event file what
identifies it and what was exported from it.

A file is identified by its size and two hashes: of its first bytes and of the bytes
just before the end that was read.  The next export finds it unchanged (same size,
same hashes), grown (longer, both hashes the same: only appended to) or replaced
(anything else: shrunk, rewritten, truncated and rewritten)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

__all__ = ["FileState", "RunState", "DatasetState", "file_identity", "STATE_VERSION"]

STATE_VERSION = 1
_HASHED = 4096  # bytes hashed at each end


@dataclasses.dataclass
class FileState:
    """One event (or lineage) file as exported."""

    size: int  #: bytes when read
    consumed: int  #: offset where the records read end (the start of an unfinished tail)
    head: str  #: sha1 of bytes [0, min(size, 4096))
    mark: str  #: sha1 of the 4096 bytes before ``size``
    rows: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  #: table -> tag -> rows
    bad: dict[str, int] = dataclasses.field(default_factory=dict)  #: bad_events, bad_values reported


@dataclasses.dataclass
class RunState:
    key: str
    #: per file (by base name), or whole=True: the run is re-read whole when it changes
    files: dict[str, FileState] = dataclasses.field(default_factory=dict)
    whole: bool = False
    parts: list[str] = dataclasses.field(default_factory=list)  #: "<table>/<keydir>/<name>"


@dataclasses.dataclass
class DatasetState:
    next_export: int = 1
    runs: dict[str, RunState] = dataclasses.field(default_factory=dict)
    tags: list[str] | None = None  #: the tag patterns of the first export (None: all)

    def to_bytes(self) -> bytes:
        # ensure_ascii: a non-UTF-8 run name (surrogate-escaped) round-trips as \udcXX
        return json.dumps({"version": STATE_VERSION, "next_export": self.next_export,
                           "tags": self.tags,
                           "runs": [{"run": run, **_plain(rs)}
                                    for run, rs in sorted(self.runs.items())]},
                          ensure_ascii=True, separators=(",", ":")).encode("ascii")

    @classmethod
    def from_bytes(cls, data: bytes | None) -> "DatasetState":
        if not data:
            return cls()
        try:
            doc = json.loads(data)
            if doc.get("version") != STATE_VERSION:
                raise ValueError(f"state version {doc.get('version')!r}, "
                                 f"this summarylog writes {STATE_VERSION}")
            runs = {}
            for r in doc["runs"]:
                files = {n: FileState(**f) for n, f in r["files"].items()}
                runs[r["run"]] = RunState(r["key"], files, bool(r["whole"]), list(r["parts"]))
            tags = doc.get("tags")
            return cls(int(doc["next_export"]), runs, None if tags is None else list(tags))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"the dataset's state is malformed: {exc!r}") from None

    def live_parts(self) -> set[str]:
        return {p for rs in self.runs.values() for p in rs.parts}


def _plain(rs: RunState) -> dict:
    """``dataclasses.asdict(rs)`` without its deep copies (a tenth of a millisecond a
    run, at the end of every export)."""
    return {"key": rs.key,
            "files": {name: {"size": f.size, "consumed": f.consumed, "head": f.head,
                             "mark": f.mark, "rows": f.rows, "bad": f.bad}
                      for name, f in rs.files.items()},
            "whole": rs.whole, "parts": rs.parts}


def _sha1(fd: int, start: int, end: int) -> str:
    return hashlib.sha1(os.pread(fd, max(0, end - start), start)).hexdigest()


def file_identity(path: str, size: int) -> tuple[str, str]:
    """(head, mark) hashes of ``path``'s first ``size`` bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        return _sha1(fd, 0, min(size, _HASHED)), _sha1(fd, max(0, size - _HASHED), size)
    finally:
        os.close(fd)


def compare(path: str, old: FileState) -> str:
    """``"same"``, ``"grown"`` or ``"replaced"`` (``"gone"`` when it cannot be read)."""
    try:
        size = os.stat(path).st_size
        if size < old.size:
            return "replaced"
        head, mark = file_identity(path, old.size)
    except OSError:
        return "gone"
    if (head, mark) != (old.head, old.mark):
        return "replaced"
    return "same" if size == old.size else "grown"

