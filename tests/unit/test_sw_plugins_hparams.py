"""hparams_events: the three hparams-plugin events torch's add_hparams writes, decoded
with TensorBoard's own protobuf classes and compared field by field with torch's."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_module

from summarylog.dialects.tb_plugins import hparams_events

T = 1_750_000_000.5


def _decode(payloads):
    event_pb2 = require_module("tensorboard.compat.proto.event_pb2")
    from tensorboard.plugins.hparams import plugin_data_pb2

    out = []
    for p in payloads:
        ev = event_pb2.Event.FromString(p)
        (v,) = ev.summary.value
        data = plugin_data_pb2.HParamsPluginData.FromString(v.metadata.plugin_data.content)
        out.append((ev.wall_time, ev.step, v.tag, v.metadata.plugin_data.plugin_name,
                    v.WhichOneof("value"), data))
    return out


def _torch_summaries(hp, metrics, domain=None):
    summary = require_module("torch.utils.tensorboard.summary")
    from tensorboard.plugins.hparams import plugin_data_pb2

    out = []
    for s in summary.hparams(hp, metrics, domain):
        (v,) = s.value
        out.append((v.tag, v.metadata.plugin_data.plugin_name, v.WhichOneof("value"),
                    plugin_data_pb2.HParamsPluginData.FromString(v.metadata.plugin_data.content)))
    return out


@pytest.mark.parametrize("hp,metrics,domain", [
    ({"lr": 0.1, "bsize": 32, "opt": "adam"}, {"hparam/accuracy": 0.9, "hparam/loss": 0.1}, None),
    ({"lr": 0.1, "opt": "sgd", "depth": 4, "skip": None},
     {"m": 1.0}, {"opt": ["sgd", "adam"], "depth": [2, 4, 8]}),
    ({"x": 1.5}, {}, None),
])
def test_same_as_torch(hp, metrics, domain):
    ours = _decode(hparams_events(T, hp, metrics, domain, step=7))
    theirs = _torch_summaries(hp, metrics, domain)
    assert [o[2:] for o in ours] == list(theirs)
    assert all(o[0] == T and o[1] == 7 for o in ours)
    exp = ours[0][5].experiment
    assert [m.name.tag for m in exp.metric_infos] == list(metrics)
    print(f"hparams_events == torch's hparams() for {sorted(hp)}")


def test_bool_written_as_bool_and_numpy_torch_coerced():
    torch = require_module("torch")
    events = _decode(hparams_events(T, {"flag": True, "n": np.int64(3), "f": np.float32(0.5),
                                        "t": torch.tensor(2.5), "act": np.tanh},
                                    {"acc": 1}, {"flag": [True, False]}))
    exp, start = events[0][5].experiment, events[1][5].session_start_info
    types = {h.name: h.type for h in exp.hparam_infos}
    from tensorboard.plugins.hparams import api_pb2

    assert types == {"flag": api_pb2.DATA_TYPE_BOOL, "n": api_pb2.DATA_TYPE_FLOAT64,
                     "f": api_pb2.DATA_TYPE_FLOAT64, "t": api_pb2.DATA_TYPE_FLOAT64,
                     "act": api_pb2.DATA_TYPE_STRING}
    assert start.hparams["flag"].bool_value is True
    assert start.hparams["n"].number_value == 3.0
    assert start.hparams["t"].number_value == 2.5
    assert start.hparams["act"].string_value == "tanh"
    assert [v.bool_value for v in exp.hparam_infos[0].domain_discrete.values] == [True, False]


@pytest.mark.parametrize("args,err,words", [
    (({"a": object()}, {}), TypeError, "hparam_dict['a']"),
    (({"a": [1, 2]}, {}), TypeError, "hparam_dict['a']"),
    (({"a": np.zeros(3)}, {}), TypeError, "hparam_dict['a']"),
    (([("a", 1)], {}), TypeError, "hparam_dict"),
    (({"a": 1}, [1]), TypeError, "metric_dict"),
    (({"a": 1}, {3: 1.0}), TypeError, "metric_dict key"),
    (({1: 1}, {}), TypeError, "hparam_dict key"),
    (({"a": 1}, {}, {"b": [1]}), ValueError, "hparam_domain_discrete['b']"),
    (({"a": 1}, {}, {"a": 1}), TypeError, "hparam_domain_discrete['a']"),
    (({"a": "x"}, {}, {"a": ["x", 2]}), TypeError, "hparam_domain_discrete['a']"),
    (({"a": 1}, {}, ["a"]), TypeError, "hparam_domain_discrete"),
])
def test_bad_input_names_the_argument(args, err, words):
    with pytest.raises(err) as info:
        hparams_events(T, *args)
    assert words in str(info.value)
    print(f"{err.__name__}: {info.value}")


def test_torch_bools_writes_bools_as_torch_does():
    hp, metrics, domain = {"aug": True, "lr": 0.1}, {"m": 1.0}, {"aug": [True, False]}
    ours = _decode(hparams_events(T, hp, metrics, domain, torch_bools=True))
    assert [o[2:] for o in ours] == list(_torch_summaries(hp, metrics, domain))
    assert ours[1][5].session_start_info.hparams["aug"].number_value == 1.0
