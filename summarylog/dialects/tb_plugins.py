"""Event payloads of TensorBoard's plugins as torch.utils.tensorboard and tensorboardX
write them: hparams (experiment record, session start and end), pr_curves,
custom_scalars, mesh, tensors, new-style scalars, and histograms by the peers' bucket
rules.  Pure functions returning serialized ``Event`` bytes; SummaryWriter's plugin
methods validate on the caller's thread and run these on the writer's."""

from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..checks import check_tag
from ..pb import POOL, message_class, tb
from ..values import framework_of, to_numpy
from .tb_bins import peer_buckets
from .tensorboard import (DTYPES, hparam_value, plugin_metadata, tensor_proto,
                          value_event)

__all__ = ["hparams_events", "hparam_values", "check_domain_discrete", "histogram_event",
           "histogram_raw_event", "pr_curve_data", "pr_curve_event", "pr_curve_raw_event",
           "custom_scalars_event", "mesh_event", "tensor_event", "scalar_event",
           "EXPERIMENT_TAG", "SESSION_START_TAG", "SESSION_END_TAG", "CUSTOM_SCALARS_TAG",
           "MAX_THRESHOLDS"]

EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_TAG = "_hparams_/session_start_info"
SESSION_END_TAG = "_hparams_/session_end_info"

_DT_STRING = tb.DataType.values_by_name["DT_STRING"].number


# ---- hparams ------------------------------------------------------------------------------

def _hparam_value(key: str, v: Any) -> bool | float | str | None:
    """One hparam as the HParams tab stores it: bool, float (numbers, one-element
    arrays and tensors) or str (callables by name, as tensorboardX); None: left out."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, np.ndarray) or (framework_of(v) is not None and hasattr(v, "shape")):
        arr = to_numpy(v, f"hparam_dict[{key!r}]")
        if arr.size != 1 or arr.dtype.kind not in "biuf":
            raise TypeError(f"hparam_dict[{key!r}] must be one number, got an array of "
                            f"shape {arr.shape} and dtype {arr.dtype}")
        x = arr.reshape(()).item()
        return bool(x) if arr.dtype.kind == "b" else float(x)
    if callable(v):
        return str(getattr(v, "__name__", v))
    raise TypeError(f"hparam_dict[{key!r}] must be bool, int, float, str or None, "
                    f"got {type(v).__name__}")


def hparam_values(hparam_dict: Any) -> dict[str, bool | float | str]:
    """``hparam_dict`` checked and coerced (None values left out, as the peers do)."""
    if not isinstance(hparam_dict, Mapping):
        raise TypeError(f"hparam_dict must be a dict of name to value, "
                        f"got {type(hparam_dict).__name__}")
    out = {}
    for key, v in hparam_dict.items():
        check_tag(key, "hparam_dict key")
        value = _hparam_value(key, v)
        if value is not None:
            out[key] = value
    return out


def check_domain_discrete(domain: Any, values: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``hparam_domain_discrete`` checked against the coerced hparams: each key an
    hparam, each value a list of that hparam's type (numbers for numbers)."""
    if domain is None:
        return {}
    if not isinstance(domain, Mapping):
        raise TypeError(f"hparam_domain_discrete must be a dict of name to list of values, "
                        f"got {type(domain).__name__}")
    out = {}
    for key, choices in domain.items():
        if key not in values:
            raise ValueError(f"hparam_domain_discrete[{key!r}] names no hparam of hparam_dict")
        if not isinstance(choices, (list, tuple)):
            raise TypeError(f"hparam_domain_discrete[{key!r}] must be a list, "
                            f"got {type(choices).__name__}")
        kind = type(values[key])
        for d in choices:
            ok = (isinstance(d, (bool, np.bool_)) if kind is bool
                  else isinstance(d, str) if kind is str
                  else isinstance(d, numbers.Real) and not isinstance(d, (bool, np.bool_)))
            if not ok:
                raise TypeError(f"hparam_domain_discrete[{key!r}] must hold values of the "
                                f"type of hparam_dict[{key!r}] ({kind.__name__}), got {d!r}")
        out[key] = [bool(d) if kind is bool else float(d) if kind is float else d
                    for d in choices]
    return out


_HP_TYPES = POOL.FindEnumTypeByName("summarylog.tb.HParamDataType").values_by_name
_HP_TYPE = {bool: _HP_TYPES["DATA_TYPE_BOOL"].number, float: _HP_TYPES["DATA_TYPE_FLOAT64"].number,
            str: _HP_TYPES["DATA_TYPE_STRING"].number}


