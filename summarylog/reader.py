"""summarylog.Reader: runs of TensorBoard event files and MindSpore summary files back
into Python and numpy, damaged or live; damage is reported per file, never skipped silently.

With ``purge`` (the default), TensorBoard's rule for resumed runs applies: an
``Event{session_log: START}`` at step N (what ``purge_step`` writes) drops every point
read before it whose step is >= N, for all tags.  MindSpore runs hold, as MindInsight
shows them, one value per step and tag (the last one written), in step order.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from typing import Any, Iterator

from .discovery import Discovery, dialect_of, is_event_file, is_lineage_file, natural_key
from .events import Event
from .read_columns import ColumnLoader, RunColumns
from .read_frame import ranked_frame, scalars_frame
from .read_histograms import HistogramRun, Histograms, histograms_of_events, load_histograms
from .read_pool import load_runs, thread_count
from .read_ranks import RankColumns, RankedScalars, by_rank, check_ranks
from .read_source import Source
from .read_stream import ScalarChunk, iter_scalars
from .pb import len_field
from .read_events import EventDecoder
from .read_landscapes import landscapes_of_events
from .read_lineage import read_lineage
from .read_types import FileReport, Scalars
from .records import RecordReader

__all__ = ["Reader", "Scalars", "RankedScalars", "Histograms", "Event", "FileReport",
           "is_event_file", "is_lineage_file", "dialect_of"]

# Event.session_log (field 7) whose first field is status START: any length, one varint
_SESSION_START = rb"\x3a[\x80-\xff]{0,4}[\x00-\x7f]\x08\x01"
_FILE_VERSION = rb"\x1a[\x00-\x7f]brain\.Event:"  # Event.file_version, as every writer names it
_MARKERS = ("session_log", "file_version")
_KIND_RANK = {k: i for i, k in enumerate("scalar histogram image text tensor hparams".split())}


class Reader:
    """Read runs of TensorBoard event files and MindSpore summary files.

    Args:
      path: an event file, a run directory, or a root of run directories.
      purge: apply TensorBoard's resume rule to TensorBoard files and MindInsight's
        one-value-per-step rule to MindSpore files (module docstring; default True).
      verify: check data CRCs (default True).
      threads: threads reading runs side by side when many runs' scalars are wanted
        (:meth:`load`, :meth:`scalars_all`, :meth:`to_pandas`, :meth:`damage` of all
        runs); default None: min(usable CPUs, 8).  Results do not depend on it.

      ranks: how per-rank files of a run are read: None (every file as one series,
        as before), a rank, ``"all"`` (:class:`RankedScalars`, a ``rank`` column in
        :meth:`to_pandas`) or ``"mean"``/``"min"``/``"max"`` per step
        (:mod:`summarylog.read_ranks`).
      storage_options: for a URL (``s3://``, ``gs://``, any fsspec URL): the
        filesystem's options (endpoint, credentials; default: its environment).
      remote_options: for a URL: the mirror's cache, deadline and bounds
        (:class:`summarylog.remote.mirror.MirrorOptions`).  A URL is read through a
        private local mirror, one listing per poll and only new bytes fetched.

    Raises FileNotFoundError for a missing path; TypeError or ValueError for a bad
    ``threads`` or ``ranks``; TimeoutError when a URL does not answer in time.
    """

    def __init__(self, path: str | os.PathLike[str], *, purge: bool = True,
                 verify: bool = True, threads: int | None = None, ranks: Any = None,
                 storage_options: Any = None, remote_options: Any = None) -> None:
        self.threads = thread_count(threads)
        self.ranks = check_ranks(ranks)
        self._source = Source(path, storage_options, remote_options)
        self.path = self._source.path
        self._by_rank = RankColumns(self.ranks) if isinstance(self.ranks, str) else None
        self.purge = purge
        self.verify = verify
        self._found: Discovery | None = None
        self._columns: dict[str, RunColumns] = {}
        self._histograms: dict[str, HistogramRun] = {}
        self._reports: dict[str, FileReport] = {}
        self._decoded: set[str] = set()  # runs whose every value was decoded (damage(deep=True))
        self._lineage_reports: dict[str, FileReport] = {}
        self._loader = ColumnLoader(verify)
        self._discovery_errors: list[OSError] = []
        #: runs the last :meth:`load` could not read, with why (tried again on next use)
        self.run_errors: dict[str, OSError] = {}

    # -- discovery ------------------------------------------------------------
    def _discover(self) -> Discovery:
        found = self._source.discover()
        self._discovery_errors = found.errors
        return found

    @property
    def discovery_errors(self) -> list[OSError]:
        """What the last discovery could not list (or, for a URL, fetch): OSErrors
        whose ``filename`` names it."""
        return self._discovery_errors + self._source.errors()

    def close(self) -> None:
        """For a URL: remove its temporary mirror (also done when garbage-collected)."""
        self._source.close()

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def remote_stats(self) -> Any:
        """For a URL, its polls' requests and bytes so far
        (:class:`~summarylog.remote.read_options.PollStats`); None for a local path."""
        return None if self._source.mirror is None else self._source.mirror.stats

    def name(self, path: str) -> str:
        """What to call one of :meth:`files` in messages: its URL when read from one."""
        return self._source.name(path)

    def _runs(self) -> Discovery:
        self._found = self._found or self._discover()
        return self._found

    def refresh(self) -> None:
        """Look for new runs and files, and re-read what changed on next use."""
        self._found = None
        self._columns.clear()
        self._reports.clear()
        self._decoded.clear()
        self.run_errors = {}
        if self._by_rank is not None:
            self._by_rank.clear()

    def runs(self) -> list[str]:
        """Run names, sorted (``"."`` is the root itself)."""
        return sorted(self._runs().runs)

    def files(self, run: str) -> list[str]:
        """The run's event files read (those of the chosen ``ranks``), in reading order."""
        try:
            files = self._runs().runs[run]
        except KeyError:
            raise KeyError(f"no run {run!r} under {self.path} (runs: {self.runs()})") from None
        files = by_rank(files).get(self.ranks, []) if isinstance(self.ranks, int) else files
        self._source.wait(files)  # a URL's files: fetched in full
        return list(files)

    def ranks_of(self, run: str) -> list[int]:
        """The ranks whose files the run holds (a file without one is rank 0)."""
        return list(by_rank(self._runs().runs.get(run, [])))

    def _value_files(self, run: str) -> list[str]:
        """The files values other than per-rank scalars come from: with ``"all"`` and
        the reductions, the lowest rank's."""
        files = self.files(run)
        return next(iter(by_rank(files).values()), []) if self._by_rank else files

    def _rank_columns(self, run: str) -> dict[int, RunColumns]:
        assert self._by_rank is not None
        return self._by_rank.columns(run, self.files(run), lambda fs: self._loader.load(
            fs, self.purge, self._reports))

    # -- scalars ------------------------------------------------------------------
    def _load_columns(self, run: str) -> RunColumns:
        if run not in self._columns:
            self._columns[run] = self._loader.load(self._value_files(run), self.purge,
                                                   self._reports)
        return self._columns[run]

    def load(self, runs: list[str] | None = None) -> dict[str, OSError]:
        """Read the scalars of ``runs`` (default: all) not read yet, on :attr:`threads`
        threads.  A run that cannot be read (a file gone or unreadable) does not stop
        the others: it is returned with its OSError (and in :attr:`run_errors`), and
        read again when next used.  KeyError for an unknown run."""
        wanted = runs if runs is not None else self.runs()
        with self._source.no_wait():  # each file is waited for as it is read, in its thread
            jobs = {r: self._value_files(r) for r in wanted if r not in self._columns}
        self.run_errors = {}
        for got in load_runs(jobs, self.purge, self.verify, self.threads, self._source):
            self._reports.update(got.reports)
            if got.error is not None:
                self.run_errors[got.run] = got.error
            else:
                self._columns[got.run] = got.columns  # type: ignore[assignment]
        return dict(self.run_errors)

    def scalars_all(self, runs: list[str] | None = None) -> dict[str, dict[str, Scalars]]:
        """Every scalar series of ``runs`` (default: all), read on :attr:`threads`
        threads: run -> tag -> :class:`Scalars`, runs and tags sorted.  Runs that
        cannot be read are left out and listed in :attr:`run_errors`."""
        if self._by_rank is not None:
            return {run: {t: self.scalars(run, t) for t in self.scalar_tags(run)}
                    for run in sorted(runs if runs is not None else self.runs())}
        self.load(runs)
        return {run: {tag: cols.series[tag] for tag in sorted(cols.series)}
                for run in sorted(runs if runs is not None else self.runs())
                if (cols := self._columns.get(run)) is not None}

    def scalar_tags(self, run: str) -> list[str]:
        """Tags of the run that hold scalars (on any rank read), sorted."""
        if self._by_rank is not None:
            return self._by_rank.tags(self._rank_columns(run))
        return sorted(self._load_columns(run).series)

    def scalars(self, run: str, tag: str) -> Scalars:
        """The series of ``tag`` in ``run``: numpy ``step``, ``wall_time``,
        ``value`` in file order (after the resume rule); with ``ranks="all"`` a
        :class:`RankedScalars`, with a reduction one point per step."""
        if self._by_rank is not None:
            if tag not in (tags := self.scalar_tags(run)):
                raise KeyError(f"no scalar tag {tag!r} in run {run!r} (scalar tags: {tags})")
            return self._by_rank.series(self._rank_columns(run), tag)  # type: ignore[return-value]
        cols = self._load_columns(run)
        try:
            return cols.series[tag]
        except KeyError:
            raise KeyError(f"no scalar tag {tag!r} in run {run!r} "
                           f"(scalar tags: {sorted(cols.series)})") from None

    def iter_scalars(self, run: str, tag: str | None = None, *,
                     chunk: int = 65536) -> Iterator[ScalarChunk]:
        """The run's scalars (only ``tag``'s if given) in chunks of ``chunk`` values, in
        memory independent of the run's size, with the values and order of
        :meth:`scalars`.  With ``purge``, the files are read twice (the resume rule looks
        ahead) and a MindSpore run raises ValueError (its rule sorts the whole run)."""
        return iter_scalars(self._value_files(run), tag, chunk, purge=self.purge,
                            verify=self.verify)

    def to_pandas(self, runs: list[str] | None = None, tags: list[str] | None = None) -> Any:
        """All scalars as a long DataFrame: run, tag, step, wall_time, value (``run`` and
        ``tag`` categorical), runs read on :attr:`threads` threads.  Raises the OSError
        of the first run (in order) that cannot be read.  Needs pandas (not a
        dependency of summarylog)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Reader.to_pandas() needs pandas: pip install pandas") from None
        runs = runs if runs is not None else self.runs()
        if self._by_rank is not None:
            return ranked_frame(pd, [(r, self.scalars_all([r])[r]) for r in runs], tags)
        self.load(runs)  # side by side; a run that failed raises below, as on one thread
        return scalars_frame(pd, [(run, self._load_columns(run).series) for run in runs], tags)

    # -- histograms -----------------------------------------------------------------
    def histogram_columns(self, run: str) -> HistogramRun:
        """The run's histograms as decoded in C, read once: TensorBoard's ``histo`` and
        MindSpore's values by tag, and the tags that also hold other values (whose
        TF2 tensor histograms only :meth:`histograms` adds)."""
        if run not in self._histograms:
            self._histograms[run] = load_histograms(self._value_files(run), self.purge,
                                                    self.verify,
                                                    self._reports)
        return self._histograms[run]

    def histogram_tags(self, run: str) -> list[str]:
        """Tags of the run that hold TensorBoard ``histo`` or MindSpore histogram values,
        sorted (TF2's tensor histograms: see :meth:`tags`)."""
        return sorted(t for t, h in self.histogram_columns(run).series.items() if len(h))

    def histograms(self, run: str, tag: str) -> Histograms:
        """``tag``'s histograms in ``run``, columnar (:class:`Histograms`), with the
        rules of :meth:`scalars`.  TensorBoard's ``histo`` and MindSpore's histograms
        are decoded in C; a tag that also holds other values (TF2's tensor histograms)
        is read through :meth:`events`.  KeyError for a tag without histograms."""
        got = self.histogram_columns(run)
        if tag in got.other:
            ms = any(dialect_of(p) == "mindspore" for p in self._value_files(run))
            hist = histograms_of_events(self._events(run, values=True), tag, self.purge, ms)
            if len(hist):
                return hist
        if not len(got.series.get(tag, ())):
            raise KeyError(f"no histogram tag {tag!r} in run {run!r} "
                           f"(histogram tags: {self.histogram_tags(run)})")
        return got.series[tag]

    # -- every event ---------------------------------------------------------------
    def tag_kinds(self, run: str) -> dict[str, list[str]]:
        """Every tag of the run with every kind of value it holds (a tag may hold
        scalars and histograms), scalars first; only kinds are decoded, not values."""
        cols = self._load_columns(run)
        out: dict[str, set[str]] = {tag: {"scalar"} for tag in cols.series}
        if need := cols.needs_events():  # tags with more than scalars: histograms?
            hist = self.histogram_columns(run)
            for tag, h in hist.series.items():
                if len(h):
                    out.setdefault(tag, set()).add("histogram")
            need = [t for t in need if t not in hist.series or t in hist.other]
        if need:  # tags with more than scalars and histograms: read their records
            for ev in self._events(run, values=False, tags=need):
                if ev.tag:
                    out.setdefault(ev.tag, set()).add(ev.kind)
        return {tag: sorted(kinds, key=lambda k: (_KIND_RANK.get(k, len(_KIND_RANK)), k))
                for tag, kinds in sorted(out.items())}

    def tags(self, run: str) -> dict[str, str]:
        """Every tag of the run with its kind (``"scalar"``, ``"histogram"``, ``"image"``,
        ``"text"``, ``"tensor"``, ``"hparams"``, ``"landscape"``, ``"other"``); a tag of
        several kinds with its first (scalars first): :meth:`tag_kinds` lists them all."""
        return {tag: kinds[0] for tag, kinds in self.tag_kinds(run).items()}

    def events(self, run: str, tags: list[str] | None = None) -> Iterator[Event]:
        """Every value of the run, in file order, as :class:`Event` objects (no resume
        rule: markers come as events); with ``tags``, only those tags' values and the
        file-version and resume markers (records holding none of them are not decoded).
        Values that do not decode are counted in :meth:`damage`; the other values of
        their events are yielded."""
        if tags is None:
            return self._events(run, values=True)
        wanted = set(tags)
        return (ev for ev in self._events(run, values=True, tags=list(wanted), markers=True)
                if ev.tag in wanted or (ev.kind in _MARKERS and not ev.tag))

    def _events(self, run: str, values: bool, tags: list[str] | None = None,
                markers: bool = False) -> Iterator[Event]:
        """Every value (kinds only unless ``values``); with ``tags``, only records whose
        bytes hold one as a Summary.Value tag field (false positives, no false negatives),
        or with ``markers`` a SessionLog START."""
        plugins: dict[str, str] = {}  # tag -> plugin, from each tag's first metadata
        wanted = None
        if tags is not None and len(tags) <= 64:  # each tag as a Summary.Value tag field
            wanted = re.compile(b"|".join(
                [re.escape(len_field(1, t.encode("utf-8", "surrogateescape"))) for t in tags]
                + ([_SESSION_START, _FILE_VERSION] if markers else [])))
        for path in self._value_files(run):
            dec = EventDecoder(path, plugins, values)
            with RecordReader(path, verify=self.verify) as rr:
                for payload in rr:
                    if wanted is None or wanted.search(payload):
                        yield from dec.decode(payload)
                # a full pass: it saw the file of earlier passes, or more of it
                rep = self._reports.setdefault(path, FileReport(path))
                rep.records = max(rep.records, rr.records_read)
                rep.bad_events = max(rep.bad_events, dec.bad_events)
                rep.bad_values = max(rep.bad_values, dec.bad_values)
                rep.set_damage(rr.damage, rr.damage_past_cap)
                rep.tail, rep.size = rr.tail, rr.size

    # -- loss landscapes ---------------------------------------------------------------
    def landscapes(self, run: str) -> dict[str, list[tuple[int, Any]]]:
        """The run's loss landscapes: tag -> ``[(step, Landscape), ...]``, each a
        :class:`summarylog.landscape.Landscape` (numpy axes ``x``, ``y``, grid
        ``z[len(y), len(x)]``, path, metadata), from MindSpore's ``LossLandscape``
        values (MindSpore's own files and ours) and from the TensorBoard dialect's
        landscape values, under the rules of :meth:`scalars`.  A landscape value that
        does not decode, or whose grids do not fit together, is left out and counted
        in :meth:`damage` (``bad_values``)."""
        tags = [t for t, kinds in self.tag_kinds(run).items() if "landscape" in kinds]
        if not tags:
            return {}
        ms = any(dialect_of(p) == "mindspore" for p in self._value_files(run))
        return landscapes_of_events(self.events(run, tags=tags), self.purge, ms)

    # -- damage ----------------------------------------------------------------------
    def damage(self, run: str | None = None, *, deep: bool = False) -> dict[str, FileReport]:
        """Per-file reports (records, damage, unfinished tail, malformed events and
        values) for one run, or all runs, reading what was not read yet.  ``deep=True``
        also decodes every value (tensors, histograms, ...) in Python once, as :meth:`events`."""
        out: dict[str, FileReport] = {}
        if run is None:
            self.load()  # side by side; a run that failed raises below, as on one thread
        for r in [run] if run is not None else self.runs():
            self._load_columns(r)
            if self._by_rank is not None:
                self._rank_columns(r)
            if deep and r not in self._decoded:
                for _ in self._events(r, values=True):
                    pass
                self._decoded.add(r)
            out.update((path, self._reports[path]) for path in self.files(r))
        return out

    # -- lineage (MindSpore) ---------------------------------------------------------------
    def lineage_files(self, run: str) -> list[str]:
        """The run's MindSpore lineage files, oldest first."""
        return list(self._runs().lineage.get(run, []))

    def lineage(self, runs: list[str] | None = None) -> list[dict[str, Any]]:
        """One row per run with lineage, as MindInsight's lineage page shows it: ``run``,
        ``summary_dir``; from the train lineage ``optimizer``, ``learning_rate``,
        ``loss_function``, ``epoch``, ``parallel_mode``, ``device_num``, ``batch_size``,
        ``train_dataset_path``, ``train_dataset_size``, ``network``, ``loss``, ``model_path``,
        ``model_size``; from the eval lineage ``metric`` (dict), ``valid_dataset_path``,
        ``valid_dataset_size``; ``user_defined`` (custom lineage) and ``dataset_graph``
        (dicts).  The last train, eval and dataset-graph records win; custom lineage
        accumulates.  Damaged records are skipped and reported by :meth:`lineage_damage`,
        as is a metric that is not a JSON object within limits (kept as ``{"_raw": text}``)."""
        return [read_lineage(run, files, self.verify, self._lineage_reports)
                for run in (runs if runs is not None else self.runs())
                if (files := self.lineage_files(run))]

    def lineage_damage(self) -> dict[str, FileReport]:
        """Per-file reports of the lineage files read by :meth:`lineage`."""
        return dict(self._lineage_reports)

    # -- live runs -----------------------------------------------------------------------
    def follow(self, run: str | None = None, poll_secs: float = 0.5,
               idle_timeout: float | None = None,
               from_end: bool = False) -> Iterator[tuple[str, Event]]:
        """Yield ``(run, event)`` as writers append, files created later included
        (rotation, new runs).  ``from_end``: skip what the files hold when following
        starts.  Ends after ``idle_timeout`` seconds with nothing new (None: never)."""
        readers: dict[str, tuple[str, RecordReader, EventDecoder]] = {}
        plugins: dict[str, dict[str, str]] = {}  # per run
        skip = from_end  # this round's events: the files' content when following starts
        last = time.monotonic()
        try:
            while True:
                got = False
                found = self._discover()
                self._source.errors()  # the poll's fetching over
                for r, files in sorted(found.runs.items()):
                    for path in files:
                        if (run is None or r == run) and path not in readers:
                            with contextlib.suppress(OSError):  # vanished or not a file
                                readers[path] = (r, RecordReader(path, verify=self.verify),
                                                 EventDecoder(path, plugins.setdefault(r, {})))
                for path in sorted(readers, key=natural_key):
                    r, rr, dec = readers[path]
                    for payload in rr:
                        got = True
                        events = dec.decode(payload)  # when skipped: each tag's plugin learnt
                        if not skip:
                            yield from ((r, ev) for ev in events)
                now = time.monotonic()
                if got and not skip:
                    last = now
                elif idle_timeout is not None and now - last >= idle_timeout:
                    return
                if not skip:
                    time.sleep(poll_secs)
                skip = False
        finally:
            for _, rr, _ in readers.values():
                rr.close()
