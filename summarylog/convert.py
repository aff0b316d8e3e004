"""Convert runs between the TensorBoard and MindSpore dialects, keeping the run layout.

MindSpore lineage becomes TensorBoard hparams (eval metrics as ``lineage/<metric>``
scalars), TensorBoard hparams become MindSpore custom lineage.  What a dialect has no
place for is counted as ``"skipped <kind>"``, a malformed value (bad Unicode, a number
past a double) as ``"malformed <kind>"``: it never ends the conversion.  Output stays
inside ``dst`` (how: docs/reliability.md); else :class:`DestinationError`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import stat
import time
from collections import Counter
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .events import Event
from .files import FileSeries, MindSporeFiles, TensorBoardNames
from .read_events import is_utf8
from .reader import Reader
from .records import RecordWriter

__all__ = ["convert", "iter_convert", "DestinationError", "FORMATS"]

FORMATS = ("tensorboard", "mindinsight")
_MARKERS = {"file_version", "session_log"}
_open = functools.partial(RecordWriter, durability="flush")
# what encoding a hostile value (from a damaged file) can raise: it is skipped, never fatal
_BAD_VALUE = (ValueError, TypeError, OverflowError, AttributeError, KeyError, IndexError,
              RecursionError)


class DestinationError(OSError):
    """A run's output would leave ``dst`` (a symlink, a file for a dir), or no free name."""


