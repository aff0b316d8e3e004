"""summarylog.SummaryRecord: MindSpore's SummaryRecord API, without MindSpore.

Same signature and behaviour as ``mindspore.SummaryRecord`` (FORMAT.md §8),
writing MindSpore summary and lineage files that MindInsight reads
(``format="mindinsight"``, the default) or TensorBoard event files
(``format="tensorboard"``).  Differences, all on the side of not losing data:

- values are packed (histograms binned, images gridded and PNG-encoded) on a
  background thread, not in a process pool; ``record()`` only copies them;
- ``max_file_size`` rotates to a new file by default (``on_limit="rotate"``);
  ``on_limit="stop"`` stops recording there, as MindSpore does;
- any number of SummaryRecords may be open at once;
- a duplicate tag within one step keeps only the newest value (MindSpore
  writes both and lets MindInsight drop the older);
- tensors keep exact 64-bit values beside MindSpore's float32 copy.

Files (created exclusively; a taken name moves to the next second):
``<log_dir>/<file_prefix>.out.events.summary.<sec>[.<rank>].<host><file_suffix>``
and, beside it, the same name ending ``_lineage`` for lineage records.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import math
import os
import re
import stat
import tempfile
import threading
import time
import urllib.parse
import warnings
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from google.protobuf import json_format

from . import shutdown
from .binner import BINNABLE, Lane
from .dialects.mindspore import MindSporeEncoder, image_grid, lineage_message, user_info_dict
from .checks import check_flush_secs
from .files import MindSporeFiles, check_local_dir, check_suffix, detect_rank
from .records import MAX_PAYLOAD, RecordWriter
from .values import Deferred, resolve_array, snapshot_array

__all__ = ["SummaryRecord", "TagNameError", "SUMMARY_PLUGINS", "LINEAGE_PLUGINS"]

log = logging.getLogger("summarylog")

SUMMARY_PLUGINS = ("scalar", "image", "tensor", "histogram")
LINEAGE_PLUGINS = ("train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data")
LANDSCAPE = "LANDSCAPE"
_LATER = "_later"  # pool key of add_later() builders (not a plugin)
_CHECKED_MAX = 4096  # (plugin, tag, shape, dtype) kinds of owned arrays known to pass
#: pending TensorBoard histograms that are views of a framework's memory are
#: written once this many bytes pile up (JAX on the CPU: 12 000 page faults
#: per 2 000-step run of the bench's MLP when held to 8 MiB, ~300 so)
_BORROWED_MAX = 1 << 20

def _kind_key(plugin: str, tag: str, value: Any) -> tuple[Any, ...] | None:
    """What an owned value's checks depend on (``SummaryRecord._checked``):
    its plugin, tag, shape and dtype; for a Python float (the loss torch's
    collector reads at the step) ``()`` and ``float``; None for others."""
    if isinstance(value, (np.ndarray, np.generic)):
        return (plugin, tag, value.shape, value.dtype)
    if type(value) is float:
        return (plugin, tag, (), float)
    return None


_ALL_PLUGINS = (*SUMMARY_PLUGINS, *LINEAGE_PLUGINS, "graph", LANDSCAPE)
_SUMMARY_OP_NAME = re.compile(r"(.+)\[:(.+)\]")


class TagNameError(TypeError, ValueError):
    """A tag name that is not a non-empty str.  MindSpore documents TypeError
    and raises ValueError: this is both."""


def _check_tag(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TagNameError(f"{name!r} is not a valid tag name: name must be a non-empty str")
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise TagNameError(f"{name!r} is not a valid tag name: it holds a lone surrogate "
                               f"(not valid Unicode text)") from None
    return name


def _pool_bytes(pool: Mapping[str, list[tuple[str, Any]]]) -> int:
    """Memory of a recorded step's values (arrays by size; others ~nothing)."""
    total = 0
    for plugin, entries in pool.items():
        if plugin == _LATER:
            total += sum(e[1] for e in entries)
            continue
        for _, v in entries:
            if isinstance(v, Deferred):  # a framework tensor's private copy
                v = v.ref
            n = getattr(v, "nbytes", 64)
            total += n if isinstance(n, int) else 64
    return total


def _export_name(tag: str, step: int) -> str:
    """The .npy file name of a tag's tensor at a step: the tag percent-quoted
    (no '/', NUL or other byte can reach the path), long tags cut and made
    unique with a hash, so the name fits any file system (<= 255 bytes)."""
    name = urllib.parse.quote(tag, safe="")
    if len(name) > 180:
        digest = hashlib.sha256(tag.encode("utf-8")).hexdigest()[:16]
        name = f"{name[:160]}~{digest}"
    return f"{name}_{step}.npy"


