"""SummaryWriter's add_graph, add_onnx_graph, add_openvino_graph and add_embedding,
read back with summarylog's own protobuf classes (no tensorboard needed), and the
hostile inputs each must refuse: untraceable models, corrupt ONNX files, XML with
entity definitions (billion laughs, external entities), embedding tags that climb
out of the run, links and FIFOs planted where the projector's files go."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import numpy as np
import pytest

from conftest import require_module

from summarylog import SummaryWriter
from summarylog import projector
from summarylog.pb import tb

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:torch.*")]


def _events(log_dir: str) -> list[Any]:
    """Every Event of the run's event files, in file order."""
    out: list[Any] = []
    if not os.path.isdir(log_dir):  # nothing logged yet (made at construction on main)
        return out
    for name in sorted(os.listdir(log_dir)):
        if not name.startswith("events.out.tfevents."):
            continue
        with open(os.path.join(log_dir, name), "rb") as f:
            data = f.read()
        i = 0
        while i < len(data):
            n = int.from_bytes(data[i:i + 8], "little")
            out.append(tb.Event.FromString(data[i + 12:i + 12 + n]))
            i += 12 + n + 4
    return out


def _graphs(log_dir: str) -> list[Any]:
    return [tb.GraphDef.FromString(e.graph_def) for e in _events(log_dir)
            if e.WhichOneof("what") == "graph_def"]


def _scalars(log_dir: str) -> list[tuple[str, int, float]]:
    return [(v.tag, e.step, v.simple_value) for e in _events(log_dir)
            if e.WhichOneof("what") == "summary" for v in e.summary.value]


def _tree(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), path)
                  for r, ds, fs in os.walk(path) for f in fs + ds)


# -- add_graph ---------------------------------------------------------------------------

def _cnn() -> Any:
    torch = require_module("torch")
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 5))


def test_add_graph_writes_torchs_graph_and_run_metadata(tmp_path: Any) -> None:
    torch = require_module("torch")
    model = _cnn()
    model.train()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, torch.randn(2, 3, 8, 8))
    assert model.training  # traced in eval mode, the caller's mode restored
    events = _events(str(tmp_path))
    graph = _graphs(str(tmp_path))[0]
    names = [n.name for n in graph.node]
    assert names[:2] == ["input/input.1", "output/output.1"]
    assert graph.versions.producer == 22
    conv = next(n for n in graph.node if n.op == "aten::_convolution")
    assert conv.name.startswith("Sequential/Conv2d[0]/")
    assert conv.input[0] == "input/input.1"
    assert [d.size for d in conv.attr["_output_shapes"].list.shape[0].dim] == [2, 4, 6, 6]
    meta = next(e for e in events if e.WhichOneof("what") == "tagged_run_metadata")
    assert meta.tagged_run_metadata.tag == "step1"
    rm = tb.RunMetadata.FromString(meta.tagged_run_metadata.run_metadata)
    assert rm.step_stats.dev_stats[0].device == "/device:CPU:0"
    print(f"add_graph: {len(graph.node)} nodes, ops {sorted({n.op for n in graph.node})[:4]}...")


