"""Event file names, exclusive creation and rotation, for both dialects.  Files are
created with O_EXCL, so writers never truncate or share one: a taken name moves on.

- TensorBoard: ``events.out.tfevents.<sec>.<host>.<pid>.<seq>[.<rank>]<suffix>``
  (compressed: ``events.out.zevents.….zst``, a name viewers skip).
- MindSpore: ``<prefix>.out.events.summary.<sec>[.<rank>].<host><suffix>`` and the
  same name ending ``_lineage``; a taken name moves the pair to a later second.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import socket
import sys
import time
import warnings
from typing import Any, Callable, Iterable

from .records import RecordWriter

__all__ = ["host_name", "check_suffix", "detect_rank", "distributed_rank", "check_local_dir", "TensorBoardNames",
           "MindSporeNames", "FileSeries", "MindSporeFiles"]

_seq = itertools.count()  # per process: two writers in one second never collide
_NAME_MAX = 255  # bytes of one path component on Linux file systems
_CREATE_TRIES = 1000  # names a series tries before it gives up (all taken: hostile)


def host_name() -> str:
    return (socket.gethostname() or "localhost").replace("/", "_")


def check_suffix(name: str, value: Any) -> str:
    """A file name suffix: a str with no path separator or NUL, short enough."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if "/" in value or os.sep in value or "\0" in value:
        raise ValueError(f"{name} must not contain '/' or NUL, got {value!r}")
    if len(value.encode("utf-8", "surrogateescape")) > _NAME_MAX - 120:
        raise ValueError(f"{name} is too long for a file name ({len(value)} characters; "
                         f"at most {_NAME_MAX - 120} bytes)")
    return value


def detect_rank() -> int | None:
    """The rank from the launchers' environment variables (plain decimals only), else
    from a torch.distributed process group the program already set up, or None."""
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK_ID"):
        v = os.environ.get(var, "").strip()
        if v.isascii() and v.isdecimal():
            return int(v)
    # asked only of a framework the program imported (never imported here); JAX is not
    # asked: process_count() may start its backend
    dist = sys.modules.get("torch.distributed")
    with contextlib.suppress(Exception):
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    return None


def distributed_rank() -> int | None:
    """:func:`detect_rank` when the environment says more than one process runs
    (``WORLD_SIZE`` or MindSpore's ``RANK_SIZE`` over 1), else None."""
    world = os.environ.get("WORLD_SIZE") or os.environ.get("RANK_SIZE")
    return detect_rank() if world and world.strip() not in ("", "1") else None


def check_local_dir(name: str, path: Any) -> str:
    """A local directory path; a URL (``s3://…``) is refused, not made a folder ``s3:``."""
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(path, str) or not path:
        raise TypeError(f"{name} must be a non-empty str or PathLike[str], got {path!r}")
    if "\0" in path:
        raise ValueError(f"{name} must not contain NUL, got {path!r}")
    scheme, sep, _ = path.partition("://")
    if sep and scheme and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"{name} {path!r} is a URL: only local paths are supported (a URL "
                         f"would silently become a local folder named {scheme + ':'!r})")
    return path


class TensorBoardNames:
    """Names of a TensorBoard writer's files: each call gives a new one."""

    def __init__(self, rank: int | None, suffix: str, compressed: bool,
                 seq_digits: int = 0) -> None:
        self.rank, self.suffix, self.compressed = rank, suffix, compressed
        #: zero-padded sequence numbers: name order is creation order even past 9 files
        #: in one second (a remote writer's segments; local names stay as they were)
        self.seq_digits = seq_digits

    def __call__(self) -> str:
        kind = "zevents" if self.compressed else "tfevents"
        rank = f".{self.rank}" if self.rank is not None else ""
        return (f"events.out.{kind}.{int(time.time()):010d}.{host_name()}.{os.getpid()}."
                f"{next(_seq):0{self.seq_digits}d}{rank}{self.suffix}")


class MindSporeNames:
    """Names of a SummaryRecord's summary/lineage pair, sharing a second free for both."""

    def __init__(self, directory: str, prefix: str, suffix: str, rank: int | None) -> None:
        self.directory, self.prefix, self.suffix, self.rank = directory, prefix, suffix, rank
        self.host = host_name()
        self.sec = 0
        self.next_pair()

    def name(self, lineage: bool) -> str:
        rank = f".{self.rank}" if self.rank is not None else ""
        return (f"{self.prefix}.out.events.summary.{self.sec}{rank}.{self.host}"
                f"{'_lineage' if lineage else self.suffix}")

    def next_pair(self) -> None:
        """Move to a later second whose two names are both free."""
        first = max(int(time.time()), self.sec + 1 if self.sec else 0)
        for self.sec in range(first, first + _CREATE_TRIES):
            if not any(os.path.lexists(os.path.join(self.directory, self.name(lin)))
                       for lin in (False, True)):
                return


