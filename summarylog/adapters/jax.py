"""MindSpore's SummaryCollector for JAX step loops, ``summary()`` inside
``jax.jit``, and a CLU ``MetricWriter`` (summarylog.collector policy).

    with SummaryCollector("runs/a", optimizer_name="adam", batch_size=32) as sc:
        for step in range(1, n + 1):
            params, opt_state, loss = train_step(params, opt_state, batch)
            sc.step(step, loss=loss, params=params, batch=batch["image"])

Device arrays are never read on the training thread: the collector hands
them to summarylog's background thread, which reads them (so JAX's async
dispatch keeps running ahead).  Parameter names are pytree key paths joined
with "/" (``params/Dense_0/kernel``), which ``histogram_regular`` matches.
Under multi-host JAX, ``jax.process_index()`` goes into file names and only
process 0 writes by default.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from ..collector import CollectionPolicy
from ..landscape.checkpoints import flatten_pytree
from ..landscape.collect import LANDSCAPE_OFF, LandscapeSaver
from .base import CollectorBase, op_key
from ..values import to_numpy

__all__ = ["SummaryCollector", "summary", "MetricWriter", "path_name", "named_leaves"]

log = logging.getLogger("summarylog")

def path_name(path: tuple[Any, ...]) -> str:
    """A pytree key path as a "/"-joined name: ``params/Dense_0/kernel``."""
    return "/".join(next((str(getattr(k, a)) for a in ("key", "name", "idx") if hasattr(k, a)),
                         str(k)) for k in path)


def named_leaves(tree: Any) -> dict[str, Any]:
    """``{path_name: leaf}`` of a pytree's array leaves, in flattening order
    (the names of a tree structure are worked out once)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    try:
        names = _leaf_names.get(treedef)
    except Exception:  # node metadata that cannot be compared (arrays): not cached
        names, treedef = None, None
    if names is None:
        with_path, _ = jax.tree_util.tree_flatten_with_path(tree)
        names = [path_name(p) for p, _ in with_path]
        if treedef is not None:
            if len(_leaf_names) >= 64:
                _leaf_names.clear()
            with contextlib.suppress(Exception):
                _leaf_names[treedef] = names
    return {n: v for n, v in zip(names, leaves) if hasattr(v, "shape")}


_leaf_names: dict[Any, list[str]] = {}  # treedef -> its leaves' path names


def summary(tag: str, x: Any, kind: str = "scalar") -> None:
    """Record ``x`` under ``tag`` from inside a (jitted) step function, like
    MindSpore's summary operators: the value reaches the host through
    ``jax.debug.callback`` and lands in the active collector's next
    collection.  When no collector is active at trace time nothing is
    emitted, so it costs nothing (a function traced then keeps no callback:
    create the collector before the first call of the jitted step)."""
    key = op_key(tag, kind)
    if not SummaryCollector._active:
        return
    jax.debug.callback(lambda v: SummaryCollector.feed(key, np.asarray(v)), x)


def _jaxpr_graph(fn: Callable[..., Any], args: tuple[Any, ...], fmt: str) -> Any:
    """The jaxpr of ``fn(*args)`` as a graph: a TensorBoard GraphDef or a
    MindSpore GraphProto, one node per equation (op = primitive)."""
    closed = jax.make_jaxpr(fn)(*args)
    jaxpr = closed.jaxpr
    inputs = [f"input_{i}" for i in range(len(jaxpr.invars))]
    names: dict[Any, str] = dict(zip(jaxpr.invars, inputs))
    nodes: list[tuple[str, str, list[str]]] = []
    for k, eqn in enumerate(jaxpr.eqns):
        name = f"{eqn.primitive.name}_{k}"
        ins = [names[v] for v in eqn.invars if not hasattr(v, "val") and v in names]
        nodes.append((name, eqn.primitive.name, ins))
        for o in eqn.outvars:
            names[o] = name
    if fmt == "tensorboard":
        from tensorboard.compat.proto import graph_pb2, node_def_pb2

        g = graph_pb2.GraphDef()
        for name in inputs:
            g.node.append(node_def_pb2.NodeDef(name=name, op="Placeholder"))
        for name, op, ins in nodes:
            g.node.append(node_def_pb2.NodeDef(name=name, op=op, input=ins))
        return g.SerializeToString()
    from ..pb import ms

    g = ms.GraphProto(name=getattr(fn, "__name__", "step"))
    for name in inputs:
        g.parameters.add(name=name)
    for name, op, ins in nodes:
        n = g.node.add(name=name, op_type=op, scope="Default", full_name=f"Default/{name}")
        for src in ins:
            n.input.add(name=src, type=0)
    return g


