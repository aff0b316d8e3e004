"""The seam between the dialects: what the dialect-neutral stages ask of an
encoder.  A file series writes its header; a SummaryRecord's sink
(summarylog.record_sinks) writes a recorded step's graph and values.  A
dialect's own front end (the Writer, for TensorBoard) may use more of it."""

from __future__ import annotations

from typing import Any, Iterable, Protocol


class DialectEncoder(Protocol):
    """Builds serialized events of one dialect."""

    #: name of the dialect ("tensorboard", "mindspore")
    name: str

    def file_header(self, wall_time: float) -> bytes:
        """The first record of a file."""

    def graph(self, wall_time: float, graph: Any, step: int | None = None) -> bytes:
        """An event holding a graph (a serialized GraphDef, or a GraphProto)."""

    def summary(self, wall_time: float, step: int,
                values: Iterable[tuple[str, str, Any]]) -> list[bytes]:
        """A recorded step's checked ``(plugin, tag, value)`` as events:
        scalar float, image NCHW array, tensor or histogram array, LANDSCAPE
        LossLandscape."""
