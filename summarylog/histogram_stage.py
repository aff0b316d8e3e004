"""A writer's histograms on the native binner thread, and its collectors' lanes
(summarylog.binner): when they start, what they counted, and their errors."""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .binner import BINNABLE, Binner, HistogramJob, Lane

if TYPE_CHECKING:
    from .records import RecordWriter

__all__ = ["HistogramStage", "LANE_SLOTS", "LANE_BYTES"]

log = logging.getLogger("summarylog")

#: a lane's most copies of its tensors, and their most bytes (no lane past half of it)
LANE_SLOTS = 8
LANE_BYTES = 64 << 20


class HistogramStage:
    def __init__(self, logdir: str, poll_secs: float, counts: dict[str, int],
                 lock: threading.Lock) -> None:
        self.logdir = logdir
        self._poll_secs = poll_secs
        self._counts, self._lock = counts, lock  # the writer's (jobs finish on other threads)
        self._binner: Binner | None = None
        self._no_binner = False
        self._pid = os.getpid()
        self.lanes: list[Lane] = []  # open lanes into the current file
        self._retired: list[Lane] = []  # let go of once their collections are written

    def binner(self) -> Binner | None:
        """The binner, started on first use; None when no thread can start."""
        with self._lock:
            if self._binner is None and not self._no_binner:
                try:
                    self._binner = Binner(poll_secs=self._poll_secs)
                except OSError as exc:
                    self._no_binner = True
                    log.warning("summarylog: no native binner thread for %s (%s): "
                                "histograms are encoded in Python", self.logdir, exc)
            return self._binner

    def write(self, rw: "RecordWriter", items: list[tuple[float, int, str, np.ndarray, int]],
              encode: Callable[..., bytes], write_payload: Callable[[bytes], None]) -> None:
        """Histogram events of ``(wall, step, tag, values, bins)`` (checked), written in
        order before this returns: float arrays by the binner, the rest by ``encode``."""
        binner = self.binner() if rw.compression is None else None
        native = [k for k, item in enumerate(items)  # the job's entry i is items[native[i]]
                  if binner is not None and item[3].dtype in BINNABLE]
        rest = list(set(range(len(items))).difference(native))
        if native:
            assert binner is not None
            job = HistogramJob(rw, [(tag, np.ascontiguousarray(vals), bins, step, wall)
                                    for wall, step, tag, vals, bins in (items[k] for k in native)])
            binner.wait(binner.submit(job))
            failed = job.failed()
            for tag, reason in failed:
                log.warning("summarylog: could not encode the histogram %r for %s: %s", tag,
                            self.logdir, reason)
            events, dropped = job.report()
            with self._lock:
                self._counts["events"] += events
                self._counts["dropped_values"] += dropped + len(failed)
            rest += [native[i] for i in job.fallbacks()]
        for k in sorted(rest):  # other dtypes, edges that collapsed in float32
            try:
                payload = encode(*items[k])
            except Exception as exc:
                with self._lock:
                    self._counts["dropped_values"] += 1
                log.warning("summarylog: could not encode the histogram %r for %s: %s",
                            items[k][2], self.logdir, exc)
                continue
            write_payload(payload)

    def open_lane(self, rw: "RecordWriter", scalar_tag: str | None,
                  entries: list[tuple[str, np.ndarray]], mindspore: bool = False) -> Lane | None:
        """A :class:`~summarylog.binner.Lane` into ``rw``; None when two copies of the
        tensors exceed :data:`LANE_BYTES`, or no thread or memory is to be had."""
        size = sum((arr.nbytes + 63) & ~63 for _, arr in entries)
        slots = min(LANE_SLOTS, LANE_BYTES // max(size, 1))
        binner = self.binner()
        if slots < 2 or binner is None or rw.compression is not None:
            return None
        self.fold_retired()
        try:
            lane = Lane(binner, rw, scalar_tag or "", entries, slots=slots, mindspore=mindspore)
        except OSError as exc:
            log.warning("summarylog: no lane for %s (%s): collections take the queue",
                        self.logdir, exc)
            return None
        with self._lock:
            self.lanes.append(lane)
        return lane

    def retire(self, lane: Lane) -> None:
        """Let go of a lane once its collections are written (the training thread: no wait)."""
        with self._lock:
            if lane in self.lanes:
                self.lanes.remove(lane)
                self._retired.append(lane)
        self.fold_retired()

    def fold_retired(self) -> None:
        if not self._retired:
            return
        with self._lock:
            done = [lane for lane in self._retired if not lane.stats["pending"]]
            self._retired = [lane for lane in self._retired if lane not in done]
        for lane in done:
            self._fold(lane)

    def _fold(self, lane: Lane) -> None:
        """Keep a lane's counts in the writer's and report its error."""
        st = lane.stats
        with self._lock:
            self._counts["events"] += st["events"]
            self._counts["dropped_values"] += st["dropped"] + st["failed"]
        if st["failed"]:
            log.warning("summarylog: %d histograms of %s could not be encoded (values whose "
                        "range overflows float64)", st["failed"], self.logdir)
        lane.take_error()

    def flush(self) -> None:
        """Return once the binner finished every job given so far."""
        if self._binner is not None and self._pid == os.getpid():
            self._binner.flush()

    def close(self) -> BaseException | None:
        """Finish the binner's jobs and fold every lane; the first lane error."""
        error: BaseException | None = None
        if self._binner is not None and self._pid == os.getpid():
            self._binner.close()
            lanes, self.lanes, self._retired = self.lanes + self._retired, [], []
            for lane in lanes:
                try:
                    self._fold(lane)
                except Exception as exc:
                    error = error or exc
        return error

    def add_stats(self, out: dict[str, Any]) -> None:
        """Add the open and retired lanes' counts to a writer's stats."""
        self.fold_retired()
        for lane in list(self.lanes) + list(self._retired):
            st = lane.stats
            out["events"] += st["events"]
            out["dropped_values"] += st["dropped"] + st["failed"]
