"""MindSpore's SummaryCollector for PyTorch loops (summarylog.collector policy).

    with SummaryCollector("runs/a", model=model, optimizer=opt, loss_fn=loss_fn,
                          train_loader=loader, epochs=3) as sc:
        for epoch in range(3):
            for x, y in loader:
                out = model(x); loss = loss_fn(out, y)
                ...
                sc.step(loss=loss, inputs=x, outputs=out)
            sc.epoch_end()
        sc.evaluate_end({"accuracy": acc}, eval_loader=val_loader)

Nothing is read from the device on the training thread: the loss, inputs
and parameters are cloned on their device and read by summarylog's
background thread.  ``summary(tag, tensor, kind)`` inside ``forward()``
plays the role of MindSpore's summary operators.  Under torch.distributed,
the rank goes into file names and only rank 0 writes by default.
"""

from __future__ import annotations

import logging
import mmap
import os
import sys
import threading
import time
import warnings
from collections import deque
from typing import Any, Mapping

import numpy as np
import torch

from .._native import ffi, lib
from ..collector import LOSS_TAG, CollectionPolicy, CollectorCore
from ..summary_record import mark_private
from ..values import _torch_detached

__all__ = ["SummaryCollector", "summary"]

log = logging.getLogger("summarylog")

_KINDS = {"scalar": "Scalar", "image": "Image", "tensor": "Tensor", "histogram": "Histogram"}
_active: list["SummaryCollector"] = []
_active_lock = threading.Lock()


def summary(tag: str, tensor: torch.Tensor, kind: str = "scalar") -> None:
    """Record ``tensor`` under ``tag`` from inside ``forward()`` (kind
    ``scalar``, ``image`` (NCHW), ``tensor`` or ``histogram``), like
    MindSpore's summary operators: it lands in the active collector's next
    collection (tensors only at its tensor steps).  Costs one check when no
    collector is active; skipped while tracing and under ``torch.no_grad()``
    (evaluation: MindSpore does not record summary operators in eval mode)."""
    if not _active or not torch.is_grad_enabled():  # eval (no_grad): not recorded
        return
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if not isinstance(tag, str) or not tag:
        raise TypeError(f"tag must be a non-empty str, got {tag!r}")
    if torch.jit.is_tracing() or torch.jit.is_scripting():
        return
    if hasattr(torch, "compiler") and torch.compiler.is_compiling():
        return
    collector = _active[-1]
    collector._ops[f"{tag}[:{_KINDS[kind]}]"] = tensor.detach()


