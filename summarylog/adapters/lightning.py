"""MindSpore's SummaryCollector for a Lightning ``Trainer``, and a Lightning
``Logger`` writing through summarylog.

    trainer = pl.Trainer(callbacks=[SummaryCollectorCallback("runs/a")],
                         logger=SummarylogLogger("runs/a-metrics"))

The callback runs :class:`summarylog.adapters.torch.SummaryCollector`'s rules
with no loop code: the step is ``trainer.global_step``, the loss the
``training_step`` output, the inputs the batch's first tensor; the optimizer,
loss function and data loader come from the trainer.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Mapping

import torch

try:
    import lightning.pytorch as pl
    from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment
    from lightning.pytorch.utilities import rank_zero_only
except ImportError:  # the standalone package
    import pytorch_lightning as pl
    from pytorch_lightning.loggers.logger import Logger, rank_zero_experiment
    from pytorch_lightning.utilities import rank_zero_only

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


class SummarylogLogger(Logger):
    """A Lightning logger writing TensorBoard files through summarylog.Writer:
    ``self.log(...)`` metrics as scalars (one event per step), hyperparameters
    in the same run at the end."""

    def __init__(self, save_dir: str | os.PathLike[str], name: str = "lightning",
                 version: int | str | None = None, **writer_kwargs: Any) -> None:
        super().__init__()
        self._save_dir = os.fspath(save_dir)
        self._name = name
        self._version = version
        self._writer_kwargs = writer_kwargs
        self._writer: Any = None
        self._hparams: dict[str, Any] = {}
        self._last_metrics: dict[str, float] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def version(self) -> int | str:
        if self._version is None:
            root = os.path.join(self._save_dir, self._name)
            names = os.listdir(root) if os.path.isdir(root) else []
            existing = [int(d[8:]) for d in names if d.startswith("version_") and d[8:].isdigit()]
            self._version = max(existing, default=-1) + 1
        return self._version

    @property
    def save_dir(self) -> str:
        return self._save_dir

    @property
    def log_dir(self) -> str:
        v = self.version
        return os.path.join(self._save_dir, self._name, v if isinstance(v, str) else f"version_{v}")

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The summarylog.Writer of this run."""
        if self._writer is None:
            from ..writer import Writer

            self._writer = Writer(self.log_dir, **self._writer_kwargs)
        return self._writer

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        clean = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in metrics.items()}
        for k, v in clean.items():
            with contextlib.suppress(TypeError, ValueError):  # kept as floats for the hparams
                self._last_metrics[k] = v if isinstance(v, torch.Tensor) else float(v)
        self.experiment.log(clean, step=step if step is not None else 0)

    @rank_zero_only
    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        if params is None:
            return
        if not isinstance(params, Mapping):
            params = vars(params)
        for k, v in dict(params).items():
            self._hparams[k] = v if isinstance(v, (bool, int, float, str)) else str(v)

    @rank_zero_only
    def save(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    @rank_zero_only
    def finalize(self, status: str) -> None:
        if self._writer is None and not self._hparams:
            return
        w = self.experiment
        if self._hparams:
            metrics = {}
            for k, v in self._last_metrics.items():
                with contextlib.suppress(TypeError, ValueError):
                    metrics[f"hparams/{k}"] = float(v)
            w.add_hparams(self._hparams, metrics)
        w.close()
