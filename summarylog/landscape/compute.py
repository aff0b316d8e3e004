"""Loss landscapes for PyTorch, JAX and numpy, computed as MindSpore computes them:
:func:`compute` from a run's ``ckpt_dir`` (the checkpoints and ``train_metadata.json`` a
SummaryCollector's ``collect_landscape`` saved) and :func:`from_checkpoints` from a list
of checkpoints alone.

The loss function, by framework (``framework=`` or inferred: ``model`` given -> torch,
``params`` given -> jax, else numpy):

- **torch**: ``model`` (a ``torch.nn.Module``) and ``loss_fn(model, batch) -> scalar
  tensor`` over ``data`` (an iterable of batches, e.g. a DataLoader), or
  ``loss_fn(model)`` with ``data=None``.  Evaluated through ``torch.func.functional_call``
  and ``vmap``, a row of points at once (see :mod:`.eval_torch`); ``train=True`` (the
  default, MindSpore's) evaluates in train mode.  Directions: the model's floating
  parameters (not buffers).
- **jax**: ``params`` (a pytree: the template the checkpoints' ``"a/b/kernel"`` names
  are put back into) and ``loss_fn(params, batch) -> scalar`` over ``data``, or
  ``loss_fn(params)``; ``jax.jit(jax.vmap(...))`` over a row.  Directions: the floating
  leaves of ``params``.
- **numpy**: ``loss_fn(params: dict[str, ndarray], batch) -> float``, point by point.
  Directions: every floating array.

Checkpoints in MindSpore's ``.ckpt`` take MindSpore's rule instead (names holding
``weight`` or ``bias``, not ``moment``); ``directions_for=`` (a predicate on names or a
list of names) overrides any rule.  The loss at a point is the mean over the batches of
the loss function's value on each (MindSpore's ``Loss`` metric), over the first
``num_samples // batch_size`` batches of ``data``, taken once and reused at every point.
A NaN or infinite loss raises :class:`LandscapeError` unless ``allow_nonfinite=True``.
Directions are scaled tensor by tensor to the final parameters' norms, as MindSpore
does (``normalization="layer"``); ``normalization="filter"`` scales each filter (slice
along the first axis of a tensor of 2+ dimensions) instead, as Li et al. (2018).

Random (result) directions come from numpy's global RNG when ``seed`` is None, as in
MindSpore (so ``np.random.seed(s)`` beforehand reproduces MindSpore's own draw), and
from ``RandomState(seed)`` otherwise, which draws the same numbers.

``processes=k`` splits each landscape's grid rows across k worker processes (forked
on Linux; spawned for JAX, or once JAX is imported, when ``loss_fn``, the model or
params and the data must pickle: define them at module level); the result
is the same as with one process."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import checkpoints as ckpt_io
from .directions import Plane, floating_names, mindspore_rule, pca_plane, random_plane
from .directions import random_source, select
from .evaluate import LandscapeError, NumpyEvaluator, take_batches
from .metadata import TrainMetadata, check_collect_landscape
from .parallel import check_processes, evaluate_plane
from .result import Landscape, interval_tag, write_landscapes

__all__ = ["compute", "from_checkpoints", "LandscapeError", "Options", "landscapes_of"]

_FRAMEWORKS = ("torch", "jax", "numpy")


@dataclass
class Options:
    """How the grid is evaluated (shared by every landscape of one call)."""

    processes: int = 1
    progress: bool = True
    seed: int | None = None
    allow_nonfinite: bool = False
    start_method: str | None = None
    worker_setups: list[Any] | None = None
    normalization: str = "layer"


@dataclass
class Setup:
    """A framework's side of a computation: how to make its evaluator (in this process
    or a worker), which tensors get directions, and how checkpoints are read."""

    make: Callable[[], Any]
    selected: Callable[[Mapping[str, np.ndarray], bool], list[str]]
    named: Callable[[Any], dict[str, np.ndarray]]
    start_method: str | None = None


def named_plain(obj: Any) -> dict[str, np.ndarray]:
    if not isinstance(obj, Mapping):
        raise TypeError(f"a checkpoint must be a path or a dict of arrays, "
                        f"got {type(obj).__name__}")
    out = {}
    for k, v in obj.items():
        if hasattr(v, "detach"):  # a torch tensor
            v = v.detach().cpu().numpy()
        out[str(k)] = np.asarray(v)
    return out


def _named_jax(obj: Any) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in ckpt_io.flatten_pytree(obj).items()}


def _present(names: list[str], what: str) -> Callable[[Mapping[str, np.ndarray]], list[str]]:
    def check(final: Mapping[str, np.ndarray]) -> list[str]:
        missing = [n for n in names if n not in final]
        if missing:
            raise ValueError(f"the checkpoint has no {what} {missing[0]!r} ({len(missing)} "
                             f"missing): the checkpoints do not match")
        return names
    return check


def _default_rule(rule: Any, fallback: Callable[[Mapping[str, np.ndarray]], list[str]]) -> Any:
    def selected(final: Mapping[str, np.ndarray], is_ms: bool) -> list[str]:
        if rule is not None:
            return select(final, rule)
        if is_ms:
            return [n for n in final if mindspore_rule(n)]
        return fallback(final)
    return selected


def framework_setup(loss_fn: Callable[..., Any], *, model: Any, params: Any, batches: list[Any],
                    framework: str | None, train: bool, points_per_call: int | None,
                    directions_for: Any) -> Setup:
    """The :class:`Setup` for the framework given or inferred (see the module doc)."""
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if framework is None:
        framework = "torch" if model is not None else "jax" if params is not None else "numpy"
    if framework not in _FRAMEWORKS:
        raise ValueError(f"framework must be one of {', '.join(_FRAMEWORKS)}, got {framework!r}")
    if points_per_call is not None and (isinstance(points_per_call, bool)
                                        or not isinstance(points_per_call, int)
                                        or points_per_call < 1):
        raise ValueError(f"points_per_call must be a positive int, got {points_per_call!r}")
    if framework == "torch":
        from .eval_torch import TorchEvaluator, torch_selected

        if model is None:
            raise TypeError("framework 'torch' needs model= (a torch.nn.Module)")
        names = torch_selected(model)
        make = functools.partial(TorchEvaluator, model, loss_fn, batches, train=train,
                                 points_per_call=points_per_call)
        return Setup(make, _default_rule(directions_for, _present(names, "tensor of the model")),
                     named_plain)
    if framework == "jax":
        from .eval_jax import JaxEvaluator, jax_selected

        if params is None:
            raise TypeError("framework 'jax' needs params= (a pytree of the model's parameters)")
        names = jax_selected(params)
        make = functools.partial(JaxEvaluator, loss_fn, params, batches,
                                 points_per_call=points_per_call)
        return Setup(make, _default_rule(directions_for, _present(names, "leaf of params")),
                     _named_jax, start_method="spawn")
    return Setup(functools.partial(NumpyEvaluator, loss_fn, batches),
                 _default_rule(directions_for, floating_names), named_plain)


def _load(item: Any, setup: Setup, what: str) -> dict[str, np.ndarray]:
    if isinstance(item, (str, os.PathLike)):
        path = os.fspath(item)
        try:
            return ckpt_io.load(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"{what}: no checkpoint file at {path}") from None
        except Exception as exc:  # a damaged or foreign file, whatever its reader raised
            raise ValueError(f"{what}: cannot read the checkpoint {path}: {exc}") from None
    return setup.named(item)


def _is_ms(item: Any) -> bool:
    return isinstance(item, (str, os.PathLike)) and os.fspath(item).endswith(".ckpt")


def _grid(setup: Setup, plane: Plane, opts: Options, desc: str,
          state: dict[str, Any]) -> tuple[np.ndarray, np.ndarray | None]:
    if opts.processes <= 1 and "evaluator" not in state:
        state["evaluator"] = setup.make()  # one evaluator for every landscape of the call
    if opts.processes > 1 and plane.y.size > 1 and "pool" not in state:
        from .pool import WorkerPool  # one set of workers for every landscape of the call

        state["pool"] = WorkerPool(setup.make, min(opts.processes, plane.y.size),
                                   opts.start_method or setup.start_method, opts.worker_setups)
    return evaluate_plane(setup.make, plane, processes=opts.processes, progress=opts.progress,
                          desc=desc, allow_nonfinite=opts.allow_nonfinite,
                          start_method=opts.start_method or setup.start_method,
                          worker_setups=opts.worker_setups, evaluator=state.get("evaluator"),
                          pool=state.get("pool"))


def _finish(state: dict[str, Any]) -> None:
    pool = state.pop("pool", None)
    if pool is not None:
        pool.close()


def pca_landscape(setup: Setup, points: list[dict[str, np.ndarray]], labels: list[int],
                  is_ms: bool, size: int, unit: str, step_per_epoch: int, opts: Options,
                  state: dict[str, Any]) -> Landscape:
    """The training-process landscape of one interval (``labels``: its steps/epochs)."""
    plane = pca_plane(points, setup.selected(points[-1], is_ms), size, opts.normalization)
    z, path_z = _grid(setup, plane, opts, f"landscape {[labels[0], labels[-1]]} (PCA)", state)
    assert plane.path is not None and path_z is not None
    return Landscape(tag=interval_tag([labels[0], labels[-1]]), x=plane.x, y=plane.y, z=z,
                     decomposition="PCA", unit=unit, step_per_epoch=step_per_epoch,
                     intervals=list(labels), path_x=plane.path[:, 0], path_y=plane.path[:, 1],
                     path_z=path_z, convergence_point=(0.0, 0.0, float(path_z[-1])))


def random_landscape(setup: Setup, final: dict[str, np.ndarray], label: int, is_ms: bool,
                     size: int, unit: str, step_per_epoch: int, opts: Options,
                     state: dict[str, Any], rng: Any) -> Landscape:
    """The result landscape around ``final`` (``label``: its step/epoch)."""
    plane = random_plane(final, setup.selected(final, is_ms), size, rng, opts.normalization)
    z, _ = _grid(setup, plane, opts, f"landscape [{label}] (Random)", state)
    c = size // 2
    return Landscape(tag=interval_tag([label]), x=plane.x, y=plane.y, z=z,
                     decomposition="Random", unit=unit, step_per_epoch=step_per_epoch,
                     convergence_point=(float(plane.x[c]), float(plane.y[c]), float(z[c, c])))


def landscapes_of(meta: TrainMetadata, setup: Setup, opts: Options) -> list[Landscape]:
    """Every landscape ``meta`` asks for, in MindSpore's order: one PCA landscape per
    interval, then the Random one at the last interval's last point."""
    state: dict[str, Any] = {}
    rng = random_source(opts.seed)
    files = meta.model_params_file_map
    out = []

    for point in meta.points():  # intervals given to this call may name unsaved points
        if str(point) not in files:
            raise ValueError(f"collect_landscape['intervals']: train_metadata.json has no "
                             f"checkpoint of {meta.unit} {point}")

    def load(point: int) -> dict[str, np.ndarray]:
        what = f"train_metadata.json's checkpoint of {meta.unit} {point}"
        return _load(files[str(point)], setup, what)

    try:
        _all_of(meta, setup, opts, state, rng, load, out)
    finally:
        _finish(state)
    return out


