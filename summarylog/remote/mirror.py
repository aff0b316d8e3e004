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
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
import weakref
from typing import Any, Mapping, Sequence

from .fetch import Fetcher, Range, RangeQueue
from .listing import Listing, local_parts, sort_listing
from .names import split_name
from .read_options import MirrorOptions, PollStats
from .urls import filesystem, for_reading, redact

__all__ = ["MirrorOptions", "Mirror", "PollStats"]

class Mirror:
    """The event files under ``url`` mirrored into :attr:`local_root`."""

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None,
                 options: Any = None) -> None:
        self.url = url.rstrip("/")
        self.options = MirrorOptions.of(options)
        self._lock_fd: int | None = None  # a shared cache's: one poll at a time
        self.fs, self.root = filesystem(url, for_reading(url, storage_options))
        self.local_root = self._cache_dir()
        self._fetch = Fetcher(self.fs, timeout=self.options.timeout,
                              concurrency=self.options.concurrency,
                              chunk_bytes=self.options.chunk_bytes,
                              retries=self.options.retries, name=self._url)
        self._sizes: dict[str, int] = {}  # remote path -> bytes mirrored
        self._local: dict[str, str] = {}  # remote path -> local path
        self._urls: dict[str, str] = {}  # local path -> URL
        self._listed: dict[str, int] = {}  # local path -> its object's size in the listing
        self._tails: dict[str, str] = {}  # unsealed segment path -> its live tail's path
        self.stats = PollStats()
        #: what the last poll could not list, mirror or read fully: OSErrors naming URLs
        self.errors: list[OSError] = []
        #: hidden objects of the last listing: relative name -> size.  A writer's live
        #: tail (``<run>/.summarylog-tail/<segment>.tail``) among them is read as its
        #: segment's file until the sealed segment is listed.
        self.hidden: dict[str, int] = {}
        self._cond = threading.Condition()
        self._pending: dict[str, int] = {}  # local path -> its ranges not written yet
        self._worker: threading.Thread | None = None
        self._queue: RangeQueue | None = None  # this poll's ranges not started yet

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
        self._lock_fd = os.open(os.path.join(d, ".lock"),
                                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        weakref.finalize(self, os.close, self._lock_fd)
        return d

    def _lock(self) -> None:
        """The shared cache's lock (another Reader of the URL may be polling), within
        the deadline."""
        if self._lock_fd is None:
            return
        end = time.monotonic() + self.options.timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > end:
                    raise TimeoutError(errno.ETIMEDOUT, "another reader kept the mirror's "
                                       "cache locked past the timeout",
                                       self.local_root) from None
                time.sleep(0.05)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Drop the worker thread and, for a temporary cache, the mirrored files."""
        self.settle()
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
    def sync(self, background: bool = False) -> None:
        """One listing, then the new and grown objects' new bytes (with
        ``background``, fetched by a worker thread while the caller goes on: use
        :meth:`wait` before reading a file, :meth:`settle` before the errors).
        Raises FileNotFoundError when the URL holds nothing, TimeoutError when the
        listing does not come within the deadline; other failures go to :attr:`errors`."""
        self.settle()
        self._lock()
        try:
            self._sync(background)
        except BaseException:
            self._unlock()
            raise

    def _sync(self, background: bool) -> None:
        self.errors = []
        self.stats.polls += 1
        listing = self.list_objects()
        self.errors += listing.errors
        self.hidden = listing.hidden
        wanted = {path: (os.path.join(self.local_root, *parts), size)
                  for path, (parts, size) in listing.files.items()}
        self._use_tails(listing.tails, wanted)
        if not wanted and not listing.hidden and not self._sizes:
            raise FileNotFoundError(errno.ENOENT, "no event files under this URL", self.url)
        self._drop_gone(wanted)
        ranges = self._queue = RangeQueue(self._plan(wanted))
        if not background or not ranges:
            self._pull(ranges)
            return
        self._worker = threading.Thread(target=self._pull, args=(ranges,), daemon=True,
                                        name="summarylog-mirror")
        self._worker.start()

    def list_objects(self) -> Listing:
        """One listing of the root within the deadline, sorted (hostile names and the
        files past ``max_objects`` in its errors); nothing is fetched.  Raises
        FileNotFoundError for a missing bucket, TimeoutError past the deadline."""
        return sort_listing(self._list(), self._rel, self._url, self.url,
                            self.options.max_objects)

    def fetch(self, files: Sequence[tuple[str, int]]) -> list[str]:
        """Mirror just ``files`` (remote paths of a listing, with their listed sizes),
        as a poll without a listing: their local paths, in the given order.  What
        could not be fetched fully is in :attr:`errors` (its prefix kept)."""
        self.settle()
        self._lock()
        try:
            self.errors = []
            wanted: dict[str, tuple[str, int]] = {}
            for path, size in files:
                rel = self._rel(path) or path.rsplit("/", 1)[-1]  # the root is the object
                try:
                    wanted[path] = (os.path.join(self.local_root,
                                                 *local_parts(rel, self._url(path))), size)
                except OSError as exc:
                    self.errors.append(exc)
            ranges = self._queue = RangeQueue(self._plan(wanted))
        except BaseException:
            self._unlock()
            raise
        self._pull(ranges)
        return [self._local[p] for p in wanted if p in self._local]

    def _use_tails(self, tails: dict[str, tuple[str, int]],
                   wanted: dict[str, tuple[str, int]]) -> None:
        """A segment not sealed yet is read from its live tail (a prefix of it, under
        the same local name); once the sealed object is listed, it goes on from the
        bytes the tail gave, and the tail is left alone."""
        for seg, tail in list(self._tails.items()):  # the tail may be gone already
            if seg in wanted or tail not in self._sizes:
                del self._tails[seg]
                if seg in wanted and tail in self._sizes:  # sealed: go on from the tail's bytes
                    self._sizes[seg] = self._sizes.pop(tail)
                    self._local[seg] = self._local.pop(tail)
                    self._urls[self._local[seg]] = self._url(seg)
        for seg, (tail, size) in tails.items():
            if seg not in wanted and len(wanted) < self.options.max_objects:
                wanted[tail] = (os.path.join(self.local_root,
                                             *split_name(self._rel(seg))), size)
                self._tails[seg] = tail

    def listed_size(self, local: str) -> int:
        """The size of the object behind ``local`` in the last listing: what the file
        holds once :meth:`wait` returns, unless its fetching failed."""
        size = self._listed.get(local)
        return os.path.getsize(local) if size is None else size

    def wait(self, locals_: list[str]) -> None:
        """Until the files ``locals_`` (mirrored paths) hold all this poll fetches."""
        with self._cond:
            self._cond.wait_for(lambda: not any(p in self._pending for p in locals_))

    def settle(self) -> None:
        """Until this poll's fetching is over (its errors are then all in :attr:`errors`)."""
        if self._worker is not None:
            self._worker.join()
            self._worker = None

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
            self._listed.pop(local, None)
            with contextlib.suppress(OSError):
                os.unlink(local)

    def _plan(self, wanted: dict[str, tuple[str, int]]) -> list[Range]:
        """The ranges to fetch (each file made ready for them), marked pending."""
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
            self._listed[local] = size
            mine = list(self._fetch.split(path, have, size))
            if mine:
                self._pending[local] = len(mine)
            ranges.extend(mine)
        return ranges

    def prefer(self, locals_: list[str]) -> None:
        """Fetch the files ``locals_`` (mirrored paths) first, in this order: the order
        a reader will read them in."""
        queue = self._queue
        if queue:
            remote = {loc: path for path, loc in self._local.items()}
            queue.prefer({remote[loc]: i for i, loc in enumerate(locals_) if loc in remote})

    def _pull(self, ranges: RangeQueue) -> None:
        """Fetch and write ``ranges`` (at most ``concurrency`` at once), releasing each
        file to :meth:`wait` once its last range is written (or it failed)."""
        failed: set[str] = set()
        # ranges end in any order: a file's mirrored size is its prefix with no gap, and
        # what arrived past a gap is cut off if the gap's range fails (read up to the damage)
        arrived: dict[str, dict[int, int]] = {}

        def piece(r: Range, data: bytes) -> None:  # bytes [r.start, r.start + len(data))
            if r.path in failed:
                return
            self._write(r, data)
            ends = arrived.setdefault(r.path, {})
            ends[r.start] = r.start + len(data)
            have = self._sizes[r.path]
            while have in ends:
                have = ends.pop(have)
            self._sizes[r.path] = have

        def done(r: Range, got: int | BaseException) -> None:
            if r.path not in failed:
                if isinstance(got, BaseException):
                    self.errors.append(_named(got, self._url(r.path)))
                if isinstance(got, BaseException) or got < r.end - r.start:
                    failed.add(r.path)  # failed, or shorter than listed: done for this poll
                    if arrived.pop(r.path, None):
                        self._truncate(r.path, self._local[r.path], self._sizes[r.path])
            # counted before the file is released: a reader waiting on it sees them
            self.stats.ranged_reads, self.stats.bytes_fetched = self._fetch.requests, self._fetch.bytes
            self._release(self._local[r.path], r.path in failed)

        try:
            self._fetch.stream(ranges, piece, done)
        except Exception as exc:  # never leave a waiting reader stuck
            self.errors.append(_named(exc, self.url))
        finally:
            with self._cond:
                self._pending.clear()
                self._cond.notify_all()
            self._unlock()
            self.stats.ranged_reads = self._fetch.requests
            self.stats.bytes_fetched = self._fetch.bytes

    def _release(self, local: str, done: bool) -> None:
        with self._cond:
            left = self._pending.get(local, 0) - 1
            if left <= 0 or done:
                self._pending.pop(local, None)
                self._cond.notify_all()
            else:
                self._pending[local] = left

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
