"""A local read-through mirror of a URL's event files, kept in step one poll at a time,
so the native Reader reads remote runs as local files.

One poll (:meth:`Mirror.sync`) is ONE listing of the root (its listing cache dropped
first: fsspec would otherwise keep it forever) and ranged reads of only what is new:
a new object from byte 0, a grown one from the size already mirrored, through the
bounded :class:`~summarylog.remote.fetch.Fetcher`.  Memory does not grow with object
size (chunks are written as they arrive), and the requests of a poll grow with the
new data, not with the number of objects.

The cache directory is private (0700).  Object names come from
:func:`~summarylog.remote.names.split_name` (a hostile name is reported, never
written), directories are entered only if they are real directories (never a
planted symlink) and files are opened with O_NOFOLLOW.  An object that could not be
read fully keeps the prefix read so far (the Reader reads up to the damage) and is
reported in :attr:`Mirror.errors` with its URL; the next poll goes on from there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import shutil
import stat
import tempfile
import weakref
from typing import Any, Mapping

from ..discovery import is_event_file, is_lineage_file
from .fetch import Fetcher, Range
from .names import is_hidden, split_name
from .urls import filesystem, redact

__all__ = ["MirrorOptions", "Mirror", "PollStats"]

_MiB = 1 << 20


@dataclasses.dataclass(frozen=True)
class MirrorOptions:
    """How a remote run is read (``Reader(url, remote_options={...})``).

    cache_dir: where the mirror lives (default: a private temporary directory removed
      with the Reader); a given directory is created 0700 and reused, so a later Reader
      fetches only what it lacks.
    timeout: seconds one listing or one batch of ranged reads may take (default 60).
    concurrency: ranged reads in flight at once, so open connections too (default 8).
    chunk_bytes: bytes of one ranged read (default 8 MiB): buffers are at most
      concurrency x chunk_bytes.
    max_objects: event files one listing may bring in (default 100 000); the rest is
      reported, not read.
    retries: further tries of a failed ranged read (default 3), after the filesystem's own.
    """

    cache_dir: str | None = None
    timeout: float = 60.0
    concurrency: int = 8
    chunk_bytes: int = 8 * _MiB
    max_objects: int = 100_000
    retries: int = 3

    @classmethod
    def of(cls, given: Any) -> "MirrorOptions":
        if given is None or isinstance(given, MirrorOptions):
            return given or cls()
        if not isinstance(given, Mapping):
            raise TypeError(f"remote_options must be a mapping or None, got "
                            f"{type(given).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        if unknown := sorted(set(given) - names):
            raise ValueError(f"remote_options: unknown option {unknown[0]!r} "
                             f"(known: {', '.join(sorted(names))})")
        opts = cls(**given)
        opts.check()
        return opts

    def check(self) -> None:
        for name, low in (("concurrency", 1), ("chunk_bytes", 4096), ("max_objects", 1),
                          ("retries", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"remote_options {name} must be an int, got {v!r}")
            if v < low:
                raise ValueError(f"remote_options {name} must be >= {low}, got {v}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) \
                or not 0 < self.timeout < 1e7:
            raise ValueError(f"remote_options timeout must be seconds > 0, got {self.timeout!r}")
        if self.cache_dir is not None and not isinstance(self.cache_dir, (str, os.PathLike)):
            raise TypeError(f"remote_options cache_dir must be a path, got {self.cache_dir!r}")


@dataclasses.dataclass
class PollStats:
    """Requests and bytes of the mirror's polls (cumulative)."""

    polls: int = 0
    listings: int = 0
    ranged_reads: int = 0
    bytes_fetched: int = 0