class SummaryCollector(CollectorBase):
    """Collect loss, input images, parameter (and gradient) histograms, the
    step's graph and lineage from a JAX step loop, with MindSpore's rules.

    Args:
      summary_dir: the run directory.
      collect_freq, collect_specified_data, keep_default_action,
      custom_lineage_data, collect_tensor_freq, max_file_size,
      export_options: as MindSpore's SummaryCollector.
      format: ``"tensorboard"`` (default) or ``"mindinsight"``.
      total_steps: planned steps (spreads the <= 20 tensor collections).
      optimizer_name, loss_name, network_name, batch_size, epochs,
      dataset_size: lineage facts JAX cannot know.
      collect_gradients: also histogram ``grads`` (``<name>.grad/auto``).
      num_process: as MindSpore's (checked, kept as ``policy.num_process``).
      process0_only: under multi-host JAX only process 0 writes (default).

    ``collect_landscape`` (on by default, as in MindSpore) saves the ``params`` given
    to :meth:`step` (or :meth:`epoch_end` with unit ``"epoch"``) into
    ``{summary_dir}/ckpt_dir`` as ``{network_name or Net}_{point}_{unit}.npz`` (names as
    :func:`summarylog.landscape.checkpoints.flatten_pytree`), read from the device on a
    background thread, and ``train_metadata.json`` at :meth:`close`; process 0 alone
    saves them.  Arrays the step donates (``donate_argnums``) may be gone before they
    are read: such a point is logged and left out.
    """

    _active: list["SummaryCollector"] = []  # open ones, newest last: summary() feeds it

    def __init__(self, summary_dir: str | os.PathLike[str], *, collect_freq: int = 10,
                 collect_specified_data: Mapping[str, Any] | None = None,
                 keep_default_action: bool = True,
                 custom_lineage_data: Mapping[str, Any] | None = None,
                 collect_tensor_freq: int | None = None, max_file_size: int | None = None,
                 export_options: Mapping[str, Any] | None = None, format: str = "tensorboard",
                 total_steps: int | None = None, optimizer_name: str | None = None,
                 loss_name: str | None = None, network_name: str | None = None,
                 batch_size: int | None = None, epochs: int | None = None,
                 dataset_size: int | None = None, collect_gradients: bool = False,
                 process0_only: bool = True, num_process: int = 32) -> None:
        super().__init__(CollectionPolicy(
            summary_dir, collect_freq, collect_specified_data, keep_default_action,
            custom_lineage_data, collect_tensor_freq, max_file_size, export_options, format,
            num_process))
        self.facts = {"optimizer": optimizer_name, "loss_function": loss_name,
                      "network": network_name, "batch_size": batch_size, "epoch": epochs,
                      "dataset_size": dataset_size}
        self.collect_gradients = bool(collect_gradients)
        self.process = jax.process_index()
        self.enabled = not (process0_only and self.process != 0)
        self._names: list[str] | None = None
        self._lr: Any = None
        self.last_step = 0
        if self.enabled:
            rank = self.process if jax.process_count() > 1 else None
            self._open(rank=rank, lazy_values=True, read=to_numpy,
                       params_chosen=True).begin(total_steps)
        self._register()  # (every process traces the same step: summary() alike in all)
        #: collect_landscape's checkpoints (the params pytree as .npz); LANDSCAPE_OFF when off
        self.landscape: Any = LANDSCAPE_OFF
        self.epoch = 0
        self._first_epoch_steps = 0
        self._last_params: Any = None  # the newest params given (the end's point)
        self._keep_params = False
        self._warned_no_params = False
        # process 0 alone: the processes of a data-parallel run hold the same parameters
        if self.enabled and self.process == 0 and self.policy.landscape is not None:
            self.landscape = LandscapeSaver(self.policy.summary_dir, self.policy.landscape,
                                            ".npz")
            self._keep_params = True

    def _histograms(self, params: Any, grads: Any) -> Callable[[], dict[str, Any]]:
        def named() -> dict[str, Any]:
            leaves = named_leaves(params) if params is not None else {}
            if self._names is None:
                self._names = self.policy.histogram_names(leaves)
            out = {n: leaves[n] for n in self._names if n in leaves}
            if self.collect_gradients and grads is not None:
                g = named_leaves(grads)
                out.update({f"{n}.grad": g[n] for n in self._names if n in g})
            return out
        return named

    def step(self, step: int, *, loss: Any = None, params: Any = None, grads: Any = None,
             batch: Any = None, learning_rate: Any = None, opt_state: Any = None,
             graph: tuple[Callable[..., Any], tuple[Any, ...]] | None = None) -> bool:
        """After train step ``step`` (1-based): collect when the policy says
        so.  ``loss``, ``params``, ``grads``, ``batch`` (image-like inputs)
        may be device arrays; ``learning_rate`` a number, array or optax
        schedule (evaluated at ``step``); ``opt_state`` of
        ``optax.inject_hyperparams`` gives it too; ``graph=(fn, args)`` the
        step function and example args for the graph (first step only).
        Returns True when the step was collected."""
        core = self.core
        if (type(step) is int and core is not None and self.last_step < step < core.quiet_until
                and learning_rate is None and opt_state is None):
            # the common case, a step that collects nothing: no more work than this
            self.last_step = step
            if loss is not None:
                core.last_loss = loss
            if self._keep_params and params is not None:
                self._last_params = params  # a reference: JAX arrays do not change
            if step >= self.landscape.next_step:  # (an int compare when nothing is due)
                self._landscape_at(step, params)
            return False
        self._check_open()
        if type(step) is not int:
            if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
                raise TypeError(f"step must be an int, got {type(step).__name__}")
            step = int(step)
        self.last_step = step
        if self._keep_params and params is not None:
            self._last_params = params
        if step >= self.landscape.next_step:
            self._landscape_at(step, params)
        if learning_rate is not None or opt_state is not None:
            lr = self._learning_rate(learning_rate, opt_state, step)
            if lr is not None:
                self._lr = lr
        if core is None:
            self._take_ops()
            return False
        g = None
        if graph is not None and not core.started and self.policy.enabled("collect_graph"):
            try:
                fn, args = graph
                g = _jaxpr_graph(fn, tuple(args), self.policy.format)
            except Exception as exc:
                log.warning("summarylog: the step's graph could not be traced: %s", exc)
        return core.step(step, loss=loss, inputs=batch, params=self._histograms(params, grads),
                         graph=g)

    def epoch_end(self, params: Any = None) -> None:
        """At the end of an epoch (``params``: the parameters then; default: the last
        ones given to :meth:`step`): flush without waiting, and with
        ``collect_landscape``'s unit ``"epoch"``, save the parameters at interval epochs."""
        self.epoch += 1
        if self.epoch == 1:
            self._first_epoch_steps = self.last_step
        if self.core is not None:
            self.core.epoch_end()
        if self.epoch >= self.landscape.next_epoch:
            self._landscape_at(self.epoch, params if params is not None else self._last_params)

    def _landscape_at(self, point: int, params: Any) -> None:
        if params is None:
            if self.landscape.wants(point) and not self._warned_no_params:
                self._warned_no_params = True
                log.warning("summarylog: collect_landscape: no params= given at %s %d: "
                            "its parameters are not saved", self.landscape.unit, point)
            self.landscape.passed(point)
            return
        self.landscape.at(point, self._network_name(), lambda: flatten_pytree(params),
                          lambda: _tree_bytes(params))

    def _network_name(self) -> str:
        return self.facts["network"] or "Net"

    def _step_per_epoch(self) -> int:
        size, batch = self.facts["dataset_size"], self.facts["batch_size"]
        if isinstance(size, int) and isinstance(batch, int) and size > 0 and batch > 0:
            return -(-size // batch)
        return self._first_epoch_steps

    def close(self) -> None:
        """Write the train lineage, the landscape's metadata, and close the files."""
        if self._closed:
            return
        saver = self.landscape
        try:
            if saver is not LANDSCAPE_OFF:
                params = self._last_params
                last = self.last_step if saver.unit == "step" else self.epoch
                saver.finish(last, self._network_name(),
                             (lambda: flatten_pytree(params)) if params is not None else None,
                             lambda: _tree_bytes(params), step_per_epoch=self._step_per_epoch())
                saver.close()
                self._last_params = None
        finally:
            super().close()

    @staticmethod
    def _learning_rate(lr: Any, opt_state: Any, step: int) -> Any:
        if lr is None and opt_state is not None:
            # the inject_hyperparams state itself, or one inside a chain's tuple
            states = [opt_state, *(opt_state if isinstance(opt_state, (tuple, list)) else ())]
            for st in states:
                hp = getattr(st, "hyperparams", None)
                if isinstance(hp, Mapping) and "learning_rate" in hp:
                    return hp["learning_rate"]
            return None
        if callable(lr):  # an optax schedule: evaluated at close (no op per step)
            return functools.partial(lr, step)
        return lr

    def evaluate_end(self, metrics: Mapping[str, Any]) -> None:
        """After evaluation: the eval lineage (metrics)."""
        if self.core is not None:
            self.core.eval_end({k: np.asarray(v).item() if hasattr(v, "shape") else v
                                for k, v in metrics.items()})

    def _train_lineage(self) -> dict[str, Any] | None:
        f = self.facts
        lr = self._lr() if callable(self._lr) else self._lr
        lr = float(np.asarray(lr)) if lr is not None else None
        return {
            "hyper_parameters": {"optimizer": f["optimizer"], "learning_rate": lr,
                                 "loss_function": f["loss_function"], "epoch": f["epoch"],
                                 "batch_size": f["batch_size"],
                                 "device_num": jax.device_count(),
                                 "parallel_mode": ("data_parallel" if jax.device_count() > 1
                                                   else "stand_alone")},
            "train_dataset": {"train_dataset_size": f["dataset_size"]},
            "algorithm": {"network": f["network"]},
        }


def _tree_bytes(tree: Any) -> int:
    return sum(int(getattr(leaf, "nbytes", 0)) for leaf in jax.tree_util.tree_leaves(tree))


def _clu_interface() -> Any:
    """clu.metric_writers.interface without the package __init__ (which imports TensorFlow)."""
    spec = importlib.util.find_spec("clu")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "metric_writers",
                        "interface.py")
    if not os.path.exists(path):
        return None
    name = "clu.metric_writers.interface"
    if name in sys.modules:
        return sys.modules[name]
    mod_spec = importlib.util.spec_from_file_location(name, path)
    assert mod_spec is not None and mod_spec.loader is not None
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


