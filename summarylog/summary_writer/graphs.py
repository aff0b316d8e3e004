"""SummaryWriter's add_graph, add_onnx_graph, add_openvino_graph, add_embedding."""

from __future__ import annotations

from .base import SummaryWriterBase

__all__ = ["GraphMethods"]


class GraphMethods(SummaryWriterBase):
    """add_graph, add_onnx_graph, add_openvino_graph, add_embedding (the peers' signatures)."""
