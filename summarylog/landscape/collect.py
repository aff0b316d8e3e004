"""The collector side of loss landscapes, shared by every adapter: which steps (or
epochs) save the parameters, the copy taken on the training thread, and the file
written on one background thread, then ``train_metadata.json`` at the end of training.

The training thread pays one copy per saved point (the adapter's ``snapshot``: a
detached CPU clone in torch, ``asnumpy`` copied in MindSpore, the immutable array
references in JAX); serialising and writing happen on the saver's thread.  Pending
copies are bounded (``max_pending_bytes``): when the next copy would pass the bound,
the training thread waits for the writer (``on_full="wait"``, the default: a missing
point makes its interval's landscape impossible) or the point is skipped with a
warning (``on_full="drop"``).  A failed write is logged and counted (``errors``), and
training goes on, unless ``strict``: then the next call raises it."""

from __future__ import annotations

import bisect
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from . import checkpoints
from .metadata import CKPT_DIR, TrainMetadata, check_collect_landscape, checkpoint_name

__all__ = ["LandscapeSaver", "LANDSCAPE_OFF", "NEVER", "DEFAULT_MAX_PENDING_BYTES"]

log = logging.getLogger("summarylog")

#: a point no step reaches: the fast path's compare when nothing is left to save
NEVER = 1 << 62
#: pending copies held for the writer at most (one copy is always admitted)
DEFAULT_MAX_PENDING_BYTES = 512 << 20


class _Off:
    """What adapters compare with when collect_landscape is off: no step or epoch saves."""

    next_step = next_epoch = NEVER


LANDSCAPE_OFF: Any = _Off()

#: a snapshot of the parameters: ``{name: private copy}`` and its bytes
Snapshot = Callable[[], Mapping[str, Any]]


