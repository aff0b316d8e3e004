"""summarylog.SummaryRecord: MindSpore's SummaryRecord API, without MindSpore
(docs/format.md §7), writing MindSpore summary and lineage files, or
TensorBoard event files (``format="tensorboard"``).  Where it differs from
MindSpore (README, "SummaryRecord: MindSpore's API without MindSpore"),
it is to lose no data.

Files (created exclusively; a taken name moves to the next second):
``<log_dir>/<file_prefix>.out.events.summary.<sec>[.<rank>].<host><file_suffix>``
and, beside it, the same name ending ``_lineage`` for lineage records.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import shutdown
from .binner import BINNABLE, Lane
from .checks import check_choice, check_flush_secs, check_optional_size
from .dialects.mindspore import MindSporeEncoder
from .files import MindSporeFiles, check_local_dir, check_suffix, distributed_rank
from .remote.write_options import check_remote_options
from .pipeline import Job, Pipeline
from .record_errors import RecordErrors
from .record_limits import DisplayLimits, check_run_listing
from .record_ops import check_train_network, drop_mindspore_summary_ops, take_summary_ops
from .record_sinks import MindSporeSink, StepBuilder, StepWriteError, TensorBoardSink, export_dir
from .record_values import (LANDSCAPE, LATER, LINEAGE_PLUGINS, SUMMARY_PLUGINS, TagNameError,
                            canonical_plugin, check_export_options, check_summary_tag, graph_of,
                            pool_bytes, pool_item)
from .records import RecordWriter

__all__ = ["SummaryRecord", "TagNameError", "StepWriteError", "SUMMARY_PLUGINS", "LINEAGE_PLUGINS"]

log = logging.getLogger("summarylog")


def _mindspore_output(directory: str, remote: Any, prefix: str, suffix: str,
                      rank: int | None, header: Callable[[float], bytes], flush_secs: float,
                      durability: str, strict: bool, max_buffer: int,
                      max_file_size: int | None, on_limit: str,
                      on_error: Callable[[BaseException], None],
                      report: Callable[[BaseException], None]
                      ) -> tuple[MindSporeFiles, Pipeline, Any]:
    """A MindSpore record's summary and lineage files, the pipeline writing them and,
    for a URL (``remote``: its checked options), the RemoteTarget whose spool they go
    to: sealed by size and age, each uploaded once (``report``: upload failures)."""
    target, age = None, None
    if remote:
        from .remote.target import RemoteTarget

        target = RemoteTarget(directory, remote, strict=strict, on_full="block",
                              report=report)
        directory = target.dir
        max_file_size, age = remote.file_limits(max_file_size)

    def open_file(path: str) -> RecordWriter:
        return RecordWriter(path, flush_secs=flush_secs, durability=durability,
                            strict=strict, max_buffer=max_buffer // 4)

    files = MindSporeFiles(
        directory, prefix, suffix, rank, target.wrap_open(open_file) if target else open_file,
        lambda wall: [header(wall)], max_file_size, on_limit, max_file_age=age)
    pipe = Pipeline(directory, None, files, None, flush_secs=flush_secs,
                    max_buffer=max_buffer, on_full="block", strict=strict,
                    max_file_size=None, on_error=on_error, max_file_age=age)
    if target is not None:
        target.attach(pipe, files)
    check_run_listing(directory)
    return files, pipe, target


def _tensorboard_output(directory: str, flush_secs: float, durability: str,
                        max_file_size: int | None, strict: bool, rank: int | None,
                        max_buffer: int, remote_kw: Mapping[str, Any]) -> Any:
    """A TensorBoard-format record's summarylog.Writer (``remote_kw``: the URL options
    given, None for those not)."""
    from .writer import Writer

    return Writer(directory, flush_secs=flush_secs, durability=durability,
                  max_file_size=max_file_size, strict=strict, rank=rank, max_buffer=max_buffer,
                  **{k: v for k, v in remote_kw.items() if v is not None})


def _check_args(file_prefix: str, file_suffix: str, max_file_size: int | None,
                max_buffer: int, raise_exception: bool, format: str, on_limit: str,
                durability: str) -> None:
    check_suffix("file_prefix", file_prefix)
    check_suffix("file_suffix", file_suffix)
    check_optional_size("max_file_size", max_file_size)
    if check_optional_size("max_buffer", max_buffer, 1 << 20) is None:
        raise TypeError("max_buffer must be an int, got NoneType")
    if not isinstance(raise_exception, bool):
        raise TypeError(f"raise_exception must be a bool, got {type(raise_exception).__name__}")
    check_choice("format", format, ("mindinsight", "tensorboard"))
    check_choice("on_limit", on_limit, ("rotate", "stop"))
    check_choice("durability", durability, ("none", "flush", "fsync"))


class SummaryRecord:
    """Record summary and lineage data as MindSpore's SummaryRecord does.

    Args:
      log_dir: the directory for the files (created if missing).
      file_prefix: file name prefix (default ``"events"``).
      file_suffix: summary file name suffix (default ``"_MS"``).
      network: a MindSpore Cell, or a graph (a GraphProto, or a ModelProto as
        message or bytes): its graph is recorded at the first :meth:`record`.
      max_file_size: bytes per file (None: no limit); see ``on_limit``.
      raise_exception: raise I/O errors (OSError naming the file) from
        ``record``/``flush``/``close`` (default False: log them once and stop
        recording, leaving what was written readable).  A step that can't be
        written (over 2 GiB - 1 in one record, or a value its encoder
        refuses) is lost alone and recording goes on: logged, counted in
        :meth:`stats`, and raised (``StepWriteError``) from the next call
        when True.
      export_options: ``{"tensor_format": "npy"}`` also writes every tensor
        value to ``export_<sec>/tensor/<tag>_<step>.npy``; None (default).
      format: ``"mindinsight"`` (default; MindSpore files) or
        ``"tensorboard"`` (TensorBoard event files through summarylog.Writer;
        lineage becomes the run's hparams).
      on_limit: at ``max_file_size``, ``"rotate"`` (default) to new files or
        ``"stop"`` recording (MindSpore's behaviour).
      flush_secs: records reach the OS at least this often (s; default 1.0).
      durability: ``"none"``, ``"flush"`` (default) or ``"fsync"``.
      rank: distributed rank in the file names (default: ``RANK`` and
        friends from the environment when more than one process runs).
      max_buffer: cap on the memory holding values not yet on disk (bytes;
        default 128 MiB): recorded steps wait in a queue of at most half of
        it (``record`` waits for the disk when it is full; one step is always
        let in), the summary and lineage files' buffers share the rest.
    """

    def __init__(self, log_dir: str | os.PathLike[str], file_prefix: str = "events",
                 file_suffix: str = "_MS", network: Any = None,
                 max_file_size: int | None = None, raise_exception: bool = False,
                 export_options: Mapping[str, Any] | None = None,
                 format: str = "mindinsight", *, on_limit: str = "rotate",
                 flush_secs: float = 1.0, durability: str = "flush",
                 rank: int | None = None, max_buffer: int = 128 << 20,
                 storage_options: Mapping[str, Any] | None = None,
                 spool_dir: str | os.PathLike[str] | None = None,
                 **upload_options: Any) -> None:
        remote_kw = dict(storage_options=storage_options, spool_dir=spool_dir, **upload_options)
        remote = check_remote_options("log_dir", log_dir, remote_kw)
        log_dir = os.fspath(log_dir) if remote else check_local_dir("log_dir", log_dir)
        _check_args(file_prefix, file_suffix, max_file_size, max_buffer, raise_exception,
                    format, on_limit, durability)
        self.max_buffer = max_buffer
        self.export_options = check_export_options(export_options)
        if remote and self.export_options:
            raise ValueError("export_options needs a local log_dir (exported .npy files "
                             f"are not uploaded), got the URL {log_dir!r}")
        self._remote: Any = None
        self._dir = log_dir.rstrip("/") if remote else os.path.realpath(log_dir)
        self.file_prefix = file_prefix
        self.file_suffix = file_suffix
        self.network = network
        self.max_file_size = max_file_size
        self.raise_exception = raise_exception
        self.format = format
        self.on_limit = on_limit
        self.flush_secs = check_flush_secs(flush_secs)
        self.durability = durability
        self.rank = rank = rank if rank is not None else distributed_rank()
        self._enc = MindSporeEncoder()
        self._mode = "train"
        self._pool: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        self._pool_lock = threading.Lock()
        self._has_graph = False
        self._closed = False
        self._finished = False
        self._errors = RecordErrors(self._dir, format, raise_exception)
        #: callables returning {"TAG[:TYPE]": tensor} of summary operators
        #: since the last call (framework adapters register them; MindSpore's
        #: operators are taken without one when MindSpore is loaded)
        self.summary_op_sources: list[Callable[[], Mapping[str, Any]]] = []
        drop_mindspore_summary_ops()  # values from before this record (as MindSpore)
        self._tb: Any = None
        self._files: MindSporeFiles | None = None
        if format == "tensorboard":
            self._tb = _tensorboard_output(self._dir, self.flush_secs, durability,
                                           max_file_size, raise_exception, rank, max_buffer,
                                           remote_kw)
            self._pipe = self._tb.pipeline
            self._pipe.on_error = self._errors.fail
        else:
            self._files, self._pipe, self._remote = _mindspore_output(
                self._dir, remote, file_prefix, file_suffix, rank, self._enc.file_header,
                self.flush_secs, durability, raise_exception, max_buffer, max_file_size,
                on_limit, self._errors.fail, self._errors.upload_failed)
        local_dir = self._remote.dir if self._remote is not None else self._dir
        export = self.export_options and self.export_options.get("tensor_format") == "npy"
        builder = StepBuilder(export_dir(local_dir, self._files.names if self._files else None)
                              if export else None)
        # the thread is woken past this much queued (else every flush_secs): a
        # woken thread takes the GIL, and the training thread may wait for it
        self._wake_bytes = min(max_buffer // 8, 8 << 20)
        self._sink: Any = (TensorBoardSink(self._tb, builder, self._wake_bytes) if self._tb
                           else MindSporeSink(self._files, self._enc, builder,
                                              DisplayLimits(local_dir)))
        self._pipe.after_drain.append(lambda final: self._sink.drained(final or self._lane_waits))
        self._lane_waits = False  # a collector's lane waits for the queued steps
        shutdown.register(self)

    # -- the MindSpore API -------------------------------------------------------------
    @property
    def log_dir(self) -> str:
        """The full path of the summary file (as MindSpore), or the directory
        before anything was written (TensorBoard format: the directory)."""
        if self._files is not None:
            path = self._files.summary_path()
            return self._remote.object_url(path) if self._remote is not None else path
        return self._dir

    def set_mode(self, mode: str) -> None:
        """``"train"`` or ``"eval"`` (summary-operator data is not recorded in
        eval); anything else raises ValueError."""
        if mode not in ("train", "eval"):
            raise ValueError(f"{mode!r} is not a recognized mode.")
        self._mode = mode

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Add a value for the next :meth:`record`.

        Plugins: ``scalar`` (one number), ``image`` (NCHW, 1 or 3 channels),
        ``tensor``, ``histogram`` (arrays of rank >= 1) take numpy arrays,
        Python numbers or torch/jax/MindSpore tensors; ``graph`` a GraphProto
        (or a ModelProto, as message or bytes, as MindSpore takes it);
        ``train_lineage``, ``eval_lineage``, ``dataset_graph``,
        ``custom_lineage_data`` their lineage message (MindSpore's or
        summarylog's, its bytes, or a dict; custom data also ``{key: str |
        int | float}``); ``landscape`` (MindSpore's spelling; ``LANDSCAPE`` too)
        a LossLandscape or a :class:`summarylog.landscape.Landscape`.

        Raises ValueError for an unknown plugin and for a value of the wrong
        size or rank, TypeError for a bad name or a value of the wrong type.
        """
        plugin = canonical_plugin(plugin)
        item = pool_item(plugin, name, value, self._tb is not None)
        with self._pool_lock:
            entries = self._pool[plugin]
            if plugin in SUMMARY_PLUGINS or plugin == LANDSCAPE:
                for i, (tag, _) in enumerate(entries):
                    if tag == name:
                        log.warning("summarylog: %r has duplicate values. Only the newest one "
                                    "will be recorded.", f"{name}/{plugin}")
                        del entries[i]
                        break
            entries.append((name if isinstance(name, str) else "", item))

    def add_later(self, build: Callable[[], list[tuple[str, str, Any]]], *, nbytes: int = 0,
                  on_error: Callable[[str, str, Exception], None] | None = None,
                  owned: bool = False) -> None:
        """Add summary values for the next :meth:`record` that are made on
        the background thread: ``build()`` returns ``(plugin, tag, value)``
        triples (summary plugins only), each checked there as
        :meth:`add_value` checks it; one that fails is dropped and reported
        to ``on_error(plugin, tag, exc)`` (default: a warning).  For values
        that never change (JAX arrays), or the caller's private copies
        (``owned=True``: not copied again): naming, checking and reading
        them then costs the caller nothing.  ``nbytes``: their memory, for
        the cap on queued steps (default 0)."""
        if not callable(build):
            raise TypeError(f"build must be callable, got {type(build).__name__}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise TypeError(f"nbytes must be an int >= 0, got {nbytes!r}")
        with self._pool_lock:
            self._pool[LATER].append((build, nbytes, on_error, bool(owned)))

    def record(self, step: int, train_network: Any = None,
               plugin_filter: Callable[[str], bool] | None = None) -> bool:
        """Write everything added since the last call as step ``step`` (one
        summary Event; lineage to the lineage file), with the values of
        MindSpore's summary operators run since then (train mode, when the
        program loaded MindSpore).  Returns False when closed or stopped by
        an I/O error.  ``step`` not an int, ``train_network`` not a network
        (a MindSpore Cell, a graph message or its bytes, or None): TypeError."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"step must be an int, got {type(step).__name__}")
        check_train_network(train_network)
        if plugin_filter is not None and not callable(plugin_filter):
            raise TypeError(f"plugin_filter must be callable or None, "
                            f"got {type(plugin_filter).__name__}")
        return self._record(int(step), train_network, plugin_filter, None)

    def record_later(self, step: int, build: Callable[[], list[tuple[str, str, Any]]],
                      nbytes: int, on_error: Callable[[str, str, Exception], None] | None,
                      plugin_filter: Callable[[str], bool] | None, owned: bool,
                      borrowed: bool = False) -> bool:
        """:meth:`add_later` and :meth:`record` in one call: a collector's
        collection, on the training thread, with the arguments already
        checked by the collector.  ``borrowed``: ``build`` holds a
        framework's memory (JAX arrays) that its allocator can't reuse
        until the background stage lets go of it."""
        return self._record(step, None, plugin_filter, (build, nbytes, on_error, owned), borrowed)

    # -- a collector's lane (summarylog.collector_lane) ------------------------------
    @property
    def lanes_possible(self) -> bool:
        """Whether :meth:`open_lane` may ever give a lane (files that don't
        rotate or compress, no exports)."""
        if self.export_options:
            return False
        if self._tb is not None:
            return self._tb.max_file_size is None and self._tb.compression is None
        return self._files is not None and self._files.max_file_size is None

    def open_lane(self, scalar_tag: str | None,
                  entries: list[tuple[str, np.ndarray]]) -> Lane | None:
        """A :class:`~summarylog.binner.Lane` into this record's TensorBoard
        file or MindSpore summary file (see summarylog.collector_lane):
        ``entries`` are ``(histogram tag, array viewing the tensor's memory)``,
        ``scalar_tag`` the loss's.  None while collections can't go that way."""
        if not self.lanes_possible or self._closed or self._errors.stopped:
            return None
        if any(arr.ndim == 0 or arr.size == 0 or arr.dtype not in BINNABLE
               for _, arr in entries):
            return None
        for tag in (scalar_tag, *(t for t, _ in entries)):
            if tag is not None:
                check_summary_tag(tag)
        return self._pipe.open_lane(scalar_tag, entries, mindspore=self._tb is None)

    def retire_lane(self, lane: Lane) -> None:
        """A lane its collector no longer uses (its tensors moved)."""
        self._pipe.histograms.retire(lane)

    def lane_ready(self) -> bool:
        """Whether a collection may go through a lane now: recording, and no
        recorded step still waiting for this record's thread (the lane's
        events would overtake its: file order is step order).  Such steps
        are then written at once, so that the lane's next collection may go."""
        if not self._pipe.idle() or self._sink.holds_scalars:  # have them written now
            self._lane_waits = True
            self._pipe.wake()
            return False
        self._lane_waits = False
        return not (self._pool or self._mode != "train" or self._closed or self._errors.stopped
                    or self._errors.pending is not None)

    def took_lane(self, step: int, scalar_tag: str | None = None,
                  specs: Sequence[tuple[str, str]] = ()) -> None:
        """A lane took a collection at ``step`` (lineage metrics' step; MindInsight's
        display limits count its values: the record's thread is idle meanwhile, as
        :meth:`lane_ready` made sure)."""
        if step > self._sink.last_step:
            self._sink.last_step = step
        limits = getattr(self._sink, "limits", None)
        if limits is not None:
            values = [(plugin, tag, None) for plugin, tag in specs]
            limits.count(step, [("scalar", scalar_tag, None), *values] if scalar_tag else values)

    @property
    def mode(self) -> str:
        """``"train"`` or ``"eval"`` (see :meth:`set_mode`)."""
        return self._mode

    def _record(self, step: int, train_network: Any, plugin_filter: Callable[[str], bool] | None,
                later: tuple[Any, ...] | None, borrowed: bool = False) -> bool:
        if self._errors.pending is not None:
            self._errors.raise_pending()
        if self._closed:
            log.error("summarylog: the SummaryRecord for %s is closed.", self._dir)
            return False
        if self._errors.stopped:
            return False
        if not self._has_graph and (self.network is not None or train_network is not None):
            graph = graph_of(self.network) or graph_of(train_network)
            if graph is not None:
                self.add_value("graph", "graph", graph)
                self._has_graph = True
        if self._mode == "train":  # summary operators' values (not in eval, as MindSpore)
            take_summary_ops(self.summary_op_sources, self.add_value)
        n = None
        if not self._pool and later is not None:
            # a collection and nothing else (the common case): no filtering, and
            # self._pool stays as it is (a value another thread adds meanwhile
            # goes with the next record, as if added just after this one)
            pool, n = {LATER: [later]}, later[1]
        else:
            with self._pool_lock:
                pool = self._pool
                if pool:
                    self._pool = defaultdict(list)
                elif later is not None:  # emptied by another thread's record() meanwhile
                    pool = defaultdict(list)
                if later is not None:
                    pool[LATER].append(later)
        if n is None:
            if plugin_filter is not None:
                pool = defaultdict(list, {p: v for p, v in pool.items()
                                          if p == LATER or plugin_filter(p)})
            if not any(pool.values()):
                return True
            n = pool_bytes(pool)
        # the newest step holding a framework's memory (JAX arrays, often still
        # being computed) waits for the next wake, which the step after it
        # brings; past half of flush_secs it is taken anyway
        hold = time.monotonic() + self.flush_secs / 2 if borrowed else 0.0
        self._pipe.put(Job(self._write_step, step, time.time(), pool, plugin_filter,
                           nbytes=n, hold_until=hold))
        queued, holding = self._pipe.queued_jobs
        if queued > self._wake_bytes or holding > 1 or self._lane_waits:
            self._pipe.wake()
        return True

    def _write_step(self, step: int, wall: float, pool: Any,
                    plugin_filter: Callable[[str], bool] | None) -> list[bytes]:
        """A recorded step, on the background stage (a pipeline job).  An
        I/O error stops recording (see ``raise_exception``); any other
        failure loses (part of) this step only."""
        if not self._errors.stopped:
            try:
                self._sink.write_step(step, wall, pool, plugin_filter)
            except OSError as exc:
                self._errors.fail(exc)
            except Exception as exc:
                self._errors.lose_step(step, exc)
        return []

    def stats(self) -> dict[str, Any]:
        """Counters: ``lost_steps`` (steps of which a record could not be
        written: too large, or a value the encoder refused; recording went
        on) and the background stage's (``dropped_values``, ``events``,
        queue state)."""
        out = dict(self._pipe.stats(), lost_steps=self._errors.lost_steps)
        if self._tb is not None:
            out.update({k: v for k, v in self._tb.stats.items() if k not in out})
        if self._remote is not None:
            out.update(self._remote.stats())
        return out

    def flush(self) -> None:
        """Return when everything recorded so far reached the OS."""
        if self._closed:
            log.error("summarylog: the SummaryRecord for %s is closed and can not flush.",
                      self._dir)
            return
        try:
            self._pipe.flush()
        except Exception as exc:
            self._errors.fail(exc)
        if self._remote is not None:
            self._remote.after_flush()  # the first flush: the store's check is done
        self._errors.raise_pending()

    def flush_soon(self) -> None:
        """Have everything recorded so far written and flushed, without
        waiting (the background stage does it at once)."""
        if not self._closed:
            self._pipe.put(Job(self._flush_files, nbytes=0))
            self._pipe.wake()

    def _flush_files(self) -> list[bytes]:
        self._sink.drained()
        self._pipe.files.flush_current()
        return []

    def close(self) -> None:
        """Write what is pending and close the files.  Idempotent."""
        if self._finished:
            return
        self._closed = True  # a close() cut short (a signal) is finished by the next one
        try:
            if self._tb is not None:
                self._pipe.flush()  # every step written: the lineage knows its last step
                self._sink.finish()
                self._tb.close()
            else:
                try:
                    self._pipe.close()  # seals the last files
                finally:
                    if self._remote is not None:
                        self._remote.close()
        except Exception as exc:
            self._errors.fail(exc)
        finally:
            self._finished = True
            shutdown.unregister(self)
        self._errors.raise_pending()

    def __enter__(self) -> "SummaryRecord":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<summarylog.SummaryRecord {self._dir!r} format={self.format!r}"
                f"{' closed' if self._closed else ''}>")

    @property
    def files(self) -> list[str]:
        """Paths of the files written so far."""
        if self._tb is not None:
            return self._tb.files
        paths = list(self._files.paths) if self._files is not None else []
        return [self._remote.object_url(p) for p in paths] if self._remote is not None else paths
