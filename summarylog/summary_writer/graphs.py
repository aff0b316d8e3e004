"""SummaryWriter's add_graph, add_onnx_graph, add_openvino_graph, add_embedding."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable

from ..onnx_graph import load_onnx_nodes, onnx_graph_def
from ..openvino_graph import load_openvino_edges, openvino_graph_def
from ..projector import check_embedding, check_embedding_paths, write_embedding
from .base import SummaryWriterBase

__all__ = ["GraphMethods"]


def _graph_event(build: Callable[[Any], bytes], records: Any, wall: float,
                 step: int) -> list[bytes]:
    from ..pb import tb

    event = tb.Event(wall_time=wall, step=step, graph_def=build(records))
    return [event.SerializeToString()]


def _torch_graph_events(nodes: Any, wall: float, step: int) -> list[bytes]:
    from ..torch_graph import graph_payloads

    return graph_payloads(nodes, wall, step)


def _is_torch_model(model: Any) -> bool:
    torch = sys.modules.get("torch")  # no torch imported: it cannot be a torch model
    return torch is not None and isinstance(model, (torch.nn.Module, torch.jit.ScriptFunction))


class GraphMethods(SummaryWriterBase):
    """add_graph, add_onnx_graph, add_openvino_graph, add_embedding (the peers' signatures)."""

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log the graph of a ``torch.nn.Module`` traced on ``input_to_model`` (a tensor
        or a tuple of them) with ``torch.jit.trace`` (``strict=use_strict_trace``), node
        for node as torch's SummaryWriter logs it; ``verbose`` prints the traced graph.
        A GraphDef (serialized bytes or a message) is logged as it is.  A model that
        cannot be traced raises RuntimeError; what was logged before is kept."""
        if not _is_torch_model(model) and (hasattr(model, "SerializeToString")
                                           or isinstance(model, (bytes, bytearray, memoryview))):
            _step, wall = self.at(None, None)
            self.writer.add_graph(model, wall)
            return
        from ..torch_graph import trace_nodes

        if not _is_torch_model(model):
            raise TypeError(f"model must be a torch.nn.Module (or a GraphDef), "
                            f"got {type(model).__name__}")
        nodes = trace_nodes(model, input_to_model, bool(verbose), bool(use_strict_trace))
        step, wall = self.at(None, None)
        self.writer.submit(_torch_graph_events, nodes, wall, step, nbytes=64 * len(nodes))

    def add_onnx_graph(self, prototxt: Any = None, *, onnx_model_file: Any = None) -> None:
        """Log the graph of the ONNX model file ``prototxt`` (tensorboardX names it
        ``onnx_model_file``) as the peers convert it.  Needs the ``onnx`` extra."""
        if (prototxt is None) == (onnx_model_file is None):
            raise TypeError("add_onnx_graph takes the model file once: prototxt "
                            "(or tensorboardX's onnx_model_file)")
        name = "prototxt" if prototxt is not None else "onnx_model_file"
        nodes = load_onnx_nodes(prototxt if prototxt is not None else onnx_model_file, name)
        step, wall = self.at(None, None)
        self.writer.submit(_graph_event, onnx_graph_def, nodes, wall, step,
                           nbytes=64 * len(nodes))

    def add_openvino_graph(self, xmlname: Any) -> None:
        """Log the graph of the OpenVINO IR file ``xmlname`` (the .xml) as tensorboardX
        reads it.  A DOCTYPE (entity definitions) is refused."""
        edges = load_openvino_edges(xmlname, "xmlname")
        step, wall = self.at(None, None)
        self.writer.submit(_graph_event, openvino_graph_def, edges, wall, step,
                           nbytes=64 * len(edges))

    def add_embedding(self, mat: Any, metadata: Any = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: Any = None) -> None:
        """Write ``mat`` (N, D) for TensorBoard's Projector, with ``metadata`` (N labels,
        or N rows of ``metadata_header`` columns) and ``label_img`` (N, C, H, W) thumbnails
        (values in [0, 1], as the peers take them), under
        ``<log_dir>/<global_step:05d>/<tag>/``, and append its entry to
        ``<log_dir>/projector_config.pbtxt``.  Checked and copied here; the files are
        written by the background thread (visible after flush()).  Links planted inside
        the run directory are refused, never followed."""
        emb = check_embedding(mat, metadata, label_img, global_step, tag, metadata_header)
        if not self.write_to_disk:
            return
        if getattr(self, "remote", False):  # projector files are not event files: no segments
            raise ValueError(f"add_embedding needs a local log_dir (the Projector's files "
                             f"are not uploaded), got the URL {self.log_dir!r}")
        if check_embedding_paths(self.log_dir, emb):
            warnings.warn(f"add_embedding: {os.path.join(self.log_dir, emb.subdir)} exists; "
                          f"its files are replaced (a new global_step keeps both)",
                          stacklevel=2)
        nbytes = emb.mat.nbytes + (0 if emb.label_img is None else emb.label_img.nbytes) + \
            (0 if emb.metadata is None else sum(map(len, emb.metadata)))
        _step, wall = self.at(None, None)
        self.writer.submit(write_embedding, self.log_dir, emb, wall, nbytes=nbytes)