def test_add_graph_needs_no_tensorboard_package(tmp_path: Any) -> None:
    require_module("torch")
    script = textwrap.dedent(f"""
        import sys
        class Block:  # tensorboard (and tensorboardX) cannot be imported at all
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("tensorboard", "tensorboardX"):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import warnings; warnings.simplefilter("ignore")
        import torch
        from summarylog import SummaryWriter
        m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
        with SummaryWriter({str(tmp_path)!r}) as w:
            w.add_graph(m, torch.randn(4, 3))
            w.add_embedding(torch.randn(5, 3), metadata=list("abcde"))
        assert not [k for k in sys.modules if k.startswith("tensorboard")]
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
    assert len(_graphs(str(tmp_path))[0].node) == 6  # input, output, weight, bias, linear, tanh
    print("add_graph and add_embedding with tensorboard unimportable: graph of 6 nodes written")


def test_add_graph_trace_error_is_clear_and_keeps_what_was_logged(tmp_path: Any) -> None:
    torch = require_module("torch")
    w = SummaryWriter(str(tmp_path))
    w.add_scalar("loss", 1.5, 0)
    with pytest.raises(RuntimeError, match="add_graph: torch.jit.trace could not trace Sequential"):
        w.add_graph(_cnn(), torch.randn(2, 5, 8, 8))  # 5 channels into a 3-channel conv
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        w.add_graph("not a model", torch.randn(1))
    w.add_scalar("loss", 0.5, 1)
    w.close()
    assert _scalars(str(tmp_path)) == [("loss", 0, 1.5), ("loss", 1, 0.5)]
    assert _graphs(str(tmp_path)) == []
    print("untraceable model: RuntimeError naming add_graph; both scalars kept, no graph event")


def test_add_graph_takes_a_graph_def(tmp_path: Any) -> None:
    g = tb.GraphDef()
    g.node.add(name="a", op="Const")
    g.node.add(name="b", op="Neg", input=["a"])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(g)
        w.add_graph(g.SerializeToString())
    assert _graphs(str(tmp_path)) == [g, g]


# -- add_onnx_graph ----------------------------------------------------------------------

def _onnx_file(path: str) -> None:
    onnx = require_module("onnx")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Gemm", ["r", "W"], ["y"], alpha=0.5, transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 4])],
        [helper.make_tensor("W", TensorProto.FLOAT, [4, 3], np.zeros(12, np.float32))])
    onnx.save(helper.make_model(graph), path)


def test_add_onnx_graph_converts_as_the_peers(tmp_path: Any) -> None:
    path = str(tmp_path / "m.onnx")
    _onnx_file(path)
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_onnx_graph(path)
        w.add_onnx_graph(onnx_model_file=path)
    g1, g2 = _graphs(str(tmp_path / "run"))
    assert g1 == g2
    assert [(n.name, n.op, list(n.input)) for n in g1.node] == [
        ("x", "Variable", []), ("y", "Variable", []), ("r", "Relu", ["x"]),
        ("y", "Gemm", ["r", "W"])]
    x, y = g1.node[0], g1.node[1]
    assert x.attr["dtype"].type == 1 and [d.size for d in x.attr["shape"].shape.dim] == [0, 3]
    assert y.attr["dtype"].type == 11 and [d.size for d in y.attr["shape"].shape.dim] == [2, 4]
    assert g1.node[3].attr["parameters"].s == b"alpha = 0.5 = 1, transB = 1 = 2"


@pytest.mark.parametrize("content", [b"", b"\x0a\xff\xff\xff\xff\x0f", b"not onnx at all\xff" * 9,
                                     os.urandom(4096)])
def test_add_onnx_graph_corrupt_file_is_a_clear_error(tmp_path: Any, content: bytes) -> None:
    require_module("onnx")
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    w = SummaryWriter(str(tmp_path / "run"))
    w.add_scalar("a", 1.0, 0)
    with pytest.raises(ValueError, match="prototxt: .*bad.onnx"):
        w.add_onnx_graph(str(path))
    with pytest.raises(FileNotFoundError):
        w.add_onnx_graph(str(tmp_path / "missing.onnx"))
    w.close()
    assert _scalars(str(tmp_path / "run")) == [("a", 0, 1.0)]
    assert _graphs(str(tmp_path / "run")) == []


def test_add_onnx_graph_argument_errors(tmp_path: Any) -> None:
    w = SummaryWriter(str(tmp_path), write_to_disk=False)
    with pytest.raises(TypeError, match="prototxt"):
        w.add_onnx_graph()
    with pytest.raises(TypeError, match="prototxt"):
        w.add_onnx_graph("a.onnx", onnx_model_file="a.onnx")
    with pytest.raises(TypeError, match="onnx_model_file must be the path"):
        w.add_onnx_graph(onnx_model_file=12)


def test_add_onnx_graph_without_onnx_names_the_extra(tmp_path: Any) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.modules["onnx"] = None  # not installed
        from summarylog import SummaryWriter
        w = SummaryWriter({str(tmp_path)!r})
        try:
            w.add_onnx_graph("m.onnx")
        except ImportError as e:
            print("ERR", e)
    """)
    out = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True,
                         timeout=120)
    line = out.stdout.strip()
    assert line == "ERR add_onnx_graph needs onnx: pip install 'summarylog[onnx]'", out.stderr
    print(line)


