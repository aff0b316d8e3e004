"""summarylog.SummaryReader: a drop-in for ``tbparse.SummaryReader`` on summarylog's Reader.

The same constructor, properties and DataFrames (columns, dtypes, values, row order) as
tbparse on the same logdir: a tree of readers mirroring the directories, one leaf per file;
scalars from the columnar C path.  Needs pandas (not a dependency of summarylog)."""

from __future__ import annotations

import copy
import os
from typing import Any

import numpy as np

from .frames_build import LeafFrames
from .frames_helpers import FrameHelpers
from .frames_leaf import AUDIO, HISTOGRAMS, HPARAMS, IMAGES, SCALARS, TENSORS, TEXT, Leaf
from .frames_raw import RAW_EVENT_TYPES, RAW_TAG_TYPES, RawLog
from .remote.urls import check_dir_or_url, is_url

__all__ = ["ALL_EVENT_TYPES", "ALL_EXTRA_COLUMNS", "SummaryReader"]

ALL_EVENT_TYPES = {SCALARS, TENSORS, HISTOGRAMS, IMAGES, AUDIO, HPARAMS, TEXT}
ALL_EXTRA_COLUMNS = {"dir_name", "file_name", "wall_time", "min", "max", "num", "sum",
                     "sum_squares", "width", "height", "content_type", "length_frames",
                     "sample_rate"}
_PLACE = ("step", "wall_time", "dir_name", "file_name")


def _pd() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("summarylog.SummaryReader needs pandas: pip install pandas") from None
    return pandas


def _merge(s: Any) -> Any:
    """Values of one tag at one step (pivot): NaNs dropped, lists flattened, a lone value
    as itself, several as a list."""
    if len(s) == 1:
        return s.iloc[0]
    out: list[Any] = []
    for x in s:
        if isinstance(x, list):
            out.extend(x)
        elif np.isscalar(x):
            if not _pd().isnull(x):
                out.append(x)
        else:
            out.append(x)
    return np.nan if not out else out[0] if len(out) == 1 else out


