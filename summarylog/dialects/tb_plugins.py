"""Event payloads of TensorBoard's plugins as torch.utils.tensorboard and tensorboardX
write them: hparams (experiment record, session start and end), pr_curves,
custom_scalars, mesh, tensors, new-style scalars, and histograms by the peers' bucket
rules.  Pure functions returning serialized ``Event`` bytes; SummaryWriter's plugin
methods validate on the caller's thread and run these on the writer's."""

from __future__ import annotations

import math
import numbers
from typing import Any, Mapping, Sequence

import numpy as np

from ..checks import check_tag
from ..pb import POOL, message_class, tb
from ..values import framework_of, to_numpy
from .tensorboard import tensor_proto

__all__ = ["hparams_events", "hparam_values", "check_domain_discrete", "EXPERIMENT_TAG",
           "SESSION_START_TAG", "SESSION_END_TAG"]

EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_TAG = "_hparams_/session_start_info"
SESSION_END_TAG = "_hparams_/session_end_info"

_TENSOR = tb.DataClass.values_by_name["DATA_CLASS_TENSOR"].number


def _value_class() -> Any:
    from google.protobuf import struct_pb2  # noqa: F401  (puts Value in the default pool)

    return message_class("google.protobuf.Value")


def _metadata(plugin: str, content: bytes = b"", **fields: Any) -> Any:
    return tb.SummaryMetadata(plugin_data={"plugin_name": plugin, "content": content}, **fields)


def _event(wall_time: float, step: int, **value: Any) -> bytes:
    ev = tb.Event(wall_time=wall_time, step=step)
    ev.summary.value.add(**value)
    return ev.SerializeToString()


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


def _struct_value(Value: Any, v: bool | float | str) -> Any:
    if isinstance(v, bool):
        return Value(bool_value=v)
    if isinstance(v, float):
        return Value(number_value=v)
    return Value(string_value=v)


_HP_TYPE = {kind: POOL.FindEnumTypeByName("summarylog.tb.HParamDataType").values_by_name[name].number
            for kind, name in ((bool, "DATA_TYPE_BOOL"), (float, "DATA_TYPE_FLOAT64"),
                               (str, "DATA_TYPE_STRING"))}


def hparams_events(wall_time: float, hparam_dict: Mapping[str, Any],
                   metric_dict: Mapping[str, Any],
                   hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
                   *, step: int = 0) -> list[bytes]:
    """The three hparams-plugin events torch's ``add_hparams`` writes, in its order:
    the experiment record (an HParamInfo per hparam, with ``hparam_domain_discrete``'s
    choices; a MetricInfo for exactly the keys of ``metric_dict``), the session start
    info (the values) and the session end info (success).  Metric values are not
    written here: log them as scalars in the same run.

    Values: bool, int, float, str, one-element arrays or tensors (numbers), callables
    (their name, as tensorboardX); None values are left out.  Bools are written as
    bools (torch writes them as 1.0/0.0: its int test catches them first).
    TypeError/ValueError naming the argument for anything else."""
    values = hparam_values(hparam_dict)
    if not isinstance(metric_dict, Mapping):
        raise TypeError(f"metric_dict must be a dict of tag to value, "
                        f"got {type(metric_dict).__name__}")
    for tag in metric_dict:
        check_tag(tag, "metric_dict key")
    domain = check_domain_discrete(hparam_domain_discrete, values)
    Value = _value_class()
    ListValue = message_class("google.protobuf.ListValue")
    HParamInfo = tb.HParamInfo
    infos = []
    start = tb.SessionStartInfo()
    for key, v in values.items():
        start.hparams[key].CopyFrom(_struct_value(Value, v))
        info = HParamInfo(name=key, type=_HP_TYPE[type(v)])
        if key in domain:
            info.domain_discrete.CopyFrom(
                ListValue(values=[_struct_value(Value, d) for d in domain[key]]))
        infos.append(info)
    experiment = tb.Experiment(hparam_infos=infos, metric_infos=[
        tb.MetricInfo(name=tb.MetricName(tag=tag)) for tag in metric_dict])
    end = tb.SessionEndInfo(status=1)  # STATUS_SUCCESS
    out = []
    for tag, field, msg in ((EXPERIMENT_TAG, "experiment", experiment),
                            (SESSION_START_TAG, "session_start_info", start),
                            (SESSION_END_TAG, "session_end_info", end)):
        content = tb.HParamsPluginData(version=0, **{field: msg}).SerializeToString()
        out.append(_event(wall_time, step, tag=tag, metadata=_metadata("hparams", content)))
    return out