# -- add_openvino_graph ------------------------------------------------------------------

IR = """<?xml version="1.0"?>
<net name="n" version="11">
  <layers>
    <layer id="0" name="in" type="Parameter"/>
    <layer id="1" name="relu" type="ReLU"/>
    <layer id="2" name="out" type="Result"/>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
    <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
  </edges>
</net>
"""


def test_add_openvino_graph_reads_layers_and_edges(tmp_path: Any) -> None:
    (tmp_path / "m.xml").write_text(IR)
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_openvino_graph(str(tmp_path / "m.xml"))
    (g,) = _graphs(str(tmp_path / "run"))
    assert [(n.name, n.op, list(n.input), n.attr["parameters"].s) for n in g.node] == [
        ("relu", "op", ["in"], b""), ("out", "op", ["relu"], b"")]


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<net><layers><layer id="0" name="&lol9;"/></layers><edges/></net>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE net [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<net><layers><layer id="0" name="&secret;"/><layer id="1" name="b"/></layers>
<edges><edge from-layer="0" to-layer="1"/></edges></net>
"""


def test_add_openvino_graph_refuses_entity_definitions(tmp_path: Any) -> None:
    """Billion laughs and an external entity, in a child with a 1 GiB address-space cap
    and a hang guard: refused at the DOCTYPE, before any expansion."""
    for name, text in (("laughs.xml", BILLION_LAUGHS), ("external.xml", EXTERNAL_ENTITY)):
        (tmp_path / name).write_text(text)
    script = textwrap.dedent(f"""
        import resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from summarylog import SummaryWriter
        w = SummaryWriter({str(tmp_path / "run")!r})
        for name in ("laughs.xml", "external.xml"):
            t = time.perf_counter()
            try:
                w.add_openvino_graph({str(tmp_path)!r} + "/" + name)
                print("ACCEPTED", name)
            except ValueError as e:
                print("REFUSED", name, f"{{time.perf_counter() - t:.4f}}", e)
        w.close()
        print("peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    """)
    out = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True,
                         timeout=60)
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr[-2000:]
    refused = [ln for ln in lines if ln.startswith("REFUSED")]
    assert len(refused) == 2 and all("DOCTYPE" in ln for ln in refused), lines
    assert _graphs(str(tmp_path / "run")) == []
    print(f"billion laughs / external entity refused: {[ln.split()[2] for ln in refused]} s, "
          f"child peak RSS {lines[-1].split()[1]} MiB")


def test_add_openvino_graph_bad_files(tmp_path: Any) -> None:
    w = SummaryWriter(str(tmp_path / "run"))
    cases = {
        "undefined_entity.xml": ("<net><layers><layer id='0' name='&x;'/></layers></net>",
                                 "not well-formed"),
        "not_xml.xml": ("\x00\x01binary", "not well-formed"),
        "no_layers.xml": ("<net><edges/></net>", "no <layers>"),
        "no_edges.xml": ("<net><layers/></net>", "no <edges>"),
        "bad_edge.xml": ("<net><layers><layer id='0' name='a'/></layers>"
                         "<edges><edge from-layer='0' to-layer='7'/></edges></net>", "'7'"),
        "no_id.xml": ("<net><layers><layer name='a'/></layers><edges/></net>", "'id'"),
        "truncated.xml": (IR[:150], "not well-formed"),
    }
    for name, (text, msg) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=msg):
            w.add_openvino_graph(str(tmp_path / name))
    with pytest.raises(TypeError, match="xmlname"):
        w.add_openvino_graph(3.5)
    # deep nesting: memory stays flat (depth is a counter, nothing per level is kept)
    deep = tmp_path / "deep.xml"
    depth = 200_000
    deep.write_text("<net><layers/><edges/>" + "<a>" * depth + "</a>" * depth + "</net>")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    w.add_openvino_graph(str(deep))
    took = time.perf_counter() - t
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    w.close()
    assert len(_graphs(str(tmp_path / "run"))) == 1  # only the deep (valid, empty) one
    print(f"{len(cases)} bad IR files refused with ValueError; {depth}-deep nesting parsed in "
          f"{took:.2f} s, peak RSS +{grew // 1024} MiB")


