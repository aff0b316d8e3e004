"""The background stage of a Writer: one thread drains the queue in order.

    caller's thread: validate, queue    (summarylog.writer.Writer)
      -> this stage: scalar records -> columns -> one native encode call;
         jobs -> their encoder (histograms via the native binner, PNGs, tensors)
      -> the native record writer (framing, CRC, its own flusher thread)

The queue holds packed scalar records (``bytes``, see scalar_events), a
:class:`Job` for every other value, and ``threading.Event`` markers that
``flush()`` waits for.  Nothing written here can stall or kill the caller:
an I/O error is raised from the next call (strict) or counted and logged once.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from typing import Any, Callable

import numpy as np

from . import shutdown
from .files import FileSeries
from .histogram_stage import HistogramStage
from .records import MAX_PAYLOAD, RecordWriter
from .scalar_events import ScalarEvents

__all__ = ["Job", "Pipeline", "BATCH", "ITEM_BYTES"]

log = logging.getLogger("summarylog")

BATCH = 4096  # queued items that wake the thread early (a power of 2)
ITEM_BYTES = 80  # memory of one queued scalar record (a small bytes object and its slot)


class Job:
    """A value to encode on the background thread: ``fn(*args)`` returns
    its event payloads; ``nbytes`` counts toward the memory cap."""

    __slots__ = ("fn", "args", "nbytes", "hold_until")

    def __init__(self, fn: Callable[..., list[bytes]], *args: Any, nbytes: int | None = None,
                 hold_until: float = 0.0) -> None:
        self.fn, self.args = fn, args
        self.nbytes = (sum(a.nbytes for a in args if isinstance(a, np.ndarray))
                       if nbytes is None else nbytes)
        #: while it is the newest job, a drain before this time.monotonic()
        #: leaves it queued (its values may still be being computed)
        self.hold_until = hold_until


class Pipeline:
    def __init__(self, logdir: str, encoder: Any, files: FileSeries, scalars: ScalarEvents, *,
                 flush_secs: float, max_buffer: int, on_full: str, strict: bool,
                 max_file_size: int | None,
                 on_error: Callable[[BaseException], None] | None = None,
                 max_file_age: float | None = None) -> None:
        self.logdir, self.encoder, self.files, self.scalars = logdir, encoder, files, scalars
        self.flush_secs, self.on_full, self.strict = flush_secs, on_full, strict
        self.max_file_size = max_file_size
        self.max_file_age = max_file_age  # rotate (seal) files older than this (s); remote only
        #: a remote writer's spool bound: called before a drain writes; False drops
        #: what the drain holds (it may wait for room first, with on_full="block")
        self.admit: Callable[[], bool] | None = None
        self.queue: collections.deque[Any] = collections.deque()
        self._queue_cap = max_buffer - max_buffer // 2  # bytes of queued values
        self._max_items = max(2 * BATCH, self._queue_cap // ITEM_BYTES)
        self._lock = threading.Lock()
        self._drain_lock = threading.Lock()  # one drain at a time, in order
        self._heavy_bytes = 0  # of queued jobs
        self._holding = 0  # queued jobs that may be held back (hold_until set)
        self._wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.closed = False
        self.error: BaseException | None = None  # raised from the caller's next call
        self._io_logged = False
        self.on_error = on_error  # instead of keeping or counting errors (SummaryRecord's)
        self._drainer: threading.Thread | None = None  # the thread inside drain()
        self._room_waits = False  # put() waits for room: drain everything
        #: run at the end of each drain, with True when what they hold back must go
        #: too (a flush() waits, the timer, close)
        self.after_drain: list[Callable[[bool], None]] = []
        self.counts = {"events": 0, "dropped_values": 0}
        self.histograms = HistogramStage(logdir, min(flush_secs / 2, 60.0), self.counts,
                                         self._lock)

    # -- the caller's side ------------------------------------------------------
    def kick(self) -> None:
        """After queuing a scalar record: start the thread; wake it once per
        batch; at the memory cap, wait for it or drop."""
        if self.thread is None:
            self._ensure_thread()
        q = self.queue
        if len(q) >= BATCH:
            self._wake.set()
            if len(q) >= self._max_items - self._heavy_bytes // ITEM_BYTES:
                self._full()

    def _full(self) -> None:
        q = self.queue
        cap = lambda: self._max_items - self._heavy_bytes // ITEM_BYTES  # noqa: E731
        if self.on_full == "block":
            while len(q) >= cap() and not self.closed:
                time.sleep(0.001)  # backpressure: wait for the background thread
                self._wake.set()
            return
        dropped = 0  # the newest scalar records over the cap; never a job or a marker
        for _ in range(len(q) - cap()):
            try:
                item = q.pop()
            except IndexError:
                break
            if type(item) is not bytes:
                q.append(item)
                break
            dropped += 1
        self.counts["dropped_values"] += dropped

    def put(self, job: Job) -> None:
        """Queue a job within the memory cap (one job always fits)."""
        n = job.nbytes
        while True:
            with self._lock:
                used = self._heavy_bytes + len(self.queue) * ITEM_BYTES
                if self._heavy_bytes == 0 or used + n <= self._queue_cap:
                    self._heavy_bytes += n
                    self._holding += job.hold_until > 0
                    self.queue.append(job)
                    break
            if self.on_full == "drop" or self.closed:
                self.counts["dropped_values"] += 1
                return
            self._room_waits = True
            self._wake.set()
            time.sleep(0.001)
        self._room_waits = False
        self._ensure_thread()

    def wake(self) -> None:
        """Have the thread drain now."""
        self._ensure_thread()
        self._wake.set()

    def open_lane(self, scalar_tag: str | None, entries: list[tuple[str, np.ndarray]],
                  mindspore: bool = False) -> Any:
        """A collector's lane into the current file (see HistogramStage.open_lane;
        ``mindspore``: a MindSpore summary file); None while there is no file yet,
        or one the binner can't write to (compressed, rotating)."""
        rw = self.files.current
        if rw is None or rw.compression is not None or self.max_file_size is not None \
                or self.closed:
            return None
        return self.histograms.open_lane(rw, scalar_tag, entries, mindspore)

    @property
    def queued_jobs(self) -> tuple[int, int]:
        """``(bytes, holding)``: memory of the queued jobs, and how many of
        them may be held back."""
        return self._heavy_bytes, self._holding

    def idle(self) -> bool:
        """Nothing queued and no drain under way (a lane's collection may go
        into the file now without overtaking an earlier value)."""
        return not self.queue and not self._drain_lock.locked()

    # -- the background thread ----------------------------------------------------
    def _ensure_thread(self) -> None:
        if self.thread is None:
            shutdown.install_signal_handlers()  # again in a fork child that logs
            with self._lock:
                if self.thread is None and not self.closed:
                    t = threading.Thread(target=self._run, name="summarylog-writer", daemon=True)
                    t.start()
                    self.thread = t

    def _run(self) -> None:
        while True:
            woke = self._wake.wait(self.flush_secs)
            self._wake.clear()
            closing = self.closed
            self.drain(final=not woke or closing)
            if not woke:
                self._guard(self._timer_flush)
            if closing:
                return

    def _timer_flush(self) -> None:
        if self.max_file_age is not None and self.files.older_than(self.max_file_age):
            # an idle remote writer seals by age too
            with self._drain_lock:
                self._rotate()
        self.files.flush_current()

    def _guard(self, fn: Callable[..., Any], *args: Any, values: int = 0) -> bool:
        """Run ``fn`` (writing ``values`` values); an exception is kept for
        the caller (strict, or not an OSError) or counted and logged once.
        False when it failed."""
        try:
            fn(*args)
            return True
        except Exception as exc:
            if self.on_error is None:
                return self._keep(exc, values)
            self.on_error(exc)
        except BaseException as exc:
            self.error = self.error or exc
        return False

    def _keep(self, exc: Exception, values: int) -> bool:
        if isinstance(exc, OSError) and not self.strict:
            self.counts["dropped_values"] += values
            if not self._io_logged:
                self._io_logged = True
                log.warning("summarylog: could not write to %s: %s; values are dropped "
                            "and counted in stats; logging once", self.logdir, exc)
        else:
            self.error = self.error or exc
        return False

    def writer(self) -> RecordWriter:
        """The current file (created, or rotated past max_file_size, now)."""
        if self.files.over(self.max_file_size) or (
                self.max_file_age is not None and self.files.older_than(self.max_file_age)):
            self._rotate()
        return self.files.writer()

    def seal_current(self) -> None:
        """Close the current file now (from inside a drain: the ``admit`` hook), so a
        remote writer's uploader can take it."""
        if self.files.current is not None:
            self._rotate()

    def _rotate(self) -> None:
        self.histograms.flush()  # its jobs write into this file
        self.files.rotate()

    def drain(self, final: bool = False) -> None:
        """Write everything queued, in order (any thread; one at a time);
        ``final``: also what the after-drain hooks hold back."""
        with self._drain_lock:
            q = self.queue
            n = len(q)
            if n and not self.closed and not self._room_waits:
                newest = q[n - 1]
                if type(newest) is Job and newest.hold_until > time.monotonic():
                    n -= 1
            if not n and not final:
                return
            self._drainer = threading.current_thread()
            try:
                self._drain(n, final)
            finally:
                self._drainer = None

    def _drain(self, n: int, final: bool) -> None:
        if self.histograms.lanes:  # lanes' collections queued before these go first
            self._guard(self.histograms.flush)
        pop = self.queue.popleft
        items = [pop() for _ in range(n)]
        if self.admit is not None and items and not self.admit():
            items = self._drop_all(items)
        run: list[bytes] = []
        for item in items:
            if type(item) is bytes:
                run.append(item)
                continue
            if run:
                self._guard(self.write_scalar_records, run, values=len(run))
                run = []
            if type(item) is threading.Event:  # a flush() waiting for us
                self._after_drain(True)
                item.set()
            else:
                self._guard(self._write_job, item, values=1)
        if run:
            self._guard(self.write_scalar_records, run, values=len(run))
        self._after_drain(final)

    def _drop_all(self, items: list[Any]) -> list[Any]:
        """No room in the spool: drop the values, keep flush() markers."""
        kept = []
        for item in items:
            if type(item) is threading.Event:
                kept.append(item)
                continue
            if type(item) is Job:
                with self._lock:
                    self._heavy_bytes -= item.nbytes
                    self._holding -= item.hold_until > 0
            self.counts["dropped_values"] += 1
        return kept

    def _after_drain(self, final: bool) -> None:
        for hook in self.after_drain:
            self._guard(hook, final)

    def write_scalar_records(self, run: list[bytes]) -> None:
        """Scalar events, written at once in one native call (inside the drain)."""
        rw = self.writer()
        events, rc = self.encoder.write_scalar_columns(rw, self.scalars.columns(run),
                                                       self.scalars.tag_table())
        self.counts["events"] += events
        if rc:
            rw.report(rc)

    def _write_job(self, job: Job) -> None:
        try:
            try:
                payloads = job.fn(*job.args)
            except OSError:
                raise
            except Exception as exc:
                self.counts["dropped_values"] += 1
                log.warning("summarylog: could not encode a value for %s: %s", self.logdir, exc)
                return
        finally:
            with self._lock:
                self._heavy_bytes -= job.nbytes
                self._holding -= job.hold_until > 0
        for payload in payloads:
            self.write_payload(payload)

    def write_payload(self, payload: bytes) -> None:
        if len(payload) > MAX_PAYLOAD:  # an encoded value grew past the limit: drop it alone
            self.counts["dropped_values"] += 1
            log.warning("summarylog: dropped an event of %d bytes for %s (over 2 GiB - 1)",
                        len(payload), self.logdir)
            return
        if self.writer().write(payload):
            self.counts["events"] += 1
        else:  # the file's buffer is full and on_full="drop"
            self.counts["dropped_values"] += 1

    def write_histograms(self, items: list[tuple[float, int, str, np.ndarray, int]]) -> None:
        """Histogram events of ``(wall, step, tag, values, bins)`` (checked),
        written before this returns (from a job, or any thread)."""
        inside = self._drainer is threading.current_thread()
        with contextlib.nullcontext() if inside else self._drain_lock:
            self.histograms.write(self.writer(), items, self.encoder.histogram,
                                  self.write_payload)

    def scalar_record(self, tags: list[str], step: int, wall: float, values: list[float]) -> bytes:
        """The packed record of one scalar event (see scalar_events)."""
        key, pack = self.scalars.key_set(tuple(tags))
        return pack(key, 0, step, wall, *values)

    # -- flush and close --------------------------------------------------------------
    def take_error(self) -> None:
        if self.error is not None:
            err, self.error = self.error, None
            raise err

    def flush(self) -> None:
        self._ensure_thread()
        done = threading.Event()
        self.queue.append(done)
        self._wake.set()
        thread = self.thread
        while not done.wait(0.5):
            if thread is None or not thread.is_alive():
                self.drain()  # the thread is gone (interpreter shutdown): do it here
                break
        self.take_error()
        self._guard(self.histograms.flush)
        self._guard(self.files.flush_current)
        self.take_error()

    def close(self) -> None:
        with self._lock:
            self.closed = True
            thread = self.thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()  # its last drain takes everything queued
        try:
            self.drain(final=True)  # what the thread did not take (or no thread ran)
        finally:
            error = self.histograms.close()
            self._guard(self.files.close_current)
        if error is not None and self.error is None:
            self.error = error
        self.take_error()

    def abandon(self) -> None:
        """A forked child: the parent's file and threads are not its own."""
        self.files.abandon()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.counts, queued=len(self.queue),
                                   queued_bytes=self._heavy_bytes + len(self.queue) * ITEM_BYTES)
        self.histograms.add_stats(out)
        if self.files.current is not None:
            out["file"] = self.files.current.stats._asdict()
        return out