class LandscapeSaver:
    """Saves ``{name: array}`` snapshots at the interval points of checked
    ``collect_landscape`` settings into ``{summary_dir}/ckpt_dir`` (made now, never
    through a planted link), as ``{Net}_{point}_{unit}{ext}``.

    Adapters compare their step (or epoch) with :attr:`next_point` (an int; NEVER
    when none is left) and call :meth:`save` when it is reached."""

    def __init__(self, summary_dir: str | os.PathLike[str], settings: Mapping[str, Any],
                 ext: str, *, max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
                 on_full: str = "wait", strict: bool = False) -> None:
        checked = check_collect_landscape(settings)
        if checked is None:
            raise ValueError("collect_landscape is off: no LandscapeSaver")
        if ext not in (".ckpt", ".pt", ".npz"):
            raise ValueError(f"ext must be .ckpt, .pt or .npz, got {ext!r}")
        if on_full not in ("wait", "drop"):
            raise ValueError(f"on_full must be 'wait' or 'drop', got {on_full!r}")
        self.settings = checked
        self.unit: str = checked["unit"]
        self.ext = ext
        self.max_pending_bytes = int(max_pending_bytes)
        self.on_full = on_full
        self.strict = strict
        self._metadata = TrainMetadata.from_settings(checked)
        self._points = sorted(set(self._metadata.points()))
        self._point_set = frozenset(self._points)
        self.next_point = self._points[0] if self._points else NEVER
        self._sync_next()
        self._run_dir = os.path.abspath(os.fspath(summary_dir))
        os.makedirs(self._run_dir, exist_ok=True)
        self.ckpt_dir = os.path.join(self._run_dir, CKPT_DIR)
        try:
            os.close(self._open_dir())  # made now, as MindSpore makes it
        except OSError as exc:  # each write will fail (counted, logged): training goes on
            log.warning("summarylog: collect_landscape: %s is not usable: %s", self.ckpt_dir,
                        exc)
        self.saved: dict[int, str] = {}  # point -> path, once written
        self.errors = 0
        self.dropped: list[int] = []
        self.waits = 0
        self.wait_seconds = 0.0
        self._taken: set[int] = set()  # points copied (pending or written)
        self._queue: deque[tuple[int, str, Any, int]] = deque()
        self._pending_bytes = 0
        self._busy = False
        self._failure: BaseException | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._warned_full = False
        from .. import shutdown

        shutdown.register(self)  # pending copies are written at exit

    def _open_dir(self) -> int:
        """A descriptor of ckpt_dir, made if missing; a link planted there raises OSError."""
        from ..side_files import SideDir

        run = SideDir(self._run_dir)
        try:
            return run.sub(CKPT_DIR).fd
        finally:
            os.close(run.fd)

    def _write(self, name: str, named: Mapping[str, Any]) -> None:
        fd = self._open_dir()
        try:
            # through the descriptor where the OS names it: a directory swapped for a
            # link after the check is not followed
            fd_dir = f"/proc/self/fd/{fd}"
            where = fd_dir if os.path.isdir(fd_dir) else self.ckpt_dir
            checkpoints.save(os.path.join(where, name), named)
        finally:
            os.close(fd)

    # -- where the points are ---------------------------------------------------------
    def wants(self, point: int) -> bool:
        """``point`` is an interval point not saved yet."""
        return point in self._point_set and point not in self._taken

    def passed(self, point: int) -> None:
        """The loop is at ``point``: :attr:`next_point` becomes the first point after it."""
        i = bisect.bisect_right(self._points, point)
        self.next_point = self._points[i] if i < len(self._points) else NEVER
        self._sync_next()

    def _sync_next(self) -> None:
        # the adapters' one compare per step (or epoch): the other unit never saves
        self.next_step = self.next_point if self.unit == "step" else NEVER
        self.next_epoch = self.next_point if self.unit == "epoch" else NEVER

    def at(self, point: int, network: str, snapshot: Snapshot,
           nbytes: Callable[[], int]) -> bool:
        """The loop reached ``point`` (a step or an epoch, in the saver's unit) at or
        past :attr:`next_point`: save it when it is an interval point."""
        saved = False
        if self.wants(point):
            saved = self.save(point, network, snapshot, nbytes())
        self.passed(point)
        return saved

    def finish(self, last: int | None, network: str, snapshot: Snapshot | None,
               nbytes: Callable[[], int], step_per_epoch: int = 0) -> str | None:
        """The end of training at ``last`` (the last step or finished epoch): the
        parameters are saved there too unless they already were (an extra point of
        ``model_params_file_map``), then train_metadata.json is written (its path)."""
        if last is not None and last > 0 and snapshot is not None and last not in self._taken:
            self.save(last, network, snapshot, nbytes(), extra=True)
        return self.write_metadata(step_per_epoch)

    # -- saving -------------------------------------------------------------------------
    def save(self, point: int, network: str, snapshot: Callable[[], Mapping[str, Any]],
             nbytes: int, *, extra: bool = False) -> bool:
        """Copy the parameters now (``snapshot()``, on the caller's thread) and write
        them in the background.  ``extra``: a point outside the intervals (the end of
        training).  False when not saved (already saved, off the intervals, or dropped
        because the pending copies are at their bound and ``on_full="drop"``)."""
        self._raise_failure()
        point = int(point)
        if point < 0 or point in self._taken or not (extra or point in self._point_set):
            return False
        nbytes = max(int(nbytes), 0)
        with self._cond:
            if not self._room(nbytes):
                if self.on_full == "drop":
                    self.dropped.append(point)
                    self._taken.add(point)
                    log.warning("summarylog: collect_landscape: the parameters at %s %d were "
                                "not saved: %d bytes of earlier copies are still being written "
                                "(max_pending_bytes %d)", self.unit, point, self._pending_bytes,
                                self.max_pending_bytes)
                    return False
                if not self._warned_full:
                    self._warned_full = True
                    log.warning("summarylog: collect_landscape: training waits for the "
                                "checkpoint writer (%d bytes pending, max_pending_bytes %d)",
                                self._pending_bytes, self.max_pending_bytes)
                t0 = time.perf_counter()
                self.waits += 1
                while not self._room(nbytes):
                    if self._thread is None or not self._thread.is_alive():
                        break  # no writer (a forked child): the next append starts one
                    self._cond.wait(1.0)
                self.wait_seconds += time.perf_counter() - t0
        named = snapshot()
        name = checkpoint_name(network, point, self.unit, self.ext)
        with self._cond:
            self._taken.add(point)
            self._queue.append((point, name, named, nbytes))
            self._pending_bytes += nbytes
            if self._thread is None or not self._thread.is_alive():
                self._stop = False
                self._thread = threading.Thread(target=self._run, name="summarylog-landscape",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def _room(self, nbytes: int) -> bool:
        return self._pending_bytes == 0 or self._pending_bytes + nbytes <= self.max_pending_bytes

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    if self._stop:
                        return
                    self._cond.wait()
                point, name, named, nbytes = self._queue[0]
                self._busy = True
            try:
                self._write(name, named)
            except Exception as exc:  # never the training's end: logged and counted
                with self._cond:
                    self.errors += 1
                    if self.strict and self._failure is None:
                        self._failure = exc
                log.warning("summarylog: collect_landscape: the parameters at %s %d were not "
                            "written to %s: %s", self.unit, point,
                            os.path.join(self.ckpt_dir, name), exc)
            else:
                with self._cond:
                    self.saved[point] = os.path.join(self.ckpt_dir, name)
            finally:
                del named  # the copy goes before the next one is taken
                with self._cond:
                    self._queue.popleft()
                    self._pending_bytes -= nbytes
                    self._busy = False
                    self._cond.notify_all()

    @property
    def pending(self) -> int:
        """Copies not written yet."""
        with self._cond:
            return len(self._queue)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every copy is written (False when ``timeout`` passed first)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._queue:
                if self._thread is None or not self._thread.is_alive():
                    return False  # no writer (a forked child): nothing will come
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 1.0)
        return True

    def _raise_failure(self) -> None:
        if self._failure is not None:
            exc, self._failure = self._failure, None
            raise RuntimeError(f"collect_landscape: a checkpoint could not be written: "
                               f"{exc}") from exc

    # -- the end of training ------------------------------------------------------------
    def metadata(self, step_per_epoch: int = 0) -> TrainMetadata:
        """train_metadata.json's content for what was written so far (points written
        outside the intervals, such as the end of training, are extra map entries)."""
        meta = TrainMetadata.from_settings(self.settings, step_per_epoch=step_per_epoch)
        with self._cond:
            meta.model_params_file_map = {str(p): path for p, path in sorted(self.saved.items())}
        return meta

    def write_metadata(self, step_per_epoch: int = 0) -> str | None:
        """After training: wait for the pending copies, then write
        ``ckpt_dir/train_metadata.json`` (its path; None when it could not be written:
        logged, unless ``strict``)."""
        self.drain()
        self._raise_failure()
        missing = [p for p in self._points if p not in self.saved]
        if missing:
            log.info("summarylog: collect_landscape: no parameters saved at %s %s (training "
                     "did not reach them, or they were not written): the landscapes of their "
                     "intervals cannot be computed", self.unit, missing[:10])
        try:
            return self.metadata(step_per_epoch).write(os.path.dirname(self.ckpt_dir))
        except OSError as exc:
            if self.strict:
                raise
            with self._cond:
                self.errors += 1
            log.warning("summarylog: collect_landscape: %s not written: %s",
                        os.path.join(self.ckpt_dir, "train_metadata.json"), exc)
            return None

    def close(self) -> None:
        """Write what is pending and stop the writer (a later :meth:`save` starts it
        again: MindSpore's callback is closed after each ``Model.train``)."""
        self.drain()
        with self._cond:
            self._stop = True
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None:
            thread.join(timeout=60)
        from .. import shutdown

        shutdown.unregister(self)
