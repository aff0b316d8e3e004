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
import os
import warnings
from typing import Any, Mapping

import numpy as np
import torch

from ..collector import CollectionPolicy
from ..landscape.collect import LANDSCAPE_OFF, LandscapeSaver
from .base import CollectorBase, op_key

__all__ = ["SummaryCollector", "summary"]

log = logging.getLogger("summarylog")

def summary(tag: str, tensor: torch.Tensor, kind: str = "scalar") -> None:
    """Record ``tensor`` under ``tag`` from inside ``forward()`` (kind
    ``scalar``, ``image`` (NCHW), ``tensor`` or ``histogram``), like
    MindSpore's summary operators: it lands in the active collector's next
    collection (tensors only at its tensor steps).  Costs one check when no
    collector is active; skipped while tracing and under ``torch.no_grad()``
    (evaluation: MindSpore does not record summary operators in eval mode)."""
    if not SummaryCollector._active or not torch.is_grad_enabled():  # eval: not recorded
        return
    key = op_key(tag, kind)
    if torch.jit.is_tracing() or torch.jit.is_scripting():
        return
    if hasattr(torch, "compiler") and torch.compiler.is_compiling():
        return
    SummaryCollector.feed(key, tensor.detach())


def _len(x: Any) -> int | None:
    """``len(x)``, or None for None or an unsized loader or dataset."""
    try:
        return len(x) if x is not None else None
    except TypeError:
        return None


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
    n = _len(ds)
    if n is not None:
        child["parameter"]["mapInt"] = {"num_samples": n}
    t = getattr(ds, "transform", None) or getattr(ds, "transforms", None)
    inner = getattr(t, "transforms", None)  # a Compose's list
    transforms = list(inner) if isinstance(inner, (list, tuple)) else [t] if t is not None else []
    if transforms:
        child["parameter"]["mapStrList"] = {
            "transforms": {"strValue": [type(x).__name__ for x in transforms]}}
    node["children"] = [child]
    return node


def _ms_graph(model: torch.nn.Module, args: tuple[Any, ...]) -> Any:
    """A MindSpore GraphProto of the traced model: one node per traced
    operation (op type, scope, inputs), parameters as graph inputs."""
    from ..pb import ms

    with torch.no_grad():
        traced = torch.jit.trace(model, args, check_trace=False)
    g = traced.inlined_graph
    out = ms.GraphProto(name=type(model).__name__)
    names: dict[Any, str] = {}
    for value in list(g.inputs())[1:]:  # [0] is self
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


def _snapshot_all(values: list[Any]) -> tuple[list[Any], int]:
    """Private copies of a collection's values and their bytes, taken at the step (the
    optimizer changes parameters in place right after): a 0-d CPU float tensor read now,
    other tensors cloned on their device (no sync; read on summarylog's thread)."""
    out: list[Any] = []
    total = 0
    for value in values:
        if isinstance(value, torch.Tensor):
            number = _cpu_scalar(value)
            if number is not None:
                out.append(number)
                continue
            value = value.detach().clone()
            total += value.numel() * value.element_size()
        out.append(value)
    return out, total


def _cpu_scalar(value: torch.Tensor) -> float | None:
    """A 0-d CPU float tensor's value, read now (no device to wait for)."""
    if value.is_cpu and value.dim() == 0 and value.dtype in (torch.float32, torch.float64):
        return value.item()
    return None


