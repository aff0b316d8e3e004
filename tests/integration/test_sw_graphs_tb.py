"""SummaryWriter's graphs and projector, read back by TensorBoard's own plugins and
compared with the peers writing the same call:

* add_graph of a small CNN: ours vs torch.utils.tensorboard's SummaryWriter, both
  served by the graphs plugin's ``/data/plugin/graphs/graph`` and ``/run_metadata``
  routes (TensorBoard's WSGI app, in process) (node names,
  ops, inputs and attrs equal);
* add_onnx_graph: ours vs torch's, through the same route;
* add_openvino_graph: ours vs tensorboardX's;
* add_embedding: ours vs torch's, through the projector plugin's routes (``/runs``,
  ``/info``, ``/tensor``, ``/metadata``, ``/sprite_image``): values, labels, sprite
  pixels; and the caller's cost of a 10000 x 128 embedding with metadata, ours vs torch's.
"""

from __future__ import annotations

import io
import json
import time
import warnings
from typing import Any

import numpy as np
import pytest

from conftest import require_module

torch = require_module("torch")
require_module("tensorboard")

from google.protobuf import text_format  # noqa: E402
from tensorboard.backend import application  # noqa: E402
from tensorboard.compat.proto import config_pb2, graph_pb2  # noqa: E402
from tensorboard.plugins.graph import graphs_plugin  # noqa: E402
from tensorboard.plugins.projector import projector_plugin  # noqa: E402
from werkzeug.test import Client  # noqa: E402

from summarylog import SummaryWriter  # noqa: E402
from tb_server import plugin_context as _context  # noqa: E402

nn = torch.nn

# torch.jit.trace (both writers' add_graph) warns that it is deprecated; torch's
# TracerWarnings about Python values in a trace are the model's business
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:torch.*"),
              pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")]


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3), nn.ReLU(), nn.Dropout(0.1))
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.fc = nn.Linear(8 * 2 * 2, 10)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(self.block(x))
        return self.fc(torch.flatten(x, 1))


class _Routes:
    """A plugin's HTTP routes, served by TensorBoard's own WSGI app as the dashboard
    queries them: ``routes["/graph"]`` is ``/data/plugin/<plugin>/graph``."""

    def __init__(self, plugin_class: Any, logdir: str) -> None:
        context = _context(logdir)
        plugin = plugin_class(context)
        self.client = Client(application.TensorBoardWSGI(
            [plugin], data_provider=context.data_provider))
        self.prefix = f"/data/plugin/{plugin.plugin_name}"

    def __getitem__(self, route: str) -> Any:
        return lambda **args: self.client.get(self.prefix + route, query_string=args)


def _get(route: Any, **args: Any) -> Any:
    resp = route(**args)
    assert resp.status_code == 200, (args, resp.get_data(as_text=True))
    return resp


def _served_graph(logdir: str, run: str) -> graph_pb2.GraphDef:
    routes = _Routes(graphs_plugin.GraphsPlugin, logdir)
    body = _get(routes["/graph"], run=run).get_data(as_text=True)
    return text_format.Parse(body, graph_pb2.GraphDef())


def _nodes(graph: graph_pb2.GraphDef) -> list[tuple[str, str, list[str], dict[str, Any]]]:
    return [(n.name, n.op, list(n.input), {k: v.SerializeToString(deterministic=True)
                                            for k, v in n.attr.items()}) for n in graph.node]


def test_add_graph_small_cnn_same_as_torch(tmp_path: Any) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    model, x = SmallCNN(), torch.randn(2, 3, 8, 8)
    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_graph(model, x)
    with SummaryWriter(str(tmp_path / "ours")) as w:
        w.add_graph(model, x)
    theirs, ours = _served_graph(str(tmp_path), "torch"), _served_graph(str(tmp_path), "ours")
    assert len(ours.node) > 20
    assert _nodes(ours) == _nodes(theirs)
    assert ours.versions.producer == theirs.versions.producer == 22
    ops = {n.op for n in ours.node}
    assert {"IO Node", "aten::_convolution", "aten::batch_norm", "aten::linear"} <= ops
    assert any(n.name.startswith("SmallCNN/Sequential[block]/Conv2d[0]/") for n in ours.node)
    # the device stats torch logs beside the graph (tag step1)
    route = _Routes(graphs_plugin.GraphsPlugin, str(tmp_path))["/run_metadata"]
    served = [text_format.Parse(_get(route, run=r, tag="step1").get_data(as_text=True),
                                config_pb2.RunMetadata()) for r in ("torch", "ours")]
    assert served[0] == served[1]
    assert served[1].step_stats.dev_stats[0].device == "/device:CPU:0"
    print(f"add_graph SmallCNN: {len(ours.node)} nodes, names/ops/inputs/attrs equal to torch's")


