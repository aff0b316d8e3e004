"""Convert runs between the TensorBoard and MindSpore dialects.

``convert(src, dst, to="tensorboard")`` reads every run under ``src`` (either
dialect, plain or zstd) and writes the same run layout under ``dst``:

- to TensorBoard: scalars, histograms (MindSpore buckets become limits and
  counts), images, tensors and text as TensorBoard shows them; MindSpore
  lineage becomes the run's hparams (train lineage and custom lineage as
  hyperparameters, eval metrics as ``lineage/<metric>`` scalars that are the
  hparams metrics);
- to MindInsight: one summary Event per (step, wall time) group of values,
  histograms as at most 90 buckets, the first image of each image event,
  tensors; TensorBoard hparams become custom lineage in the ``_lineage``
  file.

What a dialect has no place for (text in MindInsight, MindSpore graphs and
loss landscapes in TensorBoard, run markers) is skipped and counted.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from typing import Any, Callable, Iterator

from .reader import Reader
from .records import RecordWriter

__all__ = ["convert", "FORMATS"]

FORMATS = ("tensorboard", "mindinsight")
_MARKERS = {"file_version", "session_log"}


def _host() -> str:
    return (socket.gethostname() or "localhost").replace("/", "_")


def _create(directory: str, name_of: Callable[[int], str]) -> RecordWriter:
    """A new file ``name_of(sec)`` in ``directory``, created exclusively
    (a taken name moves on to the next second)."""
    os.makedirs(directory, exist_ok=True)
    sec = int(time.time())
    while True:
        try:
            return RecordWriter(os.path.join(directory, name_of(sec)), durability="flush")
        except FileExistsError:
            sec += 1


def _to_tensorboard(reader: Reader, run: str, out_dir: str, counts: Counter) -> None:
    from .dialects.tensorboard import TensorBoardEncoder, payload_of_event

    enc = TensorBoardEncoder()
    pid = os.getpid()
    rw = _create(out_dir, lambda sec: f"events.out.tfevents.{sec:010d}.{_host()}.{pid}.0")
    with rw:
        rw.write(enc.file_header(time.time()))
        last_step, last_wall = 0, time.time()
        for ev in reader.events(run):
            if ev.kind in _MARKERS:
                continue
            payload = payload_of_event(ev)
            if payload is None:
                counts[f"skipped {ev.kind}"] += 1
                continue
            rw.write(payload)
            counts[ev.kind] += 1
            last_step, last_wall = ev.step, ev.wall_time
        for row in reader.lineage([run]):
            hparams: dict[str, Any] = {}
            for k, v in row.items():
                if k in ("run", "summary_dir", "metric", "user_defined", "dataset_graph"):
                    continue
                if isinstance(v, (bool, int, float, str)):
                    hparams[k] = v
            hparams.update({k: v for k, v in row.get("user_defined", {}).items()
                            if isinstance(v, (bool, int, float, str))})
            metrics = []
            for name, value in (row.get("metric") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    tag = f"lineage/{name}"
                    rw.write(enc.scalars(last_wall, last_step, [tag], [float(value)]))
                    metrics.append(tag)
            for payload in enc.hparams(last_wall, hparams, metrics):
                rw.write(payload)
            counts["lineage"] += 1


def _to_mindinsight(reader: Reader, run: str, out_dir: str, counts: Counter) -> None:
    from .dialects.mindspore import (MindSporeEncoder, summary_of_values, user_defined_info,
                                     value_of_event)

    enc = MindSporeEncoder()
    stamp: list[int] = []

    def name(suffix: str) -> Callable[[int], str]:
        def of(sec: int) -> str:
            sec = stamp[0] if stamp and suffix == "_lineage" else sec
            return f"events.out.events.summary.{sec}.{_host()}{suffix}"
        return of

    rw = _create(out_dir, name("_MS"))
    stamp.append(int(os.path.basename(rw.path).split("summary.")[1].split(".")[0]))
    lineage: RecordWriter | None = None
    with rw:
        rw.write(enc.file_header(time.time()))
        group: list[Any] = []
        key: tuple[int, float] | None = None
        custom: dict[str, Any] = {}

        def emit() -> None:
            if group and key is not None:
                rw.write(summary_of_values(key[1], key[0], group))

        for ev in reader.events(run):
            if ev.kind in _MARKERS:
                continue
            if ev.kind == "hparams":
                start = ev.value.get("session_start_info", {}).get("hparams", {})
                for k, v in start.items():
                    if isinstance(v, bool):
                        custom[k] = str(v)
                    elif isinstance(v, (int, float, str)):
                        custom[k] = v
                counts["hparams"] += 1
                continue
            value = value_of_event(ev)
            if value is None:
                counts[f"skipped {ev.kind}"] += 1
                continue
            if (ev.step, ev.wall_time) != key:
                emit()
                group, key = [], (ev.step, ev.wall_time)
            group.append(value)
            counts[ev.kind] += 1
        emit()
        if custom:
            info = {k: (float(v) if isinstance(v, float) and not float(v).is_integer()
                        else int(v) if isinstance(v, float) and abs(v) < 2**31 else v)
                    for k, v in custom.items()}
            lineage = _create(out_dir, name("_lineage"))
            with lineage:
                lineage.write(enc.lineage(time.time(), "custom_lineage_data",
                                          user_defined_info(info)))
            counts["lineage"] += 1


def iter_convert(src: str, dst: str, to: str,
                 runs: list[str] | None = None) -> Iterator[tuple[str, Counter]]:
    """Convert run by run, yielding ``(run, counts)`` after each (counts of
    values written by kind, and ``"skipped <kind>"``)."""
    if to not in FORMATS:
        raise ValueError(f"to must be one of {FORMATS}, got {to!r}")
    reader = Reader(src)
    src_abs, dst_abs = os.path.realpath(src), os.path.realpath(dst)
    if dst_abs == src_abs or dst_abs.startswith(src_abs + os.sep):
        raise ValueError(f"the destination {dst!r} must not be inside the source {src!r}")
    for run in runs if runs is not None else reader.runs():
        counts: Counter = Counter()
        out_dir = dst if run == "." else os.path.join(dst, run)
        if to == "tensorboard":
            _to_tensorboard(reader, run, out_dir, counts)
        else:
            _to_mindinsight(reader, run, out_dir, counts)
        yield run, counts


def convert(src: str, dst: str, to: str, runs: list[str] | None = None) -> dict[str, Counter]:
    """Convert every run (or ``runs``) under ``src`` into ``dst`` in the
    ``to`` dialect (``"tensorboard"`` or ``"mindinsight"``); returns the
    counts per run (see :func:`iter_convert`)."""
    return dict(iter_convert(src, dst, to, runs))
