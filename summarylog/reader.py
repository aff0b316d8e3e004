"""summarylog.Reader: runs of TensorBoard event files back into Python and
numpy, from ours and from everyone else's writers, damaged or live.

* Discovery: ``path`` is a file, a run directory or a root of runs.  A run is
  a directory holding event files (names containing ``tfevents``, or
  ``zevents`` for summarylog's zstd files); its name is its path relative to
  the root (``"."`` for the root itself).  A run's files are read in name
  order with numbers compared as numbers (timestamp, host, pid, sequence), so
  rotated segments and per-rank files merge in order.
* Columnar scalars: records are scanned and decoded in C straight into numpy
  (``simple_value`` and scalar tensors of the scalars plugin, as TF2 and
  ``torch.utils.tensorboard(new_style=True)`` write them).
* Damage: every file's skipped regions and unfinished tail are kept and
  reported per file and per run (:meth:`Reader.damage`); nothing is skipped
  silently.
* Resumed runs (TensorBoard's rule for files with ``file_version`` 2): an
  ``Event{session_log: START}`` at step N drops every point of the run read
  before it whose step is >= N, for all tags.  summarylog's
  ``Writer(purge_step=N)``, tensorboardX's and ``torch.utils.tensorboard``'s
  ``purge_step`` write that marker.  ``Reader(purge=False)`` keeps everything.
* MindSpore files (``summary.<digits>`` names, MindSpore's dialect; their
  ``_lineage`` files feed :meth:`Reader.lineage`) are read into the same
  objects.  As MindInsight shows them, a tag holds one value per step (the
  last one written; MindSpore records an epoch's last step twice), in step
  order.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Any, Iterator, NamedTuple

import numpy as np

from ._native import ffi, lib
from .events import Event
from .records import RecordReader
from .records.reader import _DAMAGE as _MAX_DAMAGE
from .records.reader import _SMALL_FILE, Damage, Tail, damage_list

__all__ = ["Reader", "Scalars", "Event", "FileReport", "is_event_file", "is_lineage_file",
           "dialect_of"]

_EVENT_NAME = re.compile(r"(tfevents|zevents)")
_MS_NAME = re.compile(r"summary\.\d+")  # MindSpore summary and lineage files (as MindInsight)
_LINEAGE_SUFFIX = "_lineage"
_NUM = re.compile(r"(\d+)")
_COLUMN_CTYPES = ("uint32_t[]", "int64_t[]", "double[]", "double[]")  # id, step, wall, value


def is_event_file(name: str) -> bool:
    """True for event files: names TensorBoard reads (``tfevents``),
    summarylog's zstd segments (``zevents``) and MindSpore summary files
    (``summary.<digits>``, as MindInsight finds them; not ``_lineage``)."""
    base = os.path.basename(name)
    if _EVENT_NAME.search(base) is not None:
        return True
    return _MS_NAME.search(base) is not None and not base.endswith(_LINEAGE_SUFFIX)


def is_lineage_file(name: str) -> bool:
    """True for MindSpore lineage files (``summary.<digits>…_lineage``)."""
    base = os.path.basename(name)
    return base.endswith(_LINEAGE_SUFFIX) and _MS_NAME.search(base) is not None


def dialect_of(name: str) -> str:
    """``"tensorboard"`` or ``"mindspore"``: how an event file is read,
    from its name (a file never mixes dialects)."""
    base = os.path.basename(name)
    return "tensorboard" if _EVENT_NAME.search(base) is not None else "mindspore"


def _decoder(path: str) -> Any:
    """The event decoder of a file's dialect: ``decode(payload, plugins)``."""
    if dialect_of(path) == "tensorboard":
        from .dialects.tensorboard import decode_event
    else:
        from .dialects.mindspore import decode_event
    return decode_event


def _dialect_code(path: str) -> int:
    return lib.SLG_DIALECT_TB if dialect_of(path) == "tensorboard" else lib.SLG_DIALECT_MS


def _natural_key(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in _NUM.split(os.path.basename(name))]


