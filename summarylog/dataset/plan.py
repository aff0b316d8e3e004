"""What an export does with each run, from the state of the last one: skip it (nothing
new), append (only new rows: of grown files past what was exported, and of new files),
or read it in full (new, or re-exported because a file was replaced, shrank, vanished,
or a resume marker in the new data may drop rows exported before)."""

from __future__ import annotations

import dataclasses
import mmap
import os
import re

from ..discovery import dialect_of, natural_key
from ..records.zstd_source import starts_zstd
from .state import RunState, compare

__all__ = ["RunPlan", "plan_run", "per_file_ok"]

# Event.session_log (field 7) whose first field is status START (any length varint):
# the marker of TensorBoard's resume rule; a false match only costs a whole re-read
_SESSION_START = re.compile(rb"\x3a[\x80-\xff]{0,4}[\x00-\x7f]\x08\x01")


@dataclasses.dataclass
class RunPlan:
    run: str
    action: str  #: "skip", "append" or "full"
    files: list[str]  #: the run's event files (local paths), reading order
    lineage: list[str]
    why: str = ""  #: for "full" of a run exported before: what changed
    grown: str | None = None  #: append: the file read again past its exported rows
    new: list[str] = dataclasses.field(default_factory=list)  #: append: new files


def _zstd(path: str) -> bool:
    with open(path, "rb") as f:
        return starts_zstd(f.read(4)) or path.endswith(".zst")


def _has_marker(path: str, start: int = 0) -> bool:
    """Whether ``path`` from ``start`` may hold a resume marker (True for a zstd file,
    whose bytes cannot be searched)."""
    if _zstd(path):
        return True
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= start:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return _SESSION_START.search(m, max(0, start - 16)) is not None


def per_file_ok(files: list[str]) -> bool:
    """Whether the run's rows are the concatenation of its files' (read one by one): no
    MindSpore file (its rule sorts the run), no resume marker past the first file."""
    if any(dialect_of(p) == "mindspore" for p in files):
        return False
    return not any(_has_marker(p) for p in files[1:])


def plan_run(run: str, files: list[str], lineage: list[str], old: RunState | None) -> RunPlan:
    plan = RunPlan(run, "full", files, lineage)
    if old is None:
        return plan
    names = {os.path.basename(p): p for p in files + lineage}
    gone = [n for n in old.files if n not in names]
    if gone:
        plan.why = f"file gone: {gone[0]}"
        return plan
    status = {n: compare(names[n], fs) for n, fs in old.files.items()}
    if bad := [n for n, s in status.items() if s in ("replaced", "gone")]:
        plan.why = f"file replaced: {bad[0]}"
        return plan
    changed = [n for n, s in status.items() if s == "grown"]
    new = [p for p in files + lineage if os.path.basename(p) not in old.files]
    if not changed and not new:
        plan.action = "skip"
        return plan
    if old.whole:
        plan.why = "read whole (resume markers or MindSpore files)"
        return plan
    if any(os.path.basename(p) in changed or p in new for p in lineage):
        plan.why = "lineage changed"
        return plan
    known = [p for p in files if os.path.basename(p) in old.files]
    if changed and (len(changed) > 1 or os.path.basename(known[-1]) != changed[0]):
        plan.why = "a file other than the last one grew"
        return plan
    if known and new and natural_key(new[0]) < natural_key(known[-1]):
        plan.why = "a new file sorts before files exported"
        return plan
    if any(dialect_of(p) == "mindspore" for p in files):
        plan.why = "MindSpore files"
        return plan
    grown = names[changed[0]] if changed else None
    if (grown is not None and _has_marker(grown, old.files[changed[0]].consumed)) \
            or any(_has_marker(p) for p in new):
        plan.why = "a resume marker in the new data"
        return plan
    plan.action, plan.grown, plan.new = "append", grown, new
    return plan
