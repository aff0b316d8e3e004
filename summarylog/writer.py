"""summarylog.Writer: TensorBoard event files from a hot training loop.  The caller's
thread only validates and queues; :mod:`summarylog.pipeline` encodes and writes, in order."""

from __future__ import annotations

import logging
import os
import struct
import time
import weakref
from typing import Any, Callable, Mapping

import numpy as np

from . import shutdown
from ._speedups import pack_log as _pack_log
from .checks import (MAX_VALUE_BYTES, check_choice, check_flush_secs, check_image,
                     check_optional_size, check_size, check_step, check_tag, check_walltime)
from .dialects.tensorboard import TensorBoardEncoder
from .files import FileSeries, TensorBoardNames, check_local_dir, check_suffix, detect_rank
from .pipeline import BATCH, Job, Pipeline
from .records import RecordWriter
from .remote.write_options import check_remote_options
from .scalar_events import ScalarEvents
from .values import Deferred, resolve_scalar, snapshot_scalar, to_numpy

__all__ = ["Writer"]

log = logging.getLogger("summarylog")

_open_writers: "weakref.WeakSet[Writer]" = weakref.WeakSet()
_time = time.time
_INT64 = (-0x8000000000000000, 0x7FFFFFFFFFFFFFFF)


def _after_fork_in_child() -> None:
    for w in list(_open_writers):
        w._reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Writer:
    """Log scalars, histograms, images, text, tensors and hparams for TensorBoard.

    Args:
      logdir: the run directory (created if missing; a local path).
      flush_secs: events reach the OS at least this often (s; default 1.0).
      durability: ``"none"``, ``"flush"`` (default) or ``"fsync"`` (what a crash can
        lose: the README's durability table).
      compression: None (default) or ``"zstd"`` (viewers skip it; ``zstd -d`` converts).
      max_file_size: rotate to a new file past this many bytes (None: never).
      filename_suffix: appended to file names.
      async_heavy: bin histograms and encode PNGs on the background thread (default True).
      strict: raise I/O errors (OSError) from the next call, ``flush()`` or ``close()``
        (default False: count them in :attr:`stats`, log once, keep training).
      max_buffer: cap on the memory of values not yet on disk (bytes; default 128 MiB):
        half for queued values, a quarter for each of the file's two record buffers.
      on_full: when that memory is full: ``"block"`` (default) makes logging calls wait
        for the disk, ``"drop"`` drops the new values and counts them in :attr:`stats`.
      rank: distributed rank for file names (default: ``RANK`` and friends, else none).
      purge_step: resuming at this step: readers drop earlier events with step >= it.

    Logging to a URL (``s3://``, ``gs://``, any fsspec URL): records are spooled locally
    and uploaded as sealed segments, each once; ``storage_options``, ``spool_dir``,
    ``segment_bytes``, ``segment_secs``, ``max_spool``, ``live_tail_secs``,
    ``close_timeout``, ``upload_timeout`` and ``retry_wait`` are described in
    :class:`summarylog.remote.write_options.RemoteOptions` (and docs/remote.md).

    Thread-safe.  ``step=None`` means step 0, as in tensorboardX.  Writers left open
    are closed at interpreter exit.
    """

    def __init__(self, logdir: str | os.PathLike[str], *, flush_secs: float = 1.0,
                 durability: str = "flush", compression: str | None = None,
                 max_file_size: int | None = None, filename_suffix: str = "",
                 async_heavy: bool = True, strict: bool = False, rank: int | None = None,
                 purge_step: int | None = None, max_buffer: int = 128 << 20,
                 on_full: str = "block", storage_options: Mapping[str, Any] | None = None,
                 spool_dir: str | os.PathLike[str] | None = None,
                 segment_bytes: int | None = None, segment_secs: float | None = None,
                 max_spool: int | None = None, live_tail_secs: float | None = None,
                 close_timeout: float | None = None, upload_timeout: float | None = None,
                 retry_wait: tuple[float, float] | None = None) -> None:
        remote = check_remote_options("logdir", logdir, dict(
            storage_options=storage_options, spool_dir=spool_dir, segment_bytes=segment_bytes,
            segment_secs=segment_secs, max_spool=max_spool, live_tail_secs=live_tail_secs,
            close_timeout=close_timeout, upload_timeout=upload_timeout, retry_wait=retry_wait))
        self.logdir = os.fspath(logdir) if remote else check_local_dir("logdir", logdir)
        self.flush_secs = check_flush_secs(flush_secs)
        self.durability = check_choice("durability", durability, ("none", "flush", "fsync"))
        self.compression = check_choice("compression", compression, (None, "zstd"))
        self.max_file_size = check_optional_size("max_file_size", max_file_size)
        self.filename_suffix = check_suffix("filename_suffix", filename_suffix)
        if check_optional_size("max_buffer", max_buffer, 1 << 20) is None:
            raise TypeError("max_buffer must be an int, got NoneType")
        self.on_full = check_choice("on_full", on_full, ("block", "drop"))
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise ValueError(f"rank must be a non-negative int or None, got {rank!r}")
        self.async_heavy = bool(async_heavy)
        self.strict = bool(strict)
        self.max_buffer = max_buffer
        self.rank = rank if rank is not None else detect_rank()
        self._purge_step = None if purge_step is None else check_step(purge_step)
        self._enc = TensorBoardEncoder()
        self._scalars = ScalarEvents()
        self._last_log: tuple[tuple[str, ...], int, Any] | None = None
        self._files: list[str] = []
        self._finished = False
        self._remote_opts = remote
        self._remote: Any = None
        self._init_state()
        _open_writers.add(self)
        shutdown.register(self)

    def _init_state(self) -> None:
        names = TensorBoardNames(self.rank, self.filename_suffix, self.compression is not None,
                                 seq_digits=6 if self._remote_opts is not None else 0)
        directory, open_file, max_size, max_age = self.logdir, self._open_file, \
            self.max_file_size, None
        if self._remote_opts is not None:  # a URL: write a spool, upload sealed segments
            from .remote.target import RemoteTarget

            self._remote = RemoteTarget(self.logdir, self._remote_opts, strict=self.strict,
                                        on_full=self.on_full)
            directory, open_file = self._remote.dir, self._remote.wrap_open(self._open_file)
            max_size, max_age = self._remote_opts.file_limits(max_size)
        self._series = FileSeries(directory, names, open_file, self._first_records)
        self._series.paths = self._files
        self._pipe = Pipeline(directory, self._enc, self._series, self._scalars,
                              flush_secs=self.flush_secs, max_buffer=self.max_buffer,
                              on_full=self.on_full, strict=self.strict,
                              max_file_size=max_size, max_file_age=max_age)
        if self._remote is not None:
            self._remote.attach(self._pipe, self._series)
        self._q = self._pipe.queue  # add_scalar's hot path appends here directly
        self._closed = False
        self._pid = os.getpid()

    def _open_file(self, path: str) -> RecordWriter:
        return RecordWriter(path, flush_secs=self.flush_secs, durability=self.durability,
                            compression=self.compression, strict=self.strict,
                            max_buffer=self.max_buffer // 4, on_full=self.on_full)

    def _first_records(self, wall: float) -> list[bytes]:
        out = [self._enc.file_header(wall)]
        if self._purge_step is not None:  # only the first file carries it
            out += self._enc.purge_marker(wall, self._purge_step)
            self._purge_step = None
        return out

    def _reset_after_fork(self) -> None:
        # the child gets its own file (its pid is in the name) on its next event
        self._pipe.abandon()
        self._files = []
        self._init_state()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"Writer for {self.logdir!r} is closed")
        self._pipe.take_error()
        if self._pid != os.getpid():  # forked, and the at-fork hook did not run
            self._reset_after_fork()

    # -- scalars: the hot path -------------------------------------------------------
    def add_scalar(self, tag: str, value: Any, step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log one scalar (number, or one-element array or tensor).  Framework tensors
        are copied without a device sync and read on the background thread."""
        pipe = self._pipe
        if self._closed or pipe.error is not None:
            self._check_open()
        entry = self._scalars.single.get(tag) if type(tag) is str else None
        if entry is None:
            entry = self._scalars.key_set((tag,))
        if type(step) is not int or not _INT64[0] <= step <= _INT64[1]:
            step = check_step(step)
        walltime = _time() if walltime is None else check_walltime(walltime)
        if type(value) is not float:
            value = float(value) if type(value) is int else snapshot_scalar(value, "value")
            if type(value) is Deferred:  # a framework tensor: read on the background thread
                self._pipe.put(Job(self._encode_deferred, step, walltime, (tag,), (value,),
                                   nbytes=64))
                return
        q = self._q
        q.append(entry[1](entry[0], 0, step, walltime, value))
        if not len(q) & (BATCH - 1) or pipe.thread is None:
            pipe.kick()

    def log(self, scalars: Mapping[str, Any], step: int | None = None,
            walltime: float | None = None) -> None:
        """Log many scalars as one event: ``log({"loss": l, "lr": lr}, step)``."""
        pipe = self._pipe
        if self._closed or pipe.error is not None:
            self._check_open()
        last = self._last_log
        item = None
        if last is not None and type(step) is int:  # the usual case: same tags, plain numbers
            wt = _time() if walltime is None else check_walltime(walltime)
            item = _pack_log(scalars, last[0], last[1], step, wt)
        if item is None:
            item = self._pack_scalars(scalars, step, walltime)
            if item is None:
                return
        q = self._q
        q.append(item)
        if not len(q) & (BATCH - 1) or pipe.thread is None:
            pipe.kick()

    def _pack_scalars(self, scalars: Any, step: Any, walltime: Any) -> bytes | None:
        """log()'s record when its fast path cannot make it; None: nothing to queue."""
        if type(scalars) is not dict and not isinstance(scalars, Mapping):
            raise TypeError(f"scalars must be a mapping of tag to value, got {type(scalars).__name__}")
        if not scalars:
            return None
        keys = tuple(scalars)
        key, pack = self._scalars.key_set(keys, "scalars key")
        self._last_log = (keys, key, pack)
        step = check_step(step)
        walltime = _time() if walltime is None else check_walltime(walltime)
        vals = tuple(v if type(v) is float else float(v) if type(v) is int
                     else snapshot_scalar(v, f"scalars[{k!r}]") for k, v in scalars.items())
        if any(type(v) is Deferred for v in vals):  # framework tensors: read in the background
            self._pipe.put(Job(self._encode_deferred, step, walltime, keys, vals,
                               nbytes=64 * len(vals)))
            return None
        try:
            return pack(key, 0, step, walltime, *vals)
        except (struct.error, OverflowError) as exc:
            raise ValueError(f"scalars: a value does not fit a float64: {exc}") from None

    def _encode_deferred(self, step: int, wall: float, tags: tuple[str, ...],
                         vals: tuple[Any, ...]) -> list[bytes]:
        kept: dict[str, Any] = {}  # the tags are a mapping's keys: unique
        for tag, v in zip(tags, vals):
            if type(v) is Deferred:
                try:
                    v = resolve_scalar(v)
                except Exception as exc:
                    self._pipe.counts["dropped_values"] += 1
                    log.warning("summarylog: could not read %s: %s", v.name, exc)
                    continue
            kept[tag] = v
        return [self._enc.scalars(wall, step, list(kept), list(kept.values()))] if kept else []

    # -- heavy values ------------------------------------------------------------------
    def submit(self, encode: Callable[..., list[bytes]], *args: Any,
               nbytes: int | None = None) -> None:
        """Queue ``encode(*args)`` for the background thread (the caller's, with
        ``async_heavy=False``); it returns TensorBoard event payloads, written in call
        order.  ``nbytes`` (default: the numpy arguments' sizes) counts toward
        ``max_buffer``.  The arguments must not change after the call: copy them."""
        self._check_open()
        if self.async_heavy:
            self._pipe.put(Job(encode, *args, nbytes=nbytes))
        else:  # encoded here, queued encoded
            self._put_payloads(encode(*args))

    def _put_payloads(self, payloads: list[bytes]) -> None:
        self._pipe.put(Job(lambda: payloads, nbytes=sum(map(len, payloads))))

    def add_histogram(self, tag: str, values: Any, step: int | None = None,
                      bins: int = 64, walltime: float | None = None) -> None:
        """Log a histogram of ``values`` (any shape, numpy or framework tensor): ``bins``
        equal-width buckets over the finite range; ±inf in the edge buckets, NaN in the total."""
        self._check_open()
        check_tag(tag)
        if isinstance(bins, bool) or not isinstance(bins, int):
            raise TypeError(f"bins must be an int, got {type(bins).__name__}")
        if not 1 <= bins <= 10000:
            raise ValueError(f"bins must be in [1, 10000], got {bins}")
        arr = to_numpy(values, "values")
        if arr.dtype.kind not in "fiub":
            raise TypeError(f"values must be numeric, got dtype {arr.dtype}")
        if arr.size == 0:
            raise ValueError("values must not be empty")
        step = check_step(step)
        self.submit(lambda *a: [self._enc.histogram(*a)], check_walltime(walltime), step, tag,
                     np.array(arr, copy=True), bins)  # copied: later changes don't reach us

    def add_image(self, tag: str, img: Any, step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log one image: uint8, or float in [0, 1]; 1 (gray), 2, 3 (RGB) or 4
        (RGBA) channels; layout ``dataformats`` (a permutation of CHW or HW)."""
        self._add_images(tag, img, step, walltime, dataformats, True)

    def add_images(self, tag: str, imgs: Any, step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images (one sample each), ``dataformats`` a permutation of NCHW."""
        self._add_images(tag, imgs, step, walltime, dataformats, False)

    def _add_images(self, tag: str, img: Any, step: int | None, walltime: float | None,
                    dataformats: str, single: bool) -> None:
        self._check_open()
        check_tag(tag)
        name, layouts = ("img", "CHW or HW") if single else ("imgs", "NCHW")
        if not isinstance(dataformats, str) or ("N" in dataformats.upper()) == single:
            raise ValueError(f"dataformats must be a permutation of {layouts}, got {dataformats!r}")
        arr, axes = check_image(img, dataformats, name)
        check_size(arr.nbytes, name)
        if single:  # encode_images adds the batch axis
            axes = [0] + [a + 1 for a in axes]
        self.submit(self.encode_images, check_walltime(walltime), check_step(step), tag,
                     arr, axes, single)

    def encode_images(self, walltime: float, step: int, tag: str, arr: np.ndarray,
                      axes: list[int], single: bool) -> list[bytes]:
        """An images event of ``arr`` (checked by check_image; ``axes`` make it NHWC)."""
        from .png import encode_png

        nhwc = np.transpose(arr[None] if single else arr, axes)
        if nhwc.dtype != np.uint8:  # floats are taken as [0, 1]; out-of-range values clipped
            nhwc = (np.clip(np.nan_to_num(nhwc.astype(np.float32), nan=0.0), 0.0, 1.0) * 255.0
                    + 0.5).astype(np.uint8)
        pngs = [encode_png(im) for im in nhwc]
        _, h, w, c = nhwc.shape
        return [self._enc.images(walltime, step, tag, pngs, h, w, c)]

    def add_text(self, tag: str, text: str, step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a text (markdown, as TensorBoard's Text tab shows it)."""
        self._check_open()
        check_tag(tag)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if len(text) > MAX_VALUE_BYTES // 4:
            check_size(len(text.encode("utf-8", "surrogatepass")), "text")
        self._put_payloads([self._enc.text(check_walltime(walltime), check_step(step), tag, text)])

    def add_tensor(self, tag: str, tensor: Any, step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log a tensor as it is (dtype and shape kept)."""
        self._check_open()
        check_tag(tag)
        arr = to_numpy(tensor, "tensor")
        if arr.dtype.kind not in "fiubcUS":
            raise TypeError(f"tensor has unsupported dtype {arr.dtype}")
        check_size(arr.nbytes, "tensor")
        self._put_payloads([self._enc.tensor(check_walltime(walltime), check_step(step), tag, arr)])

    def add_hparams(self, hparams: Mapping[str, Any], metrics: Mapping[str, Any],
                    step: int | None = None, walltime: float | None = None) -> None:
        """Record this run's hyperparameters (values bool, int, float or str) and final
        ``metrics`` (tag -> scalar, logged as scalars at ``step``; the HParams tab shows
        each tag's latest value) for TensorBoard's HParams tab.  Call once per run."""
        self._check_open()
        if not isinstance(hparams, Mapping) or not hparams:
            raise TypeError("hparams must be a non-empty mapping of name to value")
        if not isinstance(metrics, Mapping):
            raise TypeError(f"metrics must be a mapping of tag to value, got {type(metrics).__name__}")
        for name in hparams:
            check_tag(name, "hparams key")
        walltime = check_walltime(walltime)
        for payload in self._enc.hparams(walltime, hparams, list(metrics)):  # validates values
            self._put_payloads([payload])
        if metrics:
            self.log(metrics, step, walltime)

    def add_graph(self, graph_def: Any, walltime: float | None = None) -> None:
        """Log a model graph for TensorBoard's Graphs tab: a serialized ``GraphDef``, or a
        GraphDef message of any protobuf package (e.g. ``torch.utils.tensorboard``'s)."""
        self._check_open()
        if hasattr(graph_def, "SerializeToString"):
            graph_def = graph_def.SerializeToString()
        if not isinstance(graph_def, (bytes, bytearray, memoryview)):
            raise TypeError(f"graph_def must be GraphDef bytes or message, "
                            f"got {type(graph_def).__name__}")
        check_size(memoryview(graph_def).nbytes, "graph_def")
        self._put_payloads([self._enc.graph(check_walltime(walltime), bytes(graph_def))])

    # -- what SummaryRecord and collectors use ------------------------------------------
    @property
    def pipeline(self) -> Pipeline:
        """The background stage (histograms written now, lanes, idleness)."""
        if self._pid != os.getpid():
            self._reset_after_fork()
        return self._pipe

    # -- flush / close ----------------------------------------------------------------------
    def flush(self) -> None:
        """Return when everything logged so far reached the OS (and the disk, with fsync;
        for a URL: the spool; the first flush also waits for the check of the store)."""
        self._check_open()
        self._pipe.flush()
        if self._remote is not None:
            self._remote.after_flush()
            self._pipe.take_error()

    def close(self) -> None:
        """Flush everything and close the file.  Idempotent."""
        if self._finished:
            return
        self._closed = True  # a close() cut short (a signal) is finished by the next one
        try:
            if self._pid == os.getpid():
                try:
                    self._pipe.close()  # seals the last segment
                finally:
                    if self._remote is not None:
                        self._remote.close()
        finally:
            self._finished = True
            _open_writers.discard(self)
            shutdown.unregister(self)

    @property
    def files(self) -> list[str]:
        """Paths of the files written so far, oldest first (for a URL: their URLs)."""
        if self._remote is not None:
            return [self._remote.object_url(p) for p in self._files]
        return list(self._files)

    @property
    def stats(self) -> dict[str, Any]:
        """Counters: events written, values dropped (unreadable tensors, failed encodes,
        I/O errors when not strict, a full buffer with ``on_full="drop"``), queued items
        and their memory (bytes, estimated), and the current file's record stats."""
        out = {**self._pipe.stats(), "files": len(self._files)}
        if self._remote is not None:  # segments_sealed, _uploaded, bytes_uploaded, ...
            out.update(self._remote.stats())
        return out

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<summarylog.Writer {self.logdir!r}{' closed' if self._closed else ''}>"