# -- add_embedding -----------------------------------------------------------------------

def test_add_embedding_layout_and_content(tmp_path: Any) -> None:
    from google.protobuf import text_format

    mat = np.arange(12, dtype=np.float32).reshape(4, 3) / 3
    imgs = np.linspace(0, 1, 4 * 3 * 2 * 2, dtype=np.float32).reshape(4, 3, 2, 2)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(mat, metadata=["a", "b", 3, None], label_img=imgs)
        w.add_embedding(mat.astype(np.int64), metadata=[["x", 1], ["y", 2], ["z", 3], ["w", 4]],
                        metadata_header=["name", "n"], global_step=7, tag="a/b\\c%")
        mat[:] = -1  # a later change does not reach what was logged
    d0 = tmp_path / "00000" / "default"
    assert sorted(os.listdir(d0)) == ["metadata.tsv", "sprite.png", "tensors.tsv"]
    rows = (d0 / "tensors.tsv").read_text().splitlines()
    got = np.array([r.split("\t") for r in rows], np.float64).astype(np.float32)
    np.testing.assert_array_equal(got, np.arange(12, dtype=np.float32).reshape(4, 3) / 3)
    assert (d0 / "metadata.tsv").read_text() == "a\nb\n3\nNone\n"
    d7 = tmp_path / "00007" / "a%2fb%5cc%25"
    assert (d7 / "metadata.tsv").read_text() == "name\tn\nx\t1\ny\t2\nz\t3\nw\t4\n"
    assert (d7 / "tensors.tsv").read_text().splitlines()[0] == "0\t0\t0"  # ints as the peers
    with SummaryWriter(str(tmp_path / "f64")) as w:
        w.add_embedding(np.array([[0.1, 1e-300], [np.nan, -np.inf]]))
    assert (tmp_path / "f64" / "00000" / "default" / "tensors.tsv").read_text() == \
        "0.1\t1e-300\nnan\t-inf\n"
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                               tb.ProjectorConfig())
    first, second = config.embeddings
    assert (first.tensor_name, first.tensor_path, first.metadata_path) == (
        "default:00000", "00000/default/tensors.tsv", "00000/default/metadata.tsv")
    assert (first.sprite.image_path, list(first.sprite.single_image_dim)) == (
        "00000/default/sprite.png", [2, 2])
    assert (second.tensor_name, second.tensor_path) == ("a/b\\c%:00007",
                                                        "00007/a%2fb%5cc%25/tensors.tsv")
    assert not second.HasField("sprite")


def _png_pixels(data: bytes) -> np.ndarray:
    """Pixels of summarylog's own PNG (8-bit RGB, Up filter): enough to check the sprite."""
    import struct
    import zlib

    w, h = struct.unpack(">II", data[16:24])
    i, idat = 8, b""
    while i < len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        if data[i + 4:i + 8] == b"IDAT":
            idat += data[i + 8:i + 8 + n]
        i += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * 3)
    assert (raw[:, 0] == 2).all()
    return np.cumsum(raw[:, 1:], axis=0, dtype=np.uint8).reshape(h, w, 3)