class Scalars(NamedTuple):
    """One scalar series: three aligned numpy arrays."""

    step: np.ndarray  #: int64
    wall_time: np.ndarray  #: float64, seconds since the epoch
    value: np.ndarray  #: float64


@dataclasses.dataclass
class FileReport:
    """What reading one file found."""

    path: str
    records: int = 0
    damage: list[Damage] = dataclasses.field(default_factory=list)
    tail: Tail | None = None
    bad_events: int = 0  #: records with valid CRCs that are not Events
    size: int | None = None  #: the file's size when it was opened for this report (bytes)

    @property
    def ok(self) -> bool:
        return not self.damage and not self.bad_events


class _RunColumns:
    """All scalars of one run, decoded once."""

    def __init__(self) -> None:
        self.tags: list[str] = []
        self.kinds: list[int] = []
        self.series: dict[str, Scalars] = {}


_SCRATCH_VALUES = 1 << 14  # values a small file may hold to take the one-call path


class _Scratch:
    """A Reader's reusable columns and buffers for small files."""

    def __init__(self) -> None:
        self.tags = ffi.gc(lib.slg_tags_new(), lib.slg_tags_free)
        if self.tags == ffi.NULL:
            raise MemoryError("slg_tags_new")
        self.ids = np.empty(_SCRATCH_VALUES, np.uint32)
        self.steps = np.empty(_SCRATCH_VALUES, np.int64)
        self.walls = np.empty(_SCRATCH_VALUES, np.float64)
        self.vals = np.empty(_SCRATCH_VALUES, np.float64)
        self.ptrs = [ffi.from_buffer(t, a) for t, a in
                     zip(_COLUMN_CTYPES, (self.ids, self.steps, self.walls, self.vals))]
        self.loaded = ffi.new("slg_file_scalars *")
        self.counts = ffi.new("uint64_t[]", 64)


_TAG_OUT = ffi.new("char **"), ffi.new("uint64_t *"), ffi.new("int32_t *")


def _tag_names(tags: Any, cols: _RunColumns) -> None:
    """Fill cols.tags and cols.kinds from a slg_tags table, in id order."""
    data, length, kind = _TAG_OUT
    get = lib.slg_tags_get
    for t in range(lib.slg_tags_count(tags)):
        get(tags, t, data, length, kind)
        cols.tags.append(ffi.unpack(data[0], length[0]).decode("utf-8", "replace"))
        cols.kinds.append(kind[0])


def _last_per_step(cols: _RunColumns) -> None:
    """MindInsight's rule for MindSpore runs: one value per step and tag (the
    last one written), in step order."""
    for tag, s in list(cols.series.items()):
        steps = s.step
        if len(steps) < 2 or bool((steps[1:] > steps[:-1]).all()):
            continue
        _, first_from_end = np.unique(steps[::-1], return_index=True)
        keep = len(steps) - 1 - first_from_end  # ascending steps, last occurrence each
        cols.series[tag] = Scalars(steps[keep], s.wall_time[keep], s.value[keep])


