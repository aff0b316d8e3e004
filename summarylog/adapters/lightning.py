"""MindSpore's SummaryCollector for a Lightning ``Trainer``, and a Lightning
``Logger`` writing through summarylog (a drop-in for ``TensorBoardLogger``).

    trainer = pl.Trainer(callbacks=[SummaryCollectorCallback("runs/a")],
                         logger=SummarylogLogger("runs", name="a-metrics"))

The callback runs :class:`summarylog.adapters.torch.SummaryCollector`'s rules
with no loop code: the step is ``trainer.global_step``, the loss the
``training_step`` output, the inputs the batch's first tensor; the optimizer,
loss function and data loader come from the trainer.
"""

from __future__ import annotations

import inspect
import os
import tempfile
from argparse import Namespace
from typing import Any, Mapping

import torch

try:
    import lightning.pytorch as pl
    from lightning.fabric.utilities.logger import (_add_prefix, _convert_params, _flatten_dict,
                                                   _sanitize_params)
    from lightning.pytorch.core.saving import save_hparams_to_yaml
    from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
    from lightning.pytorch.utilities import rank_zero_only
    from lightning.pytorch.utilities.imports import _OMEGACONF_AVAILABLE
    from lightning.pytorch.utilities.rank_zero import rank_zero_warn
except ImportError:  # the standalone package
    import pytorch_lightning as pl
    from lightning_fabric.utilities.logger import (_add_prefix, _convert_params, _flatten_dict,
                                                   _sanitize_params)
    from pytorch_lightning.core.saving import save_hparams_to_yaml
    from pytorch_lightning.loggers.logger import Logger, rank_zero_experiment
    from pytorch_lightning.utilities import rank_zero_only
    from pytorch_lightning.utilities.imports import _OMEGACONF_AVAILABLE
    from pytorch_lightning.utilities.rank_zero import rank_zero_warn

from ..files import check_local_dir
from ..remote.urls import check_dir_or_url, is_url
from ..summary_writer import SummaryWriter
from .torch import SummaryCollector

__all__ = ["SummaryCollectorCallback", "SummarylogLogger"]


def _first_tensor(batch: Any) -> Any:
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)) and batch:
        return _first_tensor(batch[0])
    return batch if isinstance(batch, torch.Tensor) else None


def _loader(x: Any) -> Any:
    return x if isinstance(x, torch.utils.data.DataLoader) else None


class SummaryCollectorCallback(pl.Callback):
    """Lightning callback with MindSpore's SummaryCollector rules; takes the
    keyword arguments of :class:`summarylog.adapters.torch.SummaryCollector`
    except those it finds in the trainer (model, optimizer, data loader, epochs)."""

    def __init__(self, summary_dir: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__()
        for k in ("model", "optimizer", "train_loader", "epochs"):
            if k in kwargs:
                raise TypeError(f"{k} comes from the Trainer; do not pass it")
        self.summary_dir = summary_dir
        self.kwargs = kwargs
        self.collector: SummaryCollector | None = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.is_global_zero and self.kwargs.get("rank0_only", True):
            return
        opts = trainer.optimizers
        loss_fn = self.kwargs.pop("loss_fn", None) or next(
            (m for m in pl_module.modules() if isinstance(m, torch.nn.modules.loss._Loss)), None)
        sched = trainer.lr_scheduler_configs[0].scheduler if trainer.lr_scheduler_configs else None
        epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else None
        self.collector = SummaryCollector(
            self.summary_dir, model=pl_module, optimizer=opts[0] if opts else None,
            loss_fn=loss_fn, train_loader=_loader(getattr(trainer, "train_dataloader", None)),
            epochs=epochs, scheduler=sched, **self.kwargs)
        total = trainer.estimated_stepping_batches
        if isinstance(total, (int, float)) and total != float("inf") and self.collector.core:
            self.collector.core.begin(int(total))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if self.collector is None:
            return
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        self.collector.step(loss=loss, inputs=_first_tensor(batch),
                            step=max(int(trainer.global_step), 1))

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self.collector is not None:
            self.collector.epoch_end()

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self.collector is None or trainer.sanity_checking:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()
                   if isinstance(v, (int, float))
                   or (isinstance(v, torch.Tensor) and v.numel() == 1)}
        loaders = trainer.val_dataloaders
        loader = loaders[0] if isinstance(loaders, (list, tuple)) and loaders else loaders
        self.collector.evaluate_end(metrics, eval_loader=_loader(loader))

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.collector is not None:
            self.collector.close()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if self.collector is not None and stage == "fit":
            self.collector.close()