def test_sprite_is_the_peers_square_grid(tmp_path: Any) -> None:
    rng = np.random.default_rng(5)
    imgs = rng.random((5, 3, 3, 3)).astype(np.float32)
    imgs[0, :, 0, 0] = [-1.0, 2.0, 0.999]  # clipped to 0 and 255; 254.7 truncated to 254
    with SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(np.zeros((5, 2)), label_img=imgs)
        w.add_embedding(np.zeros((3, 2)), label_img=np.ones((3, 1, 4, 2)), tag="tall")
    sprite = _png_pixels((tmp_path / "00000" / "default" / "sprite.png").read_bytes())
    assert sprite.shape == (9, 9, 3)  # ceil(sqrt(5)) = 3 columns of 3 px, square
    expect = np.zeros((9, 9, 3), np.uint8)
    for k in range(5):
        y, x = divmod(k, 3)
        px = np.clip(imgs[k].astype(np.float64) * 255, 0, 255).astype(np.uint8)
        expect[3 * y:3 * y + 3, 3 * x:3 * x + 3] = px.transpose(1, 2, 0)
    np.testing.assert_array_equal(sprite, expect)
    assert sprite[0, 0].tolist() == [0, 255, 254]
    # thumbnails taller than wide (torch's square canvas cannot hold them): a taller sprite
    tall = _png_pixels((tmp_path / "00000" / "tall" / "sprite.png").read_bytes())
    assert tall.shape == (8, 4, 3) and tall[:, :, 0].tolist() == [[255] * 4] * 4 + [
        [255, 255, 0, 0]] * 4


@pytest.mark.parametrize("tag", ["..", "."])
def test_add_embedding_refuses_dot_tags(tmp_path: Any, tag: str) -> None:
    run = tmp_path / "run"
    w = SummaryWriter(str(run))
    with pytest.raises(ValueError, match="tag must not be '.', '..'"):
        w.add_embedding(np.ones((2, 2)), tag=tag)
    w.close()
    assert _tree(str(tmp_path)) in ([], ["run"])


def test_add_embedding_slashes_stay_inside(tmp_path: Any) -> None:
    run = tmp_path / "a" / "run"
    with SummaryWriter(str(run)) as w:
        w.add_embedding(np.ones((2, 2)), tag="../../escaped")
        w.add_embedding(np.ones((2, 2)), tag="/abs/path")
    assert os.listdir(tmp_path) == ["a"] and os.listdir(tmp_path / "a") == ["run"]
    assert sorted(os.listdir(run / "00000")) == ["%2fabs%2fpath", "..%2f..%2fescaped"]
    for sub in os.listdir(run / "00000"):
        assert os.listdir(run / "00000" / sub) == ["tensors.tsv"]
    print("tags '../../escaped' and '/abs/path': one escaped directory each, inside the run")


@pytest.mark.parametrize("where", ["00000", "00000/default", "projector_config.pbtxt"])
def test_add_embedding_never_follows_a_planted_symlink(tmp_path: Any, where: str) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    outside.mkdir()
    (run / "00000").mkdir(parents=True) if where == "00000/default" else run.mkdir()
    target = outside if where != "projector_config.pbtxt" else outside / "victim.txt"
    if where == "projector_config.pbtxt":
        target.write_text("precious\n")
    os.symlink(target, run / where)
    w = SummaryWriter(str(run))
    w.add_scalar("x", 1.0, 0)
    with pytest.raises(OSError, match="symbolic link"):
        w.add_embedding(np.ones((3, 2)), metadata=["a", "b", "c"])
    w.close()
    assert sorted(os.listdir(outside)) == ([] if where != "projector_config.pbtxt"
                                           else ["victim.txt"])
    if where == "projector_config.pbtxt":
        assert target.read_text() == "precious\n"
    assert _scalars(str(run)) == [("x", 0, 1.0)]
    print(f"symlink at {where}: refused on the caller's thread, nothing written outside")