_iface = _clu_interface()
_Base: Any = _iface.MetricWriter if _iface is not None else object


class MetricWriter(_Base):  # type: ignore[misc, valid-type]
    """``clu.metric_writers.MetricWriter`` over summarylog.Writer (TensorBoard
    files): scalars, images (NHWC), texts, histograms, audio ``[N, T, C]`` and
    hparams as CLU's TensorBoard writer writes them (hparams flattened with
    dots); videos ``[N, T, H, W, C]`` as torch's ``add_video`` (an animated GIF
    at 4 frames a second; needs Pillow, ``summarylog[video]``).  Point clouds
    are not supported (logged once, skipped)."""

    def __init__(self, logdir: str | os.PathLike[str], **writer_kwargs: Any) -> None:
        from ..writer import Writer

        self._writer = Writer(logdir, **writer_kwargs)
        self._warned: set[str] = set()

    def write_summaries(self, step: int, values: Mapping[str, Any],
                        metadata: Mapping[str, Any] | None = None) -> None:
        for key, value in values.items():
            self._writer.add_tensor(key, np.asarray(value), int(step))

    def write_scalars(self, step: int, scalars: Mapping[str, Any]) -> None:
        self._writer.log(dict(scalars), step=int(step))

    def write_images(self, step: int, images: Mapping[str, Any]) -> None:
        for key, value in images.items():
            arr = np.asarray(value)
            if arr.ndim == 3:
                arr = arr[None]
            self._writer.add_images(key, arr, int(step), dataformats="NHWC")

    def _unsupported(self, what: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning("summarylog MetricWriter: %s are not supported; skipped", what)

    def write_videos(self, step: int, videos: Mapping[str, Any]) -> None:
        """Each video ``[N, T, H, W, C]`` or ``[T, H, W, C]`` (uint8, or floats in
        [0, 1]) as one GIF of its clips tiled, as torch's ``add_video`` tiles them."""
        from .. import media_codecs
        from ..checks import check_step, check_tag, check_walltime
        from . import clu_payloads as clu

        media_codecs.require_pillow("MetricWriter.write_videos", "video")
        step = check_step(step)
        clips = {check_tag(key, "videos key"): clu.check_clip_video(key, value)
                 for key, value in videos.items()}  # every value checked before any is written
        wall = check_walltime(None)
        for key, ntchw in clips.items():
            self._writer.submit(clu.video_payload, wall, step, key, ntchw, clu.VIDEO_FPS)

    def write_audios(self, step: int, audios: Mapping[str, Any], *, sample_rate: int) -> None:
        """Each ``[N, T, C]`` batch of clips (floats in [-1, 1]) as tf.summary.audio
        writes it: N 16-bit WAVs of C channels under one tag (the Audio tab's samples)."""
        from ..checks import check_step, check_tag, check_walltime
        from . import clu_payloads as clu

        rate = clu.check_sample_rate(sample_rate)
        step = check_step(step)
        clips = {check_tag(key, "audios key"): clu.check_clips(key, value)
                 for key, value in audios.items()}
        wall = check_walltime(None)
        for key, arr in clips.items():
            self._writer.submit(clu.audio_payload, wall, step, key, arr, rate)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        for key, text in texts.items():
            self._writer.add_text(key, str(text), int(step))

    def write_histograms(self, step: int, arrays: Mapping[str, Any],
                         num_buckets: Mapping[str, int] | None = None) -> None:
        for key, value in arrays.items():
            bins = (num_buckets or {}).get(key, 30)
            self._writer.add_histogram(key, np.asarray(value), int(step), bins=int(bins))

    def write_pointcloud(self, step: int, point_clouds: Mapping[str, Any], *,
                         point_colors: Any = None, configs: Any = None) -> None:
        self._unsupported("point clouds")

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Nested hparams flattened as CLU does (``"model.depth"``, list items by index,
        None as ""), written at step 0 as one session start whose group is named by
        the values (runs with equal hparams group together, as tf.summary does)."""
        from ..checks import check_walltime
        from . import clu_payloads as clu

        values = clu.hparams_values(hparams)
        payload = clu.hparams_session_payload(check_walltime(None), values)
        self._writer.submit(lambda: [payload])

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