def _state_copy(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's state_dict (parameters and buffers) as detached CPU copies: the one
    copy a landscape point costs the training thread."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _state_bytes(model: torch.nn.Module) -> int:
    return sum(v.numel() * v.element_size() for v in model.state_dict().values())


class _LaneSource:
    """How the collector lane sees a PyTorch collector's parameters: CPU,
    contiguous, float32/float64 Parameters as numpy views of their memory."""

    def __init__(self, collector: "SummaryCollector") -> None:
        self._collector = collector

    def views(self, params: Any) -> list[np.ndarray] | None:
        out = []
        for p in params:
            if (type(p) is not torch.nn.Parameter or p.dtype not in (torch.float32, torch.float64)
                    or not p.is_cpu or not p.is_contiguous() or p.is_neg()):
                return None
            out.append(p.detach().numpy())
        return out

    def still(self, params: Any, views: list[np.ndarray]) -> bool:
        return all(p.is_set_to(v.base) for p, v in zip(params, views))

    def scalar(self, loss: Any) -> float | None:
        return _cpu_scalar(loss) if type(loss) is torch.Tensor else None

    def ready(self) -> bool:
        return not self._collector.has_pending_ops


class SummaryCollector(CollectorBase):
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
      num_process: as MindSpore's (checked, kept as ``policy.num_process``; the
        checkpoints of ``collect_landscape`` are written by one background thread).
      rank0_only: under torch.distributed, only rank 0 writes (default True).

    ``collect_landscape`` (on by default, as in MindSpore) saves the model's
    ``state_dict`` (a CPU copy at the step, written by a background thread) into
    ``{summary_dir}/ckpt_dir`` as ``{Model}_{point}_{unit}.pt`` at its interval points
    and at the end of training, and ``train_metadata.json`` at :meth:`close`; under
    torch.distributed, rank 0 alone saves them.
    """

    _active: list["SummaryCollector"] = []  # open ones, newest last: summary() feeds it

    def __init__(self, summary_dir: str | os.PathLike[str], *, model: torch.nn.Module | None = None,
                 optimizer: Any = None, loss_fn: Any = None, train_loader: Any = None,
                 epochs: int | None = None, scheduler: Any = None, collect_freq: int = 10,
                 collect_specified_data: Mapping[str, Any] | None = None,
                 keep_default_action: bool = True,
                 custom_lineage_data: Mapping[str, Any] | None = None,
                 collect_tensor_freq: int | None = None, max_file_size: int | None = None,
                 export_options: Mapping[str, Any] | None = None, format: str = "tensorboard",
                 collect_gradients: bool = False, rank0_only: bool = True,
                 num_process: int = 32) -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if epochs is not None and (isinstance(epochs, bool) or not isinstance(epochs, int)
                                   or epochs <= 0):
            raise ValueError(f"epochs must be a positive int or None, got {epochs!r}")
        super().__init__(CollectionPolicy(
            summary_dir, collect_freq, collect_specified_data, keep_default_action,
            custom_lineage_data, collect_tensor_freq, max_file_size, export_options, format,
            num_process))
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.train_loader, self.epochs, self.scheduler = train_loader, epochs, scheduler
        self.collect_gradients = bool(collect_gradients)
        dist, self.rank, self.world_size = torch.distributed, None, 1
        if dist.is_available() and dist.is_initialized():
            self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.enabled = not (rank0_only and self.rank not in (None, 0))
        self.global_step = 0
        self.epoch = 0
        self._selected: dict[str, torch.Tensor] | None = None  # the histogrammed parameters
        if self.enabled:
            core = self._open(rank=self.rank if self.world_size > 1 else None,
                              freeze=_snapshot_all, params_chosen=True,
                              lane=None if collect_gradients else _LaneSource(self))
            n = _len(train_loader) if epochs is not None else None
            core.begin(epochs * n if n is not None else None)
            self._register()
        #: collect_landscape's checkpoints (state_dict as .pt); LANDSCAPE_OFF when off
        self.landscape: Any = LANDSCAPE_OFF
        self._first_epoch_steps = 0  # step_per_epoch when the loader has no len()
        # rank 0 alone: the ranks of a data-parallel run hold the same parameters
        if self.enabled and self.rank in (None, 0) and self.policy.landscape is not None:
            if model is None:
                log.warning("summarylog: collect_landscape needs model=: no parameters saved")
            else:
                self.landscape = LandscapeSaver(self.policy.summary_dir, self.policy.landscape,
                                                ".pt")

    # -- the loop -----------------------------------------------------------------------
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
                    warnings.simplefilter("ignore")
                    args = inputs if isinstance(inputs, tuple) else (inputs,)
                    if self.policy.format == "tensorboard":  # SummaryWriter.add_graph's builder
                        from ..torch_graph import graph_def_bytes, trace_nodes
                        return graph_def_bytes(trace_nodes(model, args))
                    return _ms_graph(model, args)
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
            if current >= self.landscape.next_step:  # (an int compare when nothing is due)
                self._landscape_at(current)
            if loss is not None or outputs is not None:
                core.last_loss = loss if loss is not None else outputs
            if self._ops:
                self._ops.clear()
            return
        self._check_open()
        self.global_step = self.global_step + 1 if step is None else int(step)
        if core is not None:
            first = not core.started  # the graphs only go with the first collection
            core.step(self.global_step, loss=outputs if loss is None else loss, inputs=inputs,
                      params=self._params, graph=self._graph(inputs) if first else None,
                      dataset_graph=(_dataset_graph(self.train_loader)
                                     if first and self.train_loader is not None else None))
            if self.global_step >= self.landscape.next_step:
                self._landscape_at(self.global_step)
        self._ops.clear()

    def _network_name(self) -> str:
        return type(_unwrap(self.model)).__name__

    def _landscape_at(self, point: int) -> None:
        model = _unwrap(self.model)
        self.landscape.at(point, self._network_name(), lambda: _state_copy(model),
                          lambda: _state_bytes(model))

    def epoch_end(self) -> None:
        """At the end of an epoch: have what was recorded written and flushed,
        without waiting (as MindSpore does)."""
        self.epoch += 1
        if self.epoch == 1:
            self._first_epoch_steps = self.global_step
        if self.core is not None:
            self.core.epoch_end()
        if self.epoch >= self.landscape.next_epoch:
            self._landscape_at(self.epoch)

    def _landscape_end(self) -> None:
        """The end of training: the last point saved (if not yet) and train_metadata.json."""
        saver = self.landscape
        if saver is LANDSCAPE_OFF:
            return
        model = _unwrap(self.model)
        last = self.global_step if saver.unit == "step" else self.epoch
        saver.finish(last, self._network_name(), lambda: _state_copy(model),
                     lambda: _state_bytes(model),
                     step_per_epoch=_len(self.train_loader) or self._first_epoch_steps)
        saver.close()

    def close(self) -> None:
        """Write the train lineage, the landscape's metadata, and close the files."""
        if self._closed:
            return
        try:
            self._landscape_end()
        finally:
            super().close()

    def _train_lineage(self) -> dict[str, Any] | None:
        if not self.global_step:
            return None
        loader = self.train_loader
        path = _dataset_path(loader.dataset) if loader else None
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
            "train_dataset": {"train_dataset_path": path,
                              "train_dataset_size": _len(getattr(loader, "dataset", None))},
            "algorithm": {"network": (type(_unwrap(self.model)).__name__
                                       if self.model is not None else None)},
        }

    def evaluate_end(self, metrics: Mapping[str, Any], eval_loader: Any = None) -> None:
        """After evaluation: the eval lineage (metrics, validation dataset)."""
        if self.core is None:
            return
        ds = getattr(eval_loader, "dataset", None)
        self.core.eval_end(metrics, _dataset_path(ds) if ds is not None else None, _len(ds))
