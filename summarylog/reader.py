"""summarylog.Reader: runs of TensorBoard event files back into Python and
numpy, from ours and from everyone else's writers, damaged or live.

* Discovery (:mod:`summarylog.discovery`): ``path`` is a file, a run
  directory or a root of runs.  A run is a directory holding event files
  (names containing ``tfevents``, or ``zevents`` for summarylog's zstd
  files); its name is its path relative to the root (``"."`` for the root
  itself).  A run's files are read in name order with numbers compared as
  numbers (timestamp, host, pid, sequence), so rotated segments and per-rank
  files merge in order.  Links are followed, each directory entered once;
  what cannot be listed is in :attr:`Reader.discovery_errors`, with its path.
* Columnar scalars (:mod:`summarylog.read_columns`): records are scanned and
  decoded in C straight into numpy (``simple_value`` and scalar tensors of
  the scalars plugin, as TF2 and ``torch.utils.tensorboard(new_style=True)``
  write them).
* Damage: every file's skipped regions, unfinished tail, malformed events
  and malformed values are kept and reported per file and per run
  (:meth:`Reader.damage`); nothing is skipped silently.  An event with one
  value that does not decode keeps its other values
  (:mod:`summarylog.read_events`).
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

import os
from typing import Any, Iterator

import numpy as np

from .discovery import Discovery, dialect_of, discover, is_event_file, is_lineage_file
from .events import Event
from .read_columns import ColumnLoader, RunColumns
from .read_events import EventDecoder
from .read_follow import follow as _follow
from .read_lineage import read_lineage
from .read_types import FileReport, Scalars
from .records import RecordReader

__all__ = ["Reader", "Scalars", "Event", "FileReport", "is_event_file", "is_lineage_file",
           "dialect_of"]

_KIND_ORDER = ("scalar", "histogram", "image", "text", "tensor", "hparams")


def _tag_patterns(tags: list[str]) -> list[bytes]:
    """The bytes of each tag as a Summary.Value ``tag`` field (1, LEN)."""
    out = []
    for tag in tags:
        raw = tag.encode("utf-8", "surrogateescape")
        n, size = len(raw), bytearray()
        while n >= 0x80:
            size.append(n & 0x7F | 0x80)
            n >>= 7
        size.append(n)
        out.append(b"\x0a" + bytes(size) + raw)
    return out


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
        self._found: Discovery | None = None
        self._columns: dict[str, RunColumns] = {}
        self._reports: dict[str, FileReport] = {}
        self._decoded: set[str] = set()  # runs whose every value was decoded (damage(deep=True))
        self._lineage_reports: dict[str, FileReport] = {}
        self._loader = ColumnLoader(verify)
        #: what could not be listed during the last discovery: OSErrors whose
        #: ``filename`` names the path
        self.discovery_errors: list[OSError] = []

    # -- discovery ------------------------------------------------------------
    def _discover(self) -> Discovery:
        found = discover(self.path)
        self.discovery_errors = found.errors
        return found

    def _runs(self) -> Discovery:
        if self._found is None:
            self._found = self._discover()
        return self._found

    def refresh(self) -> None:
        """Look for new runs and files, and re-read what changed on next use."""
        self._found = None
        self._columns.clear()
        self._reports.clear()
        self._decoded.clear()

    def runs(self) -> list[str]:
        """Run names, sorted (``"."`` is the root itself)."""
        return sorted(self._runs().runs)

    def files(self, run: str) -> list[str]:
        """The run's event files, in reading order."""
        try:
            return list(self._runs().runs[run])
        except KeyError:
            raise KeyError(f"no run {run!r} under {self.path} (runs: {self.runs()})") from None

    # -- scalars ------------------------------------------------------------------
    def _load_columns(self, run: str) -> RunColumns:
        cols = self._columns.get(run)
        if cols is None:
            cols = self._columns[run] = self._loader.load(self.files(run), self.purge,
                                                          self._reports)
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
    def tag_kinds(self, run: str) -> dict[str, list[str]]:
        """Every tag of the run with every kind of value it holds (a tag may
        hold scalars and histograms), scalars first.  Values are not
        materialised: only their kinds are decoded."""
        cols = self._load_columns(run)
        need = cols.needs_events()
        if not need:  # the usual run: scalars only, all told by the columns
            return {tag: ["scalar"] for tag in sorted(cols.series)}
        out: dict[str, set[str]] = {tag: {"scalar"} for tag in cols.series}
        # some tags hold more than scalars: look at the records holding them
        for ev in self._events(run, values=False, tags=need):
            if ev.tag:
                out.setdefault(ev.tag, set()).add(ev.kind)
        rank = {k: i for i, k in enumerate(_KIND_ORDER)}
        return {tag: sorted(kinds, key=lambda k: (rank.get(k, len(rank)), k))
                for tag, kinds in sorted(out.items())}

    def tags(self, run: str) -> dict[str, str]:
        """Every tag of the run with its kind (``"scalar"``, ``"histogram"``,
        ``"image"``, ``"text"``, ``"tensor"``, ``"hparams"``, ``"other"``).
        A tag of several kinds is listed with its first (scalars first);
        :meth:`tag_kinds` lists them all."""
        cols = self._load_columns(run)
        if not cols.needs_events():  # the usual run, without building lists
            return {tag: "scalar" for tag in sorted(cols.series)}
        return {tag: kinds[0] for tag, kinds in self.tag_kinds(run).items()}

    def events(self, run: str) -> Iterator[Event]:
        """Every value of the run, in file order, as :class:`Event` objects
        (the resume rule is not applied here: markers come as events).
        Values that do not decode are counted in :meth:`damage`; the other
        values of their events are yielded."""
        return self._events(run, values=True)

    def _events(self, run: str, values: bool,
                tags: list[str] | None = None) -> Iterator[Event]:
        """Every value (kinds only unless ``values``); with ``tags``, only the
        records whose bytes hold one of those tags as a Summary.Value tag
        field (a cheap filter with false positives, never false negatives)."""
        plugins: dict[str, str] = {}  # tag -> plugin, from each tag's first metadata
        patterns = _tag_patterns(tags) if tags is not None and len(tags) <= 64 else None
        for path in self.files(run):
            dec = EventDecoder(path, plugins, values)
            with RecordReader(path, verify=self.verify) as rr:
                payloads: Iterator[bytes] = iter(rr)
                if patterns is not None:
                    payloads = (p for p in payloads if any(t in p for t in patterns))
                yield from dec.each(payloads)
                self._note(path, rr, dec)

    def _note(self, path: str, rr: RecordReader, dec: EventDecoder) -> None:
        """Record one full pass over a file (passes see the same file, or more of it)."""
        rep = self._reports.get(path) or FileReport(path)
        rep.records = max(rep.records, rr.records_read)
        rep.bad_events = max(rep.bad_events, dec.bad_events)
        rep.bad_values = max(rep.bad_values, dec.bad_values)
        rep.damage, rep.tail = list(rr.damage), rr.tail
        rep.size = rr.size
        self._reports[path] = rep

    # -- damage ----------------------------------------------------------------------
    def damage(self, run: str | None = None, *, deep: bool = False) -> dict[str, FileReport]:
        """Per-file reports (records, damage, unfinished tail, malformed
        events and values) for one run, or all runs; reads what was not read
        yet.  The scalar pass finds malformed events and values the native
        decoder reads; ``deep=True`` also decodes every value in Python once
        (what :meth:`events` reports: tensors, histograms, ...)."""
        out: dict[str, FileReport] = {}
        for r in [run] if run is not None else self.runs():
            self._load_columns(r)
            if deep and r not in self._decoded:
                for _ in self._events(r, values=True):
                    pass
                self._decoded.add(r)
            for path in self.files(r):
                out[path] = self._reports[path]
        return out

    # -- lineage (MindSpore) ---------------------------------------------------------------
    def lineage_files(self, run: str) -> list[str]:
        """The run's MindSpore lineage files, oldest first."""
        return list(self._runs().lineage.get(run, []))

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
        by :meth:`lineage_damage`; a metric that is not a JSON object within
        the limits of :mod:`summarylog.read_lineage` is kept as
        ``{"_raw": text}`` and reported there as a malformed value."""
        rows = []
        for run in runs if runs is not None else self.runs():
            files = self.lineage_files(run)
            if files:
                rows.append(read_lineage(run, files, self.verify, self._lineage_reports))
        return rows

    def lineage_damage(self) -> dict[str, FileReport]:
        """Per-file reports of the lineage files read by :meth:`lineage`."""
        return dict(self._lineage_reports)

    # -- live runs -----------------------------------------------------------------------
    def follow(self, run: str | None = None, poll_secs: float = 0.5,
               idle_timeout: float | None = None,
               from_end: bool = False) -> Iterator[tuple[str, Event]]:
        """Yield ``(run, event)`` as writers append, including files created
        later (rotation, new runs).  ``from_end``: skip what the files already
        hold when following starts.  Ends after ``idle_timeout`` seconds with
        nothing new (None: never)."""
        return _follow(self._discover, self.verify, run, poll_secs, idle_timeout, from_end)
