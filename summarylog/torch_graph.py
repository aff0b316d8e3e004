"""A PyTorch module traced into TensorBoard's GraphDef, node for node as
``torch.utils.tensorboard`` builds it (the same names, ops, inputs and output
shapes), without the ``tensorboard`` package.

Two steps, so the caller's thread does only what needs the model:
:func:`trace_nodes` (caller's thread) traces with ``torch.jit.trace`` and reads
the graph into plain :class:`GraphNode` records; :func:`graph_payloads`
(background thread) builds and serializes the protobuf events.

Naming, as torch's builder names nodes: module scopes become
``<Model>/<Class>[<attribute>]/...``; each value is named ``<scope>/<debug name>``;
graph inputs ``input/<name>`` and outputs ``output/output.<k>`` (``IO Node``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

__all__ = ["GraphNode", "trace_nodes", "graph_payloads", "graph_def_bytes", "run_metadata_bytes"]

#: the GraphDef producer version torch writes (what TensorBoard expects of it)
PRODUCER = 22
#: the tag of torch's device-stats event next to the graph
RUN_METADATA_TAG = "step1"
_GETATTR = "prim::GetAttr"
_CLASS_TYPE = "ClassType"


@dataclasses.dataclass
class GraphNode:
    """One NodeDef to be: name, op, inputs, output shape (None: no shape attr) and
    the ``attr`` string torch shows in the node's info card."""

    name: str
    op: str
    inputs: list[str]
    shape: list[int] | None
    attr: str = ""
    scope: str | None = None  # operator outputs: the module scope
    role: str | None = None  # "input" / "output" for the graph's IO nodes


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    """Trace in eval mode (dropout, batch norm), then restore the caller's mode."""
    training = getattr(model, "training", None)
    if training is None:  # a ScriptFunction has no mode
        yield
        return
    model.train(False)
    try:
        yield
    finally:
        model.train(training)


def trace_nodes(model: Any, input_to_model: Any, verbose: bool = False,
                use_strict_trace: bool = True) -> list[GraphNode]:
    """The graph of ``model`` run on ``input_to_model``, as torch's builder lists it.
    A model torch cannot trace raises RuntimeError naming add_graph (the cause chained)."""
    import torch

    if not isinstance(model, (torch.nn.Module, torch.jit.ScriptFunction)):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    with _eval_mode(model):
        try:
            trace = torch.jit.trace(model, input_to_model, strict=bool(use_strict_trace))
        except RuntimeError as exc:
            raise RuntimeError(f"add_graph: torch.jit.trace could not trace "
                               f"{type(model).__name__} on input_to_model: {exc}") from exc
        graph = trace.graph
        torch._C._jit_pass_inline(graph)  # module calls inlined: one flat graph with scopes
    if verbose:
        print(graph)
    return _nodes(graph, trace)


def _sizes(value: Any) -> list[int] | None:
    try:
        return value.type().sizes()
    except (RuntimeError, AttributeError):  # not a tensor (a constant model's output)
        return [1]


def _attr_text(node: Any) -> str:
    """The node's attributes as torch's builder prints them (a dict's repr, quotes
    made spaces: TensorBoard's info card mishandles quotes)."""
    values = {k: getattr(node, node.kindOf(k))(k) for k in node.attributeNames()}
    return str(values).replace("'", " ")


def _module_names(trace: Any) -> tuple[str, dict[str, str]]:
    """The traced model's class name and ``{scope alias: "<Class>[<attribute>]"}``."""
    import torch

    def class_name(module: Any) -> str:
        if isinstance(module, torch.jit.TracedModule):
            return module._get_name()
        return getattr(module, "original_name", "Module")

    aliases: dict[str, str] = {}
    if hasattr(trace, "named_modules"):
        for path, module in trace.named_modules(prefix="__module"):
            aliases[path] = f"{class_name(module)}[{path.rsplit('.', 1)[-1]}]"
    return class_name(trace), aliases