class FileSeries:
    """One stream of files in ``directory``, each created on first use under the first
    free name ``new_name()`` gives and starting with ``first_records(wall_time)``."""

    def __init__(self, directory: str, new_name: Callable[[], str],
                 open_file: Callable[[str], RecordWriter],
                 first_records: Callable[[float], Iterable[bytes]] = lambda wall: ()) -> None:
        self.directory = directory
        self._new_name = new_name
        self._open_file = open_file
        self._first_records = first_records
        self.paths: list[str] = []
        self.current: RecordWriter | None = None
        self.opened_at = 0.0  # time.monotonic() of the current file's creation
        #: called with each file's path once it is closed (sealed: a remote
        #: writer's uploader takes it from there); None for local writers
        self.on_closed: Callable[[str], None] | None = None

    def writer(self) -> RecordWriter:
        """The current file, created now if there is none."""
        if self.current is None:
            self.current = self._create()
            self.opened_at = time.monotonic()
        return self.current

    def _create(self) -> RecordWriter:
        os.makedirs(self.directory, exist_ok=True)
        for _ in range(_CREATE_TRIES):
            path = os.path.join(self.directory, self._new_name())
            with contextlib.suppress(FileExistsError):  # taken (or a planted symlink): next name
                rw = self._open_file(path)
                break
        else:
            raise FileExistsError(errno.EEXIST, f"no free file name after {_CREATE_TRIES} "
                                  f"tries (the last)", path)
        self.paths.append(rw.path)
        for payload in self._first_records(time.time()):
            rw.write(payload)
        return rw

    def over(self, limit: int | None, extra: int = 0) -> bool:
        """Whether the current file would pass ``limit`` bytes with ``extra`` more."""
        rw = self.current
        if limit is None or rw is None:
            return False
        st = rw.stats
        return st.file_size + st.buffered_bytes + extra >= limit

    def older_than(self, secs: float | None) -> bool:
        """Whether the current file was created more than ``secs`` ago."""
        return (secs is not None and self.current is not None
                and time.monotonic() - self.opened_at >= secs)

    def rotate(self) -> None:
        """Close the current file; the next write creates the next one."""
        rw, self.current = self.current, None
        if rw is not None:
            try:
                rw.close()
            finally:
                self.sealed(rw)

    def sealed(self, rw: RecordWriter) -> None:
        """``rw`` (one of ours) was closed: hand it to ``on_closed``."""
        if self.on_closed is not None:
            self.on_closed(rw.path)

    def flush_current(self) -> None:
        if self.current is not None:
            self.current.flush()

    def close_current(self) -> None:
        """Close the current file (kept: its stats stay readable)."""
        rw = self.current
        if rw is not None:
            sealed_now = not rw.closed
            try:
                rw.close()
            finally:
                if sealed_now:
                    self.sealed(rw)

    def abandon(self) -> None:
        """A forked child: the parent's files are not its own."""
        if self.current is not None:
            self.current.abandon()
        self.current = None
        self.paths = []


class MindSporeFiles:
    """A SummaryRecord's summary and lineage files, rotated together or stopped at
    ``max_file_size``; closed files are made read-only, as MindSpore leaves them."""

    def __init__(self, directory: str, prefix: str, suffix: str, rank: int | None,
                 open_file: Callable[[str], RecordWriter],
                 header: Callable[[float], Iterable[bytes]], max_file_size: int | None,
                 on_limit: str, max_file_age: float | None = None) -> None:
        os.makedirs(directory, exist_ok=True)
        self.names = MindSporeNames(directory, prefix, suffix, rank)
        self.summary = FileSeries(directory, lambda: self._name(False), open_file, header)
        self.lineage = FileSeries(directory, lambda: self._name(True), open_file)
        self.lineage.paths = self.summary.paths  # one list, in creation order
        self.max_file_size, self.on_limit = max_file_size, on_limit
        self.max_file_age = max_file_age  # a URL's spool: the pair is sealed past this age (s)
        self.stopped = False

    @property
    def paths(self) -> list[str]:
        return self.summary.paths

    @property
    def series(self) -> tuple[FileSeries, FileSeries]:
        return self.summary, self.lineage

    @property
    def current(self) -> RecordWriter | None:
        return self.summary.current

    def summary_path(self) -> str:
        return os.path.join(self.names.directory, self.names.name(False))

    def _name(self, lineage: bool) -> str:
        if os.path.lexists(os.path.join(self.names.directory, self.names.name(lineage))):
            self.names.next_pair()  # taken: a later pair
        return self.names.name(lineage)

    def write(self, payload: bytes, lineage: bool = False) -> None:
        """Write one record; an I/O error the file counted is raised as OSError."""
        if self.stopped:
            return
        series = self.lineage if lineage else self.summary
        if self.older_than(self.max_file_age):
            self.rotate()
        if series.over(self.max_file_size, len(payload) + 17):
            if self.on_limit == "stop":
                warnings.warn(f"summarylog: {series.current.path} reached max_file_size="  # type: ignore[union-attr]
                              f"{self.max_file_size} bytes; recording stops (on_limit='stop')",
                              RuntimeWarning, stacklevel=3)
                self.stopped = True
                self.close()
                return
            series.rotate()
            self.names.next_pair()
            if not lineage:
                self.lineage.rotate()
        rw = series.writer()
        rw.write(payload)
        _raise_counted(rw)

    def older_than(self, secs: float | None) -> bool:
        """Whether the pair's summary file was created more than ``secs`` ago."""
        return self.summary.older_than(secs)

    def rotate(self) -> None:
        """Seal both files now; the next record starts the next pair."""
        if self.summary.current is not None or self.lineage.current is not None:
            self.summary.rotate()
            self.lineage.rotate()
            self.names.next_pair()

    def flush(self) -> None:
        for rw in (self.summary.current, self.lineage.current):
            if rw is not None and not rw.closed:
                rw.flush()
                _raise_counted(rw)

    def close(self) -> None:
        for series in (self.summary, self.lineage):
            rw, series.current = series.current, None
            if rw is not None and not rw.closed:
                try:
                    rw.close()
                    with contextlib.suppress(OSError):
                        os.chmod(rw.path, 0o400)
                finally:
                    series.sealed(rw)

    flush_current = flush
    close_current = close

    def abandon(self) -> None:
        self.summary.abandon()
        self.lineage.abandon()


def _raise_counted(rw: RecordWriter) -> None:
    """An I/O error the file counted (not strict) stops a SummaryRecord."""
    st = rw.stats
    if st.errors:
        raise OSError(st.last_errno, os.strerror(st.last_errno), rw.path)