def test_background_write_never_follows_a_link_planted_after_the_call(tmp_path: Any) -> None:
    """The race: the links appear between the caller's check and the background write
    (the background function is called directly, after planting)."""
    run, outside = tmp_path / "run", tmp_path / "outside"
    outside.mkdir()
    run.mkdir()
    emb = projector.check_embedding(np.ones((2, 2)), ["a", "b"], None, 0, "default", None)
    os.symlink(outside, run / "00000")
    with pytest.raises(OSError) as info:
        projector.write_embedding(str(run), emb, 0.0)
    assert info.value.errno in (40, 20)  # ELOOP (link) or ENOTDIR
    os.unlink(run / "00000")
    # links planted at the files' names are replaced, never written through
    (run / "00000" / "default").mkdir(parents=True)
    for name in ("tensors.tsv", "metadata.tsv"):
        (outside / name).write_text("precious\n")
        os.symlink(outside / name, run / "00000" / "default" / name)
    projector.write_embedding(str(run), emb, 0.0)
    for name in ("tensors.tsv", "metadata.tsv"):
        assert (outside / name).read_text() == "precious\n"
        assert not os.path.islink(run / "00000" / "default" / name)
    assert (run / "00000" / "default" / "metadata.tsv").read_text() == "a\nb\n"
    os.symlink(outside / "tensors.tsv", run / "projector_config.pbtxt.tmp")  # unrelated name
    os.unlink(run / "projector_config.pbtxt")
    os.symlink(outside / "tensors.tsv", run / "projector_config.pbtxt")
    with pytest.raises(OSError):
        projector.write_embedding(str(run), emb, 0.0)
    assert (outside / "tensors.tsv").read_text() == "precious\n"
    assert sorted(os.listdir(outside)) == ["metadata.tsv", "tensors.tsv"]
    print("links planted after the check: the directory link refused (ELOOP), file links "
          "replaced, the config link refused; nothing outside changed")


def test_fifo_at_the_config_does_not_hang(tmp_path: Any) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "projector_config.pbtxt")
    w = SummaryWriter(str(run))
    with pytest.raises(OSError, match="not a regular file"):
        w.add_embedding(np.ones((2, 2)))
    w.close()
    emb = projector.check_embedding(np.ones((2, 2)), None, None, 0, "default", None)
    result: list[Any] = []

    def background() -> None:
        try:
            projector.write_embedding(str(run), emb, 0.0)
        except OSError as exc:
            result.append(exc)

    t = threading.Thread(target=background, daemon=True)
    t.start()
    t.join(60)  # hang guard
    assert not t.is_alive() and isinstance(result[0], OSError)
    print(f"FIFO at projector_config.pbtxt: refused on both threads ({result[0].strerror})")


def test_add_embedding_argument_errors(tmp_path: Any) -> None:
    w = SummaryWriter(str(tmp_path / "run"))
    m = np.ones((3, 2))
    bad = [
        (dict(mat=np.ones(3)), ValueError, "mat must be 2-D"),
        (dict(mat=np.zeros((0, 2))), ValueError, "mat must have at least one row"),
        (dict(mat=np.array([["a", "b"]])), TypeError, "mat must be numeric"),
        (dict(mat=m, metadata=["a"]), ValueError, "metadata has 1 labels but mat has 3"),
        (dict(mat=m, metadata="abc"), TypeError, "metadata must be a list"),
        (dict(mat=m, metadata=["a", "b\nc", "d"]), ValueError, "tabs or line breaks"),
        (dict(mat=m, metadata=["a", "b", "c\r"]), ValueError, "tabs or line breaks"),
        (dict(mat=m, metadata=["a", "\udcff", "é"]), ValueError, "lone surrogate"),
        (dict(mat=m, metadata=["a\tb", "b", "c"]), ValueError, "tabs or line breaks"),
        (dict(mat=m, metadata=[[1, 2]] * 3, metadata_header=["a\tb", "c"]), ValueError,
         "tabs or line breaks"),
        (dict(mat=m, metadata=[[1], [2], [3]], metadata_header=["a", "b"]), ValueError,
         r"metadata\[0\] has 1 values but metadata_header has 2"),
        (dict(mat=m, metadata=[1, 2, 3], metadata_header=["a", "b"]), TypeError,
         r"metadata\[0\] must be a list"),
        (dict(mat=m, label_img=np.ones((2, 3, 4, 4))), ValueError, "label_img has 2 images"),
        (dict(mat=m, label_img=np.ones((3, 4, 4, 4))), ValueError, "1 or 3 channels"),
        (dict(mat=m, label_img=np.ones((3, 4, 4))), ValueError, r"\(N, C, H, W\)"),
        (dict(mat=m, global_step=1.5), TypeError, "global_step must be an int"),
        (dict(mat=m, tag=3), TypeError, "tag must be a str"),
        (dict(mat=m, tag="x" * 300), ValueError, "tag is too long"),
    ]
    for kwargs, exc, msg in bad:
        with pytest.raises(exc, match=msg):
            w.add_embedding(**kwargs)
    w.close()
    assert not os.path.exists(tmp_path / "run") or _tree(str(tmp_path / "run")) == []
    print(f"{len(bad)} bad add_embedding calls refused on the caller's thread; nothing written")


