"""An OpenVINO IR ``.xml`` file as TensorBoard's GraphDef, as tensorboardX reads
it: the root's first ``<layers>`` gives each layer id its name, and each child of
the root's first ``<edges>`` becomes a node (op ``op``) named after the edge's
target layer, with the source layer as its input.

The XML is streamed through expat with no DTD: a document with a DOCTYPE
(where entity definitions live) is refused, so entity expansion ("billion
laughs") and external entities cannot happen, and memory stays proportional to
the layers and edges kept, not to the file or its nesting.
"""

from __future__ import annotations

import os
from typing import Any
from xml.parsers import expat

__all__ = ["load_openvino_edges", "openvino_graph_def"]

PRODUCER = 22  # the GraphDef producer version tensorboardX writes
_CHUNK = 1 << 20


class _IRReader:
    """expat handlers keeping the layer names and the edges (from-id, to-id)."""

    def __init__(self) -> None:
        self.depth = 0
        self.section = ""  # "layers" / "edges" while inside the first of each
        self.seen: set[str] = set()
        self.layers: dict[str, str] = {}
        self.edges: list[tuple[str, str]] = []

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth == 2 and tag in ("layers", "edges") and tag not in self.seen:
            self.section = tag
        elif self.depth == 3 and self.section == "layers":
            self.layers[self._attr(attrs, "id", tag)] = self._attr(attrs, "name", tag)
        elif self.depth == 3 and self.section == "edges":
            self.edges.append((self._attr(attrs, "from-layer", tag),
                               self._attr(attrs, "to-layer", tag)))

    def end(self, tag: str) -> None:
        if self.depth == 2 and self.section:
            self.seen.add(self.section)
            self.section = ""
        self.depth -= 1

    @staticmethod
    def _attr(attrs: dict[str, str], key: str, tag: str) -> str:
        try:
            return attrs[key]
        except KeyError:
            raise ValueError(f"<{tag}> without the {key!r} attribute") from None


def _refuse_dtd(*_args: Any) -> None:
    raise ValueError("a DOCTYPE (DTD) is refused: OpenVINO IR has none, and entity "
                     "definitions could expand without bound")


def _parse(stream: Any, reader: _IRReader) -> None:
    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = _refuse_dtd
    parser.EntityDeclHandler = _refuse_dtd
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    while True:
        chunk = stream.read(_CHUNK)
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        if not chunk:
            break
        parser.Parse(chunk, False)
    parser.Parse(b"", True)


def load_openvino_edges(xmlname: Any, argname: str = "xmlname") -> list[tuple[str, str]]:
    """(target layer name, source layer name) of each edge of the IR file ``xmlname``
    (a path or a file object)."""
    reader = _IRReader()
    try:
        if hasattr(xmlname, "read"):
            _parse(xmlname, reader)
        elif isinstance(xmlname, (str, bytes, os.PathLike)):
            with open(xmlname, "rb") as f:
                _parse(f, reader)
        else:
            raise TypeError(f"{argname} must be the path of an OpenVINO .xml file, "
                            f"got {type(xmlname).__name__}")
    except expat.ExpatError as exc:
        raise ValueError(f"{argname}: {xmlname!r} is not well-formed XML: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{argname}: {xmlname!r}: {exc}") from None
    for tag in ("layers", "edges"):
        if tag not in reader.seen:
            raise ValueError(f"{argname}: {xmlname!r} has no <{tag}> under its root: "
                             f"not an OpenVINO IR file")
    out = []
    for src, dst in reader.edges:
        for end in (src, dst):
            if end not in reader.layers:
                raise ValueError(f"{argname}: {xmlname!r} has an edge to layer id {end!r}, "
                                 f"which <layers> does not define")
        out.append((reader.layers[dst], reader.layers[src]))
    return out


def openvino_graph_def(edges: list[tuple[str, str]]) -> bytes:
    """The serialized GraphDef: one ``op`` node per edge (empty ``parameters``)."""
    from .pb import tb

    g = tb.GraphDef()
    g.versions.producer = PRODUCER
    for name, source in edges:
        nd = g.node.add(name=name, op="op", input=[source])
        nd.attr["parameters"].s = b""
    return g.SerializeToString()
