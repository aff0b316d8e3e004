"""A drop-in for ``mindspore.SummaryCollector``, on summarylog's policy.

    from summarylog.adapters.mindspore import SummaryCollector
    model.train(epochs, ds, callbacks=[SummaryCollector("./summary_dir")])

Same arguments and rules as MindSpore's (see summarylog/collector.py), plus
``format="tensorboard"`` to write TensorBoard files.  It finds the loss,
learning rate, optimizer, loss function, network, dataset path, size and
batch size, the graph (graph mode) and the dataset graph the way MindSpore
does, and records summary-operator data (``ops.ScalarSummary`` and friends in
``construct``).  A collection's parameters are copied at the step (one copy
each); from the second collection on, on the CPU, the loss and the histogrammed
parameters go through the collectors' lane (one native call copies and queues
them; a native thread at nice 19 bins and writes them).  Everything is written
off the training thread: no process pool, no waiting at close.
"""

from __future__ import annotations

import json
import logging
import os
from importlib import import_module
from typing import Any, Mapping

import numpy as np
from mindspore import Parameter
from mindspore.train.callback import Callback

from ..collector import CollectionPolicy, CollectorCore
from ..landscape.collect import LANDSCAPE_OFF, LandscapeSaver
from .mindspore_lane import MindSporeLaneSource, freeze_values

__all__ = ["SummaryCollector"]

log = logging.getLogger("summarylog")


def _backbone(network: Any) -> Any:
    """The user's network inside MindSpore's wrapper cells (``_backbone``)."""
    if network is None:
        return None
    for _, cell in network.cells_and_names():
        if hasattr(cell, "_backbone"):
            return cell._backbone
    return network


def _landscape_backbone(network: Any) -> Any:
    """The cell whose parameters MindSpore saves for a landscape: the backbone, then
    down ``network`` children of wrapper cells (stopping below one with an optimizer)."""
    cell = _backbone(network)
    for _ in range(1000):  # (wrappers nest a few deep; a cycle of cells must not hang)
        children = cell.name_cells()
        if "network" not in children:
            return cell
        cell = cell.network
        if "optimizer" in children:
            return cell
    return cell


def _param_copies(cell: Any) -> dict[str, np.ndarray]:
    """``{name: host copy}`` of every parameter (trainable or not), as MindSpore saves
    them; ``asnumpy`` shares the tensor's memory, hence the copy."""
    return {p.name: np.array(p.asnumpy(), copy=True) for p in cell.get_parameters()}


def _param_bytes(cell: Any) -> int:
    return sum(int(np.prod(p.shape, dtype=np.int64)) * int(p.itemsize)
               for p in cell.get_parameters())


def _optimizer(cb: Any) -> Any:
    opt = getattr(cb, "optimizer", None)
    if opt is not None:
        return opt
    network = cb.train_network if cb.mode == "train" else cb.eval_network
    for _, cell in network.cells_and_names() if network is not None else []:
        if hasattr(cell, "parameters") and hasattr(cell, "learning_rate"):
            return cell
    return None


def _loss_fn(cb: Any) -> Any:
    fn = getattr(cb, "loss_fn", None)
    if fn is not None:
        return fn
    network = cb.train_network if cb.mode == "train" else cb.eval_network
    for _, cell in network.cells_and_names() if network is not None else []:
        if hasattr(cell, "_loss_fn"):
            return cell._loss_fn
    return None


def _learning_rate(optimizer: Any) -> float | None:
    lr = getattr(optimizer, "learning_rate", None)
    if not isinstance(lr, Parameter):
        return None  # a schedule: MindSpore does not record it either
    return float(np.atleast_1d(lr.asnumpy())[0])


def _dataset_path(dataset: Any) -> str | None:
    """The source dataset's directory or first file, as MindSpore finds it."""
    pkg = import_module("mindspore.dataset")
    by_dir = tuple(getattr(pkg, n) for n in ("ImageFolderDataset", "MnistDataset",
                                             "Cifar10Dataset", "Cifar100Dataset", "VOCDataset",
                                             "CelebADataset") if hasattr(pkg, n))
    by_files = tuple(getattr(pkg, n) for n in ("TFRecordDataset", "TextFileDataset")
                     if hasattr(pkg, n))
    seen = 0
    while dataset is not None and seen < 1000:
        seen += 1
        path: Any = None
        if hasattr(pkg, "ManifestDataset") and isinstance(dataset, pkg.ManifestDataset):
            path = dataset.dataset_file
        elif hasattr(pkg, "MindDataset") and isinstance(dataset, pkg.MindDataset):
            path = dataset.dataset_files
        elif by_dir and isinstance(dataset, by_dir):
            path = dataset.dataset_dir
        elif by_files and isinstance(dataset, by_files):
            path = dataset.dataset_files[0]
        if path:
            path = path if isinstance(path, str) else list(path)[0]
            return os.path.dirname(path) if os.path.isfile(path) else path
        children = getattr(dataset, "children", None)
        dataset = children[0] if children else None
    return None