def test_add_graph_lstm_and_transformer_same_as_torch(tmp_path: Any) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    cases = {"lstm": (nn.LSTM(4, 6, 2), torch.randn(5, 1, 4)),
             "encoder": (nn.TransformerEncoderLayer(8, 2, 16), torch.randn(3, 1, 8))}
    for name, (model, x) in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with TorchWriter(str(tmp_path / f"torch_{name}")) as w:
                w.add_graph(model, x)
            with SummaryWriter(str(tmp_path / f"ours_{name}")) as w:
                w.add_graph(model, x)
    for name in cases:
        ours = _served_graph(str(tmp_path), f"ours_{name}")
        assert _nodes(ours) == _nodes(_served_graph(str(tmp_path), f"torch_{name}")), name
        print(f"add_graph {name}: {len(ours.node)} nodes equal to torch's")


def _onnx_model(path: str) -> None:
    onnx = require_module("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 3, 3, 3], np.zeros(108, np.float32))
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Constant", [], ["k"], value=helper.make_tensor(
            "kv", TensorProto.FLOAT, [1], [0.5])),
        helper.make_node("Mul", ["r", "k"], ["m"]),
        helper.make_node("Flatten", ["m"], ["f"], axis=1),
        helper.make_node("LeakyRelu", ["f"], ["y"], alpha=0.25),
    ]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 256])], [w])
    onnx.save(helper.make_model(graph), path)


def test_add_onnx_graph_same_as_torch(tmp_path: Any) -> None:
    require_module("onnx")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    path = str(tmp_path / "tiny.onnx")
    _onnx_model(path)
    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_onnx_graph(path)
    with SummaryWriter(str(tmp_path / "ours")) as w:
        w.add_onnx_graph(path)
    with SummaryWriter(str(tmp_path / "ours_tbx_name")) as w:
        w.add_onnx_graph(onnx_model_file=path)
    theirs = _nodes(_served_graph(str(tmp_path), "torch"))
    assert len(theirs) == 8
    assert _nodes(_served_graph(str(tmp_path), "ours")) == theirs
    assert _nodes(_served_graph(str(tmp_path), "ours_tbx_name")) == theirs
    print(f"add_onnx_graph: {len(theirs)} nodes equal to torch's (both keyword names)")


OPENVINO_IR = """<?xml version="1.0"?>
<net name="tiny" version="11">
  <layers>
    <layer id="0" name="input" type="Parameter" version="opset1"><data shape="1,3,8,8"/></layer>
    <layer id="1" name="conv_w" type="Const" version="opset1"/>
    <layer id="2" name="conv" type="Convolution" version="opset1"/>
    <layer id="3" name="relu" type="ReLU" version="opset1"/>
    <layer id="4" name="out" type="Result" version="opset1"/>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
    <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
    <edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
    <edge from-layer="3" from-port="1" to-layer="4" to-port="0"/>
  </edges>
  <body><layers><layer id="9" name="nested"/></layers></body>
</net>
"""


def test_add_openvino_graph_same_as_tensorboardx(tmp_path: Any) -> None:
    tbx = require_module("tensorboardX")
    path = tmp_path / "tiny.xml"
    path.write_text(OPENVINO_IR)
    with tbx.SummaryWriter(str(tmp_path / "tbx")) as w:
        w.add_openvino_graph(str(path))
    with SummaryWriter(str(tmp_path / "ours")) as w:
        w.add_openvino_graph(str(path))
    theirs = _nodes(_served_graph(str(tmp_path), "tbx"))
    assert [n[:3] for n in theirs] == [("conv", "op", ["input"]), ("conv", "op", ["conv_w"]),
                                        ("relu", "op", ["conv"]), ("out", "op", ["relu"])]
    assert _nodes(_served_graph(str(tmp_path), "ours")) == theirs
    print(f"add_openvino_graph: {len(theirs)} nodes equal to tensorboardX's")


# -- the projector ---------------------------------------------------------------------------

def _projector(logdir: str) -> Any:
    return _Routes(projector_plugin.ProjectorPlugin, logdir)