def hparams_events(wall_time: float, hparam_dict: Mapping[str, Any],
                   metric_dict: Mapping[str, Any],
                   hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
                   *, step: int = 0, torch_bools: bool = False) -> list[bytes]:
    """The three hparams-plugin events torch's ``add_hparams`` writes, in its order:
    the experiment record (an HParamInfo per hparam, with ``hparam_domain_discrete``'s
    choices; a MetricInfo for exactly the keys of ``metric_dict``), the session start
    info (the values) and the session end info (success).  Metric values are not
    written here: log them as scalars in the same run.

    Values: bool, int, float, str, one-element arrays or tensors (numbers), callables
    (their name, as tensorboardX); None values are left out.  Bools are written as
    bools (torch writes them as 1.0/0.0: its int test catches them first;
    ``torch_bools=True`` writes them as torch does, e.g. to match TensorBoardLogger).
    TypeError/ValueError naming the argument for anything else."""
    values = hparam_values(hparam_dict)
    if not isinstance(metric_dict, Mapping):
        raise TypeError(f"metric_dict must be a dict of tag to value, "
                        f"got {type(metric_dict).__name__}")
    for tag in metric_dict:
        check_tag(tag, "metric_dict key")
    domain = check_domain_discrete(hparam_domain_discrete, values)
    if torch_bools:
        values = {k: float(v) if isinstance(v, bool) else v for k, v in values.items()}
        domain = {k: [float(d) if isinstance(d, bool) else d for d in v]
                  for k, v in domain.items()}
    ListValue = message_class("google.protobuf.ListValue")
    HParamInfo = tb.HParamInfo
    infos = []
    start = tb.SessionStartInfo()
    for key, v in values.items():
        start.hparams[key].CopyFrom(hparam_value(key, v))
        info = HParamInfo(name=key, type=_HP_TYPE[type(v)])
        if key in domain:
            info.domain_discrete.CopyFrom(
                ListValue(values=[hparam_value(key, d) for d in domain[key]]))
        infos.append(info)
    experiment = tb.Experiment(hparam_infos=infos, metric_infos=[
        tb.MetricInfo(name=tb.MetricName(tag=tag)) for tag in metric_dict])
    end = tb.SessionEndInfo(status=1)  # STATUS_SUCCESS
    out = []
    for tag, field, msg in ((EXPERIMENT_TAG, "experiment", experiment),
                            (SESSION_START_TAG, "session_start_info", start),
                            (SESSION_END_TAG, "session_end_info", end)):
        content = tb.HParamsPluginData(version=0, **{field: msg}).SerializeToString()
        out.append(value_event(wall_time, step, tag=tag,
                               metadata=plugin_metadata("hparams", content)))
    return out



# ---- histograms -------------------------------------------------------------------------

def histogram_event(wall_time: float, step: int, tag: str, values: np.ndarray,
                    bins: int | str | np.ndarray, max_bins: int | None,
                    on_cap: Callable[[int, int], None] | None = None) -> bytes:
    """A histogram event binned as the peers bin (see :mod:`.tb_bins`)."""
    b = peer_buckets(np.asarray(values, dtype=np.float64).ravel(), bins, max_bins, on_cap)
    h = tb.HistogramProto(min=b.min, max=b.max, num=float(b.num), sum=b.sum,
                          sum_squares=b.sum_squares, bucket_limit=b.limits.tolist(),
                          bucket=b.counts.tolist())
    return value_event(wall_time, step, tag=tag, histo=h)


def histogram_raw_event(wall_time: float, step: int, tag: str, stats: Sequence[float],
                        bucket_limits: np.ndarray, bucket_counts: np.ndarray) -> bytes:
    """A histogram event of given statistics ``(min, max, num, sum, sum_squares)``
    and buckets (right edges and counts), as the peers' add_histogram_raw writes it."""
    lo, hi, num, total, squares = stats
    h = tb.HistogramProto(min=lo, max=hi, num=num, sum=total, sum_squares=squares,
                          bucket_limit=bucket_limits.tolist(), bucket=bucket_counts.tolist())
    return value_event(wall_time, step, tag=tag, histo=h)


# ---- pr curves --------------------------------------------------------------------------

#: the most thresholds the peers write (they cap num_thresholds at 127)
MAX_THRESHOLDS = 127
_MINIMUM_COUNT = 1e-7  # the peers' (and TensorBoard's) guard against dividing by zero


def pr_curve_data(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int,
                  weights: np.ndarray | float | None) -> np.ndarray:
    """``[6, num_thresholds]``: TP, FP, TN, FN, precision, recall at thresholds
    ``i / (num_thresholds - 1)``, as the peers compute them (a prediction counts at
    every threshold up to its bucket ``floor(p * (num_thresholds - 1))``; predictions
    outside [0, 1] fall out; precision and recall divide by at least 1e-7)."""
    w = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    rng = (0, num_thresholds - 1)
    tp_b = np.histogram(buckets, bins=num_thresholds, range=rng, weights=positive * w)[0]
    fp_b = np.histogram(buckets, bins=num_thresholds, range=rng, weights=(1.0 - positive) * w)[0]
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_event(wall_time: float, step: int, tag: str, data: np.ndarray,
              num_thresholds: int) -> bytes:
    content = tb.PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    arr = np.asarray(data, dtype=np.float32)
    t = tb.TensorProto(dtype=DTYPES[np.dtype(np.float32)], float_val=arr.ravel().tolist(),
                       tensor_shape={"dim": [{"size": arr.shape[0]}, {"size": arr.shape[1]}]})
    return value_event(wall_time, step, tag=tag, metadata=plugin_metadata("pr_curves", content),
                       tensor=t)


