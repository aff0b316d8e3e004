"""The background uploader: each sealed segment goes to the store exactly once.

Exactly once: a segment's key is its unique file name, written create-only
(:meth:`Store.put_new`); a taken key holding the same bytes is an earlier attempt
of ours whose answer was lost.  The segment is deleted from the spool only after
the store confirmed it, so a crash at any point leaves it for the next uploader
(a new Writer on the spool, or ``summarylog upload``), which meets either a free
key or its own bytes.  Failures are retried with exponential backoff and jitter,
forever: nothing logged is given up; the first failure of a streak is reported.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import random
import threading
import time
from typing import Any, Callable

from .spool import SegmentLock, Spool
from .store import PUT_CONFLICT, PUT_DONE, Store

__all__ = ["Uploader", "RemoteWriteError", "COUNTERS"]

log = logging.getLogger("summarylog")

COUNTERS = ("segments_sealed", "segments_uploaded", "bytes_uploaded", "upload_retries",
            "upload_errors", "conflicts", "already_uploaded", "tail_uploads", "tail_bytes")


class RemoteWriteError(OSError):
    """Segments could not be uploaded (they wait in the spool and are retried)."""


def describe_failure(store: Store, spool: Spool, exc: BaseException) -> RemoteWriteError:
    kind = ("the bucket or path does not exist" if isinstance(exc, FileNotFoundError)
            else "access denied" if isinstance(exc, PermissionError)
            else "no credentials" if "Credentials" in type(exc).__name__
            else "timed out" if "Timeout" in type(exc).__name__
            else "the endpoint is unreachable" if "Connect" in type(exc).__name__
            else "the upload failed")
    return RemoteWriteError(f"summarylog: cannot upload to {store.shown!r}: {kind} "
                            f"({type(exc).__name__}: {exc}); the segments wait in the spool "
                            f"{spool.dir!r} and are uploaded when the store works "
                            f"(or by `summarylog upload {spool.dir}`)")


class Uploader:
    """A thread sending sealed segments of ``spool`` to ``store``, oldest first.

    ``report(exc)`` is called with the first failure of each streak (a
    RemoteWriteError); ``retry_wait`` is (first, longest) wait between attempts (s).
    ``tail`` (with ``live_tail_secs``): returns (name, path) of the segment being
    written, whose flushed bytes are sent as its live tail at most that often.
    """

    def __init__(self, store: Store, spool: Spool, *,
                 report: Callable[[RemoteWriteError], None] | None = None,
                 retry_wait: tuple[float, float] = (0.5, 30.0),
                 live_tail_secs: float | None = None,
                 tail: Callable[[], tuple[str, str] | None] | None = None) -> None:
        self.store, self.spool, self.report = store, spool, report
        self.retry_wait = retry_wait
        self.live_tail_secs, self._tail_source = live_tail_secs, tail
        self.counts = dict.fromkeys(COUNTERS, 0)
        self._todo: collections.deque[tuple[str, SegmentLock, int]] = collections.deque()
        self._cv = threading.Condition()
        self._busy = False  # a segment is being uploaded
        self._pending = 0  # bytes queued or being uploaded
        self._stop = False
        self._failing = False
        self.checked = threading.Event()  # the first-write check is done
        self.recovered = threading.Event()  # the spool's leftovers are queued
        self.thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._tail_sent: dict[str, int] = {}
        self._tail_at = 0.0

    # -- the writer's side -----------------------------------------------------------------
    def start(self, recover: bool = True) -> None:
        self._recover = recover
        t = threading.Thread(target=self._run, name="summarylog-uploader", daemon=True)
        self.thread = t
        t.start()

    def submit(self, name: str, lock: SegmentLock) -> None:
        """A sealed segment (locked by us) to send."""
        size = os.fstat(lock.fd).st_size
        with self._cv:
            if self._stop:  # closed: it stays in the spool for the next uploader
                lock.release()
                return
            self.counts["segments_sealed"] += 1
            self._todo.append((name, lock, size))
            self._pending += size
            self._cv.notify_all()

    def idle(self) -> bool:
        """Nothing queued or being sent."""
        with self._cv:
            return not self._todo and not self._busy

    @property
    def pending_bytes(self) -> int:
        return self._pending

    def wait_room(self, limit: int, extra: int, give_up: Callable[[], bool]) -> bool:
        """Wait until pending bytes + ``extra`` fit ``limit`` (False: ``give_up()`` said so)."""
        with self._cv:
            while self._pending + extra > limit:
                if give_up() or self._stop:
                    return False
                self._cv.wait(0.05)
        return True

    def close(self, timeout: float) -> int:
        """Wait up to ``timeout`` s for the queue to empty; then stop.  The number
        of segments left in the spool for a later uploader."""
        end = time.monotonic() + timeout
        if self.thread is not None and self.thread.is_alive():  # leftovers queued first
            self.recovered.wait(timeout)
        with self._cv:
            while (self._todo or self._busy) and self.thread is not None \
                    and self.thread.is_alive():
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(min(left, 0.05))
            self._stop = True
            left_over = len(self._todo) + (1 if self._busy else 0)
            self._release_queued()
            self._cv.notify_all()
        if left_over:
            log.warning("summarylog: %d segment(s) for %s not uploaded by close(); they "
                        "wait in the spool %s (the next Writer on it, or `summarylog upload "
                        "%s`, sends them)", left_over, self.store.shown, self.spool.dir,
                        self.spool.dir)
        return left_over

    def _release_queued(self) -> None:
        for _, lock, _ in self._todo:
            lock.release()
        self._todo.clear()

    # -- the thread --------------------------------------------------------------------------
    def _run(self) -> None:
        self._attempt(self.store.check, None)
        self.checked.set()
        if self._recover:
            for name, lock in self.spool.take_leftovers():
                if self.live_tail_secs:  # a dead writer's tail may be left: drop it too
                    self._tail_sent.setdefault(name, -1)
                self.submit(name, lock)
        self.recovered.set()
        while True:
            with self._cv:
                while not self._todo and not self._stop:
                    self._cv.wait(self._tail_wait())
                    if not self._todo:
                        self._tail_tick()
                if self._stop:
                    self._release_queued()
                    return
                name, lock, size = self._todo.popleft()
                self._busy = True
            try:
                self._send(name, lock)
            finally:
                with self._cv:
                    self._busy = False
                    self._pending -= size
                    self._cv.notify_all()

    def _send(self, name: str, lock: SegmentLock) -> None:
        data = lock.read()
        if not data:  # created, then its writer died before the header: nothing to send
            self.spool.remove(name)
            lock.release()
            return
        outcome = self._attempt(lambda: self.store.put_new(name, data), len(data))
        if outcome is None:  # stopped before it went up: left in the spool
            lock.release()
            return
        if outcome == PUT_CONFLICT:
            self.counts["conflicts"] += 1
            keep = f".conflict-{name}"
            log.error("summarylog: %s/%s already holds other bytes; not overwritten, the "
                      "segment is kept in the spool as %s", self.store.shown, name, keep)
            os.replace(os.path.join(self.spool.dir, name), os.path.join(self.spool.dir, keep))
        else:
            self.counts["segments_uploaded"] += 1
            self.counts["already_uploaded"] += outcome != PUT_DONE  # an answer was lost
            self.spool.remove(name)  # confirmed: the spool copy may go
        lock.release()
        if name in self._tail_sent:  # best effort: a bucket may refuse deletes
            self._tail_sent.pop(name)
            with contextlib.suppress(Exception):
                self.store.drop_tail(name)

    def _attempt(self, call: Callable[[], Any], nbytes: int | None, tries: int = 0) -> Any:
        """``call()`` until it works (or ``tries`` times; 0: until stopped); None if not."""
        first, longest = self.retry_wait
        n = 0
        while not (self._stop and nbytes is not None):
            try:
                out = call()
            except Exception as exc:
                n += 1
                self.counts["upload_retries"] += nbytes is not None
                self._fail(exc)
                if "Timeout" in type(exc).__name__ and self.store.async_fs:
                    try:  # the deadline cut a call: its connection may be stuck for good
                        self.store.reset()
                    except Exception:  # the next attempt reports what is wrong
                        pass
                if tries and n >= tries:
                    return None
                wait = min(longest, first * 2 ** min(n - 1, 30)) * random.uniform(0.5, 1.0)
                with self._cv:
                    if nbytes is None and not tries:
                        return None  # the first-write check: reported, not repeated
                    self._cv.wait_for(lambda: self._stop, wait)
                continue
            if nbytes is not None and out == PUT_DONE:
                self.counts["bytes_uploaded"] += nbytes
            self._failing = False
            return out
        return None

    def _fail(self, exc: BaseException) -> None:
        if self._failing:
            return
        self._failing = True
        self.counts["upload_errors"] += 1
        err = describe_failure(self.store, self.spool, exc)
        log.warning("%s", err)
        if self.report is not None:
            self.report(err)

    # -- the live tail ------------------------------------------------------------------------
    def _tail_wait(self) -> float | None:
        if not self.live_tail_secs:
            return None
        return max(0.01, self._tail_at + self.live_tail_secs - time.monotonic())

    def _tail_tick(self) -> None:
        if not self.live_tail_secs or self._tail_source is None or self._stop:
            return
        if time.monotonic() < self._tail_at + self.live_tail_secs:
            return
        self._tail_at = time.monotonic()
        cur = self._tail_source()
        if cur is None:
            return
        name, path = cur
        try:
            size = os.stat(path).st_size
        except OSError:
            return
        if not size or self._tail_sent.get(name) == size:
            return
        with open(path, "rb") as f:
            data = f.read(size)
        self._cv.release()  # the network call runs without the lock
        try:
            sent = self._attempt(lambda: self.store.put_tail(name, data) or True, None, tries=1)
            if sent:
                self._tail_sent[name] = size
                self.counts["tail_uploads"] += 1
                self.counts["tail_bytes"] += len(data)
        finally:
            self._cv.acquire()
