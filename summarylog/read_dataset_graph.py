"""A MindSpore dataset graph (the lineage file's ``dataset_graph`` record) as
structured fields: :class:`DatasetGraph`.

MindSpore's SummaryCollector serializes the training dataset pipeline
(``mindspore.dataset.serialize``) into nested ``DatasetGraph`` messages: a
node per dataset operation (``Batch``, ``Map``, ``MnistDataset``...), its
parameters spread over typed maps (``mapStr``, ``mapBool``, ``mapInt``,
``mapDouble``, ``mapStrList``), its map operations and sampler, its children
(the pipeline's earlier stages).  MindInsight's data lineage merges each
node's maps into one parameter dict ('None' strings as None); so do the
fields here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["DatasetGraph", "flat_parameters"]

#: the parameters that hold a dataset's files, as MindSpore's collector finds
#: the train dataset path (mindspore.train.callback._summary_collector)
_PATH_KEYS = ("dataset_dir", "dataset_file", "dataset_files")


def flat_parameters(parameter: Any) -> dict[str, Any]:
    """An OperationParameter's typed maps merged into one dict, as MindInsight
    shows them: ``'None'`` strings are None, string lists are lists (an
    empty string in them is None)."""
    out: dict[str, Any] = {}
    if not isinstance(parameter, Mapping):
        return out
    for key in ("mapStr", "mapBool", "mapInt", "mapDouble"):
        values = parameter.get(key)
        if isinstance(values, Mapping):
            out.update({k: None if v == "None" else v for k, v in values.items()})
    lists = parameter.get("mapStrList")
    if isinstance(lists, Mapping):
        for k, v in lists.items():
            items = v.get("strValue", []) if isinstance(v, Mapping) else []
            out[k] = [None if s == "" else s for s in items] if isinstance(items, list) else []
    return out


def _operation(op: Any) -> dict[str, Any]:
    """A map operation or sampler: its parameters, plus ``size`` and
    ``weights`` when it has them."""
    if not isinstance(op, Mapping):
        return {}
    out = flat_parameters(op.get("operationParam"))
    for key in ("size", "weights"):
        if isinstance(op.get(key), list) and op[key]:
            out[key] = list(op[key])
    return out


class DatasetGraph(dict):
    """One node of a dataset graph, and, through ``children``, the stages
    before it (the root is the pipeline's last stage, e.g. ``Batch``).

    It is the record's fields as they were returned before (a dict with
    ``parameter``, ``operations``, ``sampler``, ``children``: old code keeps
    working, and it compares equal to that dict), with structured fields:
    :attr:`op_type`, :attr:`params`, :attr:`operations`, :attr:`sampler`,
    :attr:`children`, and, over the whole graph, :attr:`path`,
    :attr:`batch_size`, :meth:`walk`, :meth:`find`, :meth:`as_mindinsight`."""

    __slots__ = ()

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> DatasetGraph:
        """The graph of a decoded ``dataset_graph`` record (its dict fields)."""
        node = cls(fields)
        kids = fields.get("children")
        if isinstance(kids, list):
            node["children"] = [cls.of(k) if isinstance(k, Mapping) else k for k in kids]
        return node

    @property
    def op_type(self) -> str | None:
        """The operation, e.g. ``"Batch"``, ``"Map"``, ``"MnistDataset"``."""
        op = self.params.get("op_type")
        return op if isinstance(op, str) else None

    @property
    def params(self) -> dict[str, Any]:
        """The node's parameters in one dict (see :func:`flat_parameters`)."""
        return flat_parameters(self.get("parameter"))

    @property
    def operations(self) -> list[dict[str, Any]]:
        """The node's map operations (a ``Map`` node's transforms): each its
        parameters (``tensor_op_name`` and the transform's arguments)."""
        ops = self.get("operations")
        return [_operation(op) for op in ops] if isinstance(ops, list) else []

    @property
    def sampler(self) -> dict[str, Any] | None:
        """The node's sampler's parameters, or None."""
        return _operation(self.get("sampler")) or None

    @property
    def children(self) -> list[DatasetGraph]:
        """The nodes this one reads from."""
        kids = self.get("children")
        return [k for k in kids if isinstance(k, DatasetGraph)] if isinstance(kids, list) else []

    def walk(self) -> Iterator[DatasetGraph]:
        """This node and every node below it, depth first (root first)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def find(self, op_type: str) -> DatasetGraph | None:
        """The first node (depth first) of an operation, or None."""
        return next((n for n in self.walk() if n.op_type == op_type), None)

    @property
    def path(self) -> str | None:
        """The dataset's files: the first ``dataset_dir``, ``dataset_file`` or
        ``dataset_files`` (its first entry) of the graph's nodes, or None (a
        GeneratorDataset has none)."""
        for node in self.walk():
            params = node.params
            for key in _PATH_KEYS:
                value = params.get(key)
                if isinstance(value, list):
                    value = value[0] if value else None
                if isinstance(value, str) and value:
                    return value
        return None

    @property
    def batch_size(self) -> int | None:
        """The ``Batch`` node's ``batch_size``, or None."""
        node = self.find("Batch")
        size = node.params.get("batch_size") if node is not None else None
        return size if isinstance(size, int) and not isinstance(size, bool) else None

    def as_mindinsight(self) -> dict[str, Any]:
        """The graph in the layout of MindInsight's data lineage
        (``dataset_graph`` of its lineage API): each node's parameters at
        its top level, with ``operations``, ``sampler`` and ``children``."""
        out: dict[str, Any] = dict(self.params)
        if self.operations:
            out["operations"] = self.operations
        if self.sampler:
            out["sampler"] = self.sampler
        out["children"] = [c.as_mindinsight() for c in self.children]
        return out

    def __repr__(self) -> str:
        stages = " <- ".join(n.op_type or "?" for n in self.walk())
        return f"<DatasetGraph {stages}>"