def _all_of(meta: TrainMetadata, setup: Setup, opts: Options, state: dict[str, Any], rng: Any,
            load: Callable[[int], dict[str, np.ndarray]], out: list[Landscape]) -> None:
    files = meta.model_params_file_map
    if meta.create_landscape.get("train"):
        for interval in meta.epoch_group.values():
            pts = [load(p) for p in interval]
            out.append(pca_landscape(setup, pts, interval, _is_ms(files[str(interval[-1])]),
                                     meta.landscape_size, meta.unit, meta.step_per_epoch,
                                     opts, state))
            del pts
    if meta.create_landscape.get("result"):
        final = list(meta.epoch_group.values())[-1][-1]
        out.append(random_landscape(setup, load(final), final, _is_ms(files[str(final)]),
                                    meta.landscape_size, meta.unit, meta.step_per_epoch,
                                    opts, state, rng))


def _options(processes: int, progress: bool, seed: Any, allow_nonfinite: bool,
             normalization: str) -> Options:
    random_source(seed)  # checks it
    if normalization not in ("layer", "filter"):
        raise ValueError(f"normalization must be 'layer' or 'filter', got {normalization!r}")
    return Options(check_processes(processes), bool(progress), seed, bool(allow_nonfinite),
                   normalization=normalization)


