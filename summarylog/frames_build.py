"""SummaryReader's building blocks: one file's DataFrame of one kind with tbparse's
columns in tbparse's order, and TensorBoard's histogram rebinning."""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from .frames_leaf import (
    AUDIO,
    HISTOGRAMS,
    IMAGES,
    SCALARS,
    TENSORS,
    TEXT,
    ImageError,
    Leaf,
    decode_png,
)
from .read_histograms import Histograms

__all__ = ["LeafFrames", "rebin"]

_HIST_FIELDS = ("counts", "limits", "max", "min", "num", "sum", "sum_squares")


def _pd() -> Any:
    import pandas
    return pandas


def rebin(counts: np.ndarray, limits: np.ndarray, lower: float | None, upper: float | None,
          n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """TensorBoard's histogram dashboard rebinning (histogramCore.ts): each bucket's
    count spread over n_bins equal bins by overlap; a bucket of no width after clipping
    to the range (a point, or outside) counted whole in the bin where its clipped left
    edge falls (the last bin closed on the right)."""
    counts = np.asarray(counts, np.float64)
    limits = np.asarray(limits, np.float64)
    if len(counts) != len(limits) or (len(counts) and counts[0] != 0):
        raise ValueError("counts and limits must have the same length, counts[0] == 0")
    if lower is None or upper is None:
        lower = upper = 0.0
    if upper == lower:  # a zero-width range: widen it, as the dashboard does
        lower, upper = lower / 1.1 - 1, lower * 1.1 + 1
    width = (upper - lower) / n_bins
    left = lower + np.arange(n_bins) * width
    right = left + width
    b_left = np.maximum(lower, limits[:-1])[:, None]
    b_right = np.minimum(upper, limits[1:])[:, None]
    b_width = b_right - b_left
    c = counts[1:, None]
    inter = np.minimum(b_right, right) - np.maximum(b_left, left)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where((b_width > 0) & (inter > 0), inter / b_width * c, 0.0)
    last = right >= upper
    point = (b_width <= 0) & (left <= b_left) & np.where(last, b_right <= right, b_right < right)
    first_bin = np.where(point.any(axis=1), point.argmax(axis=1), -1)  # one bin per bucket
    ys = spread.sum(axis=0)
    np.add.at(ys, first_bin[first_bin >= 0], counts[1:][first_bin >= 0])
    return left + width / 2, ys


def _sorted(series: dict[str, Any], take: Callable[[Any, np.ndarray], Any]) -> dict[str, Any]:
    """``series`` by sorted tag, each tag's values stably sorted by step (``take``
    reorders one tag's values)."""
    out = {}
    for tag in sorted(series):
        s = series[tag]
        steps = s[0] if isinstance(s, tuple) else s.step
        if len(steps) > 1 and bool((steps[1:] < steps[:-1]).any()):
            s = take(s, np.argsort(steps, kind="stable"))
        out[tag] = s
    return out


def _nonempty(events: dict[str, Any]) -> dict[str, Any]:
    """The tags with values: a tag whose values were all purged by a restart, or were
    all bad WAVs, is listed but gets no pivot column (as in tbparse)."""
    return {tag: evs for tag, evs in events.items() if len(evs)}


class LeafFrames:
    """One file's DataFrame of one kind, with tbparse's columns in tbparse's order."""

    def __init__(self, leaf: Leaf | None, pivot: bool, extra: set[str]) -> None:
        assert leaf is not None
        self.leaf, self.pivot, self.extra = leaf, pivot, extra

    def frame(self, kind: str) -> Any:
        """The DataFrame of ``kind``; long scalar and histogram frames come in tbparse's
        final row order (tags sorted, each tag's steps stably sorted), marked so in
        ``attrs["sorted"]``: SummaryReader then need not sort them again."""
        if kind in (SCALARS, HISTOGRAMS) and not self.pivot:
            if kind == SCALARS:
                cols, walls = self._numeric(_sorted(self.leaf.scalars, lambda s, i: tuple(
                    a[i] for a in s)))
            else:
                cols, walls = self._histograms(_sorted(_nonempty(self.leaf.histograms),
                                                       lambda h, i: h.take(i)))
            df = self._finish(cols, walls, with_wall=True)
            df.attrs["sorted"] = True
            return df
        if kind == SCALARS:
            series = self.leaf.scalars
            cols, walls = self._numeric(series)
        elif kind == TENSORS:
            cols, walls = self._tensors()
        elif kind == TEXT:
            cols, walls = self._objects(self.leaf.events[TEXT], {}, [])
        elif kind == HISTOGRAMS:
            cols, walls = self._histograms(_nonempty(self.leaf.histograms))
        elif kind == IMAGES:
            cols, walls = self._images(_nonempty(self.leaf.events[IMAGES]))
        elif kind == AUDIO:
            cols, walls = self._audio(_nonempty(self.leaf.events[AUDIO]))
        else:
            return self._hparams()
        return self._finish(cols, walls, with_wall=True)

    def _finish(self, cols: dict[str, Any], walls: list[np.ndarray], with_wall: bool) -> Any:
        n = len(cols["step"]) if "step" in cols else 0
        if "wall_time" in self.extra and with_wall:
            cols["wall_time"] = np.concatenate(walls) if walls else []
        if "dir_name" in self.extra:
            cols["dir_name"] = [""] * n
        if "file_name" in self.extra:
            cols["file_name"] = [os.path.basename(self.leaf.path)] * n
        return _pd().DataFrame(cols)

    def _col(self, cols: dict[str, Any], name: str, n: int, like: Any) -> Any:
        """The column ``name`` of n rows (NaN-filled when created); ``like`` picks a
        float column or an object one."""
        if name not in cols:
            if isinstance(like, np.ndarray):
                cols[name] = np.full(n, np.nan)
            else:
                cols[name] = [np.nan] * n
        return cols[name]

    def _tensors(self) -> tuple[dict[str, Any], list[np.ndarray]]:
        """Scalars-plugin tensors (columnar) and other tensors, their rows in the file's
        order of tags as tbparse's (a pivot's merged lists keep that order)."""
        scalars, others = self.leaf.tensor_scalars, self.leaf.events[TENSORS]
        order = self.leaf.tags(TENSORS)
        if order == [*scalars, *others]:
            cols, walls = self._numeric(scalars)
            return self._objects(others, cols, walls)
        merged = {t: list(zip(*(a.tolist() for a in scalars[t]))) if t in scalars else others[t]
                  for t in order}
        return self._objects(merged, {}, [])

    def _numeric(self, series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
                 ) -> tuple[dict[str, Any], list[np.ndarray]]:
        cols: dict[str, Any] = {}
        if not series:
            return cols, []
        tags = list(series)
        lens = [len(s[0]) for s in series.values()]
        n = sum(lens)
        cols["step"] = np.concatenate([s[0] for s in series.values()])
        if self.pivot:
            start = 0
            for tag, (_, _, value) in series.items():
                col = self._col(cols, tag, n, value)
                col[start:start + len(value)] = value
                start += len(value)
        else:
            # each tag's string built once, then taken per row (not inferred per row)
            codes = np.repeat(np.arange(len(tags)), lens)
            cols["tag"] = _pd().Series(tags).array.take(codes)
            cols["value"] = np.concatenate([s[2] for s in series.values()])
        return cols, [s[1] for s in series.values()]

    def _objects(self, events: dict[str, list[tuple[int, float, Any]]], cols: dict[str, Any],
                 walls: list[np.ndarray]) -> tuple[dict[str, Any], list[np.ndarray]]:
        """Values of any type appended to the rows in ``cols`` (numeric columns become lists)."""
        if not events:
            return cols, walls
        cols = {k: (v.tolist() if isinstance(v, np.ndarray) else list(v)) for k, v in cols.items()}
        before = len(cols.get("step", []))
        n = before + sum(len(evs) for evs in events.values())
        step = cols.setdefault("step", [])
        if self.pivot:
            for k in cols:
                if k != "step":
                    cols[k] += [np.nan] * (n - before)
        else:
            tag_col, value_col = cols.setdefault("tag", []), cols.setdefault("value", [])
        i = before
        for tag, evs in events.items():
            step += [e[0] for e in evs]
            walls.append(np.array([e[1] for e in evs], np.float64))
            if self.pivot:
                col = self._col(cols, tag, n, None)
                col[i:i + len(evs)] = [e[2] for e in evs]
            else:
                tag_col += [tag] * len(evs)
                value_col += [e[2] for e in evs]
            i += len(evs)
        return cols, walls

    def _histograms(self, series: dict[str, Histograms]
                    ) -> tuple[dict[str, Any], list[np.ndarray]]:
        cols: dict[str, Any] = {}
        walls: list[np.ndarray] = []
        lens = [len(h) for h in series.values()]
        n = sum(lens)
        if not n:
            return cols, walls
        fields = [f for f in _HIST_FIELDS if f in self.extra or f in ("limits", "counts")]
        cols["step"] = np.concatenate([h.step for h in series.values()])
        if not self.pivot:
            codes = np.repeat(np.arange(len(series)), lens)
            cols["tag"] = _pd().Series(list(series)).array.take(codes)
        i = 0
        for tag, h in series.items():
            walls.append(h.wall_time)
            for f in fields:
                key = f if not self.pivot else f"{tag}/{f}"
                if f in ("limits", "counts"):  # arrays: an object column
                    col = self._col(cols, key, n, None)
                    col[i:i + len(h)] = h.limits() if f == "limits" else h.counts()
                else:  # MindSpore histograms hold no sum of squares: NaN
                    col = self._col(cols, key, n, h.step)
                    col[i:i + len(h)] = h.stat(f)
            i += len(h)
        return cols, walls

    def _images(self, events: dict[str, list[tuple[int, float, Any]]]
                ) -> tuple[dict[str, Any], list[np.ndarray]]:
        good: dict[str, list[tuple[int, float, Any]]] = {}
        pixels: dict[str, list[tuple[int, float, Any]]] = {}
        for tag, evs in events.items():
            for e in evs:
                try:
                    decoded = decode_png(e[2]["pngs"][0])
                except ImageError:  # one bad image: left out and counted, the rest read
                    self.leaf.note_bad_value()
                    continue
                good.setdefault(tag, []).append(e)
                pixels.setdefault(tag, []).append((e[0], e[1], decoded))
        return self._media(good, pixels, ("height", "width"))

    def _audio(self, events: dict[str, list[tuple[int, float, Any]]]
               ) -> tuple[dict[str, Any], list[np.ndarray]]:
        samples = {tag: [(e[0], e[1], e[2]["samples"]) for e in evs]
                   for tag, evs in events.items()}
        return self._media(events, samples, ("content_type", "length_frames", "sample_rate"))

    def _media(self, events: dict[str, list[tuple[int, float, Any]]],
               decoded: dict[str, list[tuple[int, float, Any]]], fields: tuple[str, ...]
               ) -> tuple[dict[str, Any], list[np.ndarray]]:
        """Decoded values with the extra columns of their kind (``tag/field`` in pivot)."""
        cols, walls = self._objects(decoded, {}, [])
        i = 0
        n = sum(len(evs) for evs in events.values())
        for tag, evs in events.items():
            for f in fields:
                if f in self.extra:
                    col = self._col(cols, f if not self.pivot else f"{tag}/{f}", n, None)
                    col[i:i + len(evs)] = [e[2][f] for e in evs]
            i += len(evs)
        return cols, walls

    def _hparams(self) -> Any:
        hp = self.leaf.hparams
        cols: dict[str, Any] = {}
        if self.pivot:
            for i, (tag, value) in enumerate(hp.items()):
                col = self._col(cols, tag, len(hp), None)
                col[i] = value
        elif hp:
            cols["tag"] = list(hp)
            cols["value"] = list(hp.values())
        n = len(hp)
        if "dir_name" in self.extra:
            cols["dir_name"] = [""] * n
        if "file_name" in self.extra:
            cols["file_name"] = [os.path.basename(self.leaf.path)] * n
        return _pd().DataFrame(cols)