def _served_embedding(apps: Any, run: str, name: str) -> dict[str, Any]:
    config = json.loads(_get(apps["/info"], run=run).get_data(as_text=True))
    info = next(e for e in config["embeddings"] if e["tensorName"] == name)
    shape = [int(d) for d in info["tensorShape"]]
    tensor = np.frombuffer(_get(apps["/tensor"], run=run, name=name).get_data(),
                           np.float32).reshape(shape)
    out = {"info": info, "tensor": tensor}
    if "metadataPath" in info:
        out["metadata"] = _get(apps["/metadata"], run=run, name=name).get_data(as_text=True)
    if "sprite" in info:
        from PIL import Image

        png = _get(apps["/sprite_image"], run=run, name=name).get_data()
        out["sprite"] = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    return out


def _embedding_calls(w: Any) -> None:
    g = torch.Generator().manual_seed(7)
    mat = torch.randn(30, 6, generator=g)
    imgs = torch.rand(30, 3, 5, 5, generator=g)
    imgs[0, :, 0, 0] = torch.tensor([0.0, 1.0, 1.0 / 255])
    imgs[1, :, 0, 0] = torch.tensor([-0.5, 1.5, 254.9 / 255])  # clipped; truncated
    w.add_embedding(mat, metadata=[f"p{i}" for i in range(30)], label_img=imgs)
    w.add_embedding(mat[:10] * 2, metadata=[[i, f"c{i % 3}"] for i in range(10)],
                    metadata_header=["index", "class"], global_step=4, tag="multi/col")
    w.add_embedding(mat[:7].double(), label_img=torch.rand(7, 1, 4, 6, generator=g),
                    global_step=12, tag="gray wide")


def test_add_embedding_served_by_projector_same_as_torch(tmp_path: Any) -> None:
    require_module("PIL")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    with TorchWriter(str(tmp_path / "torch")) as w:
        _embedding_calls(w)
    with SummaryWriter(str(tmp_path / "ours")) as w:
        _embedding_calls(w)
    apps = _projector(str(tmp_path))
    runs = json.loads(_get(apps["/runs"]).get_data(as_text=True))
    assert set(runs) == {"torch", "ours"}
    names = ("default:00000", "multi/col:00004", "gray wide:00012")
    for name in names:
        theirs = _served_embedding(apps, "torch", name)
        ours = _served_embedding(apps, "ours", name)
        assert ours["info"] == theirs["info"], name
        np.testing.assert_array_equal(ours["tensor"], theirs["tensor"], err_msg=name)
        assert ours.get("metadata") == theirs.get("metadata"), name
        if "sprite" in theirs:
            np.testing.assert_array_equal(ours["sprite"], theirs["sprite"], err_msg=name)
    first = _served_embedding(apps, "ours", names[0])
    assert first["tensor"].shape == (30, 6)
    assert first["metadata"].splitlines()[:2] == ["p0", "p1"]
    assert first["sprite"].shape == (30, 30, 3)  # ceil(sqrt(30)) = 6 columns of 5 px
    assert first["sprite"][0, 0].tolist() == [0, 255, 1]
    assert first["sprite"][0, 5].tolist() == [0, 255, 254]
    multi = _served_embedding(apps, "ours", names[1])
    assert multi["metadata"].splitlines()[:2] == ["index\tclass", "0\tc0"]
    print(f"add_embedding: {len(names)} embeddings served by the projector equal to torch's "
          f"(config, values, metadata, sprite pixels)")


def test_add_embedding_caller_cost_vs_torch(tmp_path: Any) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    mat = torch.randn(10000, 128)
    meta = [f"label{i % 100}" for i in range(10000)]

    def cost(writer: Any, step: int) -> float:
        t = time.perf_counter()
        writer.add_embedding(mat, metadata=meta, global_step=step)
        return time.perf_counter() - t

    with TorchWriter(str(tmp_path / "torch")) as w:
        theirs = min(cost(w, k) for k in range(2))
    with SummaryWriter(str(tmp_path / "ours")) as w:
        ours = min(cost(w, k) for k in range(3))
        t = time.perf_counter()
        w.flush()
        background = time.perf_counter() - t
    apps = _projector(str(tmp_path))
    served = _served_embedding(apps, "ours", "default:00002")
    np.testing.assert_array_equal(served["tensor"], mat.numpy())
    print(f"add_embedding 10000x128 + metadata, caller's cost: ours {ours * 1e3:.1f} ms, "
          f"torch {theirs * 1e3:.0f} ms ({theirs / ours:.0f}x); our background write "
          f"{background:.2f} s")