def compute(summary_dir: str | os.PathLike[str], loss_fn: Callable[..., Any], *,
            model: Any = None, params: Any = None, data: Any = None,
            framework: str | None = None, collect_landscape: Mapping[str, Any] | None = None,
            processes: int = 1, progress: bool = True, seed: int | None = None,
            train: bool = True, points_per_call: int | None = None,
            directions_for: Any = None, allow_nonfinite: bool = False,
            normalization: str = "layer",
            output: str | os.PathLike[str] | None = None, write: bool = True,
            format: str | None = None) -> list[Landscape]:
    """The landscapes ``{summary_dir}/ckpt_dir/train_metadata.json`` asks for (a PCA one
    per interval, then the Random one at the last interval's last point), computed
    with ``loss_fn`` (see the module doc for each framework's contract), and, unless
    ``write=False``, recorded into ``output`` (default ``summary_dir``) as new event
    files in ``format`` ("mindinsight", "tensorboard", or None: the run's own dialect,
    see :func:`~summarylog.landscape.result.write_landscapes`), tags ``landscape_[a, b]`` /
    ``landscape_[k]``.  ``collect_landscape`` overrides the file's settings for this
    call (the file is not rewritten)."""
    meta = TrainMetadata.read(summary_dir)
    if collect_landscape is not None:
        meta.override(check_collect_landscape(collect_landscape, partial=True) or {})
    opts = _options(processes, progress, seed, allow_nonfinite, normalization)
    batches = take_batches(data, meta.num_samples)
    setup = framework_setup(loss_fn, model=model, params=params, batches=batches,
                            framework=framework, train=train, points_per_call=points_per_call,
                            directions_for=directions_for)
    out = landscapes_of(meta, setup, opts)
    if write and out:
        write_landscapes(output if output is not None else summary_dir, out, format=format)
    return out


