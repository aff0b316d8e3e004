"""A Writer's remote target: its spool, store and uploader, wired into the pipeline.

The writer writes event files into the spool as it writes a local run; this object
locks each new file, hands each closed (sealed) one to the uploader, bounds the
spool (``max_spool``: the drain waits, or drops with ``on_full="drop"``), and adds
the uploader's counters to the writer's stats.  Local writers never build one.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..checks import check_choice
from ..records import RecordWriter
from .spool import SegmentLock, Spool
from .store import Store
from .uploader import RemoteWriteError, Uploader
from .write_options import RemoteOptions

__all__ = ["RemoteTarget"]

class RemoteTarget:
    """Spool + store + uploader of one writer to ``url``."""

    def __init__(self, url: str, opts: RemoteOptions, *, strict: bool, on_full: str,
                 recover: bool = True,
                 report: Callable[[RemoteWriteError], None] | None = None) -> None:
        self.url, self.opts = url, opts
        self.strict = strict
        self.on_full = check_choice("on_full", on_full, ("block", "drop"))
        self.store = Store(url, opts.storage_options, timeout=opts.upload_timeout,
                           max_object=max(4 << 30, 2 * opts.segment_bytes))
        self.spool = Spool(url, opts.spool_dir)
        self.dir = self.spool.dir
        self._locks: dict[str, SegmentLock] = {}
        self._files: Any = None
        self._pipe: Any = None
        self.spool_dropped = 0
        self.uploader = Uploader(self.store, self.spool, report=self._report,
                                 retry_wait=opts.retry_wait, live_tail_secs=opts.live_tail_secs,
                                 tail=self._current)
        self._recover = recover
        self._report_to = report

    # -- wiring -------------------------------------------------------------------------
    def wrap_open(self, open_file: Callable[[str], RecordWriter]) -> Callable[[str], RecordWriter]:
        """``open_file`` that also locks the new segment (so no scan takes it)."""
        def opened(path: str) -> RecordWriter:
            with self.spool.creating():
                rw = open_file(path)
                try:
                    self._locks[rw.path] = SegmentLock(rw.path, block=True)
                except BaseException:
                    rw.close()
                    raise
            return rw
        return opened

    def attach(self, pipeline: Any, files: Any) -> None:
        self._pipe, self._files = pipeline, files
        for series in getattr(files, "series", (files,)):  # MindSpore: summary and lineage
            series.on_closed = self._sealed
        pipeline.admit = self._admit
        self.uploader.start(recover=self._recover)

    def _sealed(self, path: str) -> None:
        lock = self._locks.pop(path, None)
        if lock is not None:
            self.uploader.submit(os.path.basename(path), lock)

    def _current(self) -> tuple[str, str] | None:
        rw = self._files.current if self._files is not None else None
        return None if rw is None or rw.closed else (os.path.basename(rw.path), rw.path)

    def _current_bytes(self) -> int:
        rw = self._files.current if self._files is not None else None
        if rw is None or rw.closed:
            return 0
        st = rw.stats
        return st.file_size + st.buffered_bytes

    def _admit(self) -> bool:
        limit = self.opts.max_spool
        if self.uploader.pending_bytes + self._current_bytes() <= limit:
            return True
        if self._current_bytes():  # only a sealed segment can go up and make room
            self._pipe.seal_current()
            if self.uploader.pending_bytes <= limit:
                return True
        if self.on_full == "drop":
            self.spool_dropped += 1
            return False
        # block: the training thread waits only through the bounded queue behind us
        self.uploader.wait_room(limit, 0, give_up=lambda: bool(self._pipe.closed))
        return True

    def _report(self, err: RemoteWriteError) -> None:
        if self._report_to is not None:
            self._report_to(err)
        elif self.strict and self._pipe is not None and self._pipe.error is None:
            self._pipe.error = err  # raised from the next logging call, flush() or close()

    # -- the writer's flush / close / stats -----------------------------------------------
    def after_flush(self) -> None:
        """The first flush waits for the first-write check (bounded by the deadline)."""
        self.uploader.checked.wait(self.opts.upload_timeout + 5)

    def close(self) -> int:
        return self.uploader.close(self.opts.close_timeout)

    def object_url(self, path: str) -> str:
        return f"{self.url.rstrip('/')}/{os.path.basename(path)}"

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.uploader.counts)
        out["spool_bytes"] = self.uploader.pending_bytes + self._current_bytes()
        out["spool_dropped"] = self.spool_dropped
        out["spool_dir"] = self.dir
        return out
