"""MindSpore's SummaryCollector policy, framework-neutral (no framework imports):
:class:`CollectionPolicy` holds its arguments, their checks and its rules of which steps
collect what; :class:`CollectorCore` runs that timeline over a SummaryRecord with the values
the adapters (``summarylog.adapters.*``) hand it.  In TensorBoard, lineage becomes hparams."""

from __future__ import annotations

import bisect
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .remote.urls import check_dir_or_url, is_url
from .collector_lane import CollectorLane, LaneSource
from .record_values import check_export_options
from .summary_record import SummaryRecord

__all__ = ["CollectionPolicy", "CollectorCore", "DEFAULT_COLLECT", "LOSS_TAG", "INPUT_TAG",
           "GRAPH_TAG"]

log = logging.getLogger("summarylog")

LOSS_TAG = "loss/auto"
INPUT_TAG = "input_data/auto"
GRAPH_TAG = "train_network/auto"
MAX_TENSOR_COLLECTIONS = 20
_HYPER_CONFIG_ENV = "MINDINSIGHT_HYPER_CONFIG"
_HYPER_CONFIG_MAX = 100_000

#: the items collected by default (MindSpore's defaults; the loss landscape's
#: settings, also on by default, are :data:`summarylog.landscape.DEFAULT_LANDSCAPE`)
DEFAULT_COLLECT: dict[str, Any] = {
    "collect_metric": True,
    "collect_graph": True,
    "collect_train_lineage": True,
    "collect_eval_lineage": True,
    "collect_input_data": True,
    "collect_dataset_graph": True,
    "histogram_regular": None,
}
_KNOWN = (*DEFAULT_COLLECT, "collect_landscape")


def _positive_int(name: str, v: Any, optional: bool = False) -> int | None:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if v <= 0:
        raise ValueError(f"{name} must be a positive int, got {v}")
    return v


