"""Output files of the ``summarylog`` command, written so that a hostile
file system cannot turn them into writes somewhere else.

``output(path)`` writes into a temporary file created next to ``path`` with
an unpredictable name and ``O_CREAT|O_EXCL|O_NOFOLLOW`` (``tempfile.mkstemp``),
and renames it over ``path`` only once it is complete.  So:

* a symlink planted at a guessable temporary name is never followed;
* ``path`` itself is never opened for writing: a symlink at ``path`` is
  replaced, its target untouched;
* an existing ``path`` that is not a regular file (a device, a FIFO, a
  socket, or a symlink to one of them) is refused: renaming over it would
  replace ``/dev/full`` with a regular file when run as root;
* an existing regular ``path`` keeps its permission bits (not set-user-ID,
  set-group-ID or sticky) and its owner when the process may set it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from typing import Any, Iterator

__all__ = ["CLIError", "check_target", "output"]


class CLIError(Exception):
    """An expected failure: one line on stderr (none when ``message`` is
    None: already reported), then exit with ``code``."""

    def __init__(self, message: str | None, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                 errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EXDEV, errno.ENOENT,
                 errno.ENAMETOOLONG, errno.ELOOP, errno.EIO}

_KIND_NAMES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    for test, name in _KIND_NAMES:
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: str) -> os.stat_result | None:
    """Refuse an output path that must not be replaced; return the stat of
    an existing regular file there (None: nothing there yet, or a symlink
    to a regular file or to nothing, which is replaced as a link)."""
    if path == "-":
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
    if stat.S_ISDIR(st.st_mode):
        raise CLIError(f"cannot write {path}: is a directory", 1)
    if stat.S_ISREG(st.st_mode):
        return st
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:  # a dangling link (or a loop): replaced as a link
            return None
        if stat.S_ISREG(target.st_mode):
            return None
        if stat.S_ISDIR(target.st_mode):
            raise CLIError(f"cannot write {path}: is a directory", 1)
        mode = target.st_mode
    else:
        mode = st.st_mode
    raise CLIError(f"cannot write {path}: {_kind(mode)}, not a regular file "
                   f"(use '-o -' for stdout)", 2)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temp_prefix(path: str) -> str:
    """``.<name>.`` with the name cut so that the temporary name stays under
    NAME_MAX (255 bytes) whatever the name's length or encoding."""
    name = os.path.basename(path)
    while len(os.fsencode(name)) > 120:
        name = name[: len(name) // 2]
    return f".{name}."


@contextlib.contextmanager
def output(path: str, binary: bool = False) -> Iterator[Any]:
    """A file object written next to ``path`` and renamed over it only when
    complete (``-``: stdout).  Raises CLIError (exit 1 for an I/O failure,
    2 for a target that must not be replaced)."""
    if path == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        return
    old = check_target(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        # mkstemp: a random name, O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=directory)
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
    try:
        if old is not None:
            with contextlib.suppress(OSError):  # the owner, when we may (root)
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    os.fchown(fd, old.st_uid, old.st_gid)
            os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)  # never set-id bits on output
        else:
            os.fchmod(fd, 0o666 & ~_umask())
        if binary:
            f = os.fdopen(fd, "wb")
        else:
            f = os.fdopen(fd, "w", newline="", encoding="utf-8", errors="backslashreplace")
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())  # complete on disk before it replaces the old file
        check_target(path)  # what is there now (it may have changed while we wrote)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno in _WRITE_ERRNOS and e.filename in (None, tmp, path):
            raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
        raise