class Reader:
    """Read runs of TensorBoard event files and MindSpore summary files.

    Args:
      path: an event file, a run directory, or a root of run directories.
      purge: apply TensorBoard's resume rule to TensorBoard files and
        MindInsight's one-value-per-step rule to MindSpore files (see the
        module docstring; default True).
      verify: check data CRCs (default True).

    Raises FileNotFoundError for a missing path.
    """

    def __init__(self, path: str | os.PathLike[str], *, purge: bool = True,
                 verify: bool = True) -> None:
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise FileNotFoundError(2, "No such file or directory", self.path)
        self.purge = purge
        self.verify = verify
        self._runs: dict[str, list[str]] | None = None
        self._lineage_files: dict[str, list[str]] = {}  # run -> MindSpore lineage files
        self._columns: dict[str, _RunColumns] = {}
        self._reports: dict[str, FileReport] = {}
        self._damage_buf = ffi.new("slg_damage[]", _MAX_DAMAGE)  # slg_tb_load_file's output
        self._scratch: _Scratch | None = None
        #: directories that could not be listed during the last discovery
        self.discovery_errors: list[OSError] = []

    # -- discovery ------------------------------------------------------------
    def _discover(self) -> dict[str, list[str]]:
        self._lineage_files = {}
        if os.path.isfile(self.path):
            if is_lineage_file(self.path):
                self._lineage_files["."] = [self.path]
                return {".": []}
            return {".": [self.path]}
        runs: dict[str, list[str]] = {}
        self.discovery_errors = []
        try:
            root_st = os.stat(self.path)
        except OSError as exc:
            self.discovery_errors.append(exc)
            return runs
        # one scandir per directory (file types come with the listing); a
        # directory seen before (through a symlink loop) is not entered again
        seen = {(root_st.st_dev, root_st.st_ino)}
        stack = [(self.path, "")]
        while stack:
            d, rel = stack.pop()
            try:
                with os.scandir(d) as it:
                    entries = list(it)
            except OSError as exc:
                self.discovery_errors.append(exc)
                continue
            files, subdirs, lineage = [], [], []
            for e in entries:
                try:
                    if e.is_dir():
                        if e.is_symlink():
                            st = e.stat()
                            key = (st.st_dev, st.st_ino)
                        else:
                            key = (root_st.st_dev, e.inode())
                        if key not in seen:
                            seen.add(key)
                            subdirs.append(e.name)
                    elif is_event_file(e.name) and e.is_file():
                        files.append(e.path)
                    elif is_lineage_file(e.name) and e.is_file():
                        lineage.append(e.path)
                except OSError as exc:
                    self.discovery_errors.append(exc)
            if files or lineage:
                runs[rel or "."] = sorted(files, key=_natural_key) if len(files) > 1 else files
            if lineage:
                self._lineage_files[rel or "."] = sorted(lineage, key=_natural_key)
            for name in sorted(subdirs, reverse=True):
                stack.append((os.path.join(d, name), f"{rel}/{name}" if rel else name))
        return runs

    def refresh(self) -> None:
        """Look for new runs and files, and re-read what changed on next use."""
        self._runs = None
        self._columns.clear()
        self._reports.clear()

    def runs(self) -> list[str]:
        """Run names, sorted (``"."`` is the root itself)."""
        if self._runs is None:
            self._runs = self._discover()
        return sorted(self._runs)

    def files(self, run: str) -> list[str]:
        """The run's event files, in reading order."""
        if self._runs is None:
            self._runs = self._discover()
        try:
            return list(self._runs[run])
        except KeyError:
            raise KeyError(f"no run {run!r} under {self.path} (runs: {self.runs()})") from None

    # -- scalars ------------------------------------------------------------------
    def _load_columns(self, run: str) -> _RunColumns:
        cols = self._columns.get(run)
        if cols is None:
            files = self.files(run)
            if not files:  # a run of lineage files only
                cols = self._columns[run] = _RunColumns()
                return cols
            cols = self._load_small_file(files[0]) if len(files) == 1 else None
            if cols is None:
                cols = self._load_files(files)
            if self.purge and any(dialect_of(p) == "mindspore" for p in files):
                _last_per_step(cols)
            self._columns[run] = cols
        return cols

    def _load_small_file(self, path: str) -> _RunColumns | None:
        """A run of one small plain file without resume markers, through the
        Reader's scratch columns (one native call, one copy out); None when
        the file needs :meth:`_load_files`."""
        sc = self._scratch
        if sc is None:
            sc = self._scratch = _Scratch()
        lib.slg_tags_clear(sc.tags)
        lib.slg_tags_set_dialect(sc.tags, _dialect_code(path))
        loaded = sc.loaded
        rc = lib.slg_tb_load_file(os.fsencode(path), self.verify, _SMALL_FILE, sc.tags,
                                  *sc.ptrs, _SCRATCH_VALUES, self._damage_buf, _MAX_DAMAGE,
                                  loaded)
        if rc != 0 or loaded.dec.n_purges:
            return None
        self._reports[path] = self._loaded_report(path, loaded)
        cols = _RunColumns()
        _tag_names(sc.tags, cols)
        n, ntags = loaded.dec.n_values, len(cols.tags)
        if not n:
            return cols
        if ntags > 1:
            counts = sc.counts if ntags <= len(sc.counts) else ffi.new("uint64_t[]", ntags)
            if lib.slg_columns_group(*sc.ptrs, n, ntags, counts) < 0:
                raise MemoryError("slg_columns_group")
        steps, walls, vals = sc.steps[:n].copy(), sc.walls[:n].copy(), sc.vals[:n].copy()
        if ntags == 1:
            cols.series[cols.tags[0]] = Scalars(steps, walls, vals)
            return cols
        start = 0
        for tag, count in zip(cols.tags, ffi.unpack(counts, ntags)):
            if count:
                end = start + count
                cols.series[tag] = Scalars(steps[start:end], walls[start:end], vals[start:end])
                start = end
        return cols

    def _loaded_report(self, path: str, loaded: Any) -> FileReport:
        """The FileReport of a slg_tb_load_file result."""
        report = FileReport(path, loaded.records, bad_events=loaded.dec.bad_events,
                            size=loaded.size)
        if loaded.n_damage:
            report.damage = damage_list(self._damage_buf, loaded.n_damage)
        if loaded.tail_kind:
            report.tail = Tail(loaded.tail_offset,
                               "torn" if loaded.tail_kind == lib.SLG_SCAN_TORN else "zero_tail",
                               loaded.tail_length)
        return report

    def _load_files(self, files: list[str]) -> _RunColumns:
        """Every scalar of a run's files (any size, plain or zstd, with the
        resume rule applied)."""
        tags = ffi.gc(lib.slg_tags_new(), lib.slg_tags_free)
        if tags == ffi.NULL:
            raise MemoryError("slg_tags_new")
        # a scalar event takes at least ~36 bytes on disk: size the columns
        # once from the files (shrunk in place at the end), not by doubling;
        # a lone file's size comes with reading it
        total = sum(os.path.getsize(p) for p in files) if len(files) > 1 else _SMALL_FILE
        cap = max(1024, total // 36 + 1024)
        ids = np.empty(cap, np.uint32)
        steps = np.empty(cap, np.int64)
        walls = np.empty(cap, np.float64)
        vals = np.empty(cap, np.float64)
        n = 0  # values in the current arrays
        offset = 0  # values in the chunks before them
        chunks: list[tuple[np.ndarray, ...]] = []
        purges: list[tuple[int, int]] = []
        res = ffi.new("slg_decode_result *")
        loaded = ffi.new("slg_file_scalars *")
        decode = lib.slg_tb_decode_scalars
        ptrs = [ffi.from_buffer(t, a) for t, a in zip(_COLUMN_CTYPES, (ids, steps, walls, vals))]
        for path in files:
            lib.slg_tags_set_dialect(tags, _dialect_code(path))
            # small plain files: open, scan and decode in one native call
            rc = lib.slg_tb_load_file(os.fsencode(path), self.verify, _SMALL_FILE, tags,
                                      ptrs[0] + n, ptrs[1] + n, ptrs[2] + n, ptrs[3] + n,
                                      len(ids) - n, self._damage_buf, _MAX_DAMAGE, loaded)
            if rc == 0:
                dec = loaded.dec
                for k in range(dec.n_purges):
                    purges.append((offset + n + dec.purge_index[k], dec.purge_step[k]))
                n += dec.n_values
                self._reports[path] = self._loaded_report(path, loaded)
                continue
            if len(files) == 1 and n == 0 and loaded.size // 36 + 1024 > len(ids):
                # a lone big file: size the columns for it once
                ptrs = []
                cap = loaded.size // 36 + 1024
                ids, steps = np.empty(cap, np.uint32), np.empty(cap, np.int64)
                walls, vals = np.empty(cap, np.float64), np.empty(cap, np.float64)
                ptrs = [ffi.from_buffer(t, a) for t, a in
                        zip(_COLUMN_CTYPES, (ids, steps, walls, vals))]
            report = self._reports[path] = FileReport(path)
            with RecordReader(path, verify=self.verify) as rr:
                report.size = rr.size
                spans = rr.spans
                for buf, base, nsp, damage in rr.scan_batches():
                    for d in damage:
                        rr._add_damage(d)
                    report.records += nsp
                    done = 0
                    while done < nsp:
                        rc = decode(buf, base, spans + done, nsp - done, tags, ptrs[0] + n,
                                    ptrs[1] + n, ptrs[2] + n, ptrs[3] + n, len(ids) - n, res)
                        if rc < 0:
                            raise MemoryError("slg_tb_decode_scalars")
                        for k in range(res.n_purges):
                            purges.append((offset + n + res.purge_index[k], res.purge_step[k]))
                        n += res.n_values
                        done += res.spans_done
                        report.bad_events += res.bad_events
                        if rc == lib.SLG_DECODE_OUT_FULL:
                            # more than the estimate (zstd files, many values an
                            # event): keep this chunk, go on in a new one (no
                            # copy-doubling); joined once at the end
                            ptrs = []
                            for arr in (ids, steps, walls, vals):
                                arr.resize(n, refcheck=False)
                            chunks.append((ids, steps, walls, vals))
                            offset += n
                            n = 0
                            more = max(1 << 16, offset // 2)
                            ids, steps = np.empty(more, np.uint32), np.empty(more, np.int64)
                            walls, vals = np.empty(more, np.float64), np.empty(more, np.float64)
                            ptrs = [ffi.from_buffer(t, a) for t, a in
                                    zip(_COLUMN_CTYPES, (ids, steps, walls, vals))]
                report.damage = list(rr.damage)
                report.tail = rr.tail
        del ptrs  # no pointers into the arrays past this point
        for arr in (ids, steps, walls, vals):
            arr.resize(n, refcheck=False)  # give back the unused tail in place
        if chunks:
            chunks.append((ids, steps, walls, vals))
            ids, steps, walls, vals = (np.concatenate(parts) for parts in zip(*chunks))
            del chunks
            n = len(ids)
        if self.purge and purges:
            keep = np.ones(n, bool)
            for index, step in purges:
                keep[:index] &= steps[:index] < step
            ids, steps, walls, vals = ids[keep], steps[keep], walls[keep], vals[keep]
        cols = _RunColumns()
        _tag_names(tags, cols)
        ntags = len(cols.tags)
        if ntags == 1 and len(ids):  # one tag: the columns are its series
            cols.series[cols.tags[0]] = Scalars(steps, walls, vals)
        elif len(ids):  # group in place by tag (stable), then each series is a slice
            counts = ffi.new("uint64_t[]", ntags)
            if lib.slg_columns_group(ffi.from_buffer("uint32_t[]", ids),
                                     ffi.from_buffer("int64_t[]", steps),
                                     ffi.from_buffer("double[]", walls),
                                     ffi.from_buffer("double[]", vals), len(ids), ntags,
                                     counts) < 0:
                raise MemoryError("slg_columns_group")
            start = 0
            for tag, count in zip(cols.tags, ffi.unpack(counts, ntags)):
                if count:
                    end = start + count
                    cols.series[tag] = Scalars(steps[start:end], walls[start:end], vals[start:end])
                    start = end
        return cols

    def scalar_tags(self, run: str) -> list[str]:
        """Tags of the run that hold scalars, sorted."""
        return sorted(self._load_columns(run).series)

    def scalars(self, run: str, tag: str) -> Scalars:
        """The series of ``tag`` in ``run``: numpy ``step``, ``wall_time``,
        ``value`` in file order (after the resume rule)."""
        cols = self._load_columns(run)
        try:
            return cols.series[tag]
        except KeyError:
            raise KeyError(f"no scalar tag {tag!r} in run {run!r} "
                           f"(scalar tags: {sorted(cols.series)})") from None

    def to_pandas(self, runs: list[str] | None = None, tags: list[str] | None = None) -> Any:
        """All scalars as a long DataFrame: run, tag, step, wall_time, value.
        Needs pandas (not a dependency of summarylog)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Reader.to_pandas() needs pandas: pip install pandas") from None
        frames = []
        for run in runs if runs is not None else self.runs():
            cols = self._load_columns(run)
            for tag in tags if tags is not None else sorted(cols.series):
                s = cols.series.get(tag)
                if s is None:
                    continue
                codes = np.zeros(len(s.step), np.int8)
                frames.append(pd.DataFrame({
                    "run": pd.Categorical.from_codes(codes, [run]),
                    "tag": pd.Categorical.from_codes(codes, [tag]),
                    "step": s.step, "wall_time": s.wall_time, "value": s.value}))
        if not frames:
            return pd.DataFrame(columns=["run", "tag", "step", "wall_time", "value"])
        return pd.concat(frames, ignore_index=True)

    # -- every event ---------------------------------------------------------------
    def tags(self, run: str) -> dict[str, str]:
        """Every tag of the run with its kind (``"scalar"``, ``"histogram"``,
        ``"image"``, ``"text"``, ``"tensor"``, ``"hparams"``, ``"other"``)."""
        out: dict[str, str] = {}
        cols = self._load_columns(run)
        for tag in cols.series:
            out[tag] = "scalar"
        if len(out) < len(cols.tags):  # some tags hold more than scalars: look
            for ev in self.events(run):
                if ev.tag and ev.tag not in out:
                    out[ev.tag] = ev.kind
        return dict(sorted(out.items()))

    def events(self, run: str) -> Iterator[Event]:
        """Every value of the run, in file order, as :class:`Event` objects
        (the resume rule is not applied here: markers come as events)."""
        plugins: dict[str, str] = {}  # tag -> plugin, from each tag's first metadata
        for path in self.files(run):
            bad = 0
            decode_event = _decoder(path)
            with RecordReader(path, verify=self.verify) as rr:
                for payload in rr:
                    try:
                        events = decode_event(payload, plugins)
                    except Exception:  # a record with valid CRCs that is no Event
                        bad += 1
                        continue
                    yield from events
                self._note(path, rr, bad)

    def _note(self, path: str, rr: RecordReader, bad_events: int) -> None:
        """Record one full pass over a file (passes see the same file, or more of it)."""
        rep = self._reports.get(path) or FileReport(path)
        rep.records = max(rep.records, rr.records_read)
        rep.bad_events = max(rep.bad_events, bad_events)
        rep.damage, rep.tail = list(rr.damage), rr.tail
        rep.size = rr.size
        self._reports[path] = rep

    # -- damage ----------------------------------------------------------------------
    def damage(self, run: str | None = None) -> dict[str, FileReport]:
        """Per-file reports (records, damage, unfinished tail, malformed
        events) for one run, or all runs; reads what was not read yet."""
        out: dict[str, FileReport] = {}
        for r in [run] if run is not None else self.runs():
            self._load_columns(r)
            for path in self.files(r):
                out[path] = self._reports[path]
        return out

    # -- lineage (MindSpore) ---------------------------------------------------------------
    def lineage_files(self, run: str) -> list[str]:
        """The run's MindSpore lineage files, oldest first."""
        if self._runs is None:
            self._runs = self._discover()
        return list(self._lineage_files.get(run, []))

    def lineage(self, runs: list[str] | None = None) -> list[dict[str, Any]]:
        """One row per run with lineage, as MindInsight's lineage page shows
        it: ``run``, ``summary_dir``, train lineage (``optimizer``,
        ``learning_rate``, ``loss_function``, ``epoch``, ``parallel_mode``,
        ``device_num``, ``batch_size``, ``train_dataset_path``,
        ``train_dataset_size``, ``network``, ``loss``, ``model_path``,
        ``model_size``), ``metric`` (dict) and ``valid_dataset_path`` /
        ``valid_dataset_size`` from the eval lineage, ``user_defined``
        (dict of custom lineage) and ``dataset_graph`` (dict).  Like
        MindInsight, the last train, eval and dataset-graph records win and
        custom lineage accumulates.  Damaged records are skipped and reported
        by :meth:`lineage_damage`."""
        import json

        from .dialects.mindspore import decode_lineage, user_info_dict

        rows = []
        self._lineage_reports = getattr(self, "_lineage_reports", {})
        for run in runs if runs is not None else self.runs():
            files = self.lineage_files(run)
            if not files:
                continue
            row: dict[str, Any] = {"run": run, "summary_dir": os.path.dirname(files[0])}
            user: dict[str, Any] = {}
            for path in files:
                bad = 0
                with RecordReader(path, verify=self.verify) as rr:
                    for payload in rr:
                        try:
                            member, _, fields = decode_lineage(payload)
                        except Exception:
                            bad += 1
                            continue
                        if member == "train_lineage":
                            hp = fields.get("hyper_parameters", {})
                            ds = fields.get("train_dataset", {})
                            algo = fields.get("algorithm", {})
                            model = fields.get("model", {})
                            row.update({k: hp.get(k) for k in (
                                "optimizer", "learning_rate", "loss_function", "epoch",
                                "parallel_mode", "device_num", "batch_size")})
                            row["train_dataset_path"] = ds.get("train_dataset_path")
                            row["train_dataset_size"] = ds.get("train_dataset_size")
                            row["network"] = algo.get("network")
                            row["loss"] = algo.get("loss")
                            row["model_path"] = model.get("path")
                            row["model_size"] = (int(model["size"]) if "size" in model
                                                 else None)
                        elif member == "evaluation_lineage":
                            metric = fields.get("metric")
                            try:
                                row["metric"] = json.loads(metric) if metric else {}
                            except ValueError:
                                row["metric"] = {"_raw": metric}
                            vd = fields.get("valid_dataset", {})
                            row["valid_dataset_path"] = vd.get("valid_dataset_path")
                            row["valid_dataset_size"] = vd.get("valid_dataset_size")
                        elif member == "dataset_graph":
                            row["dataset_graph"] = fields
                        elif member == "user_defined_info":
                            user.update(user_info_dict(fields))
                    rep = FileReport(path, rr.records_read, list(rr.damage), rr.tail, bad,
                                     rr.size)
                    self._lineage_reports[path] = rep
            row["user_defined"] = user
            rows.append(row)
        return rows

    def lineage_damage(self) -> dict[str, FileReport]:
        """Per-file reports of the lineage files read by :meth:`lineage`."""
        return dict(getattr(self, "_lineage_reports", {}))

    # -- live runs -----------------------------------------------------------------------
    def follow(self, run: str | None = None, poll_secs: float = 0.5,
               idle_timeout: float | None = None,
               from_end: bool = False) -> Iterator[tuple[str, Event]]:
        """Yield ``(run, event)`` as writers append, including files created
        later (rotation, new runs).  ``from_end``: skip what the files already
        hold when following starts.  Ends after ``idle_timeout`` seconds with
        nothing new (None: never)."""
        readers: dict[str, tuple[str, RecordReader]] = {}
        plugins: dict[str, dict[str, str]] = {}
        last = time.monotonic()
        if from_end:
            for r, files in self._discover().items():
                for path in files:
                    if run is None or r == run:
                        rr = RecordReader(path, verify=self.verify)
                        for payload in rr:  # remember each tag's plugin on the way
                            try:
                                _decoder(path)(payload, plugins.setdefault(r, {}))
                            except Exception:
                                pass
                        readers[path] = (r, rr)
        try:
            while True:
                got = False
                found = self._discover()
                for r, files in sorted(found.items()):
                    if run is not None and r != run:
                        continue
                    for path in files:
                        if path not in readers:
                            readers[path] = (r, RecordReader(path, verify=self.verify))
                for path in sorted(readers, key=_natural_key):
                    r, rr = readers[path]
                    decode_event = _decoder(path)
                    for payload in rr:
                        got = True
                        try:
                            events = decode_event(payload, plugins.setdefault(r, {}))
                        except Exception:  # not an Event: counted by damage()
                            continue
                        for ev in events:
                            yield r, ev
                now = time.monotonic()
                if got:
                    last = now
                elif idle_timeout is not None and now - last >= idle_timeout:
                    return
                time.sleep(poll_secs)
        finally:
            for _, rr in readers.values():
                rr.close()