def _out_dir(dst: str, run: str) -> str:
    """``dst/run``, created one component at a time below ``dst`` (taken as named); each
    must be a real directory, never a symlink, so nothing is written outside ``dst``."""
    os.makedirs(dst, exist_ok=True)
    if run == ".":
        return dst
    d = dst
    for part in run.split("/"):
        if part in ("", ".", ".."):
            raise DestinationError(errno.EINVAL, f"run name {run!r} cannot be a path under DST",
                                   os.path.join(dst, run))
        d = os.path.join(d, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(d)
        st = os.lstat(d)
        if stat.S_ISLNK(st.st_mode):
            raise DestinationError(errno.ELOOP, "a symlink, not a directory (refused: it could "
                                   "lead outside the destination)", d)
        if not stat.S_ISDIR(st.st_mode):
            raise DestinationError(errno.ENOTDIR, "not a directory", d)
    return d


def _created(series: Any) -> RecordWriter:
    """The series' first file (a taken name or planted symlink moves on to the next name)."""
    try:
        return series.writer()
    except FileExistsError as exc:
        raise DestinationError(errno.EEXIST, "exists (and so do the next names to try)",
                               exc.filename) from None


def _converted(events: Iterable[Event], convert: Callable[[Event], Any],
               counts: Counter) -> Iterator[tuple[Event, Any]]:
    """``(event, convert(event))`` but run markers; None and hostile values counted, skipped."""
    for ev in events:
        if ev.kind in _MARKERS:
            continue
        try:
            out = convert(ev)
            key = ev.kind if out is not None else f"skipped {ev.kind}"
        except _BAD_VALUE:
            out, key = None, f"malformed {ev.kind}"
        counts[key] += 1
        if out is not None:
            yield ev, out


def _to_tensorboard(reader: Reader, run: str, out_dir: str, counts: Counter) -> None:
    from .dialects.tensorboard import TensorBoardEncoder, payload_of_event

    enc = TensorBoardEncoder()
    rw = _created(FileSeries(out_dir, TensorBoardNames(None, "", False), _open,
                             lambda wall: [enc.file_header(wall)]))

    def write(ev: Event) -> bytes | None:
        payload = payload_of_event(ev)
        if payload is not None:
            rw.write(payload)  # ValueError past protobuf's 2 GiB
        return payload

    with rw:
        last_step, last_wall = 0, time.time()
        for ev, _ in _converted(reader.events(run), write, counts):
            last_step, last_wall = ev.step, ev.wall_time
        try:
            rows = reader.lineage([run])
        except _BAD_VALUE:  # e.g. JSON nested too deep for the decoder
            counts["malformed lineage"] += 1
            rows = []
        for row in rows:
            _lineage_to_tensorboard(enc, rw, row, last_wall, last_step, counts)


def _plain(v: Any) -> bool:
    """A value TensorBoard's hparams can hold: a bool, a finite-sized number, valid text."""
    if isinstance(v, str):
        return is_utf8(v)
    if isinstance(v, int):  # bools included
        return -(1 << 1023) < v < (1 << 1023)  # float(v) must not overflow
    return isinstance(v, float)


def _lineage_to_tensorboard(enc: Any, rw: RecordWriter, row: dict[str, Any], wall: float,
                            step: int, counts: Counter) -> None:
    """A lineage row as hparams and ``lineage/<metric>`` scalars; bad values counted, skipped."""
    hparams: dict[str, Any] = {}
    user = row.get("user_defined") or {}
    if not isinstance(user, dict):
        counts["malformed lineage field"] += 1
        user = {}
    train = [(k, v) for k, v in row.items() if v is not None and k not in
             ("run", "summary_dir", "metric", "user_defined", "dataset_graph")]
    for k, v in [*train, *user.items()]:
        if _plain(k) and _plain(v):
            hparams[k] = v
        else:
            counts["malformed lineage field"] += 1
    metric = row.get("metric") or {}
    if not isinstance(metric, dict):  # e.g. "[1, 2]": MindInsight wants an object
        counts["malformed lineage metric"] += 1
        metric = {}
    metrics = []
    for name, value in metric.items():
        tag = f"lineage/{name}"
        if value is None or isinstance(value, (str, bool)):  # TensorBoard metrics are numbers
            counts["skipped lineage metric"] += 1
            continue
        try:
            if not (_plain(tag) and _plain(value)):  # lists, objects, 10**400, bad Unicode
                raise ValueError(tag)
            rw.write(enc.scalars(wall, step, [tag], [float(value)]))
        except _BAD_VALUE:
            counts["malformed lineage metric"] += 1
            continue
        metrics.append(tag)
    try:
        payloads = enc.hparams(wall, hparams, metrics)
    except _BAD_VALUE:
        counts["malformed lineage"] += 1
        return
    for payload in payloads:
        rw.write(payload)
    counts["lineage"] += 1


def _to_mindinsight(reader: Reader, run: str, out_dir: str, counts: Counter) -> None:
    from .dialects.mindspore import (MindSporeEncoder, summary_of_values, user_defined_info,
                                     value_of_event)

    enc = MindSporeEncoder()
    files = MindSporeFiles(out_dir, "events", "_MS", None, _open,
                           lambda wall: [enc.file_header(wall)], None, "rotate")
    with _created(files.summary) as rw:
        custom: dict[str, Any] = {}

        def value(ev: Event) -> Any:
            """A Summary.Value; hparams go into ``custom`` (True)."""
            if ev.kind != "hparams":
                return value_of_event(ev)
            info = ev.value.get("session_start_info") if isinstance(ev.value, dict) else None
            start = info.get("hparams", {}) if isinstance(info, dict) else {}
            if not isinstance(ev.value, dict) or not isinstance(start, dict):
                raise ValueError("malformed hparams")
            for k, v in start.items():
                if not _plain(k) or not _plain(v):
                    counts["malformed hparams field"] += 1
                else:
                    custom[k] = str(v) if isinstance(v, bool) else v
            return True

        # one Summary per run of events with the same step and wall time
        pairs = ((ev, v) for ev, v in _converted(reader.events(run), value, counts)
                 if ev.kind != "hparams")
        for (step, wall), same in itertools.groupby(pairs, lambda p: (p[0].step, p[0].wall_time)):
            group = [v for _, v in same]
            try:
                rw.write(summary_of_values(wall, step, group))
            except _BAD_VALUE:  # one bad value: write the others one by one
                for v in group:
                    try:
                        rw.write(summary_of_values(wall, step, [v]))
                    except _BAD_VALUE:
                        counts["malformed summary"] += 1
        if custom:
            info = {k: (int(v) if v.is_integer() and abs(v) < 2**31 else float(v))
                    if isinstance(v, float) else v for k, v in custom.items()}
            try:
                payload = enc.lineage(time.time(), "custom_lineage_data", user_defined_info(info))
            except _BAD_VALUE:
                counts["malformed lineage"] += 1
                return
            with _created(files.lineage) as lineage:
                lineage.write(payload)
            counts["lineage"] += 1


def iter_convert(src: str, dst: str, to: str, runs: list[str] | None = None, *,
                 reader: Reader | None = None) -> Iterator[tuple[str, Counter]]:
    """Convert run by run, yielding ``(run, counts)`` after each (values written by kind,
    ``"skipped <kind>"``, ``"malformed <kind>"``); ``reader``: a Reader of ``src`` to read
    through (its damage reports then cover what was converted).  Raises ValueError for
    bad arguments, :class:`DestinationError` for a run directory that would leave ``dst``."""
    if to not in FORMATS:
        raise ValueError(f"to must be one of {FORMATS}, got {to!r}")
    reader = reader or Reader(src)
    src_abs, dst_abs = os.path.realpath(src), os.path.realpath(dst)
    if dst_abs == src_abs or dst_abs.startswith(src_abs + os.sep):
        raise ValueError(f"the destination {dst!r} must not be inside the source {src!r}")
    for run in runs if runs is not None else reader.runs():
        counts: Counter = Counter()
        out_dir = _out_dir(dst, run)
        reader.damage(run)  # the scalar pass first: the events pass then adds to its reports
        # a float64 past float32 becomes inf in MindSpore's tensors, as in MindSpore: no warning
        with np.errstate(all="ignore"):
            if to == "tensorboard":
                _to_tensorboard(reader, run, out_dir, counts)
            else:
                _to_mindinsight(reader, run, out_dir, counts)
        yield run, counts


def convert(src: str, dst: str, to: str, runs: list[str] | None = None) -> dict[str, Counter]:
    """Convert every run (or ``runs``) under ``src`` into ``dst`` in the ``to`` dialect
    (``"tensorboard"`` or ``"mindinsight"``); returns the counts per run (:func:`iter_convert`)."""
    return dict(iter_convert(src, dst, to, runs))
