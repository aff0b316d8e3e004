"""The Reader's columnar histogram loader: TensorBoard's ``histo`` values and MindSpore's
histograms decoded in C (slg_decode_histograms) straight into numpy: per row a tag, step,
wall time and statistics, and its buckets as slices of two flat arrays."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Iterable
import numpy as np

from ._native import ffi, lib
from .discovery import dialect_of
from .events import Event
from .read_columns import last_per_step_index, new_tags, purge_keep, resume_kept, tag_names
from .read_types import FileReport
from .records import RecordReader

__all__ = ["Histograms", "HistogramRun", "histograms_of_events", "load_histograms"]

_STATS = ("min", "max", "num", "sum", "sum_squares", "nan_count", "pos_inf_count",
          "neg_inf_count")
assert len(_STATS) == lib.SLG_HIST_STATS
_DIALECTS = {"tensorboard": lib.SLG_DIALECT_TB, "mindspore": lib.SLG_DIALECT_MS}
_FIRST_ROWS, _FIRST_BUCKETS = 1 << 16, 1 << 22
_CTYPES = {"tag_ids": "uint32_t[]", "steps": "int64_t[]", "walls": "double[]",
           "stats": "double[]", "limit_ends": "uint64_t[]", "count_ends": "uint64_t[]"}


@dataclasses.dataclass(frozen=True)
class Histograms:
    """The histograms of one tag, columnar: ``step`` (int64), ``wall_time`` and the
    statistics (float64; ``sum_squares`` NaN in MindSpore's, the non-finite counts 0
    in TensorBoard's), one entry per histogram.  Row i's bucket right edges are
    ``limits_flat[limit_spans[i, 0]:limit_spans[i, 1]]``, its counts likewise
    (:meth:`limits`, :meth:`counts`); the flat arrays may be shared with other tags."""

    step: np.ndarray
    wall_time: np.ndarray
    stats: np.ndarray  #: rows x 8: min, max, num, sum, sum_squares, nan, +inf, -inf counts
    limit_spans: np.ndarray  #: rows x 2, [start, end) in limits_flat
    count_spans: np.ndarray
    limits_flat: np.ndarray
    counts_flat: np.ndarray

    def __len__(self) -> int:
        return len(self.step)

    def stat(self, name: str) -> np.ndarray:
        """One statistic's column (a view): ``min``, ``max``, ``num``, ``sum``,
        ``sum_squares``, ``nan_count``, ``pos_inf_count``, ``neg_inf_count``."""
        return self.stats[:, _STATS.index(name)]

    def limits(self) -> list[np.ndarray]:
        """Each row's bucket right edges (views into limits_flat)."""
        return _views(self.limits_flat, self.limit_spans)

    def counts(self) -> list[np.ndarray]:
        """Each row's bucket counts (views into counts_flat)."""
        return _views(self.counts_flat, self.count_spans)

    def take(self, rows: np.ndarray) -> Histograms:
        """The rows ``rows`` (indices, in that order); the flat arrays are shared."""
        return Histograms(self.step[rows], self.wall_time[rows], self.stats[rows],
                          self.limit_spans[rows], self.count_spans[rows], self.limits_flat,
                          self.counts_flat)


def _views(flat: np.ndarray, spans: np.ndarray) -> list[np.ndarray]:
    """flat[start:end] for each span, as views."""
    if not len(spans):
        return []
    starts, ends = spans[:, 0].astype(np.intp), spans[:, 1].astype(np.intp)
    k = int(ends[0] - starts[0])
    gaps = np.diff(starts)
    if len(gaps) and bool((ends - starts == k).all()) and bool((gaps == gaps[0]).all()) \
            and gaps[0] >= 0:
        # equal buckets at a regular stride (a tag logged at every step, among others):
        # one strided 2-D view, split into rows in C
        rows = np.lib.stride_tricks.as_strided(
            flat[starts[0]:], shape=(len(spans), k),
            strides=(int(gaps[0]) * flat.itemsize, flat.itemsize), writeable=False)
        return list(rows)
    return list(map(flat.__getitem__, map(slice, starts.tolist(), ends.tolist())))


def _spans(ends: np.ndarray) -> np.ndarray:
    """[start, end) pairs of consecutive segments from their cumulative ends."""
    out = np.empty((len(ends), 2), np.uint64)
    out[:, 1] = ends
    out[:1, 0] = 0
    out[1:, 0] = ends[:-1]
    return out


@dataclasses.dataclass
class HistogramRun:
    """Every histogram of one run, by tag (a tag whose every value the resume rule
    dropped is there, empty); ``other``: tags that also hold values of other kinds
    (TF2's tensor histograms among them), which the columns leave out."""

    series: dict[str, Histograms] = dataclasses.field(default_factory=dict)
    other: set[str] = dataclasses.field(default_factory=set)


def _moved(arr: np.ndarray, n: int, used: int) -> np.ndarray:
    """A bigger array holding ``arr[:used]`` (np.empty and a copy: resize would also
    clear the new part, touching every page twice)."""
    out = np.empty((n, *arr.shape[1:]), arr.dtype)
    out[:used] = arr[:used]
    return out


class _Columns:
    """The growing output arrays of one load, and the C struct pointing into them."""

    def __init__(self, size: int) -> None:
        # sized from the files' bytes (a histogram of k buckets takes >= 16 k + 20),
        # at most _FIRST_*; past that, grown to the run's projected size (grow)
        rows = min(max(size // 256, 64), _FIRST_ROWS)
        buckets = min(max(size // 16, 1024), _FIRST_BUCKETS)
        self.rows: dict[str, np.ndarray] = {"tag_ids": np.empty(rows, np.uint32),
                     "steps": np.empty(rows, np.int64),
                     "walls": np.empty(rows, np.float64),
                     "stats": np.empty((rows, len(_STATS)), np.float64),
                     "limit_ends": np.empty(rows, np.uint64),
                     "count_ends": np.empty(rows, np.uint64)}
        self.limits = np.empty(buckets, np.float64)
        self.counts = np.empty(buckets, np.float64)
        self.c = ffi.new("slg_hist_columns *")
        self._point()

    def _point(self) -> None:
        c = self.c
        for name, arr in self.rows.items():
            setattr(c, name, ffi.from_buffer(_CTYPES[name], arr))
        c.limits = ffi.from_buffer("double[]", self.limits)
        c.counts = ffi.from_buffer("double[]", self.counts)
        c.cap_rows, c.cap_limits, c.cap_counts = (len(self.rows["steps"]), len(self.limits),
                                                  len(self.counts))

    def grow(self, record_len: int, read: float) -> None:
        """Room for at least one more record of ``record_len`` bytes in every array (a
        histogram Value takes >= 2 bytes, a bucket edge 8, a MindSpore bucket 2), and for
        the rest of the run as projected from the fraction ``read`` of its bytes so far:
        one or two moves for a big run, not a doubling each."""
        c = self.c
        scale = 1.1 / read if read > 0.01 else 2.0
        need_rows = c.n_rows + record_len // 2 + 1
        used = max(c.n_limits, c.n_counts)
        need_buckets = used + record_len // 2 + 1
        rows = max(int(c.n_rows * scale), len(self.rows["steps"]) * 5 // 4, need_rows)
        self.rows = {name: _moved(arr, rows, c.n_rows) for name, arr in self.rows.items()}
        buckets = max(int(used * scale), len(self.limits) * 5 // 4, need_buckets)
        self.limits = _moved(self.limits, buckets, c.n_limits)
        self.counts = _moved(self.counts, buckets, c.n_counts)
        self._point()

    def result(self) -> tuple[np.ndarray, Histograms]:
        """The tag ids and the rows read (the arrays trimmed in place, no longer
        pointed to)."""
        c = self.c
        n, nl, nc = c.n_rows, c.n_limits, c.n_counts
        self.c = None
        for arr in self.rows.values():
            arr.resize((n, *arr.shape[1:]), refcheck=False)
        self.limits.resize(nl, refcheck=False)
        self.counts.resize(nc, refcheck=False)
        r = self.rows
        return r["tag_ids"], Histograms(r["steps"], r["walls"], r["stats"],
                                        _spans(r["limit_ends"]), _spans(r["count_ends"]),
                                        self.limits, self.counts)


def load_histograms(files: list[str], purge: bool, verify: bool,
                    reports: dict[str, FileReport]) -> HistogramRun:
    """Every histogram of a run's files, with the Reader's rules (``purge``: TensorBoard's
    resume markers, MindSpore's last value per step); what each file's pass found is
    merged into ``reports`` (counts as the larger of this and earlier passes)."""
    tags = new_tags()
    size = 0
    for p in files:
        with contextlib.suppress(OSError):  # reported when the file is opened
            size += os.path.getsize(p)
    cols = _Columns(size)
    res = ffi.new("slg_decode_result *")
    purges: list[tuple[int, int]] = []
    before = 0  # bytes of the files read before this one
    for path in files:
        lib.slg_tags_set_dialect(tags, _DIALECTS[dialect_of(path)])
        rep = reports.setdefault(path, FileReport(path))
        bad_events = bad_values = 0
        with RecordReader(path, verify=verify) as rr:
            spans = rr.spans
            for buf, base, nsp, damage in rr.scan_batches():
                for d in damage:
                    rr.add_damage(d)
                done = 0
                while done < nsp:
                    rc = lib.slg_decode_histograms(buf, base, spans + done, nsp - done, tags,
                                                   cols.c, res)
                    if rc < 0:
                        raise MemoryError("slg_decode_histograms")
                    rows_before = cols.c.n_rows - res.n_values
                    purges += [(rows_before + res.purge_index[k], res.purge_step[k])
                               for k in range(res.n_purges)]
                    done += res.spans_done
                    bad_events += res.bad_events
                    bad_values += res.bad_values
                    if rc == lib.SLG_DECODE_OUT_FULL:
                        cols.grow(spans[done].length, (before + spans[done].offset) / size
                                  if size else 0.0)
            before += rr.size or 0
            rep.records = max(rep.records, rr.records_read)
            rep.bad_events = max(rep.bad_events, bad_events)
            rep.bad_values = max(rep.bad_values, bad_values)
            rep.set_damage(rr.damage, rr.damage_past_cap)  # a full pass, as Reader.events'
            rep.tail, rep.size = rr.tail, rr.size
    names, flags = tag_names(tags)
    ids, rows = cols.result()
    ids_before = ids
    if purge and purges:
        keep = np.flatnonzero(purge_keep(rows.step, purges))
        ids, rows = ids[keep], rows.take(keep)
    out = HistogramRun(other={t for t, f in zip(names, flags) if f & lib.SLG_TAGF_OTHER})
    order = np.argsort(ids, kind="stable")
    ids_sorted = ids[order]
    bounds = np.searchsorted(ids_sorted, np.arange(len(names) + 1))
    ms = purge and any(dialect_of(p) == "mindspore" for p in files)
    had = set(ids_before.tolist())
    for t, name in enumerate(names):
        if bounds[t] == bounds[t + 1]:
            if t in had:  # every value dropped by the resume rule: listed, empty
                out.series[name] = rows.take(np.zeros(0, np.intp))
            continue
        sel = order[bounds[t]:bounds[t + 1]]
        if ms:
            sel = sel[last_per_step_index(rows.step[sel])]
        out.series[name] = rows.take(sel)
    return out


def histograms_of_events(events: Iterable[Event], tag: str, purge: bool,
                         mindspore: bool) -> Histograms:
    """``tag``'s histograms among decoded ``events`` (every kind: TF2's tensor
    histograms too), with the same rules as :func:`load_histograms`."""
    rows: list[tuple[int, float, list[float]]] = []
    limits: list[list[float]] = []
    counts: list[list[float]] = []
    for ev in resume_kept(events, ("histogram",), purge):
        if ev.tag == tag:
            v = ev.value
            rows.append((ev.step, ev.wall_time, [np.nan if v.get(k) is None else float(v[k])
                                                 for k in _STATS[:5]]
                         + [float(v.get(k, 0)) for k in _STATS[5:]]))
            limits.append(v["limits"])
            counts.append(v["counts"])
    n = len(rows)
    got = Histograms(np.array([r[0] for r in rows], np.int64),
                     np.array([r[1] for r in rows], np.float64),
                     np.array([r[2] for r in rows], np.float64).reshape(n, len(_STATS)),
                     _spans(np.cumsum([len(x) for x in limits], dtype=np.uint64)),
                     _spans(np.cumsum([len(x) for x in counts], dtype=np.uint64)),
                     np.array([x for xs in limits for x in xs], np.float64),
                     np.array([x for xs in counts for x in xs], np.float64))
    if purge and mindspore:
        got = got.take(last_per_step_index(got.step))
    return got