def check_custom_lineage_data(data: Any) -> dict[str, Any]:
    """Custom lineage data: a dict of str keys and str/int/float values, else TypeError."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise TypeError(f"custom_lineage_data must be a dict, got {type(data).__name__}")
    for k, v in data.items():
        if not isinstance(k, str):
            raise TypeError(f"custom_lineage_data keys must be str, got {type(k).__name__}")
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise TypeError(f"custom_lineage_data[{k!r}] must be int, float or str, "
                            f"got {type(v).__name__}")
    return dict(data)


def _env_custom_lineage() -> dict[str, Any]:
    raw = os.environ.get(_HYPER_CONFIG_ENV)
    if not raw or len(raw) > _HYPER_CONFIG_MAX:
        return {}
    try:
        data = json.loads(raw).get("custom_lineage_data") or {}
        return check_custom_lineage_data(data)
    except (ValueError, TypeError, AttributeError) as exc:
        log.warning("summarylog: ignoring %s: %s", _HYPER_CONFIG_ENV, exc)
        return {}


class CollectionPolicy:
    """MindSpore's SummaryCollector arguments, validated as MindSpore does
    (non-positive frequencies: ValueError; wrong types: TypeError; unknown
    ``collect_specified_data`` keys: ValueError), and its collection rules."""

    def __init__(self, summary_dir: str | os.PathLike[str], collect_freq: int = 10,
                 collect_specified_data: Mapping[str, Any] | None = None,
                 keep_default_action: bool = True,
                 custom_lineage_data: Mapping[str, Any] | None = None,
                 collect_tensor_freq: int | None = None, max_file_size: int | None = None,
                 export_options: Mapping[str, Any] | None = None,
                 format: str = "mindinsight", num_process: int = 32) -> None:
        if isinstance(summary_dir, os.PathLike):
            summary_dir = os.fspath(summary_dir)
        if not isinstance(summary_dir, str) or not summary_dir:
            raise TypeError(f"summary_dir must be a non-empty str, got {summary_dir!r}")
        self.summary_dir = summary_dir
        self.collect_freq = _positive_int("collect_freq", collect_freq)
        self.collect_tensor_freq = _positive_int("collect_tensor_freq", collect_tensor_freq,
                                                 optional=True)
        if not isinstance(keep_default_action, bool):
            raise TypeError(f"keep_default_action must be a bool, "
                            f"got {type(keep_default_action).__name__}")
        self.keep_default_action = keep_default_action
        self.items = self._resolve(collect_specified_data, keep_default_action)
        #: checked ``collect_landscape`` settings (MindSpore's defaults unless given), or
        #: None: off
        self.landscape = self._landscape(collect_specified_data, keep_default_action)
        if is_url(summary_dir):  # the record spools and uploads; checkpoints are local files
            check_dir_or_url("summary_dir", summary_dir)
            if collect_specified_data and "collect_landscape" in collect_specified_data:
                raise ValueError(f"collect_landscape needs a local summary_dir (its "
                                 f"checkpoints are not uploaded), got the URL {summary_dir!r}")
            self.landscape = None
        self.num_process = _positive_int("num_process", num_process)
        regular = self.items.get("histogram_regular")
        self._regex = re.compile(regular) if regular else None
        self.custom_lineage_data = {**_env_custom_lineage(),
                                    **check_custom_lineage_data(custom_lineage_data)}
        self.max_file_size = _positive_int("max_file_size", max_file_size, optional=True)
        self.export_options = check_export_options(export_options)
        if format not in ("mindinsight", "tensorboard"):
            raise ValueError(f"format must be 'mindinsight' or 'tensorboard', got {format!r}")
        self.format = format

    @staticmethod
    def _landscape(spec: Any, keep_default: bool) -> dict[str, Any] | None:
        """MindSpore's rule: a given ``collect_landscape`` replaces the defaults whole;
        without one, the defaults when ``keep_default_action``, else nothing."""
        from .landscape.metadata import DEFAULT_LANDSCAPE, check_collect_landscape

        if spec is not None and "collect_landscape" in spec:
            return check_collect_landscape(spec["collect_landscape"])
        return check_collect_landscape(DEFAULT_LANDSCAPE) if keep_default else None

    @staticmethod
    def _resolve(spec: Any, keep_default: bool) -> dict[str, Any]:
        if spec is None:
            if keep_default:
                return dict(DEFAULT_COLLECT)
            # as MindSpore: nothing collected automatically, summary operators only
            return {**dict.fromkeys(DEFAULT_COLLECT, False), "histogram_regular": None,
                    "_histograms": False}
        if not isinstance(spec, Mapping):
            raise TypeError(f"collect_specified_data must be a dict, got {type(spec).__name__}")
        for k, v in spec.items():
            if not isinstance(k, str):
                raise TypeError(f"collect_specified_data keys must be str, got {type(k).__name__}")
            if k not in _KNOWN:
                raise ValueError(f"collect_specified_data: unknown key {k!r} "
                                 f"(known: {', '.join(_KNOWN)})")
            if k == "collect_landscape":
                continue  # checked by _landscape
            if k == "histogram_regular":
                if v is not None and not isinstance(v, str):
                    raise TypeError(f"histogram_regular must be a str or None, "
                                    f"got {type(v).__name__}")
                try:
                    re.compile(v or "")
                except re.error as exc:
                    raise ValueError(f"histogram_regular {v!r} is not a regular expression: "
                                     f"{exc}") from None
            elif not isinstance(v, bool):
                raise TypeError(f"collect_specified_data[{k!r}] must be a bool, "
                                f"got {type(v).__name__}")
        out = dict(DEFAULT_COLLECT) if keep_default else dict.fromkeys(DEFAULT_COLLECT, False)
        if not keep_default:
            out.update(histogram_regular=None, _histograms="histogram_regular" in spec)
        out.update({k: v for k, v in spec.items() if k != "collect_landscape"})
        return out

    def enabled(self, item: str) -> bool:
        return bool(self.items.get(item))

    @property
    def collect_histograms(self) -> bool:
        return self.items.get("_histograms", True)

    def histogram_names(self, names: Iterable[str]) -> list[str]:
        """The parameter names to histogram: those ``histogram_regular``
        matches (``re.match``), else the first five."""
        if not self.collect_histograms:
            return []
        names = list(names)
        if self._regex is None:
            return names[:5]
        return [n for n in names if self._regex.match(n)]

    def tensor_steps(self, total: int | None) -> set[int]:
        """Steps (or epochs) whose collections include tensors (MindSpore's
        _get_tensor_collect_range): ``collect_tensor_freq`` multiples, else at
        most 20 spread evenly over ``total`` (unknown total: the first 20
        multiples of ``collect_freq``)."""
        if total is None:
            freq = self.collect_tensor_freq or self.collect_freq
            return set(range(0, freq * MAX_TENSOR_COLLECTIONS, freq))
        if self.collect_tensor_freq is not None:
            return set(range(0, total + 1, self.collect_tensor_freq))
        if len(range(0, total + 1, self.collect_freq)) > MAX_TENSOR_COLLECTIONS:
            f = total // (MAX_TENSOR_COLLECTIONS - 1)
            if f > 1:
                return set(range(0, total + 1, f)[:MAX_TENSOR_COLLECTIONS])
            return set(range(0, total + 1)[:MAX_TENSOR_COLLECTIONS + 1])
        return set(range(0, total + 1, self.collect_freq))

    def plugins_at(self, current: int, tensor_steps: set[int],
                   first: bool) -> Callable[[str], bool] | None:
        """The plugin filter of a collection at ``current``, or None when
        nothing is collected: everything at the first step and at steps that
        are both multiples and tensor steps; tensors only at tensor steps;
        everything but tensors at other multiples of ``collect_freq``."""
        at_freq = first or current % self.collect_freq == 0
        at_tensor = first or current in tensor_steps
        if at_freq and at_tensor:
            return _every_plugin
        if at_tensor:
            return _tensors_only
        if at_freq:
            return _all_but_tensors
        return None


def _every_plugin(plugin: str) -> bool:
    return True


def _tensors_only(plugin: str) -> bool:
    return plugin == "tensor"


def _all_but_tensors(plugin: str) -> bool:
    return plugin != "tensor"


def image_nchw(x: Any) -> Any:
    """``x`` if it looks like a batch of images (4-D, 1 or 3 channels, NCHW
    or NHWC) as NCHW; else None.  Works on shapes only (no device read)."""
    shape = tuple(getattr(x, "shape", ()))
    if len(shape) != 4 or 0 in shape:
        return None
    if shape[1] in (1, 3):
        return x
    if shape[3] in (1, 3):
        if hasattr(x, "permute"):  # torch
            return x.permute(0, 3, 1, 2)
        if hasattr(x, "transpose"):
            return x.transpose(0, 3, 1, 2)
    return None


class CollectorCore:
    """The collection timeline over one SummaryRecord; adapters call
    ``step(current, ...)`` after every train step (or sink-mode epoch) with
    values that may be framework tensors, never read on the caller's thread."""

    def __init__(self, policy: CollectionPolicy, *, network_name: str | None = None,
                 rank: int | None = None, lazy_values: bool = False,
                 freeze: Callable[[list[Any]], tuple[list[Any], int]] | None = None,
                 read: Callable[[Any], Any] | None = None,
                 lane: LaneSource | None = None, params_chosen: bool = False) -> None:
        self.policy = policy
        #: the adapter hands only the parameters to histogram (chosen by the policy, plus
        #: their gradients): all are taken, not chosen again
        self.params_chosen = params_chosen
        #: values are checked and read on the background thread: immutable ones (JAX) as
        #: they are, others through ``freeze`` (private copies made at the step: torch's)
        self.lazy_values = lazy_values or freeze is not None
        self.freeze = freeze
        self.read = read  # a lazy value to host numpy, the collector's own (JAX's to_numpy)
        self._freq = policy.collect_freq
        self._later_bytes = 0  # memory of a lazy collection (estimated once per kind)
        self._later_count = -1  # the values it was estimated for
        self.record = SummaryRecord(policy.summary_dir, max_file_size=policy.max_file_size,
                                    export_options=policy.export_options,
                                    format=policy.format, rank=rank)
        #: the one fast path, for the loss and the last collection's parameters
        self.lane = CollectorLane(self.record, lane) if lane is not None and freeze else None
        self.network_name = network_name
        self.begin(None)
        self._first = True  # the first collection takes everything
        self._started = False  # first_step() done
        self._input_ok = policy.enabled("collect_input_data")
        self._loss_ok = policy.enabled("collect_metric")
        self.last_loss: Any = None
        self._hist_names: tuple[str, ...] = ()  # the parameter names hist_specs come from
        #: the histogrammed names and their (plugin, tag), as last chosen
        self.hist_keys: list[str] = []
        self.hist_specs: list[tuple[str, str]] = []
        self.collected_steps: list[int] = []
        self._last_collected: int | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def started(self) -> bool:
        """first_step() was done."""
        return self._started

    # -- timeline ---------------------------------------------------------------------
    def begin(self, total: int | None, mode: str = "train") -> None:
        """Start of training (``total`` steps or sink-mode epochs, if known)."""
        self.record.set_mode(mode)
        self.total = total
        self._tensor_steps = self.policy.tensor_steps(total)
        self._off_freq = sorted(t for t in self._tensor_steps if t % self._freq)  # usually none
        #: the next step that may collect (adapters skip step() before it)
        self.quiet_until = 0

    def first_step(self, current: int, *, graph: Any = None,
                   dataset_graph: Mapping[str, Any] | None = None) -> None:
        """What MindSpore records once, at the first train step: graph,
        dataset graph, custom lineage data (:meth:`step` calls it if no one did)."""
        self._started = True
        rec = self.record
        if graph is not None and self.policy.enabled("collect_graph"):
            try:
                rec.add_value("graph", GRAPH_TAG, graph)
            except TypeError as exc:
                log.warning("summarylog: graph not recorded: %s", exc)
        if dataset_graph is not None and self.policy.enabled("collect_dataset_graph"):
            rec.add_value("dataset_graph", "train_dataset", dataset_graph)
        rec.record(current)
        if self.policy.custom_lineage_data:
            rec.add_value("custom_lineage_data", "custom_lineage_data",
                          self.policy.custom_lineage_data)
            rec.record(current)

    def step(self, current: int, *, loss: Any = None, inputs: Any = None,
             params: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
             graph: Any = None, dataset_graph: Mapping[str, Any] | None = None,
             force: bool = False) -> bool:
        """After a train step: collect when the policy says so.  ``params``
        may be a callable giving ``{name: tensor}`` (called only when a
        collection happens).  Returns True when something was recorded."""
        if loss is not None:
            self.last_loss = loss
        if (current % self._freq and not self._first and not force  # the common case
                and current not in self._tensor_steps):
            if current >= self.quiet_until:  # past a due step not given (step numbers skip)
                self.quiet_until = self._next_due(current)
            return False
        if not self._started:
            self.first_step(current, graph=graph, dataset_graph=dataset_graph)
        first, self._first = self._first, False
        self.quiet_until = self._next_due(current)
        if first or force or current in self._tensor_steps:
            plugins = self.policy.plugins_at(current, self._tensor_steps, first or force)
        else:  # a multiple of collect_freq (the quiet test above), the common case
            plugins = _all_but_tensors
        if plugins is None or current == self._last_collected:
            return False
        self._last_collected = current
        rec = self.record
        if self.freeze is not None:  # copied now; checked and read in the background
            # the lane first (not at a step of tensors alone, nor with input images)
            if (self.lane is None or first or plugins is _tensors_only
                    or (self._input_ok and inputs is not None)
                    or not self._lane_collect(current, loss if self._loss_ok else None, params)):
                specs, values = self._values(plugins, loss, inputs, params)
                copies, nbytes = self.freeze(values)
                rec.record_later(current, lambda: [(p, t, v) for (p, t), v in zip(specs, copies)],
                                 nbytes, self._dropped, plugins, True)
        elif self.lazy_values:  # immutable values: named, checked and read in the background
            rec.record_later(current, lambda: self._read_later(plugins, loss, inputs, params),
                              self._later_bytes, self._dropped, plugins, self.read is not None,
                              borrowed=True)
        else:
            for (plugin, tag), value in zip(*self._values(plugins, loss, inputs, params)):
                try:
                    rec.add_value(plugin, tag, value)
                except (TypeError, ValueError) as exc:
                    self._dropped(plugin, tag, exc)
            rec.record(current, plugin_filter=plugins)
        self.collected_steps.append(current)
        if first:  # the run's files show up at once; the caller never waits for a device
            rec.flush_soon()
        return True

    def _lane_collect(self, current: int, loss: Any, params: Any) -> bool:
        """The loss and the parameters the last collection histogrammed, through the lane."""
        named = params() if callable(params) else params
        if not named or tuple(named) != self._hist_names:
            return False
        assert self.lane is not None
        return self.lane.collect(current, LOSS_TAG, loss, [named[k] for k in self.hist_keys],
                                 self.hist_specs)

    def _next_due(self, current: int) -> int:
        """The first step after ``current`` that is a ``collect_freq`` multiple or a tensor step."""
        due = current - current % self._freq + self._freq
        off = self._off_freq
        if off and off[-1] > current:
            due = min(due, off[bisect.bisect_right(off, current)])
        return due

    def _values(self, plugins: Callable[[str], bool], loss: Any, inputs: Any,
                params: Any) -> tuple[list[tuple[str, str]], list[Any]]:
        """The ``(plugin, tag)`` pairs of one collection, and their values."""
        specs: list[tuple[str, str]] = []
        out: list[Any] = []
        every = plugins is _all_but_tensors  # (the common case) takes all three below
        if self._input_ok and inputs is not None and (every or plugins("image")):
            img = image_nchw(inputs)
            if img is None:
                self._input_ok = False  # as MindSpore: the first non-image input stops it
            else:
                specs.append(("image", INPUT_TAG))
                out.append(img)
        if self._loss_ok and loss is not None and (every or plugins("scalar")):
            value = _mean(loss)
            if value is None:
                self._loss_ok = False
                log.warning("summarylog: the loss (%s) is not a number or tensor: not "
                            "collected", type(loss).__name__)
            else:
                specs.append(("scalar", LOSS_TAG))
                out.append(value)
        if params is not None and (every or plugins("histogram")):
            named = params() if callable(params) else params
            names = tuple(named)
            if names != self._hist_names:  # chosen again only when the names change
                self._hist_names = names
                self._later_count = -1
                self.hist_keys = (list(names) if self.params_chosen
                                  else self.policy.histogram_names(names))
                self.hist_specs = [("histogram", f"{name}/auto") for name in self.hist_keys]
            specs += self.hist_specs
            out += map(named.__getitem__, self.hist_keys)
        if self.lazy_values and self.freeze is None and len(out) != self._later_count:
            # the next collections' estimate, worked out again when what is collected
            # changes (a JAX array's nbytes is a Python property, not free)
            self._later_count = len(out)
            self._later_bytes = sum(getattr(v, "nbytes", 64) for v in out)
        return specs, out

    def _read_later(self, plugins: Callable[[str], bool], loss: Any, inputs: Any,
                    params: Any) -> list[tuple[str, str, Any]]:
        """A lazy collection's values, read to the host (background thread)."""
        specs, values = self._values(plugins, loss, inputs, params)
        read = self.read
        if read is not None:
            for i, value in enumerate(values):
                try:
                    values[i] = read(value)
                except Exception:  # left as it is: the value's checks report it
                    pass
        return [(plugin, tag, value) for (plugin, tag), value in zip(specs, values)]

    def _dropped(self, plugin: str, tag: str, exc: Exception) -> None:
        """A collected value that could not be recorded: logged; a bad input
        image stops input collection."""
        if plugin == "image":
            self._input_ok = False
            log.warning("summarylog: input images not collected: %s", exc)
        elif plugin == "scalar":
            self._loss_ok = False
            log.warning("summarylog: the loss not collected: %s", exc)
        elif plugin == "histogram":
            log.warning("summarylog: histogram of %s not collected: %s", tag.removesuffix("/auto"),
                        exc)
        else:
            log.warning("summarylog: %s %r not collected: %s", plugin or "a value", tag, exc)

    def epoch_end(self) -> None:
        self.record.flush_soon()  # as MindSpore's flush: the loop doesn't wait

    def train_end(self, lineage: Mapping[str, Any]) -> None:
        """Train lineage (TrainLineage fields as a dict of its sub-messages)."""
        if self.policy.enabled("collect_train_lineage"):
            lin = {k: v for k, v in lineage.items() if v}
            if self.last_loss is not None and "algorithm" in lin:
                loss = _mean(self.last_loss)
                if loss is not None:
                    from .values import resolve_scalar, snapshot_scalar, Deferred

                    snap = snapshot_scalar(loss, "loss")
                    value = resolve_scalar(snap) if isinstance(snap, Deferred) else snap
                    if math.isfinite(value):
                        lin["algorithm"] = {**lin["algorithm"], "loss": value}
            self.record.add_value("train_lineage", "train_lineage", _clean(lin))
            self._record_lineage()

    def eval_end(self, metrics: Mapping[str, Any], valid_dataset_path: str | None = None,
                 valid_dataset_size: int | None = None) -> None:
        """Eval lineage: metrics as JSON, and the validation dataset."""
        if not self.policy.enabled("collect_eval_lineage"):
            return
        clean = {}
        for k, v in dict(metrics).items():
            try:
                clean[str(k)] = ([float(x) for x in v] if isinstance(v, (list, tuple))
                                 else float(v))
            except (TypeError, ValueError):
                clean[str(k)] = str(v)
        vd = {"valid_dataset_path": valid_dataset_path, "valid_dataset_size": valid_dataset_size}
        self.record.add_value("eval_lineage", "eval_lineage",
                              _clean({"metric": json.dumps(clean), "valid_dataset": vd}))
        self._record_lineage()

    def _record_lineage(self) -> None:
        """Write pending lineage, without summary-operator data (MindSpore
        records it in eval mode, at step 0)."""
        mode = self.record.mode
        self.record.set_mode("eval")
        try:
            self.record.record(0)
        finally:
            self.record.set_mode(mode)

    def flush(self) -> None:
        self.record.flush()

    def close(self) -> None:
        self.quiet_until = 0  # adapters' step() checks (and raises) again
        if not self._closed:
            self._closed = True
            self.record.close()


def _mean(loss: Any) -> Any:
    """The mean of a loss (first item of a tuple or list): a framework
    tensor op (no device read) or a float; None if it is no number."""
    shape = getattr(loss, "shape", None)
    if shape is not None and not shape and not isinstance(loss, (bool, int, float)):
        return loss  # a 0-d tensor or array (the common case, first)
    if isinstance(loss, (list, tuple)):
        if not loss:
            return None
        loss = loss[0]
    if isinstance(loss, bool):
        return None
    if isinstance(loss, (int, float)):
        return float(loss)
    shape = getattr(loss, "shape", None)
    if shape is None:
        return None
    if tuple(shape) in ((), (1,)):
        return loss
    mean = getattr(loss, "mean", None)
    if mean is None:
        return None
    try:
        if type(loss).__module__.startswith("torch"):
            return loss.detach().float().mean()
        return mean()
    except Exception:
        return None


def _clean(d: Mapping[str, Any]) -> dict[str, Any]:
    """Drop None values (recursively) so the dict parses as a lineage message."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            v = _clean(v) or None
        if v is not None:
            out[k] = v
    return out
