"""The Reader's columnar scalar loader: scalar values (``simple_value`` and the scalars
plugin's tensors) decoded in C straight into numpy; the Reader's only use of cffi."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable

import numpy as np

from ._native import ffi, lib
from .discovery import dialect_of
from .read_types import FileReport, Scalars
from .records import RecordReader
from .records.reader import DAMAGE_SLOTS as _MAX_DAMAGE
from .records.reader import SMALL_FILE, TAIL_KINDS, Tail, damage_list

__all__ = ["RunColumns", "ColumnLoader", "FileGate", "LOCAL_FILES", "TAG_OTHER",
           "last_per_step_index", "new_tags", "purge_keep", "resume_kept", "tag_names"]

_COLUMNS = (("uint32_t[]", np.uint32), ("int64_t[]", np.int64),  # tag id, step
            ("double[]", np.float64), ("double[]", np.float64))  # wall time, value
_SCRATCH_VALUES = 1 << 14  # values a small file may hold to take the one-call path
# the most values the columns are sized for before any is read (the file's size is a
# guess: a file of images holds few); past it they grow with what is read
_FIRST_VALUES = 1 << 20
_MIN_VALUE_BYTES = 7  # the fewest bytes a scalar takes in an event: bounds a record's values
# file bytes per scalar the columns are first sized for: Writer.log's events carry several
# values (about 20 bytes each), add_scalar's one (about 40).  Sized for the denser, so
# neither grows (a growth copies and zero-fills the columns); the unused tail is given back
_BYTES_PER_VALUE = 20
_DIALECTS = {"tensorboard": lib.SLG_DIALECT_TB, "mindspore": lib.SLG_DIALECT_MS}
TAG_OTHER = lib.SLG_TAGF_OTHER  #: a tag's flag: it also holds values that are not scalars


class FileGate:
    """Where a run's files stand: local files are whole already.  A URL's mirror
    overrides both, so each file is read as soon as its bytes are in, while later
    files are still being fetched."""

    def wait(self, files: list[str]) -> None:
        """Until ``files`` hold all there is to read."""

    def expect(self, files: list[str]) -> None:
        """``files`` will be read in this order (a URL's are then fetched in it)."""

    def size(self, path: str) -> int:
        """The size ``path`` will have once :meth:`wait` returns (OSError: gone)."""
        return os.path.getsize(path)


LOCAL_FILES = FileGate()


class RunColumns:
    """All scalars of one run, decoded once."""

    def __init__(self) -> None:
        self.tags: list[str] = []  #: every tag, in id order (non-UTF-8 bytes surrogate-escaped)
        self.flags: list[int] = []  #: TAG_* bits per tag
        self.series: dict[str, Scalars] = {}

    def needs_events(self) -> list[str]:
        """Tags whose kinds the scalar columns do not tell (they hold other values)."""
        return [t for t, f in zip(self.tags, self.flags)
                if f & TAG_OTHER or t not in self.series]


def new_tags() -> Any:
    """An empty slg_tags table, freed with its last reference."""
    tags = ffi.gc(lib.slg_tags_new(), lib.slg_tags_free)
    if tags == ffi.NULL:
        raise MemoryError("slg_tags_new")
    return tags


def _pointers(*arrays: np.ndarray) -> list[Any]:
    return [ffi.from_buffer(t, a) for (t, _), a in zip(_COLUMNS, arrays)]


def _columns(cap: int) -> tuple[tuple[np.ndarray, ...], list[Any]]:
    """Empty id, step, wall time and value columns, and C pointers to them."""
    arrays = tuple(np.empty(cap, dtype) for _, dtype in _COLUMNS)
    return arrays, _pointers(*arrays)


def tag_names(tags: Any) -> tuple[list[str], list[int]]:
    """The tags of a slg_tags table in id order (non-UTF-8 bytes surrogate-escaped:
    kept distinct) and their SLG_TAGF_* flags."""
    # per call: runs load on several threads (Reader(threads=...))
    data, length, kind = ffi.new("char **"), ffi.new("uint64_t *"), ffi.new("int32_t *")
    names, flags = [], []
    for t in range(lib.slg_tags_count(tags)):
        lib.slg_tags_get(tags, t, data, length, kind)
        names.append(ffi.unpack(data[0], length[0]).decode("utf-8", "surrogateescape"))
        flags.append(lib.slg_tags_flags(tags, t))
    return names, flags


def _run_columns(tags: Any, ids: np.ndarray, steps: np.ndarray, walls: np.ndarray,
                 vals: np.ndarray) -> RunColumns:
    """The tags of a slg_tags table, in id order, with their series: slices of the
    columns grouped in place by tag.  Non-UTF-8 tags are surrogate-escaped (kept distinct)."""
    cols = RunColumns()
    cols.tags, cols.flags = tag_names(tags)
    ntags, n = len(cols.tags), len(steps)
    if n and ntags == 1:  # one tag: the columns are its series
        cols.series[cols.tags[0]] = Scalars(steps, walls, vals)
    elif n:
        counts = ffi.new("uint64_t[]", ntags)
        if lib.slg_columns_group(*_pointers(ids, steps, walls, vals), n, ntags, counts) < 0:
            raise MemoryError("slg_columns_group")
        start = 0
        for tag, count in zip(cols.tags, ffi.unpack(counts, ntags)):
            if count:
                end = start + count
                cols.series[tag] = Scalars(steps[start:end], walls[start:end], vals[start:end])
                start = end
    return cols


def purge_keep(steps: np.ndarray, purges: list[tuple[int, int]]) -> np.ndarray:
    """TensorBoard's resume rule as a mask: a marker (index, step) drops every point
    before index whose step is >= step (each point against the markers after it)."""
    idx, mstep = np.array(sorted(purges), np.int64).reshape(-1, 2).T  # markers in file order
    after_min = np.minimum.accumulate(mstep[::-1])[::-1]  # smallest step from marker k on
    k = np.searchsorted(idx, np.arange(len(steps)), side="right")  # first marker after point
    has = k < len(idx)
    keep = np.ones(len(steps), bool)
    keep[has] = steps[has] < after_min[k[has]]
    return keep


def resume_kept(events: Iterable[Any], kinds: tuple[str, ...], purge: bool) -> list[Any]:
    """The decoded events of ``kinds`` among ``events`` (file order) that TensorBoard's
    resume rule keeps (with ``purge``; all of them without): the rule of
    :func:`purge_keep`, its markers the SessionLog STARTs among ``events``."""
    found: list[Any] = []
    purges: list[tuple[int, int]] = []
    for ev in events:
        if ev.kind == "session_log" and ev.value.get("status") == "start":
            purges.append((len(found), ev.step))
        elif ev.kind in kinds:
            found.append(ev)
    if not (purge and purges):
        return found
    keep = purge_keep(np.array([ev.step for ev in found], np.int64), purges)
    return [ev for ev, k in zip(found, keep) if k]


def last_per_step_index(steps: np.ndarray) -> np.ndarray:
    """MindInsight's rule for MindSpore runs as positions in ``steps``: each step's
    last value, in step order."""
    if len(steps) < 2 or bool((steps[1:] > steps[:-1]).all()):
        return np.arange(len(steps))
    _, first_from_end = np.unique(steps[::-1], return_index=True)
    return len(steps) - 1 - first_from_end  # ascending steps, last occurrence each


def last_per_step(cols: RunColumns) -> None:
    """:func:`last_per_step_index` applied to every series of ``cols``."""
    for tag, s in list(cols.series.items()):
        keep = last_per_step_index(s.step)
        if len(keep) < len(s.step) or bool((keep[1:] < keep[:-1]).any()):
            cols.series[tag] = Scalars(*(a[keep] for a in s))


class ColumnLoader:
    """Loads the scalars of runs; keeps scratch buffers between runs."""

    def __init__(self, verify: bool) -> None:
        self.verify = verify
        self._damage_buf = ffi.new("slg_damage[]", _MAX_DAMAGE)
        self._loaded = ffi.new("slg_file_scalars *")
        self._scratch: tuple[Any, tuple[np.ndarray, ...], list[Any]] | None = None  # small files

    def load(self, files: list[str], purge: bool, reports: dict[str, FileReport],
             gate: FileGate = LOCAL_FILES) -> RunColumns:
        """Every scalar of a run's files, each read once ``gate`` says it is whole;
        each file's report into reports."""
        if not files:  # a run of lineage files only
            return RunColumns()
        if len(files) == 1:
            gate.wait(files)
        cols = ((self._load_small_file(files[0], reports) if len(files) == 1 else None)
                or self._load_files(files, purge, reports, gate))
        if purge and any(dialect_of(p) == "mindspore" for p in files):
            last_per_step(cols)
        return cols

    def _load_small_file(self, path: str, reports: dict[str, FileReport]) -> RunColumns | None:
        """A run of one small plain file without resume markers, in one native call
        through the scratch columns; None when the file needs :meth:`_load_files`."""
        if self._scratch is None:
            self._scratch = (new_tags(), *_columns(_SCRATCH_VALUES))
        tags, arrays, ptrs = self._scratch
        lib.slg_tags_clear(tags)
        lib.slg_tags_set_dialect(tags, _DIALECTS[dialect_of(path)])
        loaded = self._loaded
        rc = lib.slg_tb_load_file(os.fsencode(path), self.verify, SMALL_FILE, tags, *ptrs,
                                  _SCRATCH_VALUES, self._damage_buf, _MAX_DAMAGE, loaded)
        if rc != 0 or loaded.dec.n_purges:
            return None
        reports[path] = self._loaded_report(path, loaded)
        return _run_columns(tags, *(a[: loaded.dec.n_values].copy() for a in arrays))

    def _loaded_report(self, path: str, loaded: Any) -> FileReport:
        """The FileReport of a slg_tb_load_file result."""
        report = FileReport(path, loaded.records, bad_events=loaded.dec.bad_events,
                            size=loaded.size, bad_values=loaded.dec.bad_values)
        if loaded.n_damage:
            report.set_damage(damage_list(self._damage_buf, loaded.n_damage))
        if loaded.tail_kind:
            report.tail = Tail(loaded.tail_offset, TAIL_KINDS[loaded.tail_kind], loaded.tail_length)
        return report

    def _load_files(self, files: list[str], purge: bool, reports: dict[str, FileReport],
                    gate: FileGate) -> RunColumns:
        """Every scalar of a run's files (any size, plain or zstd)."""
        tags = new_tags()
        # columns sized once from the files' bytes (_BYTES_PER_VALUE), not by doubling,
        # and shrunk in place at the end; a lone file's size comes with reading it
        total = 0 if len(files) > 1 else SMALL_FILE
        for p in files if len(files) > 1 else ():
            with contextlib.suppress(OSError):  # reported when the file is opened
                total += gate.size(p)
        arrays, ptrs = _columns(min(max(1024, total // _BYTES_PER_VALUE + 1024), _FIRST_VALUES))
        n = 0  # values in the arrays
        purges: list[tuple[int, int]] = []
        res = ffi.new("slg_decode_result *")
        loaded = self._loaded
        decode = lib.slg_tb_decode_scalars
        for path in files:
            gate.wait([path])
            lib.slg_tags_set_dialect(tags, _DIALECTS[dialect_of(path)])
            # small plain files: open, scan and decode in one native call
            rc = lib.slg_tb_load_file(os.fsencode(path), self.verify, SMALL_FILE, tags,
                                      *[p + n for p in ptrs], len(arrays[0]) - n,
                                      self._damage_buf, _MAX_DAMAGE, loaded)
            if rc == 0:
                dec = loaded.dec
                purges += [(n + dec.purge_index[k], dec.purge_step[k])
                           for k in range(dec.n_purges)]
                n += dec.n_values
                reports[path] = self._loaded_report(path, loaded)
                continue
            guess = loaded.size // _BYTES_PER_VALUE + 1024
            if len(files) == 1 and n == 0 and guess > len(arrays[0]):
                # a lone big file: size the columns for it once (up to _FIRST_VALUES)
                arrays, ptrs = _columns(min(guess, _FIRST_VALUES))
            report = reports[path] = FileReport(path)
            with RecordReader(path, verify=self.verify) as rr:
                spans = rr.spans
                zstd_seen = 0  # rr.damage holds only bad zstd frames: the scan's go to report
                for buf, base, nsp, damage in rr.scan_batches():
                    for d in [*rr.damage[zstd_seen:], *damage]:  # file order, as rr would list
                        report.add_damage(d)
                    zstd_seen = len(rr.damage)
                    report.records += nsp
                    done = 0
                    while done < nsp:
                        rc = decode(buf, base, spans + done, nsp - done, tags,
                                    *[p + n for p in ptrs], len(arrays[0]) - n, res)
                        if rc < 0:
                            raise MemoryError("slg_tb_decode_scalars")
                        purges += [(n + res.purge_index[k], res.purge_step[k])
                                   for k in range(res.n_purges)]
                        n += res.n_values
                        done += res.spans_done
                        report.bad_events += res.bad_events
                        report.bad_values += res.bad_values
                        if rc == lib.SLG_DECODE_OUT_FULL:
                            # full: grow in place by half (realloc of a big block remaps
                            # its pages, no copy), so reserved memory follows the values
                            event_max = spans[done].length // _MIN_VALUE_BYTES + 1
                            ptrs = []
                            grow = max(len(arrays[0]) * 3 // 2, n + event_max)
                            for arr in arrays:
                                arr.resize(grow, refcheck=False)
                            ptrs = _pointers(*arrays)
                for d in rr.damage[zstd_seen:]:
                    report.add_damage(d)
                report.damage_past_cap += rr.damage_past_cap  # bad zstd frames past its cap
                report.tail, report.size = rr.tail, rr.size
        del ptrs  # no pointers into the arrays past this point
        for arr in arrays:
            arr.resize(n, refcheck=False)  # give back the unused tail in place
        ids, steps, walls, vals = arrays
        del arrays
        if purge and purges:
            keep = purge_keep(steps, purges)
            ids, steps, walls, vals = ids[keep], steps[keep], walls[keep], vals[keep]
        return _run_columns(tags, ids, steps, walls, vals)