class SummaryReader(FrameHelpers):
    """Every event file under ``log_path`` (a file or a directory) as DataFrames.

    Args:
      log_path: an event file or a directory (read recursively, one child per entry).
      pivot: wide DataFrames (one column per tag, one row per step) instead of long ones.
      extra_columns: a set of ``dir_name``, ``file_name``, ``wall_time``, and per kind
        ``min``, ``max``, ``num``, ``sum``, ``sum_squares`` (histograms), ``width``,
        ``height`` (images), ``content_type``, ``length_frames``, ``sample_rate`` (audio).
      event_types: a set of the kinds to read (default: all, as tbparse with TensorFlow;
        images and audio need no TensorFlow here).
      storage_options, remote_options: for a URL ``log_path`` (``s3://``, ``gs://``, any
        fsspec URL), as :class:`summarylog.Reader`; its event files are fetched once.

    Raises ValueError (not a set, missing path) and KeyError (unknown names), as tbparse.
    """

    def __init__(self, log_path: str, *, pivot: bool = False,
                 extra_columns: set[str] | None = None,
                 event_types: set[str] | None = None,
                 storage_options: dict[str, Any] | None = None,
                 remote_options: dict[str, Any] | None = None,
                 _ancestors: frozenset[str] = frozenset()) -> None:
        self._log_path = log_path
        self._mirror = None  # a URL is read from a local mirror of it, made once here
        if is_url(log_path):
            from .remote.mirror import Mirror

            self._mirror = Mirror(check_dir_or_url("log_path", log_path), storage_options,
                                  remote_options)
            try:
                self._mirror.sync()
            except FileNotFoundError:
                raise ValueError(f"File or directory not found: {log_path}") from None
            log_path = self._mirror.local_root
        self._local = log_path
        extra = (extra_columns or set()).copy()
        if not isinstance(extra, set):
            raise ValueError(f"extra_columns must be a set, not {type(extra)}")  # noqa: TRY004 (tbparse's)
        if bad := extra - ALL_EXTRA_COLUMNS:
            raise KeyError(f"Invalid columns entries: {bad}")
        types = (event_types or ALL_EVENT_TYPES).copy()
        if not isinstance(types, set):
            raise ValueError(f"event_types must be a set, not {type(types)}")  # noqa: TRY004 (tbparse's)
        if bad := types - ALL_EVENT_TYPES:
            raise KeyError(f"Invalid event types: {bad}")
        self._extra = extra
        self._pivot = pivot
        self._types = types
        self._children: dict[str, SummaryReader] = {}
        self._leaf: Leaf | None = None
        self._frames: dict[str, Any] = {}
        self._raw: RawLog | None = None
        if not os.path.exists(log_path):
            raise ValueError(f"File or directory not found: {log_path}")
        if not os.path.isdir(log_path):  # a file, or a FIFO or device: a leaf that reads nothing
            self._leaf = Leaf(log_path)
        else:
            # a directory linked back to an ancestor is skipped (tbparse recurses forever),
            # as are entries gone or dangling since listed (tbparse raises)
            here = _ancestors | {os.path.realpath(log_path)}
            for name in sorted(os.listdir(log_path)):
                path = os.path.join(log_path, name)
                if not os.path.exists(path) or os.path.realpath(path) in here:
                    continue
                self._children[name] = SummaryReader(
                    path, pivot=pivot, extra_columns=extra, event_types=types,
                    _ancestors=here)

    # -- tree --------------------------------------------------------------------------
    @property
    def log_path(self) -> str:
        return self._log_path

    @property
    def children(self) -> dict[str, SummaryReader]:
        return self._children.copy()

    def __getitem__(self, name: str) -> SummaryReader:
        return self.children[name]

    def __repr__(self) -> str:
        return f"SummaryReader(log_path='{self.log_path}')"

    def damage(self) -> dict[str, Any]:
        """Per-file reports (:class:`summarylog.FileReport`: records, damage, unfinished
        tail, malformed events and values) of every event file read (not in tbparse)."""
        if self._leaf is not None:
            return self._leaf.file_reports()
        return {p: r for c in self._children.values() for p, r in c.damage().items()}

    # -- tags --------------------------------------------------------------------------
    @property
    def tags(self) -> dict[str, list[str]]:
        return self.get_tags()  # type: ignore[return-value]

    def get_tags(self, event_type: str | None = None) -> list[str] | dict[str, list[str]]:
        """Tags of one kind (a list), or of every kind (a dict of lists)."""
        if event_type is not None and event_type not in ALL_EVENT_TYPES:
            raise ValueError(f"Unknown event_type: {event_type}")
        kinds = [event_type] if event_type is not None else sorted(ALL_EVENT_TYPES)
        out: dict[str, list[str]] = {}
        for kind in kinds:
            if self._leaf is not None:
                out[kind] = self._leaf.tags(kind) if kind in self._types else []
            else:
                tags = [t for c in self._children.values() for t in c.get_tags(kind)]
                out[kind] = list(dict.fromkeys(tags))
        return out[event_type] if event_type is not None else copy.deepcopy(out)

    # -- frames ------------------------------------------------------------------------
    @property
    def scalars(self) -> Any:
        return self.get_events(SCALARS)

    @property
    def tensors(self) -> Any:
        return self.get_events(TENSORS)

    @property
    def histograms(self) -> Any:
        return self.get_events(HISTOGRAMS)

    @property
    def images(self) -> Any:
        return self.get_events(IMAGES)

    @property
    def audio(self) -> Any:
        return self.get_events(AUDIO)

    @property
    def hparams(self) -> Any:
        return self.get_events(HPARAMS)

    @property
    def text(self) -> Any:
        return self.get_events(TEXT)

    @property
    def lineage(self) -> Any:
        """MindSpore lineage under ``log_path``: one row per run with lineage files, the
        columns of :meth:`summarylog.Reader.lineage` (not in tbparse)."""
        from .reader import Reader
        return _pd().DataFrame(Reader(self._local).lineage())

    def get_events(self, event_type: str) -> Any:
        """All values of one kind under ``log_path`` as a DataFrame, as tbparse builds it."""
        pd = _pd()
        if event_type not in ALL_EVENT_TYPES:
            raise ValueError(f"Unknown event_type: {event_type}")
        if event_type not in self._types:
            raise ValueError(f"event_type is ignored by user: {event_type}")
        if self._leaf is not None:
            dfs = [self._leaf_frame(event_type).copy()]
        else:
            dfs = []
            for child in self._children.values():
                df = child.get_events(event_type)
                if "dir_name" in df and child._leaf is None:
                    # each directory level prefixes its name
                    base = os.path.basename(child.log_path)
                    df["dir_name"] = [base if d == "" else f"{base}/{d}" for d in df["dir_name"]]
                dfs.append(df)
        if len(dfs) == 1 and dfs[0].attrs.get("sorted"):  # already in tbparse's order
            return dfs[0] if not dfs[0].empty else pd.DataFrame()
        if not dfs:
            return pd.DataFrame()
        df = pd.concat(dfs, ignore_index=True)
        if df.empty:
            return pd.DataFrame()
        keys: list[str] = [k for k in ("dir_name", "file_name") if k in self._extra]
        keys += ([] if self._pivot else ["tag"]) + ["step"]
        keys = [k for k in keys if k in df.columns]
        df = df.sort_values(keys, ignore_index=True)
        if not self._pivot:
            return df
        return self._pivoted(df, keys)

    def _pivoted(self, df: Any, keys: list[str]) -> Any:
        """Rows of equal keys (contiguous: df is sorted) merged into one, as tbparse's
        groupby with :func:`_merge`; a float column with at most one value per group is
        merged in numpy, any other column through the groupby."""
        pd = _pd()
        n = len(df)
        new = np.zeros(n, bool)
        new[0] = True
        for k in keys:
            col = df[k].to_numpy()
            new[1:] |= col[1:] != col[:-1]
        starts = np.flatnonzero(new)
        middle = sorted(c for c in df.columns if c not in _PLACE)
        order = [c for c in ["step", *middle, "wall_time", "dir_name", "file_name"]
                 if c in df.columns]
        out = {}
        for c in order:
            if c in keys:
                out[c] = df[c].iloc[starts].reset_index(drop=True)
                continue
            arr = df[c].to_numpy()
            if arr.dtype == np.float64:
                present = ~np.isnan(arr)
                if np.add.reduceat(present, starts).max(initial=0) <= 1:
                    at = np.maximum.reduceat(np.where(present, np.arange(n), -1), starts)
                    out[c] = pd.Series(np.where(at >= 0, arr[np.maximum(at, 0)], np.nan))
                    continue
            by: list[Any] = [df[k] for k in keys] if keys else [True] * n
            grouped = df[c].groupby(by, sort=False)
            out[c] = grouped.aggregate(_merge).reset_index(drop=True)
        return pd.DataFrame(out)

    def _leaf_frame(self, kind: str) -> Any:
        if kind not in self._frames:
            self._frames[kind] = LeafFrames(self._leaf, self._pivot, self._extra).frame(kind)
        return self._frames[kind]

    # -- tbparse's raw accessors (one event file) ------------------------------------------
    def _raw_log(self) -> RawLog:
        if self._leaf is None:
            raise ValueError(f"Not an event file: {self.log_path}")
        if self._raw is None:  # read once, at first use
            self._raw = RawLog(self.log_path)
        return self._raw

    @property
    def raw_tags(self) -> dict[str, Any]:
        return self.get_raw_tags()  # type: ignore[return-value]

    def get_raw_tags(self, event_type: str | None = None) -> Any:
        """The file's tags as TensorBoard's EventAccumulator.Tags() lists them (``graph``
        and ``meta_graph``: whether the file holds one), with the ``hparams`` and
        ``text`` plugins' tags: a dict, or the entry of ``event_type``.  ValueError for
        a directory or an unknown event_type."""
        if event_type is not None and event_type not in RAW_TAG_TYPES:
            raise ValueError(f"Unknown event_type: {event_type}")
        tags = self._raw_log().tags()
        return tags if event_type is None else tags[event_type]

    @property
    def raw_events(self) -> dict[str, dict[str, Any]]:
        return self.get_raw_events()  # type: ignore[return-value]

    def get_raw_events(self, event_type: str | None = None, tag: str | None = None) -> Any:
        """The file's records as EventAccumulator gives them (namedtuples with its field
        names; ``hparams``: each tag's plugin content bytes): by kind and tag (no
        argument), by tag (``event_type``), or one tag's list.  ValueError for a
        directory or a tag without event_type; KeyError for an unknown event_type or tag."""
        raw = self._raw_log()
        if event_type is None:
            if tag is not None:
                raise ValueError("tag shouldn't be set if event_type is None")
            return {k: self.get_raw_events(k) for k in RAW_EVENT_TYPES}
        if event_type not in RAW_EVENT_TYPES:
            raise KeyError(f"Unknown event_type: {event_type}")
        if tag is not None:
            return raw.events(event_type, tag)
        return {t: raw.events(event_type, t) for t in raw.tags()[event_type]}
