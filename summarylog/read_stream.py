"""A run's scalars streamed in fixed-size numpy chunks, in memory independent of the
run's size: the columnar C decoder writes into one reused scratch block per step.

With ``purge`` (TensorBoard's resume rule, as :class:`summarylog.Reader` applies it), a
point is dropped by a later marker, so the files are read twice: a first pass finds
the markers (memory grows with their number, never with the values), the second
streams the values with the rule applied.  ``purge=False`` reads once.  MindSpore's
one-value-per-step rule needs a sort of the whole run: MindSpore files stream only
with ``purge=False`` (their values in file order).
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple

import numpy as np

from ._native import ffi, lib
from .discovery import dialect_of
from .read_types import FileReport
from .records import RecordReader

__all__ = ["ScalarChunk", "iter_scalars"]

_DIALECTS = {"tensorboard": lib.SLG_DIALECT_TB, "mindspore": lib.SLG_DIALECT_MS}
_MIN_VALUE_BYTES = 7  # the fewest bytes a scalar takes in an event: bounds a record's values
_COLUMNS = (("uint32_t[]", np.uint32), ("int64_t[]", np.int64),
            ("double[]", np.float64), ("double[]", np.float64))


class ScalarChunk(NamedTuple):
    """Up to ``chunk`` consecutive scalars of a run, in file order (after the rule)."""

    step: np.ndarray  #: int64
    wall_time: np.ndarray  #: float64
    value: np.ndarray  #: float64
    tag: np.ndarray  #: uint32 codes into ``tags``
    tags: list[str]  #: every tag seen so far, by code (the list grows; codes never change)


class _Scratch:
    """Reused decode columns of a fixed capacity, and C pointers to them."""

    def __init__(self, cap: int) -> None:
        self.arrays = tuple(np.empty(cap, dtype) for _, dtype in _COLUMNS)
        self.ptrs = [ffi.from_buffer(t, a) for (t, _), a in zip(_COLUMNS, self.arrays)]
        self.cap = cap


def _decode_files(files: list[str], verify: bool, cap: int, tags: Any,
                  reports: dict[str, FileReport] | None
                  ) -> Iterator[tuple[tuple[np.ndarray, ...], list[tuple[int, int]]]]:
    """Per scratch fill: (id, step, wall, value views valid until the next step,
    purge markers as (global value index, step))."""
    scratch = _Scratch(cap)
    res = ffi.new("slg_decode_result *")
    offset = 0  # values yielded before the scratch
    n = 0
    purges: list[tuple[int, int]] = []
    for path in files:
        lib.slg_tags_set_dialect(tags, _DIALECTS[dialect_of(path)])
        report = FileReport(path)
        if reports is not None:
            reports[path] = report
        with RecordReader(path, verify=verify) as rr:
            spans = rr.spans
            for buf, base, nsp, damage in rr.scan_batches():
                for d in damage:
                    rr.add_damage(d)
                report.records += nsp
                done = 0
                while done < nsp:
                    rc = lib.slg_tb_decode_scalars(
                        buf, base, spans + done, nsp - done, tags,
                        *[p + n for p in scratch.ptrs], scratch.cap - n, res)
                    if rc < 0:
                        raise MemoryError("slg_tb_decode_scalars")
                    purges += [(offset + n + res.purge_index[k], res.purge_step[k])
                               for k in range(res.n_purges)]
                    n += res.n_values
                    done += res.spans_done
                    report.bad_events += res.bad_events
                    report.bad_values += res.bad_values
                    if rc == lib.SLG_DECODE_OUT_FULL:
                        if n:
                            yield tuple(a[:n] for a in scratch.arrays), purges
                            offset, n, purges = offset + n, 0, []
                        else:  # one event holds more values than a chunk: a block for it
                            want = spans[done].length // _MIN_VALUE_BYTES + 1
                            scratch = _Scratch(max(want, cap))
                buf = b""  # not held while the next file's first window is read
            report.set_damage(rr.damage, rr.damage_past_cap)
            report.tail, report.size = rr.tail, rr.size
            if scratch.cap > cap and not n:
                scratch = _Scratch(cap)
    if n or purges:
        yield tuple(a[:n] for a in scratch.arrays), purges


class ResumeRule:
    """Resume markers of a whole run, as the staircase of suffix minima that decides
    which points survive: a point at index i is kept iff its step is below the
    smallest marker step after i."""

    def __init__(self, markers: list[tuple[int, int]]) -> None:
        idx = np.array([m[0] for m in markers], np.int64)
        steps = np.array([m[1] for m in markers], np.int64)
        self.idx = idx
        self.after_min = np.minimum.accumulate(steps[::-1])[::-1] if len(steps) else steps

    def keep(self, first: int, steps: np.ndarray) -> np.ndarray:
        """The mask of points ``first .. first+len(steps)`` that the rule keeps."""
        if not len(self.idx) or first >= self.idx[-1]:
            return np.ones(len(steps), bool)
        k = np.searchsorted(self.idx, np.arange(first, first + len(steps)), side="right")
        has = k < len(self.idx)
        keep = np.ones(len(steps), bool)
        keep[has] = steps[has] < self.after_min[k[has]]
        return keep


def _tag_names(tags: Any, names: list[str]) -> None:
    """Extend ``names`` with the tags the table gained (non-UTF-8 surrogate-escaped)."""
    data, length, kind = ffi.new("char **"), ffi.new("uint64_t *"), ffi.new("int32_t *")
    for t in range(len(names), lib.slg_tags_count(tags)):
        lib.slg_tags_get(tags, t, data, length, kind)
        names.append(ffi.unpack(data[0], length[0]).decode("utf-8", "surrogateescape"))


def iter_scalars(files: list[str], tag: str | None = None, chunk: int = 65536, *,
                 purge: bool = True, verify: bool = True,
                 reports: dict[str, FileReport] | None = None) -> Iterator[ScalarChunk]:
    """Stream the scalars of a run's ``files`` (in reading order, as
    ``Reader.files(run)``) in chunks of ``chunk`` values (the last may hold fewer),
    the values and order of ``Reader.scalars`` per tag; ``tag``: only that tag.
    Each file's :class:`FileReport` goes into ``reports`` as it is read (damage
    is reported there, never raised)."""
    if isinstance(chunk, bool) or not isinstance(chunk, int):
        raise TypeError(f"chunk must be an int, got {type(chunk).__name__}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if tag is not None and not isinstance(tag, str):
        raise TypeError(f"tag must be a str or None, got {type(tag).__name__}")
    files = list(files)
    if purge and any(dialect_of(p) == "mindspore" for p in files):
        raise ValueError("iter_scalars: MindSpore files stream only with purge=False "
                         "(their one-value-per-step rule sorts the whole run)")
    return _stream(files, tag, chunk, purge, verify, reports)


def _stream(files: list[str], tag: str | None, chunk: int, purge: bool, verify: bool,
            reports: dict[str, FileReport] | None) -> Iterator[ScalarChunk]:
    markers = None
    if purge:  # first pass: the markers only
        found: list[tuple[int, int]] = []
        probe = ffi.gc(lib.slg_tags_new(), lib.slg_tags_free)
        for _, purges in _decode_files(files, verify, chunk, probe, None):
            found += purges
        markers = ResumeRule(found)
    tags = ffi.gc(lib.slg_tags_new(), lib.slg_tags_free)
    if tags == ffi.NULL:
        raise MemoryError("slg_tags_new")
    names: list[str] = []
    out = [np.empty(chunk, dtype) for _, dtype in _COLUMNS]
    filled = 0
    first = 0  # global index of the scratch's first value
    for cols, _ in _decode_files(files, verify, chunk, tags, reports):
        count = len(cols[0])
        if markers is not None or tag is not None:
            mask = (markers.keep(first, cols[1]) if markers is not None
                    else np.ones(count, bool))
            _tag_names(tags, names)
            if tag is not None:
                code = names.index(tag) if tag in names else -1
                mask &= cols[0] == code
            cols = tuple(c[mask] for c in cols)
        first += count
        pos = 0
        while pos < len(cols[0]):
            take = min(chunk - filled, len(cols[0]) - pos)
            for o, c in zip(out, cols):
                o[filled : filled + take] = c[pos : pos + take]
            filled += take
            pos += take
            if filled == chunk:
                _tag_names(tags, names)
                yield ScalarChunk(out[1], out[2], out[3], out[0], list(names))
                out = [np.empty(chunk, dtype) for _, dtype in _COLUMNS]
                filled = 0
    if filled:
        _tag_names(tags, names)
        yield ScalarChunk(out[1][:filled].copy(), out[2][:filled].copy(),
                          out[3][:filled].copy(), out[0][:filled].copy(), list(names))
