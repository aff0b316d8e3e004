"""The local spool of a Writer logging to a URL: a private directory of event files
(segments) waiting for upload, and the locks that tell live segments from leftovers.

- The directory is ``$XDG_CACHE_HOME`` (else ``~/.cache``) ``/summarylog/spool/<hash
  of the URL>/``, or the caller's ``spool_dir``; mode 0700, owned by us, never a
  symbolic link (checked with lstat, opened with O_NOFOLLOW).
- ``.target`` names the URL (no credentials): ``summarylog upload SPOOL`` reads it.
- A writer holds an exclusive flock on each segment it writes and until its upload
  is confirmed; a file nobody holds is a leftover (a dead writer's) and is sealed:
  cut after its last whole record, then uploaded.  ``.create.lock`` orders segment
  creation against that scan, so a file is never taken between its creation and lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
from typing import Iterator

from .urls import redact

__all__ = ["Spool", "default_spool_dir", "SegmentLock"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_TARGET = ".target"


def default_spool_dir(url: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(redact(url).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(base, "summarylog", "spool", digest)


def _private_dir(path: str, name: str) -> None:
    """Make ``path`` (and parents) a directory; the last component must be a real
    directory owned by us (not a planted symlink); it is made 0700."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{name} {path!r} is not a directory (a symbolic link or a file)")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise ValueError(f"{name} {path!r} belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700, follow_symlinks=False)


class SegmentLock:
    """An exclusive flock on a segment file, held from its creation (or its recovery)
    until its upload is confirmed."""

    def __init__(self, path: str, block: bool = False) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(self.fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        except BaseException:
            os.close(self.fd)
            raise

    def read(self) -> bytes:
        """The whole file, read through the locked descriptor."""
        size = os.fstat(self.fd).st_size
        return os.pread(self.fd, size, 0) if size else b""

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)  # drops the lock


class Spool:
    """The spool directory of one target URL."""

    def __init__(self, url: str, spool_dir: str | None = None) -> None:
        self.url = url
        self.dir = os.path.abspath(spool_dir if spool_dir is not None else default_spool_dir(url))
        _private_dir(self.dir, "spool_dir")
        self._claim_target()

    @classmethod
    def open_existing(cls, spool_dir: str) -> "Spool":
        """A spool made earlier (``summarylog upload``): its URL from ``.target``."""
        path = os.path.join(spool_dir, _TARGET)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            raise ValueError(f"{spool_dir!r} is not a summarylog spool (no {_TARGET})") from None
        with os.fdopen(fd, "rb") as f:
            url = json.loads(f.read(1 << 16).decode())["url"]
        return cls(url, spool_dir)

    def _claim_target(self) -> None:
        path = os.path.join(self.dir, _TARGET)
        shown = redact(self.url)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            tmp = f"{path}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"url": shown}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            return
        with os.fdopen(fd, "rb") as f:
            try:
                had = json.loads(f.read(1 << 16).decode()).get("url")
            except ValueError:
                had = None
        if had != shown:
            raise ValueError(f"spool_dir {self.dir!r} holds segments for {had!r}, "
                             f"not {shown!r}: give each URL its own spool_dir")

    @contextlib.contextmanager
    def creating(self) -> Iterator[None]:
        """Held while a writer creates a segment and takes its lock."""
        with self._dir_lock(fcntl.LOCK_SH):
            yield

    @contextlib.contextmanager
    def _dir_lock(self, how: int) -> Iterator[None]:
        fd = os.open(os.path.join(self.dir, ".create.lock"),
                     os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, how)
            yield
        finally:
            os.close(fd)

    def segment_names(self) -> list[str]:
        """Names of the segment files in the spool, in name order."""
        out = []
        for entry in os.scandir(self.dir):
            if not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
                out.append(entry.name)
        return sorted(out)

    def take_leftovers(self) -> list[tuple[str, SegmentLock]]:
        """Segments no live writer holds, each locked for us and sealed (cut after
        its last whole record), in name order."""
        taken: list[tuple[str, SegmentLock]] = []
        with self._dir_lock(fcntl.LOCK_EX):
            for name in self.segment_names():
                try:
                    lock = SegmentLock(os.path.join(self.dir, name))
                except (BlockingIOError, FileNotFoundError):
                    continue  # a live writer's, or gone
                except OSError:
                    continue  # not a regular file: never ours to send
                taken.append((name, lock))
        for name, lock in taken:
            seal_leftover(lock)
        return taken

    def bytes_held(self) -> int:
        total = 0
        for name in self.segment_names():
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(self.dir, name)).st_size
        return total

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.dir, name))


def seal_leftover(lock: SegmentLock) -> None:
    """Cut a dead writer's segment after its last whole record (a torn last write)."""
    if lock.path.endswith(".zst"):
        return  # zstd frames: the reader reads up to a torn frame
    from ..records import RecordReader

    try:
        with RecordReader(lock.path) as rr:
            for _ in rr.read():
                pass
            cut = rr.tail.offset if rr.tail is not None else None
    except OSError:
        return
    if cut is not None:
        fd = os.open(lock.path, os.O_WRONLY | _NOFOLLOW | _CLOEXEC)
        try:
            os.ftruncate(fd, cut)
            os.fsync(fd)
        finally:
            os.close(fd)