def from_checkpoints(checkpoints: Sequence[Any], loss_fn: Callable[..., Any], *,
                     model: Any = None, params: Any = None, data: Any = None,
                     framework: str | None = None, num_samples: int | None = None,
                     landscape_size: int = 40,
                     create_landscape: Mapping[str, bool] | None = None,
                     points: Sequence[int] | None = None, unit: str = "step",
                     step_per_epoch: int = 0, processes: int = 1, progress: bool = True,
                     seed: int | None = None, train: bool = True,
                     points_per_call: int | None = None, directions_for: Any = None,
                     allow_nonfinite: bool = False, normalization: str = "layer",
                     output: str | os.PathLike[str] | None = None,
                     format: str | None = None) -> list[Landscape]:
    """Landscapes from ``checkpoints`` alone (no ``train_metadata.json``): paths
    (``.ckpt``, ``.pt``, ``.npz``) or in-memory ``{name: array}`` dicts / torch state
    dicts / JAX pytrees, in training order, the last being the final parameters.
    ``create_landscape`` (default both): ``"train"`` gives the PCA landscape of the
    whole sequence (at least 3 checkpoints), ``"result"`` the Random one at the last.
    ``points`` label them (default 1..T; the tags and the path's intervals use them).
    ``data`` is used whole unless ``num_samples`` is given.  Written to ``output``
    when given."""
    if isinstance(checkpoints, (str, bytes, os.PathLike)) or not isinstance(checkpoints, Sequence):
        raise TypeError(f"checkpoints must be a list of paths or dicts, "
                        f"got {type(checkpoints).__name__}")
    if not checkpoints:
        raise ValueError("checkpoints is empty")
    create = {"train": True, "result": True} if create_landscape is None else create_landscape
    settings = check_collect_landscape({"landscape_size": landscape_size, "unit": unit,
                                        "create_landscape": create}, partial=True) or {}
    labels = list(range(1, len(checkpoints) + 1)) if points is None else list(points)
    if len(labels) != len(checkpoints) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in labels):
        raise ValueError(f"points must be {len(checkpoints)} ints, one per checkpoint, "
                         f"got {points!r}")
    if settings["create_landscape"]["train"] and len(checkpoints) < 3:
        raise ValueError(f"checkpoints: the training-process landscape needs at least 3, got "
                         f"{len(checkpoints)} (or pass create_landscape={{'train': False, "
                         f"'result': True}})")
    opts = _options(processes, progress, seed, allow_nonfinite, normalization)
    setup = framework_setup(loss_fn, model=model, params=params,
                            batches=take_batches(data, num_samples), framework=framework,
                            train=train, points_per_call=points_per_call,
                            directions_for=directions_for)
    state: dict[str, Any] = {}
    named = [_load(c, setup, f"checkpoints[{i}]") for i, c in enumerate(checkpoints)]
    is_ms = _is_ms(checkpoints[-1])
    out = []
    try:
        if settings["create_landscape"]["train"]:
            out.append(pca_landscape(setup, named, labels, is_ms, settings["landscape_size"],
                                     unit, step_per_epoch, opts, state))
        if settings["create_landscape"]["result"]:
            out.append(random_landscape(setup, named[-1], labels[-1], is_ms,
                                        settings["landscape_size"], unit, step_per_epoch, opts,
                                        state, random_source(seed)))
    finally:
        _finish(state)
    if output is not None and out:
        write_landscapes(output, out, format=format)
    return out
