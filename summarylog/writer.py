"""summarylog.Writer: TensorBoard event files from a hot training loop.

The caller's thread only validates and enqueues.  A background thread
("summarylog-writer") drains the queue in order: runs of scalars become
events in one native call (csrc/scalar_codec.c, no protobuf objects), heavy
values (histograms, images) are binned and PNG-encoded there, framework
tensors are read there, and everything goes to the native record writer,
whose own thread writes the file.

Files: ``<logdir>/events.out.tfevents.<sec>.<host>.<pid>.<seq>[.<rank>]<suffix>``
(``events.out.zevents.….zst`` with ``compression="zstd"``, a name viewers
skip), created on the first event with O_EXCL, so writers in threads and
processes never collide; ``max_file_size`` rotates to the next ``<seq>``.
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import numbers
import os
import socket
import struct
import threading
import time
import weakref
from array import array
from typing import Any, Mapping, Sequence

import numpy as np

from . import shutdown
from .binner import BINNABLE, Binner, HistogramJob, Lane
from ._native import ffi, lib
from ._speedups import pack_log as _pack_log
from .dialects.tensorboard import TensorBoardEncoder
from .records import MAX_PAYLOAD, RecordWriter
from .values import Deferred, resolve_scalar, snapshot_scalar, to_numpy

__all__ = ["Writer"]

log = logging.getLogger("summarylog")

_seq = itertools.count()
_open_writers: "weakref.WeakSet[Writer]" = weakref.WeakSet()
_time = time.time
#: a collector's lane: at most this many copies of its tensors, in at most
#: this many bytes (fewer copies for bigger tensors; none past half of it)
LANE_SLOTS = 8
LANE_BYTES = 64 << 20
_BATCH = 4096  # queued items that wake the background thread early (a power of 2)
_MAX_VALUE_BYTES = MAX_PAYLOAD - 4096  # room for the tag and the event's other fields
_ITEM_BYTES = 80  # memory of one queued scalar item (a small bytes object and its slot)
# add_scalar queues a plain float as one packed bytes record: bytes are not
# tracked by Python's garbage collector, so a hot loop triggers no collections
# (which cost microseconds each in a process holding a large heap, e.g. torch)
_PACK = struct.Struct("<Idqd").pack
_UNPACK = struct.Struct("<Idqd").unpack
_UNPACK_LOG_HEAD = struct.Struct("<IIqd").unpack_from  # + one "<d" per tag of the key set


def _unpack_doubles(item: bytes, k: int) -> tuple[float, ...]:
    return struct.unpack_from(f"<{k}d", item, 24)


_PACKED = np.dtype([("tid", "<u4"), ("value", "<f8"), ("step", "<i8"), ("wall", "<f8")])


def _after_fork_in_child() -> None:
    for w in list(_open_writers):
        w._reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _detect_rank() -> int | None:
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        v = os.environ.get(var)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


def _check_tag(tag: Any, name: str = "tag") -> str:
    if not isinstance(tag, str):
        raise TypeError(f"{name} must be a str, got {type(tag).__name__}")
    if not tag:
        raise ValueError(f"{name} must not be empty")
    if not tag.isascii():
        try:
            tag.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} must be valid Unicode text (it holds a lone surrogate, "
                             f"e.g. from undecodable bytes), got {tag!r}") from None
    return tag


def _check_size(nbytes: int, name: str) -> None:
    """Refuse a value no event could carry (over 2 GiB - 1 encoded)."""
    if nbytes > _MAX_VALUE_BYTES:
        raise ValueError(f"{name} is {nbytes} bytes: an event may carry at most "
                         f"{MAX_PAYLOAD} bytes (2 GiB - 1, protobuf's message limit); "
                         f"nothing was logged")


def _check_step(step: Any) -> int:
    if step is None:
        return 0
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"step must be an int, got {type(step).__name__}")
    step = int(step)
    if not -(1 << 63) <= step < (1 << 63):
        raise ValueError(f"step must fit in int64, got {step}")
    return step


def _check_walltime(walltime: Any) -> float:
    if walltime is None:
        return _time()
    if isinstance(walltime, bool) or not isinstance(walltime, numbers.Real):
        raise TypeError(f"walltime must be a number (seconds), got {type(walltime).__name__}")
    walltime = float(walltime)
    if not math.isfinite(walltime):
        raise ValueError(f"walltime must be finite, got {walltime}")
    return walltime


def _check_flush_secs(flush_secs: Any) -> float:
    """flush_secs as a float: a finite number of seconds > 0."""
    if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)):
        raise TypeError(f"flush_secs must be a number, got {type(flush_secs).__name__}")
    if not 0 < flush_secs < math.inf:
        raise ValueError(f"flush_secs must be a finite number of seconds > 0, got {flush_secs}")
    return float(flush_secs)


class _Payload:
    """An event already encoded (on the caller's thread: text, tensors)."""

    __slots__ = ("data", "nbytes")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.nbytes = len(data)


class _Job:
    """Heavy work done on the background thread: returns event payloads."""

    __slots__ = ("fn", "args", "nbytes")

    def __init__(self, fn: Any, *args: Any) -> None:
        self.nbytes = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        self.fn = fn
        self.args = args


def _check_image(img: Any, dataformats: str, name: str) -> tuple[np.ndarray, list[int]]:
    """Validate an image (batch) and copy it as it is laid out (a plain
    memcpy for contiguous input); returns the copy and the axis order that
    makes it (N)HWC, applied later on the writer's thread."""
    arr = to_numpy(img, name)
    fmt = dataformats.upper()
    if sorted(fmt) not in (sorted("HW"), sorted("CHW"), sorted("NCHW")) or len(set(fmt)) != len(fmt):
        raise ValueError(f"dataformats must be a permutation of HW, CHW or NCHW, got {dataformats!r}")
    if arr.ndim != len(fmt):
        raise ValueError(f"{name} has shape {arr.shape}, which does not match dataformats {dataformats!r}")
    channels = arr.shape[fmt.index("C")] if "C" in fmt else 1
    if channels not in (1, 2, 3, 4):
        raise ValueError(f"{name} must have 1, 2, 3 or 4 channels, got {channels}")
    if 0 in arr.shape:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if arr.dtype != np.uint8 and arr.dtype.kind != "f" and arr.dtype != np.bool_:
        raise TypeError(f"{name} must be uint8 or float in [0, 1], got dtype {arr.dtype}")
    if "C" not in fmt:
        arr = arr[..., None]
        fmt += "C"
    target = "NHWC" if "N" in fmt else "HWC"
    return np.array(arr, copy=True), [fmt.index(c) for c in target]


def _to_hwc(arr: np.ndarray, axes: list[int]) -> np.ndarray:
    out = np.transpose(arr, axes)
    if out.dtype != np.uint8:  # floats are taken as [0, 1]; out-of-range values are clipped
        out = out.astype(np.float32)
    return out


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == np.uint8:
        return arr
    return (np.clip(np.nan_to_num(arr, nan=0.0), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


class Writer:
    """Log scalars, histograms, images, text, tensors and hparams for TensorBoard.

    Args:
      logdir: the run directory (created if missing).
      flush_secs: events reach the OS at least this often (s; default 1.0).
      durability: ``"none"``, ``"flush"`` (default) or ``"fsync"``; see
        :mod:`summarylog.records.writer` for each one's loss window.
      compression: None (default) or ``"zstd"`` (files viewers skip; convert
        with ``zstd -d``).
      max_file_size: rotate to a new file past this many bytes (None: never).
      filename_suffix: appended to file names.
      async_heavy: bin histograms and encode PNGs on the background thread
        (default True; the caller pays for a copy only).
      strict: raise I/O errors (OSError) from the next call (default False:
        count them in :attr:`stats`, log once, keep training).
      max_buffer: cap on the memory holding values not yet on disk (bytes;
        default 128 MiB): half for queued values, a quarter for each of the
        file's two record buffers (one filling while the other is written).
      on_full: when that memory is full (the disk is slow or stalled):
        ``"block"`` (default) makes logging calls wait for the disk,
        ``"drop"`` drops the new values and counts them in :attr:`stats`
        (``dropped_values``, and ``records_dropped`` of the file).
      rank: distributed rank for file names (default: from ``RANK`` and
        friends in the environment, else none).
      purge_step: resuming at this step: TensorBoard (and summarylog's
        Reader) drop earlier-logged events of this run with step >= it.

    Thread-safe: any number of threads may log to one Writer.  ``step=None``
    means step 0, as in tensorboardX.  Writers left open are closed at
    interpreter exit.
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        *,
        flush_secs: float = 1.0,
        durability: str = "flush",
        compression: str | None = None,
        max_file_size: int | None = None,
        filename_suffix: str = "",
        async_heavy: bool = True,
        strict: bool = False,
        rank: int | None = None,
        purge_step: int | None = None,
        max_buffer: int = 128 << 20,
        on_full: str = "block",
    ) -> None:
        logdir = os.fspath(logdir)
        if not isinstance(logdir, str) or not logdir:
            raise TypeError("logdir must be a non-empty str or PathLike[str]")
        _check_flush_secs(flush_secs)
        if durability not in ("none", "flush", "fsync"):
            raise ValueError(f"durability must be 'none', 'flush' or 'fsync', got {durability!r}")
        if compression not in (None, "zstd"):
            raise ValueError(f"compression must be None or 'zstd', got {compression!r}")
        if max_file_size is not None:
            if isinstance(max_file_size, bool) or not isinstance(max_file_size, int):
                raise TypeError(f"max_file_size must be an int or None, got {type(max_file_size).__name__}")
            if max_file_size <= 0:
                raise ValueError(f"max_file_size must be > 0, got {max_file_size}")
        if not isinstance(filename_suffix, str) or "/" in filename_suffix:
            raise ValueError(f"filename_suffix must be a str without '/', got {filename_suffix!r}")
        if isinstance(max_buffer, bool) or not isinstance(max_buffer, int):
            raise TypeError(f"max_buffer must be an int, got {type(max_buffer).__name__}")
        if max_buffer < (1 << 20):
            raise ValueError(f"max_buffer must be >= 1 MiB, got {max_buffer}")
        if on_full not in ("block", "drop"):
            raise ValueError(f"on_full must be 'block' or 'drop', got {on_full!r}")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise ValueError(f"rank must be a non-negative int or None, got {rank!r}")
        self.logdir = logdir
        self.flush_secs = float(flush_secs)
        self.durability = durability
        self.compression = compression
        self.max_file_size = max_file_size
        self.filename_suffix = filename_suffix
        self.async_heavy = bool(async_heavy)
        self.strict = bool(strict)
        self.max_buffer = max_buffer
        self.on_full = on_full
        self._queue_cap = max_buffer - max_buffer // 2  # bytes of queued values
        self._max_items = max(2 * _BATCH, self._queue_cap // _ITEM_BYTES)
        self.rank = rank if rank is not None else _detect_rank()
        self._purge_step = None if purge_step is None else _check_step(purge_step)
        self._enc = TensorBoardEncoder()
        self._tag_ids: dict[str, int] = {}
        self._ids_cache: dict[tuple[str, ...], tuple[tuple[int, ...], int, Any]] = {}
        self._key_tids: list[np.ndarray] = []  # tag ids of each log() key set
        self._last_log: tuple[tuple[str, ...], Any] | None = None
        self._tag_data = bytearray()
        self._tag_offsets = array("Q", [0])
        self._files: list[str] = []
        self._init_state()
        _open_writers.add(self)
        shutdown.register(self)

    def _init_state(self) -> None:
        self._lock = threading.Lock()  # tags, files, closing
        self._drain_lock = threading.Lock()  # one drain at a time, in order
        self._q: collections.deque[Any] = collections.deque()
        self._heavy_bytes = 0  # bytes of queued heavy items (arrays, encoded events)
        self._rw: RecordWriter | None = None
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._finished = False
        self._error: BaseException | None = None
        self._io_errors_logged = False
        self._pid = os.getpid()
        self._counts = {"events": 0, "dropped_values": 0}
        self._binner: Binner | None = None  # histogram batches (csrc/binner.c), on first use
        self._no_binner = False  # its thread could not start: the Python encoder
        self._lanes: list[Lane] = []  # collectors' lanes into the current file
        self._retired: list[Lane] = []  # lanes let go of once their collections are written

    def _reset_after_fork(self) -> None:
        # the child gets its own file (its pid is in the name) on its next event
        if self._rw is not None:
            self._rw._closed = True  # the parent's; the child must not flush it
        self._files = []  # the parent's files are not the child's
        self._init_state()

    # -- tags and validation -----------------------------------------------
    def _tag_id(self, tag: Any) -> int:
        tid = self._tag_ids.get(tag)
        if tid is not None:
            return tid
        _check_tag(tag)
        with self._lock:
            tid = self._tag_ids.get(tag)
            if tid is None:
                tid = len(self._tag_ids)
                self._tag_data += tag.encode("utf-8")
                self._tag_offsets.append(len(self._tag_data))
                self._tag_ids[tag] = tid
        return tid

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"Writer for {self.logdir!r} is closed")
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        if self._pid != os.getpid():  # forked, and the at-fork hook did not run
            self._reset_after_fork()

    # -- the hot path --------------------------------------------------------
    def add_scalar(self, tag: str, value: Any, step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log one scalar (number, or one-element array or tensor).

        Framework tensors are not read here: they are kept (copied without a
        device sync) and read on the writer's thread.
        """
        if self._closed or self._error is not None:
            self._check_open()
        tid = self._tag_ids.get(tag)
        if tid is None:
            tid = self._tag_id(tag)
        if type(value) is not float:
            value = float(value) if type(value) is int else snapshot_scalar(value, "value")
        if type(step) is not int or not -0x8000000000000000 <= step <= 0x7FFFFFFFFFFFFFFF:
            step = _check_step(step)
        walltime = _time() if walltime is None else _check_walltime(walltime)
        q = self._q
        q.append(_PACK(tid, value, step, walltime) if type(value) is float
                 else (tid, value, step, walltime))
        if not len(q) & (_BATCH - 1) or self._thread is None:
            self._kick(q)

    def log(self, scalars: Mapping[str, Any], step: int | None = None,
            walltime: float | None = None) -> None:
        """Log many scalars as one event: ``log({"loss": l, "lr": lr}, step)``."""
        if self._closed or self._error is not None:
            self._check_open()
        if type(scalars) is not dict and not isinstance(scalars, Mapping):
            raise TypeError(f"scalars must be a mapping of tag to value, got {type(scalars).__name__}")
        last = self._last_log
        if last is not None and type(step) is int:  # the usual case: same tags, plain numbers
            wt = _time() if walltime is None else _check_walltime(walltime)
            item = _pack_log(scalars, last[0], last[1][1], step, wt)
            if item is not None:
                q = self._q
                q.append(item)
                if not len(q) & (_BATCH - 1) or self._thread is None:
                    self._kick(q)
                return
        if not scalars:
            return
        keys = tuple(scalars)
        if last is not None and keys == last[0]:  # the usual case: the same tags each step
            entry = last[1]
        else:
            entry = self._ids_cache.get(keys)
            if entry is None:
                entry = self._log_key(keys)
            self._last_log = (keys, entry)
        ids, kidx, pack = entry
        vals = scalars.values()
        try:  # one C-speed pass: all plain numbers sum to a plain number
            total = sum(vals)
        except TypeError:
            total = None
        if type(step) is not int or not -0x8000000000000000 <= step <= 0x7FFFFFFFFFFFFFFF:
            step = _check_step(step)
        walltime = _time() if walltime is None else _check_walltime(walltime)
        item: Any = None
        if type(total) is float or type(total) is int:
            try:  # plain numbers: one packed bytes record (no GC-tracked objects)
                item = pack(kidx, 0, step, walltime, *vals)
            except (struct.error, OverflowError):
                item = None
        if item is None:  # numpy, tensors, huge ints, junk: the careful path
            vals = tuple(v if type(v) is float else
                         float(v) if type(v) is int else
                         snapshot_scalar(v, f"scalars[{k!r}]") for k, v in zip(keys, vals))
            item = (ids, vals, step, walltime)
        q = self._q
        q.append(item)
        if not len(q) & (_BATCH - 1) or self._thread is None:
            self._kick(q)

    def _log_key(self, keys: tuple[str, ...]) -> tuple[tuple[int, ...], int, Any]:
        """Tag ids, a key index and a packer for one log() key set (cached)."""
        ids = tuple(self._tag_id(tag) for tag in keys)
        with self._lock:
            kidx = len(self._key_tids)
            self._key_tids.append(np.array(ids, np.uint32))
        entry = (ids, kidx, struct.Struct("<IIqd" + "d" * len(ids)).pack)
        if len(self._ids_cache) < 1024:
            self._ids_cache[keys] = entry
        return entry

    def _kick(self, q: collections.deque[Any]) -> None:
        self._ensure_thread()
        if len(q) >= _BATCH:  # a full batch: wake the writer's thread (once per batch)
            self._wake.set()
            if len(q) >= self._max_items - self._heavy_bytes // _ITEM_BYTES:
                self._full(q)

    def _full(self, q: collections.deque[Any]) -> None:
        """The queue holds max_buffer/2: the disk is behind (or stalled)."""
        cap = lambda: self._max_items - self._heavy_bytes // _ITEM_BYTES  # noqa: E731
        if self.on_full == "block":
            while len(q) >= cap() and not self._closed:
                time.sleep(0.001)  # backpressure: wait for the writer's thread
                self._wake.set()
            return
        # drop the newest scalars over the cap (this thread's, mostly); never a
        # flush() waiter or a heavy value, which go back where they were
        dropped = 0
        for _ in range(len(q) - cap()):
            try:
                item = q.pop()
            except IndexError:
                break
            if type(item) is not bytes and type(item) is not tuple:
                q.append(item)
                break
            dropped += 1
        self._counts["dropped_values"] += dropped

    # -- heavy values ----------------------------------------------------------
    def _submit(self, fn: Any, *args: Any) -> None:
        if self.async_heavy:
            self._put(_Job(fn, *args))
        else:
            for payload in fn(*args):
                self._put(_Payload(payload))

    def _put(self, item: Any) -> None:
        """Queue a heavy item within the memory cap (waits, or drops it, when
        full; one item is always let in, however big)."""
        n = item.nbytes
        while True:
            with self._lock:
                used = self._heavy_bytes + len(self._q) * _ITEM_BYTES
                if self._heavy_bytes == 0 or used + n <= self._queue_cap:
                    self._heavy_bytes += n
                    self._q.append(item)
                    break
            if self.on_full == "drop" or self._closed:
                self._counts["dropped_values"] += 1
                return
            self._wake.set()
            time.sleep(0.001)
        self._ensure_thread()

    def _release(self, item: Any) -> None:
        with self._lock:
            self._heavy_bytes -= item.nbytes

    def add_histogram(self, tag: str, values: Any, step: int | None = None,
                      bins: int = 64, walltime: float | None = None) -> None:
        """Log a histogram of ``values`` (any shape; numpy or any framework's
        tensor).  ``bins`` equal-width buckets over the finite range (default
        64); ±inf are counted in the edge buckets and NaN in the total."""
        self._check_open()
        _check_tag(tag)
        if isinstance(bins, bool) or not isinstance(bins, int):
            raise TypeError(f"bins must be an int, got {type(bins).__name__}")
        if not 1 <= bins <= 10000:
            raise ValueError(f"bins must be in [1, 10000], got {bins}")
        arr = to_numpy(values, "values")
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"values must be numeric, got dtype {arr.dtype}")
        if arr.size == 0:
            raise ValueError("values must not be empty")
        step = _check_step(step)
        walltime = _check_walltime(walltime)
        arr = np.array(arr, copy=True)  # later in-place changes don't reach us
        self._submit(self._encode_histogram, walltime, step, tag, arr, bins)

    def _encode_histogram(self, walltime: float, step: int, tag: str, arr: np.ndarray,
                          bins: int) -> list[bytes]:
        return [self._enc.histogram(walltime, step, tag, arr, bins)]

    def _write_histograms_now(self, items: list[tuple[float, int, str, np.ndarray, int]]) -> None:
        """Histogram events of ``(walltime, step, tag, values, bins)``, all
        checked already (summarylog's SummaryRecord), written before this
        returns: float arrays binned, encoded and framed by the native binner
        (csrc/binner.c: a low-priority thread, no GIL), the rest here; the
        arrays are let go once it returns."""
        self._check_open()
        if not items:
            return
        with self._drain_lock:
            rw = self._writer()
            binner = self._binner_of() if rw.compression is None else None
            native: list[tuple[Any, ...]] = []
            where: list[int] = []  # items[where[i]] is native[i]
            rest: list[int] = []
            for k, (wall, step, tag, values, bins) in enumerate(items):
                if binner is not None and values.dtype in BINNABLE:
                    if not values.flags.c_contiguous:
                        values = np.ascontiguousarray(values)
                    native.append((tag, values, bins, step, wall))
                    where.append(k)
                else:
                    rest.append(k)
            if native:
                assert binner is not None
                job = HistogramJob(rw, native)
                binner.wait(binner.submit(job))
                self._binned(job)
                rest += [where[i] for i in job.fallbacks()]
            for k in sorted(rest):  # the Python encoder's: other dtypes, edges that collapsed
                try:
                    payload = self._enc.histogram(*items[k])
                except Exception as exc:
                    self._counts["dropped_values"] += 1
                    log.warning("summarylog: could not encode the histogram %r for %s: %s",
                                items[k][2], self.logdir, exc)
                    continue
                self._write_payload(payload)

    def _binner_of(self) -> Binner | None:
        """This writer's binner (started on first use; None when no thread
        can be started: the Python encoder then).  Its jobs write into the
        current file: flushing, rotating and closing it wait for them."""
        binner = self._binner
        if binner is None:
            with self._lock:
                binner = self._binner
                if binner is None and not self._no_binner:
                    try:  # (lanes' collections reach the file within poll_secs)
                        binner = self._binner = Binner(poll_secs=min(self.flush_secs / 2, 60.0))
                    except OSError as exc:
                        self._no_binner = True
                        log.warning("summarylog: no native binner thread for %s (%s): "
                                    "histograms are encoded in Python", self.logdir, exc)
        return binner

    def _open_lane(self, scalar_tag: str | None,
                   entries: list[tuple[str, int, int, bool]]) -> Lane | None:
        """A collector's :class:`~summarylog.binner.Lane` into the current
        file: ``entries`` are ``(tag, address, count, is_f64)``.  None: no
        file yet, one the binner can't write (compressed, rotating), tensors
        too big for :data:`LANE_BYTES` in two copies, or no memory or thread
        for it.  Its events count in :attr:`stats`; closing waits for it."""
        rw = self._rw
        if (rw is None or rw.compression is not None or self.max_file_size is not None
                or self._closed or self._pid != os.getpid()):
            return None
        for tag, _, _, _ in entries:
            _check_tag(tag)
        if scalar_tag is not None:
            _check_tag(scalar_tag)
        size = sum((count * (8 if f64 else 4) + 63) & ~63 for _, _, count, f64 in entries)
        slots = min(LANE_SLOTS, LANE_BYTES // max(size, 1))
        binner = self._binner_of()
        if slots < 2 or binner is None:
            return None
        self._fold_retired()
        try:
            lane = Lane(binner, rw, scalar_tag or "", entries, slots=slots)
        except OSError as exc:
            log.warning("summarylog: no lane for %s (%s): collections take the record's "
                        "thread", self.logdir, exc)
            return None
        with self._lock:
            self._lanes.append(lane)
        return lane

    def _retire_lane(self, lane: Lane) -> None:
        """A lane its collector no longer uses (its parameters moved): let go
        of once its queued collections are written (no wait here: this is
        the training thread), its counts kept, its write error reported."""
        with self._lock:
            if lane in self._lanes:
                self._lanes.remove(lane)
                self._retired.append(lane)
        self._fold_retired()

    def _fold_retired(self) -> None:
        """Fold the retired lanes whose collections are all written."""
        if not self._retired:
            return
        with self._lock:
            done = [lane for lane in self._retired if not lane.stats["pending"]]
            for lane in done:
                self._retired.remove(lane)
        for lane in done:
            self._fold_lane(lane)

    def _fold_lane(self, lane: Lane) -> None:
        """Keep a lane's counts in this writer's and report its error."""
        st = lane.stats
        with self._lock:
            self._counts["events"] += st["events"]
            self._counts["dropped_values"] += st["dropped"] + st["failed"]
        if st["failed"]:
            log.warning("summarylog: %d histograms of %s could not be encoded (values whose "
                        "range overflows float64)", st["failed"], self.logdir)
        lane.take_error()  # (raised when strict, as the file's own)

    def _binned(self, job: HistogramJob) -> None:
        """Account a finished binner job: its events, the entries it refused,
        those made but not written, and the file's I/O error (raised when
        strict, as the file's own)."""
        failed = job.failed()
        for tag, reason in failed:
            log.warning("summarylog: could not encode the histogram %r for %s: %s", tag,
                        self.logdir, reason)
        with self._lock:  # (jobs finish on other threads than the drain's)
            self._counts["dropped_values"] += len(failed)
        events, dropped = job.report()
        with self._lock:
            self._counts["events"] += events
            self._counts["dropped_values"] += dropped

    def _binner_flush(self) -> None:
        """Return once the binner finished every job given so far."""
        if self._binner is not None and self._pid == os.getpid():
            self._binner.flush()

    def add_image(self, tag: str, img: Any, step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log one image: uint8, or float in [0, 1]; 1 (gray), 2, 3 (RGB) or 4
        (RGBA) channels; layout ``dataformats`` (a permutation of CHW or HW)."""
        self._check_open()
        _check_tag(tag)
        if not isinstance(dataformats, str) or "N" in dataformats.upper():
            raise ValueError(f"dataformats must be a permutation of CHW or HW, got {dataformats!r}")
        arr, axes = _check_image(img, dataformats, "img")
        _check_size(arr.nbytes, "img")
        step = _check_step(step)
        walltime = _check_walltime(walltime)
        self._submit(self._encode_images, walltime, step, tag, arr, [0] + [a + 1 for a in axes],
                     True)

    def add_images(self, tag: str, imgs: Any, step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images (one TensorBoard sample each) with
        ``dataformats`` a permutation of NCHW; dtypes as :meth:`add_image`."""
        self._check_open()
        _check_tag(tag)
        if not isinstance(dataformats, str) or "N" not in dataformats.upper():
            raise ValueError(f"dataformats must be a permutation of NCHW, got {dataformats!r}")
        arr, axes = _check_image(imgs, dataformats, "imgs")
        _check_size(arr.nbytes, "imgs")
        step = _check_step(step)
        walltime = _check_walltime(walltime)
        self._submit(self._encode_images, walltime, step, tag, arr, axes, False)

    def _encode_images(self, walltime: float, step: int, tag: str, arr: np.ndarray,
                       axes: list[int], single: bool) -> list[bytes]:
        from .png import encode_png

        nhwc = _to_hwc(arr[None] if single else arr, axes)
        pngs = [encode_png(_to_uint8(im)) for im in nhwc]
        _, h, w, c = nhwc.shape
        return [self._enc.images(walltime, step, tag, pngs, h, w, c)]

    def add_text(self, tag: str, text: str, step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a text (markdown, as TensorBoard's Text tab shows it)."""
        self._check_open()
        _check_tag(tag)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if len(text) > _MAX_VALUE_BYTES // 4:
            _check_size(len(text.encode("utf-8", "surrogatepass")), "text")
        self._put(_Payload(self._enc.text(_check_walltime(walltime), _check_step(step), tag,
                                          text)))

    def add_tensor(self, tag: str, tensor: Any, step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log a tensor as it is (dtype and shape kept)."""
        self._check_open()
        _check_tag(tag)
        arr = to_numpy(tensor, "tensor")
        if arr.dtype.kind not in "fiubcUS":
            raise TypeError(f"tensor has unsupported dtype {arr.dtype}")
        _check_size(arr.nbytes, "tensor")
        self._put(_Payload(self._enc.tensor(_check_walltime(walltime), _check_step(step), tag,
                                            arr)))

    def add_hparams(self, hparams: Mapping[str, Any], metrics: Mapping[str, Any],
                    step: int | None = None, walltime: float | None = None) -> None:
        """Record this run's hyperparameters and final metrics for
        TensorBoard's HParams tab, in this run (not a sub-run).

        ``hparams`` values: bool, int, float or str.  ``metrics``: tag ->
        scalar, logged as scalars at ``step``; the HParams tab shows each
        tag's latest value.  Call once per run.
        """
        self._check_open()
        if not isinstance(hparams, Mapping) or not hparams:
            raise TypeError("hparams must be a non-empty mapping of name to value")
        if not isinstance(metrics, Mapping):
            raise TypeError(f"metrics must be a mapping of tag to value, got {type(metrics).__name__}")
        for name in hparams:
            _check_tag(name, "hparams key")
        walltime = _check_walltime(walltime)
        events = self._enc.hparams(walltime, hparams, list(metrics))  # validates values
        for payload in events:
            self._put(_Payload(payload))
        if metrics:
            self.log(metrics, step, walltime)

    def add_graph(self, graph_def: Any, walltime: float | None = None) -> None:
        """Log a model graph for TensorBoard's Graphs tab: a serialized
        TensorFlow ``GraphDef`` (bytes), or a GraphDef message of any
        protobuf package (e.g. what ``torch.utils.tensorboard`` builds)."""
        self._check_open()
        if hasattr(graph_def, "SerializeToString"):
            graph_def = graph_def.SerializeToString()
        if not isinstance(graph_def, (bytes, bytearray, memoryview)):
            raise TypeError(f"graph_def must be GraphDef bytes or message, "
                            f"got {type(graph_def).__name__}")
        _check_size(memoryview(graph_def).nbytes, "graph_def")
        self._put(_Payload(self._enc.graph(_check_walltime(walltime), bytes(graph_def))))

    # -- background thread ------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._thread is None:
            shutdown.install_signal_handlers()  # again in a fork child that logs
            with self._lock:
                if self._thread is None and not self._closed:
                    t = threading.Thread(target=self._run, name="summarylog-writer", daemon=True)
                    t.start()
                    self._thread = t

    def _run(self) -> None:
        # All draining happens here, so framework values are read, histograms
        # binned and PNGs encoded off the caller's thread; flush() and close()
        # wait for this thread instead of draining themselves.
        while True:
            woke = self._wake.wait(self.flush_secs)
            self._wake.clear()
            closing = self._closed
            try:
                self._drain()
                if not woke and self._rw is not None:
                    self._rw.flush()  # the timer: everything so far to the OS
            except BaseException as exc:  # kept for the caller's next call (strict)
                self._error = exc
            if closing:
                return

    def _file_name(self) -> str:
        host = socket.gethostname().replace("/", "_") or "localhost"
        kind = "zevents" if self.compression else "tfevents"
        name = f"events.out.{kind}.{int(_time()):010d}.{host}.{os.getpid()}.{next(_seq)}"
        if self.rank is not None:
            name += f".{self.rank}"
        return name + self.filename_suffix

    def _open_file(self) -> RecordWriter:
        os.makedirs(self.logdir, exist_ok=True)
        while True:
            path = os.path.join(self.logdir, self._file_name())
            try:
                rw = RecordWriter(path, flush_secs=self.flush_secs, durability=self.durability,
                                  compression=self.compression, strict=self.strict,
                                  max_buffer=self.max_buffer // 4, on_full=self.on_full)
                break
            except FileExistsError:  # someone took the name: take the next seq
                continue
        self._files.append(rw.path)
        now = _time()
        rw.write(self._enc.file_header(now))
        if self._purge_step is not None:
            for payload in self._enc.purge_marker(now, self._purge_step):
                rw.write(payload)
            self._purge_step = None  # only the first file carries it
        return rw

    def _writer(self) -> RecordWriter:
        rw = self._rw
        if rw is None:
            rw = self._rw = self._open_file()
        elif self.max_file_size is not None:
            st = rw.stats
            if st.file_size + st.buffered_bytes >= self.max_file_size:
                self._binner_flush()  # its jobs write into this file
                rw.close()
                rw = self._rw = self._open_file()
        return rw

    def _drain(self) -> None:
        with self._drain_lock:
            q = self._q
            n = len(q)
            if not n:
                return
            if self._lanes:  # lanes' collections queued before these go first (step order)
                self._binner_flush()
            pop = q.popleft
            items = [pop() for _ in range(n)]
            run: list[Any] = []  # consecutive scalar items of one kind
            for item in items:
                t = type(item)
                if t is bytes or t is tuple:
                    if run and type(run[0]) is not t:
                        self._emit_run(run)
                        run = []
                    run.append(item)
                    continue
                if run:
                    self._emit_run(run)
                    run = []
                if t is _Payload:
                    self._release(item)
                    self._write_payload(item.data)
                elif t is threading.Event:  # a flush() waiting for us
                    item.set()
                else:
                    try:
                        payloads = item.fn(*item.args)
                    except Exception as exc:
                        self._counts["dropped_values"] += 1
                        log.warning("summarylog: could not encode a value for %s: %s",
                                    self.logdir, exc)
                        continue
                    finally:
                        self._release(item)
                    for payload in payloads:
                        self._write_payload(payload)
            if run:
                self._emit_run(run)

    def _emit_run(self, run: list[Any]) -> None:
        if type(run[0]) is bytes:
            if len(set(map(len, run))) > 1:  # records of several sizes
                self._emit_mixed(run)
                return
            data = b"".join(run)
        if type(run[0]) is bytes and len(run[0]) != _PACKED.itemsize:  # packed log() records
            k = (len(run[0]) - 24) // 8
            rec = np.frombuffer(data, np.dtype(
                [("key", "<u4"), ("pad", "<u4"), ("step", "<i8"), ("wall", "<f8"),
                 ("vals", "<f8", (k,))]))
            n = len(rec)
            keys = rec["key"]
            if (keys == keys[0]).all():
                ids = np.tile(self._key_tids[int(keys[0])], n)
            else:
                ids = np.concatenate([self._key_tids[int(i)] for i in keys])
            self._encode_columns(n, np.ascontiguousarray(rec["wall"]),
                                 np.ascontiguousarray(rec["step"]), np.full(n, k, np.uint32),
                                 ids, np.ascontiguousarray(rec["vals"]).reshape(-1))
        elif type(run[0]) is bytes:  # packed add_scalar records: columns straight from numpy
            rec = np.frombuffer(data, _PACKED)
            n = len(rec)
            self._encode_columns(n, np.ascontiguousarray(rec["wall"]),
                                 np.ascontiguousarray(rec["step"]), np.ones(n, np.uint32),
                                 np.ascontiguousarray(rec["tid"]),
                                 np.ascontiguousarray(rec["value"]))
        else:
            self._emit_scalars(run)

    def _emit_mixed(self, run: list[bytes]) -> None:
        """Packed add_scalar and log() records interleaved (several threads, or
        both calls in one loop): columns item by item, in the order logged."""
        walls, steps, counts, ids, vals = array("d"), array("q"), array("I"), array("I"), array("d")
        size = _PACKED.itemsize
        key_ids: dict[int, list[int]] = {}
        for item in run:
            if len(item) == size:
                tid, v, step, wall = _UNPACK(item)
                ids.append(tid)
                vals.append(v)
                counts.append(1)
            else:
                key, _, step, wall = _UNPACK_LOG_HEAD(item)
                kt = key_ids.get(key)
                if kt is None:
                    kt = key_ids[key] = self._key_tids[key].tolist()
                ids.extend(kt)
                vals.extend(_unpack_doubles(item, len(kt)))
                counts.append(len(kt))
            steps.append(step)
            walls.append(wall)
        self._encode_columns(len(run), walls, steps, counts, ids, vals)

    def _write_payload(self, payload: bytes) -> None:
        if len(payload) > MAX_PAYLOAD:  # an encoded value grew past the limit: drop it alone
            self._counts["dropped_values"] += 1
            log.warning("summarylog: dropped an event of %d bytes for %s (over 2 GiB - 1)",
                        len(payload), self.logdir)
            return
        if self._writer().write(payload):
            self._counts["events"] += 1
        else:  # the file's buffer is full and on_full="drop"
            self._counts["dropped_values"] += 1

    def _emit_scalars(self, run: list[tuple[Any, ...]]) -> None:
        ids, vals, steps, walls = zip(*run)
        n = len(run)
        try:  # fast path: add_scalar items of plain floats
            ids_a = array("I", ids)
            vals_a = array("d", vals)
            counts = array("I", [1]) * n
        except TypeError:
            try:  # log() items too, still plain floats
                ids_col = [t if type(t) is tuple else (t,) for t in ids]
                vals_col = [v if type(v) is tuple else (v,) for v in vals]
                vals_a = array("d", itertools.chain.from_iterable(vals_col))
                ids_a = array("I", itertools.chain.from_iterable(ids_col))
                counts = array("I", map(len, ids_col))
            except (TypeError, OverflowError):  # deferred values: read them here (not the caller)
                ids_a, vals_a, counts, keep = self._flatten(run)
                if not keep:
                    return
                steps = tuple(run[i][2] for i in keep)
                walls = tuple(run[i][3] for i in keep)
                n = len(keep)
        self._encode_columns(n, array("d", walls), array("q", steps), counts, ids_a, vals_a)

    def _encode_columns(self, n: int, walls_a: Any, steps_a: Any, counts: Any, ids_a: Any,
                        vals_a: Any) -> None:
        """Scalar events from columns, encoded in C (csrc/scalar_codec.c)."""
        rw = self._writer()
        with self._lock:
            tag_data = bytes(self._tag_data)
            offsets = array("Q", self._tag_offsets)
        args = (n, ffi.from_buffer("double[]", walls_a), ffi.from_buffer("int64_t[]", steps_a),
                ffi.from_buffer("uint32_t[]", counts), ffi.from_buffer("uint32_t[]", ids_a),
                ffi.from_buffer("double[]", vals_a), tag_data,
                ffi.from_buffer("uint64_t[]", offsets), len(offsets) - 1)
        if rw.compression is None:  # framed straight into the native buffer
            accepted = ffi.new("uint64_t *")
            rc = lib.slg_writer_write_tb_scalars(rw._h, *args, accepted)
            self._counts["events"] += int(accepted[0])
            if rc:
                rw._status(rc)
            return
        need = lib.slg_tb_encode_scalars(ffi.NULL, 0, *args)
        out = bytearray(need)
        lib.slg_tb_encode_scalars(ffi.from_buffer(out), need, *args)
        rw.write_framed(out, n)
        self._counts["events"] += n

    def _flatten(self, run: list[tuple[Any, ...]]) -> tuple[array, array, array, list[int]]:
        """Slow path: log() events and deferred values (read here)."""
        ids_a, vals_a, counts, keep = array("I"), array("d"), array("I"), []
        for i, (tid, val, _step, _wall) in enumerate(run):
            pairs = zip(tid, val) if type(tid) is tuple else ((tid, val),)
            k = 0
            for t, v in pairs:
                if type(v) is Deferred:
                    try:
                        v = resolve_scalar(v)
                    except Exception as exc:
                        self._counts["dropped_values"] += 1
                        log.warning("summarylog: could not read %s: %s", v.name, exc)
                        continue
                try:
                    vals_a.append(v)
                except (TypeError, OverflowError) as exc:
                    self._counts["dropped_values"] += 1
                    log.warning("summarylog: dropped a scalar that is not a float: %s", exc)
                    continue
                ids_a.append(t)
                k += 1
            if k:
                counts.append(k)
                keep.append(i)
        return ids_a, vals_a, counts, keep

    # -- flush / close ------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged so far reached the OS (and the disk,
        with ``durability="fsync"``)."""
        self._check_open()
        self._ensure_thread()
        done = threading.Event()
        self._q.append(done)
        self._wake.set()
        thread = self._thread
        while not done.wait(0.5):
            if thread is None or not thread.is_alive():
                self._drain()  # the thread is gone (interpreter shutdown): do it here
                break
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        self._binner_flush()
        if self._rw is not None:
            self._rw.flush()

    def close(self) -> None:
        """Flush everything and close the file.  Idempotent."""
        with self._lock:
            if self._finished:
                return
            self._closed = True  # a close() cut short (a signal) is finished by the next one
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()  # its last drain takes everything queued
        error: BaseException | None = None  # a lane's, raised (strict) after the rest
        try:
            if self._pid == os.getpid():
                self._drain()  # what the thread did not take (or no thread ran)
        finally:
            try:
                if self._binner is not None and self._pid == os.getpid():
                    self._binner.close()  # its last jobs first: they write into the file
                    lanes, self._lanes = self._lanes + self._retired, []
                    self._retired = []
                    for lane in lanes:  # every one, the first error raised after
                        try:
                            self._fold_lane(lane)
                        except Exception as exc:
                            error = error or exc
            finally:
                try:
                    rw = self._rw
                    if rw is not None:
                        rw.close()
                finally:
                    self._finished = True
                    _open_writers.discard(self)
                    shutdown.unregister(self)
        if error is not None:
            raise error
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    @property
    def files(self) -> list[str]:
        """Paths of the files written so far, oldest first."""
        return list(self._files)

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events written, values dropped (unreadable tensors,
        failed encodes, or a full buffer with ``on_full="drop"``), queued
        items and their memory (bytes, estimated), and the current file's
        record stats."""
        out: dict[str, Any] = dict(self._counts, queued=len(self._q), files=len(self._files),
                                   queued_bytes=self._heavy_bytes + len(self._q) * _ITEM_BYTES)
        self._fold_retired()
        for lane in list(self._lanes) + list(self._retired):  # the collectors' lanes'
            st = lane.stats
            out["events"] += st["events"]
            out["dropped_values"] += st["dropped"] + st["failed"]
        if self._rw is not None:
            out["file"] = self._rw.stats._asdict()
        return out

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<summarylog.Writer {self.logdir!r}{' closed' if self._closed else ''}>"
