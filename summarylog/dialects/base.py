"""The interface every dialect encoder implements: event payloads (bytes)
for each kind of value, from validated numpy data.  The rest of summarylog
never touches field numbers."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

import numpy as np


class DialectEncoder(Protocol):
    """Builds serialized events of one dialect."""

    #: name of the dialect ("tensorboard", "mindspore")
    name: str

    def file_header(self, wall_time: float) -> bytes:
        """The first record of a file."""

    def scalars(self, wall_time: float, step: int, tags: Sequence[str],
                values: Sequence[float]) -> bytes:
        """One event holding several scalars."""

    def histogram(self, wall_time: float, step: int, tag: str, values: np.ndarray,
                  bins: int) -> bytes:
        """One event holding a histogram of ``values`` (any shape, finite or not)."""

    def images(self, wall_time: float, step: int, tag: str, pngs: Sequence[bytes],
               height: int, width: int, channels: int) -> bytes:
        """One event holding PNG images of one size."""

    def text(self, wall_time: float, step: int, tag: str, text: str) -> bytes:
        """One event holding a text."""

    def tensor(self, wall_time: float, step: int, tag: str, array: np.ndarray) -> bytes:
        """One event holding a tensor, dtype kept."""

    def hparams(self, wall_time: float, hparams: Mapping[str, Any],
                metrics: Sequence[str]) -> list[bytes]:
        """Events that declare a run's hyperparameters and metric names."""
