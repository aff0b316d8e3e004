"""An ONNX model file as TensorBoard's GraphDef, as ``torch.utils.tensorboard``
and tensorboardX convert it: the graph's inputs and outputs as ``Variable`` nodes
(``dtype`` = the ONNX element type, ``shape``), then one node per ONNX operator,
named after its first output, with its attributes in a ``parameters`` string.

Needs the ``onnx`` package (the ``onnx`` extra), imported when first used.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

__all__ = ["OnnxNode", "load_onnx_nodes", "onnx_graph_def"]

#: the GraphDef producer version the peers write
PRODUCER = 22
EXTRA_HINT = "add_onnx_graph needs onnx: pip install 'summarylog[onnx]'"


@dataclasses.dataclass
class OnnxNode:
    """A Variable (``dims`` set: an input or output) or an operator (``parameters`` set)."""

    name: str
    op: str
    inputs: list[str]
    elem_type: int = 0
    dims: list[int] | None = None
    parameters: str = ""


def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(EXTRA_HINT) from exc
    return onnx


def _attribute_text(attribute: Any) -> str:
    """One ONNX attribute as the peers print it: its set fields' values joined by ' = '."""
    return " = ".join(str(value) for _field, value in attribute.ListFields())


def load_onnx_nodes(prototxt: Any, argname: str = "prototxt") -> list[OnnxNode]:
    """The nodes of the ONNX model file ``prototxt`` (a path or a binary file object).
    External weight files are not read: the graph needs none of them."""
    if not isinstance(prototxt, (str, bytes, os.PathLike)) and not hasattr(prototxt, "read"):
        raise TypeError(f"{argname} must be the path of an ONNX model file, "
                        f"got {type(prototxt).__name__}")
    onnx = _import_onnx()
    try:
        model = onnx.load(prototxt, load_external_data=False)
    except (OSError, TypeError):
        raise
    except Exception as exc:  # protobuf's DecodeError and onnx's own parse errors
        raise ValueError(f"{argname}: {prototxt!r} is not a readable ONNX model: {exc}") from exc
    if not model.HasField("graph"):  # e.g. an empty file: valid protobuf, no model
        raise ValueError(f"{argname}: {prototxt!r} holds no ONNX graph")
    graph = model.graph
    nodes = []
    for value in [*graph.input, *graph.output]:
        tensor_type = value.type.tensor_type
        nodes.append(OnnxNode(value.name, "Variable", [], tensor_type.elem_type,
                              [d.dim_value for d in tensor_type.shape.dim]))
    for k, op in enumerate(graph.node):
        # named after the first output, as the peers name it (an output-less
        # operator, which they cannot show, by its own name)
        name = op.output[0] if op.output else (op.name or f"{op.op_type}_{k}")
        nodes.append(OnnxNode(name, op.op_type, list(op.input), parameters=", ".join(
            _attribute_text(a) for a in op.attribute)))
    return nodes


def onnx_graph_def(nodes: list[OnnxNode]) -> bytes:
    """The serialized GraphDef of ``nodes``."""
    from .pb import tb

    g = tb.GraphDef()
    g.versions.producer = PRODUCER
    for node in nodes:
        nd = g.node.add(name=node.name, op=node.op, input=node.inputs)
        if node.dims is not None:
            nd.attr["dtype"].type = node.elem_type
            shape = nd.attr["shape"].shape
            shape.SetInParent()  # a scalar's empty shape is still a shape
            shape.dim.extend(tb.TensorShapeProto.Dim(size=d) for d in node.dims)
        else:
            nd.attr["parameters"].s = node.parameters.encode("utf-8")
    return g.SerializeToString()