class Mirror:
    """The event files under ``url`` mirrored into :attr:`local_root`."""

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None,
                 options: Any = None) -> None:
        self.url = url.rstrip("/")
        self.options = MirrorOptions.of(options)
        self.fs, self.root = filesystem(url, storage_options)
        self.local_root = self._cache_dir()
        self._fetch = Fetcher(self.fs, timeout=self.options.timeout,
                              concurrency=self.options.concurrency,
                              chunk_bytes=self.options.chunk_bytes,
                              retries=self.options.retries, name=self._url)
        self._sizes: dict[str, int] = {}  # remote path -> bytes mirrored
        self._local: dict[str, str] = {}  # remote path -> local path
        self._urls: dict[str, str] = {}  # local path -> URL
        self.stats = PollStats()
        #: what the last poll could not list, mirror or read fully: OSErrors naming URLs
        self.errors: list[OSError] = []
        #: hidden objects of the last listing (live tails): relative name -> size.  The
        #: hook for the writer's live tail (``<run>/.summarylog-tail/<segment>``): not
        #: read as event files yet.
        self.hidden: dict[str, int] = {}

    # -- the cache directory ---------------------------------------------------------
    def _cache_dir(self) -> str:
        given = self.options.cache_dir
        if given is None:
            d = tempfile.mkdtemp(prefix="summarylog-mirror-")  # 0700
            self._finalizer = weakref.finalize(self, shutil.rmtree, d, True)
            return d
        base = os.path.abspath(os.fspath(given))
        os.makedirs(base, mode=0o700, exist_ok=True)
        _own_dir(base)
        key = hashlib.sha256(redact(self.url).encode("utf-8", "surrogateescape")).hexdigest()
        d = os.path.join(base, key[:32])
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, 0o700)
        _own_dir(d)
        return d

    def close(self) -> None:
        """Drop the worker thread and, for a temporary cache, the mirrored files."""
        self._fetch.close()
        if (fin := getattr(self, "_finalizer", None)) is not None:
            fin()

    # -- names ---------------------------------------------------------------------------
    def _url(self, path: str) -> str:
        rel = self._rel(path)
        return redact(f"{self.url}/{rel}" if rel else self.url)

    def _rel(self, path: str) -> str:
        path = path.rstrip("/")
        if path == self.root:
            return ""
        return path[len(self.root) + 1:] if path.startswith(self.root + "/") else path

    def url_of(self, local: str) -> str:
        """The URL a mirrored file came from (``local`` itself if it is not one)."""
        return self._urls.get(local, local)

    # -- one poll --------------------------------------------------------------------------
    def sync(self) -> None:
        """One listing, then the new and grown objects' new bytes.  Raises
        FileNotFoundError when the URL holds nothing, TimeoutError when the listing
        does not come within the deadline; other failures go to :attr:`errors`."""
        self.errors = []
        self.stats.polls += 1
        listing = self._list()
        wanted: dict[str, tuple[str, int]] = {}  # remote path -> (local path, size)
        hidden: dict[str, int] = {}
        over = 0
        for path, info in listing.items():
            if info.get("type", "file") != "file":
                continue
            rel = self._rel(path) or path.rsplit("/", 1)[-1]
            size = int(info.get("size") or 0)
            try:
                parts = split_name(rel)
            except ValueError as exc:
                self.errors.append(OSError(errno.EINVAL, f"object name refused: {exc}",
                                           self._url(path)))
                continue
            if is_hidden(rel):
                hidden[rel] = size
            elif is_event_file(parts[-1]) or is_lineage_file(parts[-1]):
                if len(wanted) == self.options.max_objects:
                    over += 1
                    continue
                wanted[path] = (os.path.join(self.local_root, *parts), size)
        self.hidden = hidden
        if over:
            self.errors.append(OSError(errno.EFBIG, f"{over} event files past the first "
                                       f"{self.options.max_objects} (remote_options "
                                       f"max_objects) are not read", self.url))
        if not wanted and not hidden and not self._sizes:
            raise FileNotFoundError(errno.ENOENT, "no event files under this URL", self.url)
        self._drop_gone(wanted)
        self._pull(wanted)

    def _list(self) -> dict[str, Any]:
        self.fs.invalidate_cache(self.root)
        self.stats.listings += 1
        try:
            found = self._fetch.call(self.url, self.fs.find, self.root, detail=True)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such bucket or object", self.url) from None
        if not found:  # the root may be an object itself
            with contextlib.suppress(FileNotFoundError):
                info = self._fetch.call(self.url, self.fs.info, self.root)
                if info.get("type") == "file":
                    found = {self.root: info}
        return found

    def _drop_gone(self, wanted: dict[str, tuple[str, int]]) -> None:
        for path in [p for p in self._sizes if p not in wanted]:
            local = self._local.pop(path)
            del self._sizes[path]
            self._urls.pop(local, None)
            with contextlib.suppress(OSError):
                os.unlink(local)

    def _pull(self, wanted: dict[str, tuple[str, int]]) -> None:
        ranges: list[Range] = []
        for path, (local, size) in wanted.items():
            have = self._sizes.get(path)
            if have is None:  # first sight: a reused cache may hold a prefix already
                have = self._start(path, local, size)
                if have is None:
                    continue
            if size < have:  # rewritten shorter: read it again
                have = 0
                self._truncate(path, local, 0)
            self._sizes[path] = have
            ranges.extend(self._fetch.split(path, have, size))
        failed: set[str] = set()
        for batch in self._fetch.batches(ranges):
            for r, data in zip(batch, self._fetch.fetch(batch)):
                if r.path in failed:
                    continue
                if isinstance(data, BaseException):
                    failed.add(r.path)
                    self.errors.append(_named(data, self._url(r.path)))
                    continue
                self._write(r, data)
                if len(data) < r.end - r.start:  # shorter than listed: done with it
                    failed.add(r.path)
        self.stats.ranged_reads = self._fetch.requests
        self.stats.bytes_fetched = self._fetch.bytes

    def _start(self, path: str, local: str, size: int) -> int | None:
        """The bytes already mirrored for a newly listed object (None: not mirrorable)."""
        try:
            parent = os.path.dirname(local)
            _make_dirs(self.local_root, parent)
            fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise OSError(errno.EINVAL, "not a regular file in the cache", local)
                have = st.st_size if st.st_size <= size else 0
                os.ftruncate(fd, have)
            finally:
                os.close(fd)
        except OSError as exc:
            self.errors.append(OSError(exc.errno, f"cannot mirror into the cache: "
                                       f"{exc.strerror or exc}", self._url(path)))
            return None
        self._local[path] = local
        self._urls[local] = self._url(path)
        return have

    def _truncate(self, path: str, local: str, size: int) -> None:
        fd = os.open(local, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def _write(self, r: Range, data: bytes) -> None:
        local = self._local[r.path]
        fd = os.open(local, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            view = memoryview(data)
            off = r.start
            while view:
                n = os.pwrite(fd, view, off)
                view, off = view[n:], off + n
        finally:
            os.close(fd)
        self._sizes[r.path] = r.start + len(data)


def _named(exc: BaseException, url: str) -> OSError:
    if isinstance(exc, TimeoutError) and not exc.strerror:  # the filesystem's own timeout
        return TimeoutError(errno.ETIMEDOUT, "no answer within the filesystem's request "
                            "timeout", url)
    if isinstance(exc, OSError):
        return type(exc)(exc.errno or errno.EIO, exc.strerror or str(exc) or type(exc).__name__,
                         url)
    return OSError(errno.EIO, f"{type(exc).__name__}: {exc}", url)


def _own_dir(path: str) -> None:
    """A real directory (not a symlink) of this user, or OSError."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "the mirror's cache must be a real directory "
                      "(not a symlink)", path)
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise PermissionError(errno.EPERM, "the mirror's cache belongs to another user", path)


def _make_dirs(root: str, parent: str) -> None:
    """Make the directories from ``root`` down to ``parent``, each a real directory."""
    rel = os.path.relpath(parent, root)
    d = root
    for part in [] if rel == "." else rel.split(os.sep):
        d = os.path.join(d, part)
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, 0o700)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, "not a real directory in the cache", d)