def _world() -> tuple[int | None, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, 1


def _lr(optimizer: Any, scheduler: Any = None) -> float | None:
    if scheduler is not None and hasattr(scheduler, "get_last_lr"):
        try:
            return float(scheduler.get_last_lr()[0])
        except Exception:  # pragma: no cover - custom schedulers
            pass
    if optimizer is not None and getattr(optimizer, "param_groups", None):
        lr = optimizer.param_groups[0].get("lr")
        if isinstance(lr, torch.Tensor):
            lr = lr.item()
        return float(lr) if lr is not None else None
    return None


def _dataset_path(ds: Any) -> str | None:
    for attr in ("root", "path", "data_dir", "dataset_dir", "filename"):
        v = getattr(ds, attr, None)
        if isinstance(v, (str, os.PathLike)):
            return os.path.realpath(os.fspath(v))
    inner = getattr(ds, "dataset", None)  # Subset and friends
    return _dataset_path(inner) if inner is not None and inner is not ds else None


def _dataset_graph(loader: Any) -> dict[str, Any]:
    """A DatasetGraph (dict form) of a DataLoader: loader, dataset, sampler,
    transforms."""
    ds = loader.dataset
    node: dict[str, Any] = {"operations": [{"operationParam": {"mapStr": {
        "op_type": type(loader).__name__}, "mapInt": {
        "batch_size": int(loader.batch_size or 0), "num_workers": int(loader.num_workers)},
        "mapBool": {"drop_last": bool(loader.drop_last),
                    "pin_memory": bool(loader.pin_memory)}}}]}
    sampler = getattr(loader, "sampler", None)
    if sampler is not None:
        node["sampler"] = {"operationParam": {"mapStr": {"sampler": type(sampler).__name__}}}
    child: dict[str, Any] = {"parameter": {"mapStr": {"op_type": type(ds).__name__}}}
    path = _dataset_path(ds)
    if path:
        child["parameter"]["mapStr"]["dataset_dir"] = path
    try:
        child["parameter"]["mapInt"] = {"num_samples": int(len(ds))}
    except TypeError:
        pass
    transforms = [type(t).__name__ for t in _transforms(ds)]
    if transforms:
        child["parameter"]["mapStrList"] = {"transforms": {"strValue": transforms}}
    node["children"] = [child]
    return node


def _transforms(ds: Any) -> list[Any]:
    t = getattr(ds, "transform", None) or getattr(ds, "transforms", None)
    if t is None:
        return []
    inner = getattr(t, "transforms", None)
    return list(inner) if isinstance(inner, (list, tuple)) else [t]


def _tb_graph(model: torch.nn.Module, example: Any) -> Any:
    """A TensorBoard GraphDef of the traced model (torch's own builder)."""
    from torch.utils.tensorboard._pytorch_graph import graph

    graph_def, _ = graph(model, example if isinstance(example, tuple) else (example,))
    return graph_def


def _ms_graph(model: torch.nn.Module, example: Any) -> Any:
    """A MindSpore GraphProto of the traced model: one node per traced
    operation (op type, scope, inputs), parameters as graph inputs."""
    from ..pb import ms

    args = example if isinstance(example, tuple) else (example,)
    with torch.no_grad():
        traced = torch.jit.trace(model, args, check_trace=False)
    g = traced.inlined_graph
    out = ms.GraphProto(name=type(model).__name__)
    names: dict[Any, str] = {}
    for i, value in enumerate(g.inputs()):
        if i == 0:  # self
            continue
        name = value.debugName()
        names[value] = name
        p = out.parameters.add(name=name)
        p.type.data_type = ms.DataType.values_by_name["DT_TENSOR"].number
    for k, node in enumerate(g.nodes()):
        kind = node.kind()
        if kind in ("prim::Constant", "prim::GetAttr", "prim::ListConstruct",
                    "prim::TupleConstruct"):
            for o in node.outputs():
                names[o] = names.get(o) or o.debugName()
            continue
        n = out.node.add(name=str(k + 1), op_type=kind.split("::")[-1])
        scope = node.scopeName() or "Default"
        n.scope = scope.replace("__module.", "").replace(".", "/") or "Default"
        n.full_name = f"{n.scope}/{n.op_type}-op{k + 1}"
        for inp in node.inputs():
            src = names.get(inp)
            if src is not None:
                n.input.add(name=src, type=0)
        for o in node.outputs():
            names[o] = n.name
    for o in g.outputs():
        if o in names:
            out.outputs.add(name=names[o])
    return out


def _unwrap(model: Any) -> Any:
    """The network inside DistributedDataParallel / DataParallel wrappers."""
    while isinstance(model, (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)):
        model = model.module
    return model


class _CopyPool:
    """Private copies of a step's collected tensors, in buffers reused from
    one collection to the next.

    A contiguous CPU tensor is copied into a numpy array, all of a step's in
    one native call (csrc/copy.c: the GIL released once, streaming stores
    that leave the training thread's cache to its own data), and
    summarylog's thread gets the numpy array: it never calls into torch,
    whose calls (``.numpy()`` among them) release the GIL, and every time
    that thread takes the GIL back the training thread may wait for it.
    Reused buffers also spare the training thread the page faults of fresh
    memory.  A buffer is reused once summarylog's thread holds no reference
    to it; past ``max_bytes`` of buffers, and for other devices and dtypes,
    a plain clone (queued on the device: no sync).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._bytes = 0
        self._bufs: dict[tuple[Any, ...], deque[tuple[np.ndarray, int]]] = {}
        self._jobs = ffi.new("uint64_t[]", 48)  # slg_copy_many's (dst, src, bytes) words
        # a Parameter's checks, made once:
        # id -> (parameter, data_ptr, shape, dtype, buffer key)
        self._params: dict[int, tuple[Any, ...]] = {}
        self._run: _ParamRun | None = None
        #: bytes of copies summarylog's thread may hold at once (it takes them
        #: every that many bytes): how much memory a run lays out ahead
        self.in_flight = 8 << 20

    def copy_all(self, values: list[Any]) -> tuple[list[Any], int]:
        """Private copies of ``values`` (tensors; anything else as it is),
        and their bytes (the pool's copies and the clones)."""
        run = self._run
        if run is not None:  # the common case: the histogrammed parameters, as last time
            head = len(values) - len(run.params)
            views = run.take(values, head) if head >= 0 else None
            if views is not None:
                first = values[0] if head == 1 else None
                loss = _read_scalar(first) if type(first) is torch.Tensor else None
                if loss is not None:  # the usual head: the loss
                    out, total = [loss], 0
                else:
                    out, total = self._copy_each(values[:head]) if head else ([], 0)
                lib.slg_copy_many(views[1], len(run.params))
                out += views[0]
                return out, total + run.nbytes
        out, total = self._copy_each(values)
        self._run = _ParamRun.of(values, out, self, run)
        return out, total

    def _copy_each(self, values: list[Any]) -> tuple[list[Any], int]:
        out: list[Any] = []
        total = 0
        jobs = self._jobs
        if len(jobs) < 3 * len(values):
            jobs = self._jobs = ffi.new("uint64_t[]", 3 * len(values))
        n = 0
        for value in values:
            if type(value) is torch.nn.Parameter:
                ptr = value.data_ptr()
                known = self._params.get(id(value))
                # p.data = ... may swap in other memory, or the same memory seen
                # another way (a transpose, another dtype): checked again then (a
                # contiguous tensor's strides follow from its shape)
                if (known is None or known[1] != ptr or known[2] != value.shape
                        or known[3] is not value.dtype or not value.is_contiguous()
                        or not value.is_cpu):
                    known = self._params[id(value)] = (value, ptr, value.shape, value.dtype,
                                                       self._key(value.detach()))
                key = known[4]
            elif isinstance(value, torch.Tensor):
                number = _read_scalar(value)
                if number is not None:
                    out.append(number)
                    continue
                value = _torch_detached(value)
                key = self._key(value)
                ptr = value.data_ptr() if key is not None else 0
            else:
                out.append(value)
                continue
            buf = self._buffer(key) if key is not None else None
            if buf is None:
                clone = _torch_detached(value).clone()
                out.append(clone)
                total += clone.numel() * clone.element_size()  # held as well (device memory too)
                continue
            arr, jobs[n] = buf
            jobs[n + 1] = ptr
            jobs[n + 2] = nbytes = arr.nbytes
            out.append(arr)
            total += nbytes
            n += 3
        if n:
            lib.slg_copy_many(jobs, n // 3)
        return out, total

    def _drop_buffers(self, params: list[Any]) -> None:
        """Let go of the per-tensor buffers of ``params``' buffer keys (a run
        copies them now); one still held is freed by whoever holds it."""
        for p in params:
            known = self._params.pop(id(p), None)
            bufs = self._bufs.pop(known[4], None) if known is not None else None
            if bufs:
                self._bytes -= bufs[0][0].nbytes * len(bufs)

    @staticmethod
    def _key(t: torch.Tensor) -> tuple[Any, ...] | None:
        """The buffer key (shape, numpy dtype) of a tensor the pool can copy
        (CPU, contiguous, a numpy dtype, no lazy negation), else None."""
        if (t.device.type == "cpu" and t.dtype in _NUMPY_DTYPES and t.is_contiguous()
                and not t.is_neg()):
            return (tuple(t.shape), _NUMPY_DTYPES[t.dtype])
        return None

    def _buffer(self, key: tuple[Any, ...]) -> tuple[np.ndarray, int] | None:
        bufs = self._bufs.get(key)
        if bufs and sys.getrefcount(bufs[0][0]) == _LIST_REFS:  # the oldest is let go first
            bufs.rotate(-1)
            return bufs[-1]
        shape, dtype = key
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if self._bytes + nbytes > self.max_bytes:
            return None
        arr = np.empty(shape, dtype)
        self._bytes += nbytes
        if bufs is None:
            bufs = self._bufs[key] = deque()
        bufs.append((arr, arr.ctypes.data))
        return bufs[-1]


class _ParamRun:
    """The Parameters a collection ends with (the histogrammed ones), copied
    as one when they are the same as the last time: their layout as
    checked, and sets of buffers (one per collection in flight) with their
    copy jobs written once.

    ``held`` keeps each parameter's memory alive, so an unchanged data_ptr
    is the same memory: the check at a collection is the pointer, shape,
    dtype and contiguity of each.  A set is reused once summarylog's thread
    holds none of its buffers.
    """

    __slots__ = ("params", "layout", "held", "sizes", "sets", "nbytes", "stride", "bytes",
                 "stale", "_pool", "_arena", "_carved")

    def __init__(self, params: list[Any], pool: "_CopyPool") -> None:
        self.params = params
        self.layout = [(p.data_ptr(), p.shape, p.dtype) for p in params]
        self.held = [p.detach() for p in params]
        self.sizes = [p.numel() * p.element_size() for p in params]  # bytes of each
        self.nbytes = sum(self.sizes)  # of one set
        self.stride = sum(map(_aligned, self.sizes))  # of one set in the arena
        self.bytes = 0  # of the memory its sets take, counted in the pool's
        self.sets: deque[tuple[list[np.ndarray], Any]] = deque()
        self.stale = False
        self._pool = pool
        self._arena: np.ndarray | None = None
        self._carved = 0  # bytes of the arena given to sets

    @classmethod
    def of(cls, values: list[Any], copies: list[Any], pool: "_CopyPool",
           last: "_ParamRun | None") -> "_ParamRun | None":
        """The run of the Parameters ``values`` ends with that the pool
        copied (``copies``: what copy_all made of them): ``last`` while it
        is the same parameters and still fits them (this time past the
        cap, say), else a new one; with none, ``last`` unless it is stale
        (it holds the parameters' old memory)."""
        if last is not None and not last.stale:
            n = len(last.params)
            if n <= len(values) and all(a is b for a, b in zip(last.params, values[-n:])):
                return last
        k = 0
        while (k < len(values) and type(values[-1 - k]) is torch.nn.Parameter
               and type(copies[-1 - k]) is np.ndarray):
            k += 1
        if not k:
            if last is not None and last.stale:
                pool._bytes -= last.bytes
                return None
            return last
        params = values[len(values) - k:]
        if last is not None:
            # its sets still held are freed by whoever holds them: until then the
            # pool's memory may pass max_bytes by up to that run's (parameters swapped)
            pool._bytes -= last.bytes
        pool._drop_buffers(params)  # their buffers from the collection before the run
        return cls(params, pool)

    def take(self, values: list[Any], head: int) -> tuple[list[np.ndarray], Any] | None:
        """A free set of buffers and its copy jobs for ``values[head:]``, or
        None: other values, a parameter swapped (``stale``), or no set free
        and no room for another under the pool's cap."""
        i = head
        for p, (ptr, shape, dtype) in zip(self.params, self.layout):
            if values[i] is not p:
                return None
            if (p.data_ptr() != ptr or p.dtype is not dtype or p.shape != shape
                    or not p.is_contiguous()):
                self.stale = True
                return None
            i += 1
        sets = self.sets
        if sets and not _held_elsewhere(sets[0][0]):  # the oldest set is let go first
            sets.rotate(-1)
            return sets[-1]
        bufs = self._new_set()
        if bufs is None:
            return None
        jobs = ffi.new("uint64_t[]", 3 * len(bufs))
        for j, (buf, (ptr, _, _)) in enumerate(zip(bufs, self.layout)):
            jobs[3 * j], jobs[3 * j + 1], jobs[3 * j + 2] = buf.ctypes.data, ptr, buf.nbytes
        sets.append((bufs, jobs))
        return sets[-1]

    def _new_set(self) -> list[np.ndarray] | None:
        """Buffers for one more set: carved from the run's arena, made at the
        second collection for as many sets as summarylog's thread holds
        between two wakes (the pool's ``in_flight`` bytes), past it of their
        own; None past the pool's cap."""
        pool = self._pool
        stride = self.stride
        if self._arena is None and not self.sets and stride:
            count = min(-(-pool.in_flight // stride) + 2,
                        (pool.max_bytes - pool._bytes) // stride)
            if count >= 2:
                self._arena = _hugepage_memory(count * stride)
                pool._bytes += count * stride
                self.bytes += count * stride
        arena = self._arena
        if arena is not None and self._carved + stride <= arena.nbytes:
            bufs = []
            for p, n in zip(self.params, self.sizes):
                bufs.append(arena[self._carved:self._carved + n].view(_NUMPY_DTYPES[p.dtype])
                            .reshape(tuple(p.shape)))
                self._carved += _aligned(n)
            return bufs
        if pool._bytes + self.nbytes > pool.max_bytes:
            return None
        pool._bytes += self.nbytes
        self.bytes += self.nbytes
        return [np.empty(tuple(p.shape), _NUMPY_DTYPES[p.dtype]) for p in self.params]


def _aligned(n: int) -> int:
    """``n`` rounded up to a cache line (64 bytes)."""
    return (n + 63) & ~63


_HUGE_PAGE = 2 << 20


def _hugepage_memory(nbytes: int) -> np.ndarray:
    """``nbytes`` of fresh memory (uint8) the kernel may back with 2 MiB
    pages where transparent huge pages are on (always or madvise): the
    first write takes one page fault per 2 MiB instead of one per 4 KiB
    (about 2 000 fewer per 8 MiB on this kind of VM, at 1.5-2.5 us each)."""
    try:
        mm = mmap.mmap(-1, nbytes + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (AttributeError, OSError, ValueError):  # no anonymous private mmap: plain memory
        plain = np.empty(nbytes, np.uint8)
        mark_private(plain)
        return plain
    whole = np.frombuffer(mm, np.uint8)
    mark_private(whole)  # the .base of the buffers carved from it
    off = -whole.ctypes.data % _HUGE_PAGE
    try:
        mm.madvise(mmap.MADV_HUGEPAGE, off, nbytes)
    except (AttributeError, OSError, ValueError):
        pass  # 4 KiB pages
    return whole[off:off + nbytes]


def _held_elsewhere(bufs: list[np.ndarray]) -> bool:
    """Whether anyone but ``bufs`` holds one of its arrays (summarylog's
    thread, a record in its queue).  Views of them don't count: the pool's
    consumers hold the arrays themselves."""
    for i in range(len(bufs)):
        if sys.getrefcount(bufs[i]) != _LIST_REFS:
            return True
    return False


def _list_refs() -> int:
    """getrefcount of an array only a list holds, counted as _held_elsewhere
    counts it: measured, as what the interpreter counts for the call's
    argument differs between versions (3.14 borrows some references)."""
    bufs = [np.empty(0)]
    for i in range(len(bufs)):
        return sys.getrefcount(bufs[i])
    raise AssertionError("unreachable")


_LIST_REFS = _list_refs()

_NUMPY_DTYPES = {torch.float32: np.float32, torch.float64: np.float64,
                 torch.float16: np.float16, torch.int64: np.int64, torch.int32: np.int32,
                 torch.int16: np.int16, torch.int8: np.int8, torch.uint8: np.uint8,
                 torch.bool: np.bool_}

# 0-d CPU tensors read from memory by copy_all: dtype -> cffi pointer type (parsed once)
_SCALAR_READS = {torch.float32: ffi.typeof("float *"), torch.float64: ffi.typeof("double *")}


def _read_scalar(value: torch.Tensor) -> float | None:
    """A 0-d CPU float tensor's value (the loss), read straight from memory
    now as a Python float (exact for both dtypes; a numpy scalar made here
    cost ~15 us with the caches cold); None for any other tensor."""
    if value.is_cpu and value.dim() == 0 and not value.is_neg():
        ptr_type = _SCALAR_READS.get(value.dtype)
        if ptr_type is not None:
            return ffi.cast(ptr_type, value.data_ptr())[0]
    return None


class _LaneRun:
    """The collections a lane takes: the loss (a 0-d CPU float tensor), if
    any, then the same Parameters, CPU, contiguous, float32/float64, laid
    out as when the lane was opened.  ``held`` keeps each parameter's
    memory alive, so an unchanged data_ptr is the same memory (the lane
    copies from those addresses)."""

    __slots__ = ("lane", "scalar", "params", "layout", "held")

    def __init__(self, lane: Any, scalar: bool, params: list[Any]) -> None:
        self.lane = lane
        self.scalar = scalar
        self.params = params
        self.layout = [(p.data_ptr(), p.shape, p.dtype) for p in params]
        self.held = [p.detach() for p in params]

    @classmethod
    def of(cls, rec: Any, scalar_tag: str | None, specs: list[tuple[str, str]],
           params: list[Any]) -> "_LaneRun | None":
        """A run over the loss (``scalar_tag``) and ``params`` (their
        histogram ``specs``), or None when they are not Parameters a lane
        can copy, or the record opens no lane."""
        entries = []
        if not params or len(specs) != len(params):
            return None
        for (plugin, tag), p in zip(specs, params):
            dtype = _NUMPY_DTYPES.get(p.dtype) if type(p) is torch.nn.Parameter else None
            if (plugin != "histogram" or dtype not in (np.float32, np.float64) or not p.is_cpu
                    or not p.is_contiguous() or p.is_neg()):
                return None
            example = np.empty(tuple(p.shape), dtype)  # (shape and dtype: the record's checks)
            entries.append((tag, p.data_ptr(), p.numel(), example))
        lane = rec._open_lane(scalar_tag, entries)
        return cls(lane, scalar_tag is not None, list(params)) if lane is not None else None

    def takes(self, loss: Any) -> bool:
        """Whether a collection with this loss (None: none) is the run's:
        the parameters laid out as before."""
        if (loss is not None) != self.scalar:
            return False
        for p, (ptr, shape, dtype) in zip(self.params, self.layout):
            if (p.data_ptr() != ptr or p.dtype is not dtype or p.shape != shape
                    or not p.is_contiguous()):
                return False
        return True


class SummaryCollector:
    """Collect loss, input images, parameter histograms, the graph and lineage
    from a PyTorch training loop, with MindSpore's SummaryCollector rules.

    Args:
      summary_dir: the run directory.
      model, optimizer, loss_fn, train_loader: what lineage, histograms, the
        graph and the dataset graph are taken from (all optional).
      epochs: planned epochs (lineage; with ``train_loader``, the number of
        steps that spreads tensor collections).
      scheduler: an LR scheduler (the learning rate in lineage).
      collect_freq, collect_specified_data, keep_default_action,
      custom_lineage_data, collect_tensor_freq, max_file_size,
      export_options: as MindSpore's SummaryCollector.
      format: ``"tensorboard"`` (default) or ``"mindinsight"``.
      collect_gradients: also histogram the gradients of the selected
        parameters (``<name>.grad/auto``).
      rank0_only: under torch.distributed, only rank 0 writes (default True).
    """

    def __init__(self, summary_dir: str | os.PathLike[str], *, model: torch.nn.Module | None = None,
                 optimizer: Any = None, loss_fn: Any = None, train_loader: Any = None,
                 epochs: int | None = None, scheduler: Any = None, collect_freq: int = 10,
                 collect_specified_data: Mapping[str, Any] | None = None,
                 keep_default_action: bool = True,
                 custom_lineage_data: Mapping[str, Any] | None = None,
                 collect_tensor_freq: int | None = None, max_file_size: int | None = None,
                 export_options: Mapping[str, Any] | None = None, format: str = "tensorboard",
                 collect_gradients: bool = False, rank0_only: bool = True) -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if epochs is not None and (isinstance(epochs, bool) or not isinstance(epochs, int)
                                   or epochs <= 0):
            raise ValueError(f"epochs must be a positive int or None, got {epochs!r}")
        self.policy = CollectionPolicy(summary_dir, collect_freq, collect_specified_data,
                                       keep_default_action, custom_lineage_data,
                                       collect_tensor_freq, max_file_size, export_options, format)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.train_loader, self.epochs, self.scheduler = train_loader, epochs, scheduler
        self.collect_gradients = bool(collect_gradients)
        self.rank, self.world_size = _world()
        self.enabled = not (rank0_only and self.rank not in (None, 0))
        self.global_step = 0
        self.epoch = 0
        self._ops: dict[str, torch.Tensor] = {}
        self._selected: dict[str, torch.Tensor] | None = None  # the histogrammed parameters
        self._closed = False
        self.core: CollectorCore | None = None
        if self.enabled:
            # each collected value is copied at the step (the optimizer changes parameters
            # in place), then checked and read on summarylog's thread
            self._copies = _CopyPool(64 << 20)
            self._lane: _LaneRun | None = None
            self._lane_tries = 0  # collections since a failed lane try (0: try now)
            self.core = CollectorCore(self.policy, rank=self.rank if self.world_size > 1 else None,
                                      freeze=self._copies.copy_all, direct=self._direct)
            self.core.record.summary_op_sources.append(self._take_ops)
            self._copies.in_flight = self.core.record._wake_bytes
            total = None
            if epochs is not None and train_loader is not None:
                try:
                    total = epochs * len(train_loader)
                except TypeError:
                    total = None
            self.core.begin(total)
            with _active_lock:
                _active.append(self)

    # -- the loop -----------------------------------------------------------------------
    def _take_ops(self) -> dict[str, torch.Tensor]:
        ops = self._ops
        if ops:
            self._ops = {}
        return ops

    def _params(self) -> dict[str, torch.Tensor]:
        if self.model is None:
            return {}
        if self._selected is None:  # chosen once; the Parameter objects stay the same
            named = dict(_unwrap(self.model).named_parameters())  # no "module." prefix
            self._selected = {n: named[n] for n in self.policy.histogram_names(named)}
        if not self.collect_gradients:
            return self._selected  # the copy pool detaches what it copies
        out = dict(self._selected)
        for n, p in self._selected.items():
            if p.grad is not None:
                out[f"{n}.grad"] = p.grad
        return out

    def _graph(self, inputs: Any) -> Any:
        if self.model is None or inputs is None or not self.policy.enabled("collect_graph"):
            return None
        try:
            model = _unwrap(self.model)  # the wrapper's forward (collectives) can't be traced
            was_training = model.training
            model.eval()
            try:
                with warnings.catch_warnings():  # torch 2.13 deprecates jit.trace (it works)
                    warnings.simplefilter("ignore", DeprecationWarning)
                    warnings.simplefilter("ignore", FutureWarning)
                    warnings.simplefilter("ignore", UserWarning)
                    if self.policy.format == "tensorboard":
                        return _tb_graph(model, inputs)
                    return _ms_graph(model, inputs)
            finally:
                model.train(was_training)
        except Exception as exc:
            log.warning("summarylog: the graph of %s could not be traced: %s",
                        type(self.model).__name__, exc)
            return None

    def step(self, loss: Any = None, inputs: Any = None, outputs: Any = None,
             step: int | None = None) -> None:
        """After an optimizer step: collect when the policy says so.  ``loss``
        (a tensor; or ``outputs`` when loss is None: its first element),
        ``inputs`` (the batch's inputs), ``step`` (default: count calls)."""
        core = self.core
        current = self.global_step + 1 if step is None else step
        if (type(current) is int and core is not None
                and self.global_step < current < core.quiet_until):
            # the common case, a step that collects nothing: no more work than this
            self.global_step = current
            if loss is not None or outputs is not None:
                core.last_loss = loss if loss is not None else outputs
            if self._ops:
                self._ops.clear()
            return
        if self._closed:
            raise ValueError("step() on a closed SummaryCollector")
        self.global_step = self.global_step + 1 if step is None else int(step)
        if self.core is None:
            self._ops.clear()
            return
        if loss is None and outputs is not None:
            loss = outputs
        first = not self.core.collected_steps and self.core._first
        self.core.step(self.global_step, loss=loss, inputs=inputs, params=self._params,
                       graph=self._graph(inputs) if first else None,
                       dataset_graph=(_dataset_graph(self.train_loader)
                                      if first and self.train_loader is not None else None))
        self._ops.clear()

    def _direct(self, current: int, loss: Any) -> bool:
        """A collection of the loss and the histogrammed parameters, through
        the lane: checked (a 0-d CPU loss, the same CPU parameters laid out
        as before), then the loss read, the parameters copied and the
        collection queued in one native call (summarylog.binner.Lane).
        False: the copy pool's path."""
        run = self._lane
        if self._ops or self.collect_gradients:
            return False
        if run is None or not run.takes(loss):
            run = self._lane = self._new_lane(loss, run)
            if run is None:
                return False
        rec = self.core.record  # type: ignore[union-attr]
        if not rec._direct_ok():
            return False
        if loss is not None:
            loss = _read_scalar(loss) if type(loss) is torch.Tensor else None
            if loss is None:  # not a 0-d CPU float tensor
                return False
        if not run.lane.collect(loss, current, time.time()):
            return False
        rec._took_direct(current)
        return True

    def _new_lane(self, loss: Any, old: "_LaneRun | None") -> "_LaneRun | None":
        """A lane for the loss and the parameters the last collection
        histogrammed, if the record opens one (it does once their kinds
        passed its checks, usually from the second collection on); tried at
        each collection until then, every 10th after a failed try of a run
        that had one (``old``: say the parameters moved to a GPU)."""
        core = self.core
        assert core is not None
        if old is not None:  # its ring goes (its counts stay in the writer's stats)
            core.record._tb._retire_lane(old.lane)
        if not core.record._lanes_possible:
            return None
        if self._lane_tries:
            self._lane_tries = (self._lane_tries + 1) % 10
            return None
        params = [self._selected[k] for k in core.hist_keys] if self._selected else []
        run = _LaneRun.of(core.record, LOSS_TAG if loss is not None else None,
                          core.hist_specs, params)
        if run is None and old is not None:
            self._lane_tries = 1
        return run

    def epoch_end(self) -> None:
        """At the end of an epoch: flush (what MindSpore does)."""
        self.epoch += 1
        if self.core is not None:
            self.core.epoch_end()

    def _train_lineage(self) -> dict[str, Any]:
        loader = self.train_loader
        size = None
        if loader is not None:
            try:
                size = len(loader.dataset)
            except TypeError:
                size = None
        return {
            "hyper_parameters": {
                "optimizer": type(self.optimizer).__name__ if self.optimizer is not None else None,
                "learning_rate": _lr(self.optimizer, self.scheduler),
                "loss_function": type(self.loss_fn).__name__ if self.loss_fn is not None else None,
                "epoch": self.epochs or self.epoch or None,
                "parallel_mode": "data_parallel" if self.world_size > 1 else "stand_alone",
                "device_num": self.world_size,
                "batch_size": getattr(loader, "batch_size", None),
            },
            "train_dataset": {"train_dataset_path": _dataset_path(loader.dataset) if loader else None,
                              "train_dataset_size": size},
            "algorithm": {"network": (type(_unwrap(self.model)).__name__
                                       if self.model is not None else None)},
        }

    def evaluate_end(self, metrics: Mapping[str, Any], eval_loader: Any = None) -> None:
        """After evaluation: the eval lineage (metrics, validation dataset)."""
        if self.core is None:
            return
        path = size = None
        if eval_loader is not None:
            path = _dataset_path(eval_loader.dataset)
            try:
                size = len(eval_loader.dataset)
            except TypeError:
                size = None
        self.core.eval_end(metrics, path, size)

    def flush(self) -> None:
        if self.core is not None:
            self.core.flush()

    def close(self) -> None:
        """Write the train lineage and close the files.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        with _active_lock:
            if self in _active:
                _active.remove(self)
        if self.core is not None:
            try:
                if self.global_step:
                    self.core.train_end(self._train_lineage())
            finally:
                self.core.close()

    @property
    def files(self) -> list[str]:
        return self.core.record.files if self.core is not None else []

    def __enter__(self) -> "SummaryCollector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

