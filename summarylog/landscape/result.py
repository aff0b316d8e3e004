"""A computed loss landscape (:class:`Landscape`): numpy grids with their axes, the
training path projected on them, and its conversion to and from MindSpore's
``LossLandscape`` message, laid out as MindSpore 2.10 writes it (what MindInsight
reads); :func:`write_landscapes` records landscapes into a run in either dialect."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Landscape", "interval_tag", "run_dialect", "write_landscapes"]

_DT_INT64, _DT_FLOAT32, _DT_FLOAT64 = 5, 11, 12


def _tensor(values: Any, data_type: int) -> Any:
    from ..pb import ms

    arr = np.asarray(values, np.float64)
    # MindSpore puts every value in float_data whatever data_type says; MindInsight reads only it
    return ms.TensorProto(dims=list(arr.shape), data_type=data_type,
                          float_data=arr.astype(np.float32).ravel().tolist())


def _array(t: Any) -> np.ndarray:
    dims = [int(d) for d in t.dims]
    vals = np.asarray(t.float_data, np.float64)
    if vals.size != int(np.prod(dims, dtype=np.int64)):
        raise ValueError(f"landscape tensor of shape {dims} holds {vals.size} values")
    return vals.reshape(dims)


@dataclass
class Landscape:
    """One loss landscape.

    ``z[i, j]`` is the loss at ``x[j]`` along the first direction and ``y[i]`` along
    the second (row = y, as MindSpore and MindInsight lay it out).  A training-process
    landscape (``decomposition="PCA"``) has the interval's points in ``intervals`` and
    the training path (``path_x``, ``path_y``, ``path_z``: the checkpoints projected
    on the plane and the loss there); a result landscape (``"Random"``) has neither."""

    tag: str
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    decomposition: str = "PCA"
    unit: str = "step"
    step_per_epoch: int = 0
    intervals: list[int] = field(default_factory=list)
    path_x: np.ndarray | None = None
    path_y: np.ndarray | None = None
    path_z: np.ndarray | None = None
    convergence_point: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        self.x = np.asarray(self.x, np.float64).ravel()
        self.y = np.asarray(self.y, np.float64).ravel()
        self.z = np.asarray(self.z, np.float64)
        if self.z.shape != (self.y.size, self.x.size):
            raise ValueError(f"z must have shape (len(y), len(x)) = ({self.y.size}, "
                             f"{self.x.size}), got {self.z.shape}")
        if self.decomposition not in ("PCA", "Random"):
            raise ValueError(f"decomposition must be 'PCA' or 'Random', got {self.decomposition!r}")
        path = [self.path_x, self.path_y, self.path_z]
        if any(p is not None for p in path):
            arrs = [np.asarray(p, np.float64).ravel() for p in path]
            if len({a.size for a in arrs}) != 1:
                raise ValueError("path_x, path_y and path_z must have the same length")
            self.path_x, self.path_y, self.path_z = arrs

    @property
    def is_final(self) -> bool:
        """A result landscape (no training path): MindInsight's ``type=final``."""
        return not self.intervals

    def to_message(self) -> Any:
        """MindSpore's ``LossLandscape`` message, as MindSpore 2.10 fills it."""
        from ..pb import ms

        msg = ms.LossLandscape()
        msg.landscape.x.CopyFrom(_tensor(self.x, _DT_FLOAT64))
        msg.landscape.y.CopyFrom(_tensor(self.y, _DT_FLOAT64))
        msg.landscape.z.CopyFrom(_tensor(self.z, _DT_FLOAT64))
        cx, cy, cz = self.convergence_point
        if self.intervals:
            msg.loss_path.intervals.extend(int(p) for p in self.intervals)
            if self.path_x is not None:
                msg.loss_path.points.x.CopyFrom(_tensor(self.path_x, _DT_FLOAT32))
                msg.loss_path.points.y.CopyFrom(_tensor(self.path_y, _DT_FLOAT32))
                msg.loss_path.points.z.CopyFrom(_tensor(self.path_z, _DT_FLOAT64))
            xy_type = _DT_INT64  # MindSpore's (0, 0) origin of the path
        else:
            xy_type = _DT_FLOAT64
        msg.convergence_point.x.CopyFrom(_tensor([cx], xy_type))
        msg.convergence_point.y.CopyFrom(_tensor([cy], xy_type))
        msg.convergence_point.z.CopyFrom(_tensor([cz], _DT_FLOAT64))
        msg.metadata.decomposition = self.decomposition
        msg.metadata.unit = self.unit
        msg.metadata.step_per_epoch = int(self.step_per_epoch)
        return msg

    @classmethod
    def from_message(cls, tag: str, msg: Any) -> "Landscape":
        """From a ``LossLandscape`` message (ours or MindSpore's, or its bytes; a
        Landscape, as the Reader's events hold, is taken as it is); ValueError when
        its grids do not fit together."""
        from ..dialects.mindspore import message_of
        from ..pb import ms

        if isinstance(msg, Landscape):
            return msg

        msg = message_of(ms.LossLandscape, msg, "landscape")
        x, y, z = (_array(getattr(msg.landscape, a)) for a in "xyz")
        if z.ndim != 2:
            z = z.reshape(y.size, x.size) if z.size == x.size * y.size else z
        path: list[Any] = [None, None, None]
        if msg.HasField("loss_path") and msg.loss_path.HasField("points"):
            path = [_array(getattr(msg.loss_path.points, a)).ravel() for a in "xyz"]
        conv = [(_array(getattr(msg.convergence_point, a)).ravel()[:1].tolist() or [0.0])[0]
                for a in "xyz"]
        meta = msg.metadata
        decomposition = meta.decomposition or ("PCA" if msg.loss_path.intervals else "Random")
        return cls(tag=tag, x=x, y=y, z=z, decomposition=decomposition,
                   unit=meta.unit or "step", step_per_epoch=meta.step_per_epoch,
                   intervals=list(msg.loss_path.intervals), path_x=path[0], path_y=path[1],
                   path_z=path[2], convergence_point=(conv[0], conv[1], conv[2]))


def write_landscapes(output: str | os.PathLike[str], landscapes: Iterable[Landscape], *,
                     format: str | None = None, step: int = 0) -> list[str]:
    """Record ``landscapes`` into the run directory ``output`` as new event files, one
    event per landscape at ``step`` (MindSpore's layout: step 0, tag as given), in
    MindSpore's dialect (``"mindinsight"``) or TensorBoard's (``"tensorboard"``);
    None: the run's own (TensorBoard's when ``output`` holds a tfevents file, as a
    PyTorch or JAX collector's run does, else MindSpore's).  Returns the tags written."""
    from ..summary_record import SummaryRecord

    if format is None:
        format = run_dialect(output)

    tags: list[str] = []
    with SummaryRecord(os.fspath(output), format=format) as rec:
        for ls in landscapes:
            rec.add_value("LANDSCAPE", ls.tag, ls.to_message())
            rec.record(step)
            tags.append(ls.tag)
        rec.flush()
    return tags


def run_dialect(run: str | os.PathLike[str]) -> str:
    """``"tensorboard"`` when the directory ``run`` holds a TensorBoard event file,
    else ``"mindinsight"``."""
    try:
        with os.scandir(run) as it:
            return ("tensorboard" if any("tfevents" in e.name for e in it)
                    else "mindinsight")
    except OSError:
        return "mindinsight"


def interval_tag(points: Sequence[int]) -> str:
    """MindSpore's tag of a landscape: ``landscape_[1, 9]`` (an interval's first and
    last points) or ``landscape_[19]`` (the result landscape's point)."""
    return "landscape_" + str([int(p) for p in points])
