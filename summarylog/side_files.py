"""Files written beside the event files (the projector's), inside a run directory
and never through a link: each directory below the run is made and opened one
component at a time with O_NOFOLLOW, relative to its parent's descriptor, and a
file is written under a fresh O_EXCL name, then renamed over its final name, so a
link planted at any of these names is refused or replaced, never followed, and
readers see a file whole or not at all.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from typing import Any

__all__ = ["check_no_link", "SideDir", "write_all"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at a name must not block the open
_tmp_seq = itertools.count()


def check_no_link(path: str, want_dir: bool) -> bool:
    """True when ``path`` exists; OSError when it is a link (or not a directory /
    regular file, as ``want_dir`` says): what add_embedding must not write through."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(errno.ELOOP, "is a symbolic link; summarylog does not "
                                 "follow links inside the run directory", path)
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "exists but is not a directory", path)
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "exists but is not a regular file", path)
    return True


_IOV_MAX = 1024  # buffers one writev takes at most (Linux's and macOS's IOV_MAX)


def write_all(fd: int, data: Any) -> None:
    """Write every byte of ``data`` (a buffer, or a list of buffers one after another) to
    ``fd``: one writev per up to _IOV_MAX buffers where the OS has it (a Parquet part is
    dozens of small buffers), again from where a short write stopped."""
    views = [v for v in (memoryview(b).cast("B") for b in
                         (data if isinstance(data, list) else [data])) if v.nbytes]
    writev = getattr(os, "writev", None)
    i = 0
    while i < len(views):
        n = writev(fd, views[i:i + _IOV_MAX]) if writev else os.write(fd, views[i])
        while n:  # drop what was written; a buffer written in part keeps its tail
            if n >= views[i].nbytes:
                n -= views[i].nbytes
                i += 1
            else:
                views[i], n = views[i][n:], 0


class SideDir:
    """A directory held open by descriptor: ``SideDir(run).sub("00000").sub("tag")``."""

    def __init__(self, path: str, *, _fd: int | None = None, _path: str | None = None) -> None:
        # the run directory itself is the user's: a link there is their choice
        self.fd = os.open(path, os.O_RDONLY | _DIRECTORY) if _fd is None else _fd
        self.path = path if _path is None else _path

    def sub(self, name: str) -> "SideDir":
        """The child directory ``name`` (one component), made if missing; a link or a
        file there raises OSError."""
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a single path component: {name!r}")
        try:
            os.mkdir(name, 0o777, dir_fd=self.fd)  # mkdirat: never through a link
        except FileExistsError:
            pass
        fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _NONBLOCK, dir_fd=self.fd)
        return SideDir(name, _fd=fd, _path=os.path.join(self.path, name))

    def replace(self, name: str, data: bytes | list[Any]) -> None:
        """Write ``name`` whole (``data``: bytes, or buffers one after another): a fresh
        temporary file, renamed over ``name``."""
        tmp = f".{name}.{os.getpid()}.{next(_tmp_seq)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o666,
                     dir_fd=self.fd)
        try:
            try:  # os calls, not a file object: no buffer copy, no seek or tty probe
                write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise

    def read(self, name: str, limit: int) -> bytes | None:
        """The contents of the regular file ``name`` (b"" when missing), or None when it
        is larger than ``limit`` bytes; a link or anything but a regular file raises."""
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY, dir_fd=self.fd)
        except FileNotFoundError:
            return b""
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "exists but is not a regular file",
                              os.path.join(self.path, name))
            if st.st_size > limit:
                return None
            return f.read(limit + 1)

    def append(self, name: str, data: bytes) -> None:
        """Append ``data`` to ``name`` in one write (made if missing; not through a link)."""
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK
                     | _BINARY, 0o666, dir_fd=self.fd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "exists but is not a regular file",
                          os.path.join(self.path, name))
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "SideDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