def _writer_options() -> frozenset[str]:
    """The keyword arguments SummaryWriter takes besides its directory (the peers' and
    summarylog.Writer's), so a misspelt one fails at construction, not at the first log."""
    from ..summary_writer.base import SummaryWriterBase
    from ..writer import Writer

    names = set()
    for fn in (SummaryWriterBase.__init__, Writer.__init__):
        names |= {p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return frozenset(names - {"self", "log_dir", "logdir"})


def _hparam_number(v: Any) -> Any:
    """A one- or zero-dim tensor hyperparameter as the number torch's ``hparams`` takes
    from it (its first element); other values as they are."""
    if isinstance(v, torch.Tensor) and v.numel() >= 1:
        return v.detach().reshape(-1)[0].item()
    return v


def _create_once(path: str, hparams: Any) -> None:
    """``hparams`` as Lightning's ``save_hparams_to_yaml`` writes them, into ``path``
    unless something is there already, a symlink included: the file is created with
    O_EXCL (a planted link, even dangling, is never followed), never overwritten."""
    if os.path.lexists(path):
        return
    with tempfile.TemporaryDirectory(prefix="summarylog-hparams-") as tmp:
        staged = os.path.join(tmp, "hparams.yaml")
        save_hparams_to_yaml(staged, hparams)
        with open(staged, "rb") as f:
            data = f.read()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:  # made meanwhile: kept, as TensorBoardLogger keeps it
        return
    with os.fdopen(fd, "wb") as out:
        out.write(data)


class SummarylogLogger(Logger):
    """Lightning's ``TensorBoardLogger``, writing through :class:`summarylog.SummaryWriter`:
    the same constructor, directories (``save_dir/name/version_N[/sub_dir]``), tags,
    hyperparameters (flattened and sanitized by Lightning's own helpers, ``hp_metric``)
    and ``hparams.yaml``; summarylog's speed, durability and collision-free file names.

    Args (TensorBoardLogger's):
      save_dir: the root directory (local).
      name: the experiment's directory under it (``""`` or None: none).
      version: an int (``version_<n>``) or a str (the directory's name); default the
        next free ``version_<n>``.
      log_graph: ``log_graph`` traces the model (``example_input_array``) into the
        Graphs tab.
      default_hp_metric: ``log_hyperparams`` without metrics logs ``hp_metric = -1``.
      prefix: put before every metric key, joined with ``-``.
      sub_dir: a directory under the version's.
      **kwargs: :class:`summarylog.SummaryWriter`'s (``flush_secs``, ``max_queue``,
        ``filename_suffix``, ``comment``, ``purge_step``, and summarylog.Writer's
        ``durability``, ``compression``, ``max_file_size``, ...).
    """

    NAME_HPARAMS_FILE = "hparams.yaml"
    LOGGER_JOIN_CHAR = "-"

    def __init__(self, save_dir: str | os.PathLike[str], name: str | None = "lightning_logs",
                 version: int | str | None = None, log_graph: bool = False,
                 default_hp_metric: bool = True, prefix: str = "",
                 sub_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> None:
        super().__init__()
        # a URL (s3://, gs://...): the SummaryWriter spools and uploads (storage_options=...)
        save_dir = (check_dir_or_url("save_dir", save_dir).rstrip("/") if is_url(save_dir)
                    else check_local_dir("save_dir", save_dir))
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if version is not None and (isinstance(version, bool)
                                    or not isinstance(version, (int, str))):
            raise TypeError(f"version must be an int, a str or None, got {version!r}")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        unknown = sorted(set(kwargs) - _writer_options())
        if unknown:
            raise TypeError(f"SummarylogLogger got unexpected keyword argument(s) {unknown}: "
                            f"kwargs go to summarylog.SummaryWriter")
        self._root_dir = save_dir
        self._name = name or ""
        self._version = version
        self._sub_dir = None if sub_dir is None else os.fspath(sub_dir)
        self._log_graph = bool(log_graph)  # summarylog traces without the tensorboard package
        self._default_hp_metric = default_hp_metric
        self._prefix = prefix
        self._kwargs = kwargs
        self._experiment: SummaryWriter | None = None
        self.hparams: dict[str, Any] | Namespace = {}

    # -- where -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The experiment's name."""
        return self._name

    @property
    def version(self) -> int | str:
        """The experiment's version: the one given, else the next free ``version_<n>``."""
        if self._version is None:
            self._version = self._get_next_version()
        return self._version

    @property
    def save_dir(self) -> str:
        """The root directory given."""
        return self._root_dir

    @property
    def root_dir(self) -> str:
        """``save_dir/name``: the versions' parent."""
        return os.path.join(self._root_dir, self.name)

    @property
    def sub_dir(self) -> str | None:
        """The directory under the version's, if any."""
        return self._sub_dir

    @property
    def log_dir(self) -> str:
        """``save_dir/name/version_<n>[/sub_dir]`` (a str version as it is), ``~`` and
        environment variables expanded."""
        v = self.version
        log_dir = os.path.join(self.root_dir, v if isinstance(v, str) else f"version_{v}")
        if isinstance(self.sub_dir, str):
            log_dir = os.path.join(log_dir, self.sub_dir)
        return log_dir if is_url(log_dir) else os.path.expanduser(os.path.expandvars(log_dir))

    def _get_next_version(self) -> int:
        if is_url(self.root_dir):
            return self._next_remote_version()
        try:
            names = os.listdir(self.root_dir)
        except OSError:
            return 0
        found = [int(n.split("_")[1]) for n in names
                 if n.startswith("version_") and n.split("_")[1].isdigit()
                 and os.path.isdir(os.path.join(self.root_dir, n))]
        return max(found, default=-1) + 1

    def _next_remote_version(self) -> int:
        """The next ``version_<n>`` under a URL (one listing; 0 if it can't be listed)."""
        from ..remote.urls import filesystem

        try:
            fs, path = filesystem(self.root_dir, self._kwargs.get("storage_options"))
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)]
        except (OSError, ValueError, ImportError):
            return 0
        found = [int(n.split("_")[1]) for n in names
                 if n.startswith("version_") and n.split("_")[1].isdigit()]
        return max(found, default=-1) + 1

    @property
    @rank_zero_experiment
    def experiment(self) -> SummaryWriter:
        """The :class:`summarylog.SummaryWriter` of this run (made on first use)."""
        if self._experiment is not None:
            return self._experiment
        assert rank_zero_only.rank == 0, "tried to init log dirs in non global_rank=0"
        if self._root_dir and not is_url(self._root_dir):
            os.makedirs(self.root_dir, exist_ok=True)
        self._experiment = SummaryWriter(log_dir=self.log_dir, **self._kwargs)
        return self._experiment

    # -- what --------------------------------------------------------------------------------
    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Each metric as a scalar (``prefix-`` before its key); a dict value as
        ``add_scalars``.  Tensors are read on the background thread, not here."""
        assert rank_zero_only.rank == 0, "experiment tried to log from global_rank != 0"
        metrics = _add_prefix(metrics, self._prefix, self.LOGGER_JOIN_CHAR)
        for k, v in metrics.items():
            if isinstance(v, torch.Tensor):
                v = v.detach()
            try:
                if isinstance(v, dict):
                    self.experiment.add_scalars(k, v, step)
                else:
                    self.experiment.add_scalar(k, v, step)
            except Exception as ex:  # TensorBoardLogger's error, with the cause kept
                raise ValueError(f"metrics[{k!r}]: you tried to log {v!r} which is not "
                                 f"supported: log a dict or a scalar/one-element tensor "
                                 f"({ex})") from ex

    @rank_zero_only
    def log_hyperparams(self, params: dict[str, Any] | Namespace | None,
                        metrics: Any = None, step: int | None = None) -> None:
        """Record hyperparameters (nested dicts, Namespaces and dataclasses flattened
        with ``/``) in the run's own file, for TensorBoard's HParams tab, with ``metrics``
        (a dict, or one value for ``hp_metric``) as its metrics; with none and
        ``default_hp_metric``, ``hp_metric = -1``.  ``hparams.yaml`` keeps them unflattened."""
        params = _convert_params(params)
        if _OMEGACONF_AVAILABLE:
            from omegaconf import Container, OmegaConf

            if isinstance(params, Container):
                self.hparams = OmegaConf.merge(self.hparams, params)
            else:
                self.hparams.update(params)
        else:
            self.hparams.update(params)
        flat = self._sanitize_params(_flatten_dict(params))
        if metrics is None:
            metrics = {"hp_metric": -1} if self._default_hp_metric else None
        elif not isinstance(metrics, dict):
            metrics = {"hp_metric": metrics}
        if not metrics:
            return
        from ..dialects.tb_plugins import hparams_events

        w = self.experiment
        at_step, wall = w.at(step, None)
        # built here, so a value TensorBoard cannot show fails in the caller's call
        payloads = hparams_events(wall, flat, metrics, step=at_step)
        self.log_metrics(metrics, step)
        w.writer.submit(lambda: payloads)

    @staticmethod
    def _sanitize_params(params: dict[str, Any]) -> dict[str, Any]:
        """Lightning's sanitizing (numpy scalars as Python's, other kinds as str), tensors
        of more than one dimension as str, others as their first number."""
        params = _sanitize_params(params)
        return {k: str(v) if hasattr(v, "ndim") and v.ndim > 1 else _hparam_number(v)
                for k, v in params.items()}

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """With ``log_graph=True``: trace ``model`` on ``input_array`` (default its
        ``example_input_array``, through its batch-transfer hooks) into the Graphs tab."""
        if not self._log_graph:
            return
        input_array = model.example_input_array if input_array is None else input_array
        if input_array is None:
            rank_zero_warn("Could not log computational graph to TensorBoard: The "
                           "`model.example_input_array` attribute is not set or `input_array` "
                           "was not given.")
        elif not isinstance(input_array, (torch.Tensor, tuple)):
            rank_zero_warn("Could not log computational graph to TensorBoard: The `input_array` "
                           f"or `model.example_input_array` has type {type(input_array)} which "
                           "can't be traced. Make the input array a tuple representing the "
                           "positional arguments to the model's `forward()` implementation.")
        else:
            input_array = model._on_before_batch_transfer(input_array)
            input_array = model._apply_batch_transfer_handler(input_array)
            with pl.core.module._jit_is_scripting():
                self.experiment.add_graph(model, input_array)

    # -- when --------------------------------------------------------------------------------
    @rank_zero_only
    def save(self) -> None:
        """Flush; write ``hparams.yaml`` in the log directory if it is not there yet."""
        self.experiment.flush()
        dir_path = self.log_dir
        if os.path.isdir(dir_path):
            _create_once(os.path.join(dir_path, self.NAME_HPARAMS_FILE), self.hparams)

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """Flush and close the files; after a successful run, :meth:`save`."""
        if self._experiment is not None:
            self._experiment.flush()
            self._experiment.close()
        if status == "success":
            self.save()

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Nothing: checkpoints are not logged (as TensorBoardLogger)."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_experiment"] = None  # a spawned process opens its own files
        return state