def test_add_embedding_metadata_tensor_and_no_disk(tmp_path: Any) -> None:
    torch = require_module("torch")
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_embedding(torch.ones(3, 2), metadata=torch.tensor([4, 5, 6]))
    assert (tmp_path / "run" / "00000" / "default" / "metadata.tsv").read_text() == "4\n5\n6\n"
    w = SummaryWriter(str(tmp_path / "off"), write_to_disk=False)
    w.add_embedding(np.ones((3, 2)))
    w.close()
    assert not (tmp_path / "off").exists()


def test_add_embedding_caller_cost(tmp_path: Any, figure: Any) -> None:
    """The caller's thread only checks and copies; formatting and writing are the
    background thread's."""
    mat = np.random.default_rng(0).standard_normal((10000, 128)).astype(np.float32)
    meta = [f"label{i % 100}" for i in range(10000)]
    imgs = np.random.default_rng(1).random((10000, 3, 8, 8)).astype(np.float32)
    with SummaryWriter(str(tmp_path)) as w:
        costs = []
        for step in range(3):
            t = time.perf_counter()
            w.add_embedding(mat, metadata=meta, label_img=imgs if step == 2 else None,
                            global_step=step)
            costs.append(time.perf_counter() - t)
        t = time.perf_counter()
        w.flush()
        bg = time.perf_counter() - t
    rows = (tmp_path / "00001" / "default" / "tensors.tsv").read_text().splitlines()
    assert len(rows) == 10000 and np.float32(rows[-1].split("\t")[-1]) == mat[-1, -1]
    figure(f"add_embedding 10000x128 + 10000 labels: caller {min(costs[:2]) * 1e3:.1f} ms "
           f"(+ 10000 8x8 thumbnails: {costs[2] * 1e3:.1f} ms); background wrote all three "
           f"within {bg:.2f} s of the last call")


def test_add_embedding_again_replaces_files_and_keeps_one_entry(tmp_path: Any) -> None:
    """The same call again (a re-run into the same log_dir): the files are replaced, the
    peers' warning is given, and projector_config.pbtxt keeps one entry for it."""
    with SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(np.zeros((2, 2)), metadata=["a", "b"])
        w.flush()
        with pytest.warns(UserWarning, match="exists; its files are replaced"):
            w.add_embedding(np.ones((2, 2)), metadata=["c", "d"])
        w.add_embedding(np.ones((2, 2)), tag="other")
    with SummaryWriter(str(tmp_path)) as w, pytest.warns(UserWarning):
        w.add_embedding(np.full((2, 2), 2.0), metadata=["e", "f"])
    config = (tmp_path / "projector_config.pbtxt").read_text()
    assert config.count("embeddings {") == 2 and config.count('"default:00000"') == 1
    assert (tmp_path / "00000" / "default" / "metadata.tsv").read_text() == "e\nf\n"
    assert (tmp_path / "00000" / "default" / "tensors.tsv").read_text() == "2.0\t2.0\n2.0\t2.0\n"


def test_sprite_over_tensorboards_limit_warns() -> None:
    """tensorboardX refuses a sprite over 8192 px, torch writes it silently; we write it
    and say the projector will not show it (checked without writing the 300 MB sprite)."""
    with pytest.warns(UserWarning, match="10000 pixels wide; TensorBoard's projector shows "
                                         "sprites up to 8192"):
        projector.check_embedding(np.zeros((4, 2)), None, np.zeros((4, 1, 1, 5000)), 0,
                                  "default", None)
