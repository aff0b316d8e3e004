"""add_figure's figures drawn off the caller's thread.  On the caller's thread a
snapshot: the figure pickled (matplotlib figures pickle), so the caller may go on
changing or closing it; on the writer's thread a separate figure unpickled from the
snapshot and drawn by Agg (matplotlib allows separate figures to be drawn from
separate threads with Agg).  A figure that does not pickle (a lambda formatter, a
lock) is drawn on the caller's thread, by the same function."""

from __future__ import annotations

import copyreg
import io
import logging
import pickle
from typing import Any

import numpy as np

__all__ = ["FigureSnapshot", "pixels", "rasterise", "snapshot"]

log = logging.getLogger("summarylog")
_warned_rc = False


class FigureSnapshot:
    """A pickled figure and the rcParams in force when it was taken."""

    __slots__ = ("data", "rc")

    def __init__(self, data: bytes, rc: dict[str, Any]) -> None:
        self.data, self.rc = data, rc


def _new(cls: type) -> Any:
    return cls.__new__(cls)


def _reduce_figure(figure: Any) -> tuple[Any, ...]:
    state = figure.__getstate__()
    # with this flag, unpickling registers the copy with pyplot's figure manager and
    # makes it the current figure: from the writer's thread, behind the caller's back
    state.pop("_restore_to_pylab", None)
    return _new, (type(figure),), state


def _rc() -> dict[str, Any]:
    import matplotlib

    # dict's own items: RcParams' iteration goes through its validating accessors
    return dict(dict.items(matplotlib.rcParams))


def snapshot(figure: Any) -> FigureSnapshot | None:
    """The figure pickled (without its pyplot registration), or None when it does
    not pickle."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, type(figure): _reduce_figure}
    try:
        pickler.dump(figure)
    except Exception:  # what fails to pickle raises PicklingError, TypeError, AttributeError...
        return None
    return FigureSnapshot(out.getvalue(), _rc())


def rasterise(figure: Any) -> np.ndarray:
    """The RGBA pixels (H, W, 4) of a figure drawn by Agg, as the peers draw it (which
    also makes an Agg canvas the figure's canvas); a copy, the canvas reuses its buffer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return np.array(canvas.buffer_rgba(), copy=True)


def pixels(item: FigureSnapshot | np.ndarray) -> np.ndarray:
    """The RGBA pixels of a snapshot (unpickled and drawn here, on the writer's
    thread) or of a figure already drawn on the caller's thread."""
    if isinstance(item, np.ndarray):
        return item
    # our own bytes, made in this process by snapshot(): never read from a file
    figure = pickle.loads(item.data)  # noqa: S301
    _check_rc(item.rc)
    return rasterise(figure)


def _check_rc(rc: dict[str, Any]) -> None:
    # some rcParams are read when a figure is drawn (tick label sizes, hinting, the
    # minus sign): changed since the call (a style or rc_context that has ended), the
    # drawing may differ from the one the peers make at the call
    global _warned_rc
    if not _warned_rc and _rc() != rc:
        _warned_rc = True
        changed = sorted(k for k, v in _rc().items() if rc.get(k, v) != v)[:5]
        log.warning("summarylog: add_figure: matplotlib's rcParams %s changed between the "
                    "call and the drawing on the writer's thread; the figure is drawn with "
                    "the new values; logging once", changed)