def _real_subdir(base: str, *parts: str) -> str:
    """``base/parts...``, made where missing; a component that is a symlink
    or not a directory raises OSError (nothing is written through it)."""
    path = base
    for part in parts:
        path = os.path.join(path, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, "not a directory (or a symlink): refusing to export "
                          "there", path)
    return path


def _summary_value(plugin: str, value: Any, copy: bool = True) -> Any:
    """The value of a summary plugin, checked as MindSpore checks it
    (ValueError for a wrong size or rank, TypeError for a wrong type): a
    numpy copy, or a Deferred copy of a framework tensor (read later, on the
    background thread, so the caller never waits for a device)."""
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        raise TypeError(f"the value of a {plugin!r} summary must be an array, tensor or number, "
                        f"got {type(value).__name__}")
    if plugin == "tensor":  # before any copy
        _check_tensor_size(math.prod(getattr(value, "shape", ()) or (1,)))
    if type(value) is np.ndarray and not copy:  # the caller's own copy (a collector's)
        snap, shape = value, value.shape
    else:
        try:
            snap, shape = snapshot_array(value, "value", copy)
        except TypeError:
            raise
        except Exception as exc:
            raise TypeError(f"the value of a {plugin!r} summary must be an array, tensor or "
                            f"number: {exc}") from exc
    if isinstance(snap, np.ndarray) and snap.dtype.kind not in "biuf":
        raise TypeError(f"the value of a {plugin!r} summary must be numeric, got dtype {snap.dtype}")
    size = math.prod(shape)
    if plugin == "scalar":
        if size != 1:
            raise ValueError(f"a scalar summary takes one value, got shape {shape}")
    elif plugin == "image":
        if len(shape) != 4:
            raise ValueError(f"an image summary takes a 4-D NCHW array, got shape {shape}")
        if shape[1] not in (1, 3) or 0 in shape:
            raise ValueError(f"an image summary takes NCHW with 1 or 3 channels and no empty "
                             f"dimension, got shape {shape}")
    elif len(shape) == 0:  # tensor, histogram
        raise ValueError(f"a {plugin} summary takes an array with at least one dimension, "
                         f"got a 0-d value")
    elif plugin == "tensor":
        _check_tensor_size(size)
    return snap


def _check_tensor_size(size: int) -> None:
    if size * 4 > MAX_PAYLOAD - 4096:  # float32 values for MindInsight
        raise ValueError(f"a tensor summary of {size} values would be over 2 GiB - 1 encoded "
                         f"(protobuf's message limit); nothing was recorded")


def _resolve(plugin: str, snap: Any) -> np.ndarray:
    """The numpy value of a checked summary value (background thread)."""
    if type(snap) is np.ndarray and snap.dtype.kind in "iuf" and plugin != "scalar":
        return snap  # numbers on the host already (a collector's copies): as they are
    arr = resolve_array(snap)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"a {plugin} summary must be numeric, got dtype {arr.dtype}")
    if plugin == "scalar":
        return arr.reshape(())
    if plugin == "histogram" and arr.dtype.kind == "b":
        return arr.astype(np.uint8)
    return arr


def _graph_of(network: Any) -> Any:
    """A graph value for ``network``, or None: MindSpore Cells through their
    graph proto (graph mode only); graph messages or bytes as they are."""
    if network is None:
        return None
    if isinstance(network, (bytes, bytearray)) or hasattr(network, "SerializeToString"):
        return network
    if hasattr(network, "get_func_graph_proto"):  # a MindSpore Cell (graph mode)
        try:
            return network.get_func_graph_proto()  # ModelProto bytes, or None
        except Exception as exc:  # pragma: no cover - depends on MindSpore's internals
            log.warning("summarylog: no graph from %s: %s", type(network).__name__, exc)
    return None