def _dataset_graph(dataset: Any) -> Any:
    try:
        from mindspore.train.callback._dataset_graph import DatasetGraph

        return DatasetGraph().package_dataset_graph(dataset)
    except Exception as exc:  # pragma: no cover - MindSpore's internals vary
        log.warning("summarylog: no dataset graph: %s", exc)
        return None


def _graph(network: Any) -> Any:
    try:
        proto = network.get_func_graph_proto()
    except Exception:
        proto = None
    if proto is None:
        log.warning("summarylog: no graph proto (not GRAPH_MODE?): the graph is not collected")
    return proto


class SummaryCollector(Callback):
    """MindSpore's SummaryCollector, writing through summarylog.

    Args: as ``mindspore.SummaryCollector`` (``summary_dir``,
    ``collect_freq=10``, ``num_process=32``, ``collect_specified_data``,
    ``keep_default_action``, ``custom_lineage_data``, ``collect_tensor_freq``,
    ``max_file_size``, ``export_options``), plus ``format`` (``"mindinsight"``, the
    default, or ``"tensorboard"``).  ``collect_landscape`` (on by default, as in
    MindSpore) saves the backbone's parameters at its interval points into
    ``{summary_dir}/ckpt_dir`` as MindSpore's ``.ckpt`` (copied at the step, written
    by a background thread) and ``train_metadata.json`` at the end of ``Model.train``.
    ``num_process`` is checked (a positive int) and kept (``policy.num_process``):
    MindSpore stores it and uses it nowhere; here no process pool is needed.
    """

    def __init__(self, summary_dir: str, collect_freq: int = 10, num_process: int = 32,
                 collect_specified_data: Mapping[str, Any] | None = None,
                 keep_default_action: bool = True,
                 custom_lineage_data: Mapping[str, Any] | None = None,
                 collect_tensor_freq: int | None = None, max_file_size: int | None = None,
                 export_options: Mapping[str, Any] | None = None,
                 format: str = "mindinsight") -> None:
        super().__init__()
        self.policy = CollectionPolicy(summary_dir, collect_freq, collect_specified_data,
                                       keep_default_action, custom_lineage_data,
                                       collect_tensor_freq, max_file_size, export_options, format,
                                       num_process)
        self._core: CollectorCore | None = None
        self._sink = False
        #: collect_landscape's checkpoints; as MindSpore, ckpt_dir is made now
        self.landscape: Any = LANDSCAPE_OFF
        if self.policy.landscape is not None:
            self.landscape = LandscapeSaver(self.policy.summary_dir, self.policy.landscape,
                                            ".ckpt")

    # MindSpore opens the record when the callback is entered
    def __enter__(self) -> "SummaryCollector":
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self) -> CollectorCore:
        # MindSpore enters and exits the callback around each Model.train or
        # Model.eval: each gets its own record (and files), as in MindSpore
        if self._core is None or self._core.closed:
            # (summary operators' values: the record takes them at each recorded step)
            self._core = CollectorCore(self.policy, freeze=freeze_values,
                                       lane=MindSporeLaneSource())
        return self._core

    # -- MindSpore's callback hooks -------------------------------------------------
    def begin(self, run_context: Any) -> None:
        cb = run_context.original_args()
        if cb.mode not in ("train", "eval"):
            raise ValueError(f"Only support `train` (model.train) and `eval` (model.eval) mode, "
                             f"but got `{cb.mode}` mode.")
        others = [c for c in (getattr(cb, "list_callback", None) or [])
                  if isinstance(c, SummaryCollector) and c is not self]
        if others:
            raise ValueError("There are more than one SummaryCollector instance in callback "
                             "list, but expected only one SummaryCollector instance.")
        core = self._open()
        self._sink = bool(getattr(cb, "dataset_sink_mode", False))
        total = None
        if cb.mode == "train":
            total = cb.epoch_num if self._sink else cb.epoch_num * cb.batch_num
        core.begin(total, cb.mode)

    def _params(self, cb: Any) -> Any:
        """{name: Parameter} of the optimizer's parameters (MindSpore's
        order), called only when histograms are collected."""
        opt = _optimizer(cb)
        if opt is not None:
            source = opt.parameters
        else:
            backbone = _backbone(cb.train_network)
            if backbone is None:
                return None
            source = backbone.trainable_params()
        return lambda: {p.name: p for p in source}

    def _collect(self, cb: Any, current: int, inputs: Any) -> None:
        core = self._core
        assert core is not None
        core.step(current, loss=getattr(cb, "net_outputs", None), inputs=inputs,
                  params=self._params(cb), **self._first_items(cb))

    def _first_items(self, cb: Any) -> dict[str, Any]:
        core = self._core
        if core is None or core.started:
            return {}
        return {"graph": _graph(cb.train_network) if self.policy.enabled("collect_graph")
                else None,
                "dataset_graph": (_dataset_graph(cb.train_dataset)
                                  if self.policy.enabled("collect_dataset_graph") else None)}

    def _landscape_at(self, cb: Any, point: int) -> None:
        cell = _landscape_backbone(cb.train_network)
        self.landscape.at(point, type(cell).__name__, lambda: _param_copies(cell),
                          lambda: _param_bytes(cell))

    def step_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        core = self._core
        if cb.mode != "train" or core is None:
            return
        step = cb.cur_step_num
        if step >= self.landscape.next_step:  # (in sink mode: once per sink)
            self._landscape_at(cb, step)
        if self._sink:  # the unit is an epoch: only the first step's records here
            if not core.started:
                core.first_step(step, **self._first_items(cb))
            return
        if step < core.quiet_until:  # the common case: a step that collects nothing
            loss = getattr(cb, "net_outputs", None)
            if loss is not None:
                core.last_loss = loss
            return
        element = getattr(cb, "train_dataset_element", None)
        inputs = element[0] if isinstance(element, (list, tuple)) and element else None
        self._collect(cb, step, inputs)

    def epoch_end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        if self._core is None:
            return
        if cb.mode == "train":
            # sink mode: the epoch is the unit; non-sink: the step again (a
            # no-op when step_end collected it)
            current = cb.cur_epoch_num if self._sink else cb.cur_step_num
            self._collect(cb, current, None)
            if cb.cur_epoch_num >= self.landscape.next_epoch:
                self._landscape_at(cb, cb.cur_epoch_num)
        self._core.epoch_end()

    def end(self, run_context: Any) -> None:
        cb = run_context.original_args()
        core = self._core
        if core is None:
            return
        dataset = cb.train_dataset if cb.mode == "train" else getattr(cb, "valid_dataset", None)
        path = _dataset_path(dataset) if dataset is not None else None
        batch_size = size = None
        if dataset is not None:
            batch_size = dataset.get_batch_size()
            size = int(dataset.get_dataset_size() * batch_size)
        if cb.mode == "train":
            opt = _optimizer(cb)
            loss_fn = _loss_fn(cb)
            backbone = _backbone(cb.train_network)
            ckpt = self._checkpoint(cb)
            core.train_end({
                "hyper_parameters": {
                    "optimizer": type(opt).__name__ if opt is not None else None,
                    "learning_rate": _learning_rate(opt) if opt is not None else None,
                    "loss_function": type(loss_fn).__name__ if loss_fn is not None else None,
                    "epoch": int(cb.epoch_num),
                    "parallel_mode": getattr(cb, "parallel_mode", None),
                    "device_num": getattr(cb, "device_number", None),
                    "batch_size": batch_size},
                "train_dataset": {"train_dataset_path": path, "train_dataset_size": size},
                "algorithm": {"network": type(backbone).__name__ if backbone is not None
                              else None},
                "model": {"path": json.dumps({"ckpt": ckpt}),
                          "size": os.path.getsize(ckpt) if ckpt else 0},
            })
            self._landscape_end(cb)
        else:
            metrics = {k: (v.tolist() if hasattr(v, "tolist") else v)
                       for k, v in (getattr(cb, "metrics", None) or {}).items()}
            core.eval_end(metrics, path, size)
        core.flush()

    def _landscape_end(self, cb: Any) -> None:
        """End of Model.train: the last point saved (if not yet), then train_metadata.json
        (step_per_epoch: MindSpore's batch_num)."""
        saver = self.landscape
        if saver is LANDSCAPE_OFF:
            return
        cell = _landscape_backbone(cb.train_network)
        last = cb.cur_step_num if saver.unit == "step" else cb.cur_epoch_num
        saver.finish(int(last), type(cell).__name__, lambda: _param_copies(cell),
                     lambda: _param_bytes(cell), step_per_epoch=int(cb.batch_num))

    @staticmethod
    def _checkpoint(cb: Any) -> str | None:
        from mindspore.train.callback import ModelCheckpoint

        for c in getattr(cb, "list_callback", None) or []:
            if isinstance(c, ModelCheckpoint):
                latest = getattr(c, "latest_ckpt_file_name", None)
                if latest and os.path.isfile(latest):
                    return os.path.realpath(latest)
        return None

    def close(self) -> None:
        try:
            if self._core is not None:
                self._core.close()
        finally:
            if self.landscape is not LANDSCAPE_OFF:
                self.landscape.close()  # (a later Model.train starts its writer again)


