"""Output files of the ``summarylog`` command, so that a hostile file system cannot turn them
into writes elsewhere (docs/reliability.md): a ``mkstemp`` file next to the target renamed
over it once complete; a target that is not a regular file refused."""

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
    """An expected failure: one line on stderr (none if ``message`` is None), exit ``code``."""

    def __init__(self, message: str | None, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                 errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EXDEV, errno.ENOENT,
                 errno.ENAMETOOLONG, errno.ELOOP, errno.EIO}

_KIND_NAMES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def check_target(path: str) -> os.stat_result | None:
    """Refuse an output path that must not be replaced; the stat of an existing regular file
    there, else None (nothing there, or a symlink to a file or to nothing: replaced as a link)."""
    if path == "-":
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            mode = os.stat(path).st_mode
        except OSError:  # a dangling link (or a loop): replaced as a link
            return None
        if stat.S_ISREG(mode):
            return None
    elif stat.S_ISREG(mode):
        return st
    if stat.S_ISDIR(mode):
        raise CLIError(f"cannot write {path}: is a directory", 1)
    kind = next((name for test, name in _KIND_NAMES if test(mode)), "not a regular file")
    raise CLIError(f"cannot write {path}: {kind}, not a regular file (use '-o -' for stdout)", 2)


@contextlib.contextmanager
def output(path: str, binary: bool = False) -> Iterator[Any]:
    """A file written next to ``path``, renamed over it once complete (``-``: stdout).  Raises
    CLIError (exit 1 for an I/O failure, 2 for a target that must not be replaced)."""
    if path == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        return
    old = check_target(path)
    name = os.path.basename(path)
    while len(os.fsencode(name)) > 120:  # the temporary name stays under NAME_MAX
        name = name[: len(name) // 2]
    try:
        # mkstemp: a random name, O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(path)))
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
    try:
        if old is not None:
            with contextlib.suppress(OSError):  # the owner, when we may (root)
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    os.fchown(fd, old.st_uid, old.st_gid)
            os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)  # never set-id bits on output
        else:
            mask = os.umask(0o022)
            os.umask(mask)
            os.fchmod(fd, 0o666 & ~mask)
        f = (os.fdopen(fd, "wb") if binary else
             os.fdopen(fd, "w", newline="", encoding="utf-8", errors="backslashreplace"))
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