def _graph_proto(value: Any) -> Any:
    """An anf_ir GraphProto from a graph value: bytes are a serialized
    ModelProto (what MindSpore's graph executor returns, and what MindSpore's
    SummaryRecord takes); messages are a GraphProto or a ModelProto."""
    from .dialects.mindspore import _message
    from .pb import ms

    if isinstance(value, (bytes, bytearray)):
        return ms.ModelProto.FromString(bytes(value)).graph
    if getattr(getattr(value, "DESCRIPTOR", None), "name", "") == "ModelProto":
        return _message(ms.ModelProto, value, "graph").graph
    return _message(ms.GraphProto, value, "graph")


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
        recording, leaving what was written readable).
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
                 rank: int | None = None, max_buffer: int = 128 << 20) -> None:
        log_dir = check_local_dir("log_dir", log_dir)
        check_suffix("file_prefix", file_prefix)
        check_suffix("file_suffix", file_suffix)
        if max_file_size is not None:
            if isinstance(max_file_size, bool) or not isinstance(max_file_size, int):
                raise TypeError(f"max_file_size must be an int or None, "
                                f"got {type(max_file_size).__name__}")
            if max_file_size <= 0:
                raise ValueError(f"max_file_size must be > 0, got {max_file_size}")
        if isinstance(max_buffer, bool) or not isinstance(max_buffer, int):
            raise TypeError(f"max_buffer must be an int, got {type(max_buffer).__name__}")
        if max_buffer < (1 << 20):
            raise ValueError(f"max_buffer must be >= 1 MiB, got {max_buffer}")
        self.max_buffer = max_buffer
        if not isinstance(raise_exception, bool):
            raise TypeError(f"raise_exception must be a bool, got {type(raise_exception).__name__}")
        if format not in ("mindinsight", "tensorboard"):
            raise ValueError(f"format must be 'mindinsight' or 'tensorboard', got {format!r}")
        if on_limit not in ("rotate", "stop"):
            raise ValueError(f"on_limit must be 'rotate' or 'stop', got {on_limit!r}")
        self.export_options = self._check_export_options(export_options)
        self._dir = os.path.realpath(log_dir)
        self.file_prefix = file_prefix
        self.file_suffix = file_suffix
        self.network = network
        self.max_file_size = max_file_size
        self.raise_exception = raise_exception
        self.format = format
        self.on_limit = on_limit
        self.flush_secs = check_flush_secs(flush_secs)
        self.durability = durability
        if rank is None:
            world = os.environ.get("WORLD_SIZE") or os.environ.get("RANK_SIZE")
            rank = detect_rank() if world and world.strip() not in ("", "1") else None
        self.rank = rank
        self._enc = MindSporeEncoder()
        self._mode = "train"
        self._pool: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        self._pool_lock = threading.Lock()
        self._has_graph = False
        self._closed = False
        self._stopped = False  # an I/O error stopped recording (raise_exception=False)
        self._error: BaseException | None = None
        #: callables returning {"TAG[:TYPE]": tensor} of summary operators
        #: since the last call (framework adapters register them)
        self.summary_op_sources: list[Callable[[], Mapping[str, Any]]] = []
        self._tb: Any = None
        # TensorBoard histograms waiting for _write_pending (background thread)
        self._tb_hists: list[tuple[float, int, str, np.ndarray, int]] = []
        self._tb_hist_bytes = 0
        self._tb_hist_borrowed = 0  # bytes of them that are views of another's memory
        self._last_step = 0  # the latest step with summary values (TensorBoard lineage metrics)
        self._files: MindSporeFiles | None = None
        if format == "tensorboard":
            from .writer import Writer

            self._tb = Writer(self._dir, flush_secs=self.flush_secs, durability=durability,
                              max_file_size=max_file_size, strict=raise_exception, rank=rank,
                              max_buffer=max(max_buffer // 2, 1 << 20))
            self._lineage_hparams: dict[str, Any] = {}
            self._lineage_metrics: dict[str, float] = {}
        else:
            self._files = MindSporeFiles(
                self._dir, file_prefix, file_suffix, rank,
                lambda path: RecordWriter(path, flush_secs=self.flush_secs, durability=durability,
                                          strict=raise_exception, max_buffer=max_buffer // 8),
                lambda wall: [self._enc.file_header(wall)], max_file_size, on_limit)
        # The thread wakes every flush_secs (or when asked: flush, close, past
        # _wake_bytes queued), not at every record(): a woken thread takes
        # the GIL, and each time it does, the training thread may wait for it.
        self._q: deque[Any] = deque()
        self._wake = threading.Event()
        self._checked: set[tuple[Any, ...]] = set()  # see _build_later (background thread)
        self._queued_bytes = 0  # of the recorded steps waiting in _q
        self._borrowed_queued = 0  # of those, the ones holding a framework's memory
        self._room_waits = False  # record() waits for room in the queue
        self._pending_records = 0  # recorded steps whose values this thread has not written
        # a lane waits for them (set and cleared by _direct_ok, on the training
        # thread): each recorded step is written at once, scalars included
        self._lane_waits = False
        self._dirty = False  # written since the last flush (background thread)
        # woken early past this much queued: the values stay few (and the
        # buffers they sit in stay warm in the caller's reused memory)
        self._wake_bytes = min(max_buffer // 8, 8 << 20)
        self._room_lock = threading.Lock()  # taken as it is where no one waits (cheaper)
        self._room = threading.Condition(self._room_lock)
        self._thread = threading.Thread(target=self._run, name="summarylog-summary-record",
                                        daemon=True)
        self._thread.start()
        shutdown.register(self)

    @staticmethod
    def _check_export_options(opts: Any) -> dict[str, Any] | None:
        if opts is None:
            return None
        if not isinstance(opts, Mapping):
            raise TypeError(f"export_options must be a dict or None, got {type(opts).__name__}")
        for k, v in opts.items():
            if k != "tensor_format":
                raise ValueError(f"export_options: unknown option {k!r} (only 'tensor_format')")
            if v is not None and v != "npy":
                raise ValueError(f"export_options: tensor_format must be 'npy' or None, got {v!r}")
        return dict(opts)

    # -- the MindSpore API -------------------------------------------------------------
    @property
    def log_dir(self) -> str:
        """The full path of the summary file (as MindSpore), or the directory
        before anything was written (TensorBoard format: the directory)."""
        if self._files is not None:
            return self._files.summary_path()
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
        int | float}``); ``LANDSCAPE`` a LossLandscape.

        Raises ValueError for an unknown plugin and for a value of the wrong
        size or rank, TypeError for a bad name or a value of the wrong type.
        """
        if not isinstance(plugin, str) or plugin not in _ALL_PLUGINS:
            raise ValueError(f"No such plugin of {plugin!r} (plugins: {', '.join(_ALL_PLUGINS)})")
        if plugin in SUMMARY_PLUGINS:
            _check_tag(name)
            item: Any = _summary_value(plugin, value)
        elif plugin in LINEAGE_PLUGINS:
            item = lineage_message(plugin, value)
        elif plugin == "graph":
            if not (isinstance(value, (bytes, bytearray)) or hasattr(value, "SerializeToString")):
                raise TypeError(f"a graph must be a GraphProto or its bytes, "
                                f"got {type(value).__name__}")
            if self._tb is not None:  # TensorBoard: a GraphDef, kept as bytes
                item = (value.SerializeToString() if hasattr(value, "SerializeToString")
                        else bytes(value))
            else:
                item = _graph_proto(value)
        else:
            _check_tag(name)
            from .dialects.mindspore import _message
            from .pb import ms

            item = _message(ms.LossLandscape, value, "landscape")
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
            self._pool[_LATER].append((build, nbytes, on_error, bool(owned)))

    def _build_later(self, step: int, pool: dict[str, list[tuple[str, Any]]],
                     plugin_filter: Callable[[str], bool] | None) -> None:
        """Run the step's add_later() builders into ``pool`` (background thread)."""
        for build, _, on_error, owned in pool.pop(_LATER, []):
            report = on_error or (lambda p, t, e: log.warning(
                "summarylog: dropped the %s %r of step %d: %s", p, t, step, e))
            try:
                values = list(build())
            except Exception as exc:
                report("", "", exc)
                continue
            for plugin, tag, value in values:
                if plugin_filter is not None and not plugin_filter(plugin):
                    continue
                try:
                    # an owned value of a kind checked before (a collector's parameters
                    # and loss, collection after collection) passes as it is
                    key = _kind_key(plugin, tag, value) if owned else None
                    if key is not None and key in self._checked:
                        item = np.asarray(value)  # a number as a 0-d array, as checked
                    else:
                        if plugin not in SUMMARY_PLUGINS:
                            raise ValueError(f"add_later() takes summary plugins only "
                                             f"({', '.join(SUMMARY_PLUGINS)}), got {plugin!r}")
                        _check_tag(tag)
                        item = _summary_value(plugin, value, copy=not owned)
                        if key is not None:
                            if len(self._checked) >= _CHECKED_MAX:
                                self._checked.clear()
                            self._checked.add(key)
                except Exception as exc:
                    report(plugin, tag, exc)
                    continue
                entries = pool.setdefault(plugin, [])
                if entries and any(t == tag for t, _ in entries):  # add_value()'s wins
                    log.warning("summarylog: %r has duplicate values. Only the newest one "
                                "will be recorded.", f"{tag}/{plugin}")
                    continue
                entries.append((tag, item))

    def record(self, step: int, train_network: Any = None,
               plugin_filter: Callable[[str], bool] | None = None) -> bool:
        """Write everything added since the last call as step ``step`` (one
        summary Event; lineage to the lineage file).  Returns False when
        closed or stopped by an error.  ``step`` not an int: TypeError."""
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise TypeError(f"step must be an int, got {type(step).__name__}")
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
        until this thread lets go of it (see :meth:`_run`)."""
        return self._record(step, None, plugin_filter, (build, nbytes, on_error, owned), borrowed)

    # -- a collector's lane (summarylog.collector_lane) ------------------------------
    @property
    def lanes_possible(self) -> bool:
        """Whether :meth:`open_lane` may ever give a lane (TensorBoard files
        that don't rotate or compress, no exports)."""
        return (self._tb is not None and self._tb.max_file_size is None
                and self._tb.compression is None and not self.export_options)

    def open_lane(self, scalar_tag: str | None,
                  entries: list[tuple[str, np.ndarray]]) -> Lane | None:
        """A :class:`~summarylog.binner.Lane` into this record's TensorBoard
        file for a collector whose collections are the same tensors again
        and again: ``entries`` are ``(histogram tag, array viewing the
        tensor's memory)``, ``scalar_tag`` the loss's (None: none).  Each
        collection is then copied and queued in one native call on the
        training thread, and binned and written by the native binner: this
        record's thread does nothing for it.  None when collections can't go
        that way (yet): another dialect, rotation, exports, no file yet,
        values the histogram plugin refuses (0-d) or the binner can't take."""
        if not self.lanes_possible or self._closed or self._stopped:
            return None
        if any(arr.ndim == 0 or arr.size == 0 or arr.dtype not in BINNABLE
               for _, arr in entries):
            return None
        for tag, _ in entries:
            _check_tag(tag)
        return self._tb.pipeline.open_lane(scalar_tag, entries)

    def retire_lane(self, lane: Lane) -> None:
        """A lane its collector no longer uses (its tensors moved)."""
        if self._tb is not None:
            self._tb.pipeline.histograms.retire(lane)

    def lane_ready(self) -> bool:
        """Whether a collection may go through a lane now: recording, and no
        recorded step still waiting for this record's thread (the lane's
        events would overtake its: file order is step order).  Such steps
        are then written at once, so that the lane's next collection may go."""
        tb = self._tb
        if self._pending_records or not tb.pipeline.idle():
            self._lane_waits = True
            self._wake.set()
            return False
        self._lane_waits = False
        return not (self._pool or self._mode != "train" or self._closed or self._stopped
                    or self._error is not None)

    def took_lane(self, step: int) -> None:
        """A lane took a collection at ``step`` (lineage metrics' step)."""
        if step > self._last_step:
            self._last_step = step

    @property
    def mode(self) -> str:
        """``"train"`` or ``"eval"`` (see :meth:`set_mode`)."""
        return self._mode

    def _record(self, step: int, train_network: Any, plugin_filter: Callable[[str], bool] | None,
                later: tuple[Any, ...] | None, borrowed: bool = False) -> bool:
        if self._error is not None:
            self._raise_pending()
        if self._closed:
            log.error("summarylog: the SummaryRecord for %s is closed.", self._dir)
            return False
        if self._stopped:
            return False
        if not self._has_graph and (self.network is not None or train_network is not None):
            graph = _graph_of(self.network) or _graph_of(train_network)
            if graph is not None:
                self.add_value("graph", "graph", graph)
                self._has_graph = True
        if self._mode == "train":
            for source in self.summary_op_sources:
                ops = source()
                if ops:
                    self._add_summary_ops(ops)
        n = None
        if not self._pool and later is not None:
            # a collection and nothing else (the common case): no filtering, and
            # self._pool stays as it is (a value another thread adds meanwhile
            # goes with the next record, as if added just after this one)
            pool, n = {_LATER: [later]}, later[1]
        else:
            with self._pool_lock:
                pool = self._pool
                if pool:
                    self._pool = defaultdict(list)
                elif later is not None:  # emptied by another thread's record() meanwhile
                    pool = defaultdict(list)
                if later is not None:
                    pool[_LATER].append(later)
        if n is None:
            if plugin_filter is not None:
                pool = defaultdict(list, {p: v for p, v in pool.items()
                                          if p == _LATER or plugin_filter(p)})
            if not any(pool.values()):
                return True
            n = _pool_bytes(pool)
        with self._room_lock:  # the disk is behind: wait for room (one step always fits)
            while (self._queued_bytes and self._queued_bytes + n > self.max_buffer // 2
                   and self._thread.is_alive()):
                self._room_waits = True
                self._wake.set()
                self._room.wait(0.5)
            self._room_waits = False
            self._queued_bytes += n
            self._pending_records += 1
            # (a lane waiting for the steps before it: this one is written at once)
            wake = self._queued_bytes > self._wake_bytes or self._lane_waits
            if borrowed:
                self._borrowed_queued += 1
                wake = wake or self._borrowed_queued > 1
        self._q.append(("record", step, time.time(), pool, n, plugin_filter, borrowed))
        if wake:
            self._wake.set()
        return True

    def _add_summary_ops(self, ops: Mapping[Any, Any]) -> None:
        """The values of summary operators ('TAG[:TYPE]' names) taken at a record."""
        for full, tensor in ops.items():
            m = _SUMMARY_OP_NAME.match(full) if isinstance(full, str) else None
            if m is None:
                log.warning("summarylog: the name %r is invalid, expected 'TAG[:TYPE]'.", full)
                continue
            self.add_value(m.group(2).lower(), m.group(1), tensor)

    def flush(self) -> None:
        """Return when everything recorded so far reached the OS."""
        if self._closed:
            log.error("summarylog: the SummaryRecord for %s is closed and can not flush.",
                      self._dir)
            return
        done = threading.Event()
        self._q.append(("flush", done))
        self._wake.set()
        done.wait()
        self._raise_pending()

    def flush_soon(self) -> None:
        """Have everything recorded so far reach the OS, without waiting (the
        background thread flushes once it has written it)."""
        if not self._closed:
            self._q.append(("flush", threading.Event()))
            self._wake.set()

    def close(self) -> None:
        """Write what is pending and close the files.  Idempotent."""
        if not self._closed:
            self._closed = True
            self._q.append(("close",))
            self._wake.set()
        elif not self._thread.is_alive():
            return
        # a close() cut short (a signal during the join) is finished by the next one
        if self._thread is not threading.current_thread():
            self._thread.join()
        shutdown.unregister(self)
        self._raise_pending()

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
        return list(self._files.paths) if self._files is not None else []

    # -- the background thread -------------------------------------------------------
    def _raise_pending(self) -> None:
        if self._error is not None and self.raise_exception:
            err, self._error = self._error, None
            raise err

    def _fail(self, exc: BaseException) -> None:
        if self.raise_exception:
            self._error = exc
        elif not self._stopped:
            log.error("summarylog: recording to %s stops: %s", self._dir, exc)
        self._stopped = True

    def _run(self) -> None:
        # what was recorded reaches the OS within about flush_secs, however
        # often the thread is woken in between
        next_flush = time.monotonic() + self.flush_secs
        while True:
            self._wake.wait(max(0.0, next_flush - time.monotonic()))
            self._wake.clear()
            # what was queued when it woke, not what comes in meanwhile: chasing
            # the newest steps, it would wait on each one's device values (JAX
            # spins a while in such a read) and take the GIL at every step.
            # The newest of them too, unless it holds a framework's memory: such
            # a step was often just dispatched (its values still being computed),
            # so it waits for the next wake, which the step after it brings; the
            # framework gets its memory back within about two collections
            # (woken at every fourth collection instead, a jitted loop ran 0.4 % slower).
            # Past half of flush_secs it is taken anyway (the loop paused).
            n = len(self._q)
            if n and not self._room_waits:  # (a full queue: everything, now)
                newest = self._q[n - 1]
                if (newest[0] == "record" and newest[6]
                        and time.time() - newest[2] < self.flush_secs / 2):
                    n -= 1
            records = 0
            for _ in range(n):
                item = self._q.popleft()
                records += item[0] == "record"
                if self._handle(item):
                    return
            self._write_pending()
            if self._lane_waits and self._tb is not None:  # their scalars too, now
                try:
                    self._tb.pipeline.drain()
                except Exception as exc:
                    self._fail(exc)
            if records:  # their values are written: lanes may go ahead (_direct_ok)
                with self._room:
                    self._pending_records -= records
            now = time.monotonic()
            if now >= next_flush:
                next_flush = now + self.flush_secs
                if self._dirty and not self._stopped:
                    try:
                        self._flush_files()
                    except Exception as exc:
                        self._fail(exc)

    def _handle(self, item: tuple[Any, ...]) -> bool:
        """Do one queued request; True when it was the close."""
        kind = item[0]
        try:
            if kind == "record":
                try:
                    if not self._stopped:
                        self._write(item[1], item[2], item[3], item[5])
                        self._dirty = True
                finally:
                    with self._room:
                        self._queued_bytes -= item[4]
                        self._borrowed_queued -= item[6]
                        self._room.notify_all()
            elif kind == "flush":
                self._write_pending()
                if not self._stopped:
                    self._flush_files()
                item[1].set()
            elif kind == "close":
                self._write_pending()
                self._close_files()
                return True
        except Exception as exc:
            self._fail(exc)
            if kind == "flush":
                item[1].set()
            elif kind == "close":
                return True
        return False

    def _write_pending(self) -> None:
        """Write the histograms of the steps taken since the last call, all
        in one native call (TensorBoard format)."""
        hists, self._tb_hists = self._tb_hists, []
        self._tb_hist_bytes = self._tb_hist_borrowed = 0
        if hists and not self._stopped:
            try:
                self._tb.pipeline.write_histograms(hists)
            except Exception as exc:
                self._fail(exc)

    def _flush_files(self) -> None:
        self._dirty = False
        if self._tb is not None:
            self._tb.flush()
        elif self._files is not None:
            self._files.flush()

    def _close_files(self) -> None:
        if self._tb is not None:
            self._tb_lineage_flush()
            self._tb.close()
        elif self._files is not None:
            self._files.close()

    def _write(self, step: int, wall: float, pool: dict[str, list[tuple[str, Any]]],
               plugin_filter: Callable[[str], bool] | None = None) -> None:
        if _LATER in pool:
            if (len(pool) == 1 and len(pool[_LATER]) == 1 and self._tb is not None
                    and not self.export_options
                    and self._write_checked(step, wall, pool, plugin_filter)):
                return
            self._build_later(step, pool, plugin_filter)
        if any(pool.get(p) for p in (*SUMMARY_PLUGINS, LANDSCAPE)):
            self._last_step = max(self._last_step, step)
        resolved: dict[str, list[tuple[str, Any]]] = dict(pool)
        for plugin in SUMMARY_PLUGINS:
            out = []
            for tag, snap in pool.get(plugin, []):
                try:
                    out.append((tag, _resolve(plugin, snap)))
                except Exception as exc:  # a tensor that cannot be read: this value only
                    log.warning("summarylog: dropped the %s %r of step %d: %s", plugin, tag,
                                step, exc)
            resolved[plugin] = out
        pool = resolved
        if self.export_options and self.export_options.get("tensor_format") == "npy":
            self._export_tensors(step, pool.get("tensor", []))
        if self._tb is not None:
            self._write_tensorboard(step, wall, pool)
            return
        files, enc = self._files, self._enc
        assert files is not None
        for _, graph in pool.get("graph", []):
            files.write(enc.graph(wall, graph, step))
        values = [(plugin, tag, arr) for plugin in (*SUMMARY_PLUGINS, LANDSCAPE)
                  for tag, arr in pool.get(plugin, [])]
        if values:
            files.write(enc.summary(wall, step, values))
        for plugin in LINEAGE_PLUGINS:
            for _, message in pool.get(plugin, []):
                files.write(enc.lineage(wall, plugin, message), lineage=True)

    def _write_checked(self, step: int, wall: float, pool: dict[str, list[tuple[str, Any]]],
                       plugin_filter: Callable[[str], bool] | None) -> bool:
        """A lone collection (TensorBoard format) of scalars and histograms
        that are the builder's own and of kinds checked before (a
        collector's, collection after collection), straight to the writer:
        the few bytecodes this thread holds the GIL for per step.  False
        when any value needs the general path; ``pool`` then holds the
        values built, for it."""
        build, nbytes, on_error, owned = pool[_LATER][0]
        if not owned:
            return False
        try:
            values = list(build())
        except Exception:
            return False  # the general path builds again and reports it
        checked = self._checked
        for plugin, tag, value in values:
            # as _resolve would give them: floats, and host arrays of numbers
            kind = type(value)
            if (plugin not in ("scalar", "histogram")
                    or not (kind is float or (kind is np.ndarray and value.dtype.kind in "iuf"))
                    or _kind_key(plugin, tag, value) not in checked):
                pool[_LATER] = [(lambda: values, nbytes, on_error, owned)]
                return False
        w = self._tb
        written = False
        for plugin, tag, value in values:
            if plugin_filter is not None and not plugin_filter(plugin):
                continue
            written = True
            if plugin == "scalar":  # a float, or a one-value array of any shape
                w.add_scalar(tag, value if type(value) is float else float(value.reshape(())),
                             step, walltime=wall)
            else:
                self._hold_histogram(wall, step, tag, value)
        if written:
            self._last_step = max(self._last_step, step)
            self._write_held_past_limits()
        return True

    def _hold_histogram(self, wall: float, step: int, tag: str, arr: np.ndarray) -> None:
        """Keep a TensorBoard histogram for _write_pending: the histograms
        of all the steps this thread takes at once go out in one native call
        (bins=0: MindSpore's bucket count rule, from the finite values)."""
        self._tb_hists.append((wall, step, tag, arr, 0))
        self._tb_hist_bytes += arr.nbytes
        if not arr.flags.owndata:
            self._tb_hist_borrowed += arr.nbytes

    def _write_held_past_limits(self) -> None:
        """Write the held histograms now when they pile up, or hold views of
        a framework's memory (JAX arrays on the CPU): held, those keep its
        allocator from reusing it (fresh pages, a page fault each, for its
        next outputs)."""
        if (self._tb_hist_bytes >= self._wake_bytes
                or self._tb_hist_borrowed >= _BORROWED_MAX):
            self._write_pending()

    def _export_tensors(self, step: int, tensors: list[tuple[str, Any]]) -> None:
        """Each tensor to ``export_<sec>/tensor/<tag>_<step>.npy``, read-only as
        MindSpore leaves it; a step recorded again replaces its files (the
        newest value wins).  Written to a fresh temporary name and renamed,
        so a planted symlink is replaced, never followed."""
        if not tensors:
            return
        d = _real_subdir(self._dir, f"export_{self._files.names.sec if self._files else 0}",
                         "tensor")
        for tag, arr in tensors:
            fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".npy.tmp", dir=d)
            try:
                with os.fdopen(fd, "wb") as f:
                    np.save(f, arr)
                    os.fchmod(f.fileno(), 0o400)
                os.replace(tmp, os.path.join(d, _export_name(tag, step)))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    # -- TensorBoard format ---------------------------------------------------------------
    def _write_tensorboard(self, step: int, wall: float,
                           pool: Mapping[str, list[tuple[str, Any]]]) -> None:
        w = self._tb
        for tag, arr in pool.get("scalar", []):
            w.add_scalar(tag, float(arr), step, walltime=wall)
        for tag, arr in pool.get("image", []):
            w.add_image(tag, image_grid(arr), step, walltime=wall, dataformats="HWC")
        for tag, arr in pool.get("tensor", []):
            w.add_tensor(tag, arr, step, walltime=wall)
        for tag, arr in pool.get("histogram", []):  # the arrays are ours alone
            self._hold_histogram(wall, step, tag, arr)
        self._write_held_past_limits()
        for tag, message in pool.get(LANDSCAPE, []):
            from .dialects.mindspore import tensor_to_numpy

            for axis in ("x", "y", "z"):
                t = getattr(message.landscape, axis)
                if len(t.dims):
                    w.add_tensor(f"{tag}/landscape/{axis}", tensor_to_numpy(t), step, walltime=wall)
        for _, graph_def in pool.get("graph", []):
            w.add_graph(graph_def, walltime=wall)
        for plugin in LINEAGE_PLUGINS:
            for _, message in pool.get(plugin, []):
                fields = json_format.MessageToDict(message, preserving_proto_field_name=True)
                if plugin == "train_lineage":
                    for group in fields.values():
                        if isinstance(group, dict):
                            self._lineage_hparams.update(
                                {k: v for k, v in group.items() if not isinstance(v, (dict, list))})
                elif plugin == "eval_lineage":
                    import json

                    try:
                        metrics = json.loads(fields.get("metric") or "{}")
                    except ValueError:
                        metrics = {}
                    self._lineage_metrics.update(
                        {f"eval/{k}": float(v) for k, v in metrics.items()
                         if isinstance(v, (int, float)) and not isinstance(v, bool)
                         and math.isfinite(float(v))})
                elif plugin == "custom_lineage_data":
                    self._lineage_hparams.update(user_info_dict(fields))
                else:  # dataset graph: its source paths as hparams
                    pass

    def _tb_lineage_flush(self) -> None:
        if self._tb is None:
            return
        hp = {k: (v if isinstance(v, (bool, int, float, str)) else str(v))
              for k, v in self._lineage_hparams.items()}
        if hp:
            self._tb.add_hparams(hp, self._lineage_metrics, step=self._last_step)
        elif self._lineage_metrics:  # eval only: the metrics as the run's scalars
            self._tb.log(self._lineage_metrics, step=self._last_step)
