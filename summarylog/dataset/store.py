"""Where the dataset's files go: a local directory (every directory below it made and
entered with O_NOFOLLOW, every file written under a temporary name and renamed, by
:class:`~summarylog.side_files.SideDir`: a planted symlink is refused, never followed) or
an fsspec URL (one PUT per file: an object appears whole or not at all)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from typing import Any, Iterator, Mapping

from ..remote.urls import filesystem, is_url
from ..side_files import SideDir
from .layout import KEY_PREFIX, STATE_DIR, STATE_FILE, TABLES, parse_part

__all__ = ["Store", "open_store", "STATE_LIMIT"]

STATE_LIMIT = 1 << 30  #: the largest state file read back (bytes)


class Store:
    """A dataset's files: parts by (table, key directory, name), and the state."""

    def write_part(self, table: str, keydir: str, name: str, data: list[Any]) -> None:
        """Write the part ``name`` whole: the buffers of ``data`` one after another
        (a local store: only inside :meth:`locked`)."""
        raise NotImplementedError

    def parts(self) -> Iterator[tuple[str, str, str]]:
        """(table, key directory, name) of every part, and of temporary leftovers."""
        raise NotImplementedError

    def delete(self, table: str, keydir: str, name: str) -> None:
        raise NotImplementedError

    def read_state(self) -> bytes | None:
        raise NotImplementedError

    def write_state(self, data: bytes) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One export at a time (local datasets only: object stores have no lock)."""
        yield


def _ours(name: str) -> bool:
    """A part, or a temporary file of one a crash left behind."""
    return parse_part(name) is not None or (name.startswith(".part-") and name.endswith(".tmp"))


class LocalStore(Store):
    def __init__(self, dest: str) -> None:
        os.makedirs(dest, exist_ok=True)
        self.dest = dest
        with SideDir(dest):  # dest itself is the user's: a link there is their choice
            pass
        # while locked (an export writes), each table's directory stays open: a part
        # then costs its run directory and its file, not the walk from dest down
        self._held: dict[str, SideDir] | None = None
        self._held_lock = threading.Lock()

    @contextlib.contextmanager
    def _dir(self, *names: str, make: bool = True) -> Iterator[SideDir]:
        opened = [SideDir(self.dest)]
        try:
            for n in names:
                if not make:
                    _exists_dir(opened[-1], n)
                opened.append(opened[-1].sub(n))
            yield opened[-1]
        finally:
            for d in reversed(opened):
                d.close()

    def write_part(self, table: str, keydir: str, name: str, data: list[Any]) -> None:
        with self._table(table).sub(keydir) as run_dir:
            run_dir.replace(name, data)

    def _table(self, table: str) -> SideDir:
        """The directory of ``table``, held open until the lock is released."""
        with self._held_lock:
            if self._held is None:
                raise RuntimeError("parts are written by an export, inside locked()")
            d = self._held.get(table)
            if d is None:
                with SideDir(self.dest) as root:
                    d = self._held[table] = root.sub(table)
            return d

    def parts(self) -> Iterator[tuple[str, str, str]]:
        for table in TABLES:
            try:
                with self._dir(table, make=False) as t:
                    keys = [k for k in os.listdir(t.fd) if k.startswith(KEY_PREFIX)]
                    for k in keys:
                        with contextlib.suppress(FileNotFoundError):
                            _exists_dir(t, k)
                            with t.sub(k) as kd:
                                for name in os.listdir(kd.fd):
                                    if _ours(name):
                                        yield table, k, name
            except FileNotFoundError:
                continue

    def delete(self, table: str, keydir: str, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            with self._dir(table, keydir, make=False) as d:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=d.fd)
                with contextlib.suppress(OSError):  # an emptied run directory goes too
                    if not os.listdir(d.fd):
                        with self._dir(table, make=False) as t:
                            os.rmdir(keydir, dir_fd=t.fd)

    def read_state(self) -> bytes | None:
        try:
            with self._dir(STATE_DIR, make=False) as d:
                data = d.read(STATE_FILE, STATE_LIMIT)
        except FileNotFoundError:
            return None
        if data is None:
            raise ValueError(f"{os.path.join(self.dest, STATE_DIR, STATE_FILE)} is too large")
        return data or None

    def write_state(self, data: bytes) -> None:
        with self._dir(STATE_DIR) as d:
            d.replace(STATE_FILE, data)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        import fcntl

        with self._dir(STATE_DIR) as d:
            fd = os.open(".lock", os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_NONBLOCK", 0), 0o666, dir_fd=d.fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise BlockingIOError(errno.EAGAIN, "another export is writing this dataset",
                                      os.path.join(self.dest, STATE_DIR, ".lock")) from None
            self._held = {}
            yield
        finally:
            with self._held_lock:
                for d in (self._held or {}).values():
                    d.close()
                self._held = None
            os.close(fd)


def _exists_dir(parent: SideDir, name: str) -> None:
    """FileNotFoundError when ``name`` is missing; OSError when it is a link or not a
    directory (so a reading pass never creates directories)."""
    st = os.lstat(name, dir_fd=parent.fd) if os.lstat in os.supports_dir_fd else None
    if st is None:
        st = os.lstat(os.path.join(parent.path, name))
    if stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(errno.ELOOP, "is a symbolic link; the export does not "
                                 "follow links inside the dataset", os.path.join(parent.path, name))
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "exists but is not a directory",
                                 os.path.join(parent.path, name))


class RemoteStore(Store):
    def __init__(self, url: str, storage_options: Mapping[str, Any] | None) -> None:
        self.fs, self.root = filesystem(url, storage_options)

    def _path(self, *names: str) -> str:
        return "/".join((self.root, *names))

    def write_part(self, table: str, keydir: str, name: str, data: list[Any]) -> None:
        self.fs.pipe_file(self._path(table, keydir, name), b"".join(data))

    def parts(self) -> Iterator[tuple[str, str, str]]:
        self.fs.invalidate_cache()
        for table in TABLES:
            try:
                found = self.fs.find(self._path(table))
            except FileNotFoundError:
                continue
            for p in found:
                rel = p[len(self._path(table)) + 1:] if p.startswith(self._path(table) + "/") \
                    else p.split(f"/{table}/", 1)[-1]
                parts = rel.split("/")
                if len(parts) == 2 and parts[0].startswith(KEY_PREFIX) and _ours(parts[1]):
                    yield table, parts[0], parts[1]

    def delete(self, table: str, keydir: str, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._path(table, keydir, name))

    def read_state(self) -> bytes | None:
        try:
            return self.fs.cat_file(self._path(STATE_DIR, STATE_FILE)) or None
        except FileNotFoundError:
            return None

    def write_state(self, data: bytes) -> None:
        self.fs.pipe_file(self._path(STATE_DIR, STATE_FILE), data)


def open_store(dest: str, storage_options: Mapping[str, Any] | None) -> Store:
    """The store of ``dest``: a URL's through fsspec, else the local directory."""
    if is_url(dest):
        return RemoteStore(dest, storage_options)
    return LocalStore(dest)