def _op_nodes(graph: Any) -> list[tuple[Any, str]]:
    """(node, raw scope) of each operator; a parameter read (prim::GetAttr) gets
    the scope of the module attribute it reads."""
    out = []
    getattr_scope: dict[str, str] = {}
    for node in graph.nodes():
        if node.kind() != _GETATTR:
            out.append((node, node.scopeName()))
            continue
        parent = node.input().node()
        if parent.kind() == _GETATTR:
            outer = getattr_scope[parent.output().debugName()]
            scope = f"{outer}/{outer.split('/')[-1]}.{node.s('name')}"
        else:
            scope = f"__module.{node.s('name')}"
        getattr_scope[node.output().debugName()] = scope
        if node.output().type().kind() != _CLASS_TYPE:  # submodules show as scopes only
            out.append((node, scope))
    return out


def _nodes(graph: Any, trace: Any) -> list[GraphNode]:
    base, aliases = _module_names(trace)
    records: dict[str, GraphNode] = {}
    for value in graph.inputs():
        if value.uses() and value.type().kind() != _CLASS_TYPE:
            records[value.debugName()] = GraphNode(value.debugName(), "IO Node", [],
                                                   _sizes(value), role="input")
    for k, value in enumerate(graph.outputs(), 1):
        records[f"output.{k}"] = GraphNode(f"output.{k}", "IO Node", [value.debugName()],
                                           _sizes(value), role="output")
    ops = []
    for node, raw in _op_nodes(graph):
        parts = [aliases.get(a, a.split(".")[-1]) for a in raw.split("/")]
        scope = base + ("/" + "/".join(parts) if any(parts) else "")
        ops.append((node, scope, [v.debugName() for v in node.inputs()]))
    common = "default"  # the first component of the last non-empty scope
    for node, scope, inputs in ops:
        attr = _attr_text(node)
        for value in node.outputs():
            shape = value.type().sizes() if value.isCompleteTensor() else None
            records[value.debugName()] = GraphNode(value.debugName(), node.kind(), inputs,
                                                   shape, attr, scope)
            if scope:
                common = scope.split("/")[0]
    # full names: a value read by an operator first takes that reader's scope (only
    # values without a node keep it), then every node its own
    full: dict[str, str] = {}
    for _node, scope, inputs in ops:
        full.update((name, f"{scope}/{name}") for name in inputs)
    for key, rec in records.items():
        if rec.role is not None:
            full[key] = f"{rec.role}/{rec.name}"
        else:
            full[key] = f"{rec.scope}/{rec.name}"
            if rec.scope == "" and common:
                full[rec.name] = f"{common}/{rec.name}"
    for rec in records.values():
        rec.inputs = [full.get(name, name) for name in rec.inputs]
        rec.name = full.get(rec.name, rec.name)
    return list(records.values())


def graph_def_bytes(nodes: list[GraphNode]) -> bytes:
    """The serialized GraphDef of ``nodes`` (attrs ``attr`` and ``_output_shapes``)."""
    from .pb import tb

    g = tb.GraphDef()
    g.versions.producer = PRODUCER
    for rec in nodes:
        nd = g.node.add(name=rec.name, op=rec.op, input=rec.inputs)
        nd.attr["attr"].s = rec.attr.encode("utf-8")
        if rec.shape is not None:
            nd.attr["_output_shapes"].list.shape.add().dim.extend(
                tb.TensorShapeProto.Dim(size=d) for d in rec.shape)
    return g.SerializeToString()


def run_metadata_bytes() -> bytes:
    """torch's stand-in device stats: one CPU device, no timings."""
    from .pb import tb

    meta = tb.RunMetadata()
    meta.step_stats.dev_stats.add(device="/device:CPU:0")
    return meta.SerializeToString()


def graph_payloads(nodes: list[GraphNode], wall: float, step: int = 0) -> list[bytes]:
    """The two events torch writes: the graph, and its run metadata tagged ``step1``."""
    from .pb import tb

    graph = tb.Event(wall_time=wall, step=step, graph_def=graph_def_bytes(nodes))
    meta = tb.Event(wall_time=wall, step=step)
    meta.tagged_run_metadata.tag = RUN_METADATA_TAG
    meta.tagged_run_metadata.run_metadata = run_metadata_bytes()
    return [graph.SerializeToString(), meta.SerializeToString()]