def pr_curve_event(wall_time: float, step: int, tag: str, labels: np.ndarray,
                   predictions: np.ndarray, num_thresholds: int,
                   weights: np.ndarray | float | None) -> bytes:
    """The pr_curves event of ``add_pr_curve`` (computed here: call it off the
    caller's thread).  ``num_thresholds`` above 127 is written as 127, as the peers."""
    n = min(num_thresholds, MAX_THRESHOLDS)
    return _pr_event(wall_time, step, tag, pr_curve_data(labels, predictions, n, weights), n)


def pr_curve_raw_event(wall_time: float, step: int, tag: str, columns: Sequence[np.ndarray],
                       num_thresholds: int) -> bytes:
    """The pr_curves event of ``add_pr_curve_raw``: the six given rows."""
    return _pr_event(wall_time, step, tag, np.stack(columns),
                     min(num_thresholds, MAX_THRESHOLDS))


# ---- custom scalars ---------------------------------------------------------------------

CUSTOM_SCALARS_TAG = "custom_scalars__config__"


def custom_scalars_event(wall_time: float, step: int,
                         layout: Sequence[tuple[str, Sequence[tuple[str, str, list[str]]]]]
                         ) -> bytes:
    """The custom_scalars layout event: ``layout`` is ``[(category, [(title, kind,
    tags), ...]), ...]`` with kind ``"Margin"`` (tags: value, lower, upper) or any
    other (a multiline chart of the tags' regular expressions), as the peers read it."""
    Series = message_class("summarylog.tb.MarginChartContent.Series")
    categories = []
    for category, charts in layout:
        out = []
        for title, kind, tags in charts:
            if kind == "Margin":
                out.append(tb.Chart(title=title, margin=tb.MarginChartContent(
                    series=[Series(value=tags[0], lower=tags[1], upper=tags[2])])))
            else:
                out.append(tb.Chart(title=title, multiline=tb.MultilineChartContent(tag=tags)))
        categories.append(tb.Category(title=category, chart=out))
    body = tb.Layout(category=categories).SerializeToString()
    t = tb.TensorProto(dtype=_DT_STRING, string_val=[body])
    return value_event(wall_time, step, tag=CUSTOM_SCALARS_TAG,
                       metadata=plugin_metadata("custom_scalars"), tensor=t)


# ---- mesh -------------------------------------------------------------------------------

_MESH_KINDS = {"VERTEX": 1, "FACE": 2, "COLOR": 3}  # MeshPluginData.ContentType


def mesh_event(wall_time: float, step: int, tag: str, parts: Mapping[str, np.ndarray],
               json_config: str) -> bytes:
    """One event of the mesh plugin's tensors ``<tag>_VERTEX``, ``_FACE``, ``_COLOR``
    (those given in ``parts``, keyed by those names; each [B, N, 3], written as
    float32), each with MeshPluginData naming ``tag``, the parts present and its shape."""
    order = [k for k in ("VERTEX", "FACE", "COLOR") if k in parts]
    components = 0
    for k in order:
        components |= 1 << _MESH_KINDS[k]
    ev = tb.Event(wall_time=wall_time, step=step)
    for k in order:
        arr = np.asarray(parts[k], dtype=np.float32)
        content = tb.MeshPluginData(version=0, name=tag, content_type=_MESH_KINDS[k],
                                    components=components, shape=list(arr.shape),
                                    json_config=json_config).SerializeToString()
        ev.summary.value.add(tag=f"{tag}_{k}", metadata=plugin_metadata("mesh", content),
                             tensor=tensor_proto(arr))
    return ev.SerializeToString()


# ---- tensors and scalars ----------------------------------------------------------------

def tensor_event(wall_time: float, step: int, tag: str, array: np.ndarray) -> bytes:
    """torch's add_tensor: the tensor as it is, plugin ``"tensor"``."""
    return value_event(wall_time, step, tag=tag, metadata=plugin_metadata("tensor"),
                       tensor=tensor_proto(array))


def scalar_event(wall_time: float, step: int, tag: str, value: float, new_style: bool,
                 double_precision: bool, display_name: str = "",
                 summary_description: str = "") -> bytes:
    """add_scalar's other forms: ``new_style`` a rank-0 tensor (float32, float64 with
    ``double_precision``) with the scalars plugin's metadata (torch); else a
    simple_value; ``display_name``/``summary_description`` in the metadata
    (tensorboardX)."""
    names = {k: v for k, v in (("display_name", display_name),
                               ("summary_description", summary_description)) if v}
    if new_style:
        t = (tb.TensorProto(dtype=DTYPES[np.dtype(np.float64)], double_val=[value])
             if double_precision else
             tb.TensorProto(dtype=DTYPES[np.dtype(np.float32)], float_val=[value]))
        return value_event(wall_time, step, tag=tag, metadata=plugin_metadata("scalars", **names),
                           tensor=t)
    if names:
        return value_event(wall_time, step, tag=tag, simple_value=value,
                           metadata=tb.SummaryMetadata(**names))
    return value_event(wall_time, step, tag=tag, simple_value=value)
