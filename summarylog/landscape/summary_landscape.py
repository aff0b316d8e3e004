"""``SummaryLandscape``: a drop-in for ``mindspore.SummaryLandscape`` (MindSpore 2.10),
the same constructor, methods, callback contract and landscapes (same math, tags,
message layout), computed faster (see :mod:`.eval_mindspore`).

Differences, all deliberate:

- ``device_ids`` is optional: None computes on this process (MindSpore fails with a
  TypeError); ``[i, j, ...]`` runs one worker per id, each calling ``callback_fn`` and
  setting ``device_id``, as MindSpore.  The workers are spawned (MindSpore's runtime
  does not survive a fork), so ``callback_fn`` must pickle: a module-level function,
  as MindSpore's process pool needs too, under an ``if __name__ == "__main__":``
  guard.  ``processes=k`` asks for k workers without choosing devices.
- ``collect_landscape`` applies to this call; ``train_metadata.json`` is not rewritten
  (MindSpore rewrites it and makes it read-only).
- Nothing is written when a check fails (MindSpore creates the summary file first).
- ``seed`` makes the result landscape's directions reproducible; None draws from
  numpy's global RNG as MindSpore does (``np.random.seed(s)`` first gives MindSpore's
  own directions).  Intervals of more than 13 checkpoints get the exact PCA where
  MindSpore's randomized SVD differs from run to run.
- A NaN or infinite loss raises (``allow_nonfinite=True`` keeps it); a progress bar on
  stderr instead of a printed line per point (``progress=False``: none).
- ``format="tensorboard"`` writes TensorBoard's dialect instead of MindSpore's.
- Returns the :class:`Landscape` objects it wrote."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from .compute import Options, Setup, named_plain, landscapes_of
from .directions import mindspore_rule, random_source
from .eval_mindspore import MindSporeEvaluator, set_device
from .metadata import CKPT_DIR, TrainMetadata
from .parallel import check_processes
from .result import Landscape, write_landscapes

__all__ = ["SummaryLandscape"]

_WHERE = 'For "SummaryLandscape.gen_landscapes_with_multi_process", the parameter'


def _check_device_ids(device_ids: Any) -> list[int]:
    if not isinstance(device_ids, list):
        raise TypeError(f"For `device_ids` the type should be a valid type of ['list'], but "
                        f"got {type(device_ids).__name__}.")
    for i in device_ids:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f'{_WHERE} "device_ids" type should be int, but got the: {type(i)}.')
        if i < 0 or i > 7:
            raise ValueError(f'{_WHERE} "device_ids" should be between 0 and 7, but got {i}.')
    if not device_ids:
        raise ValueError(f'{_WHERE} "device_ids" is empty')
    return device_ids


def _ms_rule(final: Mapping[str, Any], is_ms: bool) -> list[str]:
    return [n for n in final if mindspore_rule(n)]


class SummaryLandscape:
    """Loss landscapes from what a ``SummaryCollector``'s ``collect_landscape`` saved
    in ``{summary_dir}/ckpt_dir`` (MindSpore's own collector, or summarylog's)."""

    def __init__(self, summary_dir: str | os.PathLike[str]) -> None:
        self._summary_dir = os.path.realpath(os.fspath(summary_dir))
        self._ckpt_dir = os.path.join(self._summary_dir, CKPT_DIR)
        os.makedirs(self._ckpt_dir, exist_ok=True)

    def clean_ckpt(self) -> None:
        """Remove ``ckpt_dir`` (the saved parameters and train_metadata.json)."""
        shutil.rmtree(self._ckpt_dir, ignore_errors=True)

    def gen_landscapes_with_multi_process(
            self, callback_fn: Callable[[], Any],
            collect_landscape: Mapping[str, Any] | None = None,
            device_ids: list[int] | None = None, output: str | os.PathLike[str] | None = None, *,
            processes: int | None = None, format: str = "mindinsight", progress: bool = True,
            seed: int | None = None, allow_nonfinite: bool = False) -> list[Landscape]:
        """Compute every landscape train_metadata.json (with ``collect_landscape``'s
        overrides) asks for, with ``callback_fn() -> (model, network, dataset,
        metrics)`` (``metrics["Loss"]`` is the loss), and record them into ``output``
        (default: the summary directory) as a new event file: tags ``landscape_[a, b]``
        (one per interval, PCA) and ``landscape_[k]`` (the result, Random), step 0."""
        if not callable(callback_fn):
            raise TypeError(f"callback_fn must be callable, got {type(callback_fn).__name__}")
        setups = None
        if device_ids is not None:
            ids = _check_device_ids(device_ids)
            workers = len(ids)
            if workers > 1:
                setups = [functools.partial(set_device, i) for i in ids]
        else:
            workers = 1
        if processes is not None:
            workers = check_processes(processes)
        random_source(seed)
        meta = TrainMetadata.read(self._summary_dir)
        if collect_landscape is not None:
            if not isinstance(collect_landscape, Mapping):
                raise TypeError(f"collect_landscape must be a dict or None, "
                                f"got {type(collect_landscape).__name__}")
            meta.override(collect_landscape)
        setup = Setup(functools.partial(MindSporeEvaluator, callback_fn, meta.num_samples),
                      _ms_rule, named_plain, start_method="spawn")
        opts = Options(workers, bool(progress), seed, bool(allow_nonfinite),
                       worker_setups=setups)
        out = landscapes_of(meta, setup, opts)
        if out:
            write_landscapes(os.path.realpath(output) if output is not None else self._summary_dir,
                             out, format=format)
        return out
