"""Where a Reader's files come from: a local path, or a URL (``s3://``, ``gs://``, any
fsspec URL) mirrored into a private local cache one poll at a time
(:class:`summarylog.remote.mirror.Mirror`), so the same native code reads both."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Mapping

from .discovery import Discovery, discover
from .read_columns import FileGate
from .remote.urls import check_dir_or_url, is_url

__all__ = ["Source"]


class Source(FileGate):
    """The path a Reader was given, and its discovery (one poll of the URL each);
    as a :class:`FileGate`, it tells the Reader when a URL's file is fetched."""

    def __init__(self, path: Any, storage_options: Mapping[str, Any] | None,
                 remote_options: Any) -> None:
        self.path = check_dir_or_url("path", path) if is_url(path) else os.fspath(path)
        self.mirror = None
        self._deferred = False
        if not is_url(self.path):
            if storage_options is not None or remote_options is not None:
                raise ValueError("storage_options and remote_options are for URLs only, "
                                 f"not the local path {self.path!r}")
            if not os.path.exists(self.path):
                raise FileNotFoundError(2, "No such file or directory", self.path)
            self.local = self.path
            return
        from .remote.mirror import Mirror

        self.mirror = Mirror(self.path, storage_options, remote_options)
        try:
            # a missing bucket or prefix fails here, as a missing directory does
            self.mirror.sync(background=True)
        except BaseException:
            self.mirror.close()
            raise
        self._polled = True  # the first discovery uses this poll
        self.local = self.mirror.local_root

    def discover(self) -> Discovery:
        """The runs now: for a URL, after one poll (listing, new bytes fetched)."""
        if self.mirror is None:
            return discover(self.path)
        if not self._polled:
            self.mirror.sync(background=True)
        self._polled = False
        return discover(self.local)

    def wait(self, files: list[str]) -> None:
        """Until ``files`` (of the last discovery) are read in full: a URL's are
        fetched while the Reader reads those that came first."""
        if self.mirror is not None and not self._deferred:
            self.mirror.wait(files)

    def expect(self, files: list[str]) -> None:
        if self.mirror is not None:
            self.mirror.prefer(files)

    def size(self, path: str) -> int:
        return os.path.getsize(path) if self.mirror is None else self.mirror.listed_size(path)

    @contextlib.contextmanager
    def no_wait(self) -> Iterator[None]:
        """:meth:`wait` does not wait inside (the caller waits for each file later)."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False

    def errors(self) -> list[OSError]:
        """What the last poll could not fetch (once its fetching is over)."""
        if self.mirror is None:
            return []
        self.mirror.settle()
        return list(self.mirror.errors)

    def name(self, path: str) -> str:
        """What messages call a file: its URL when it is mirrored."""
        return path if self.mirror is None else self.mirror.url_of(path)

    def close(self) -> None:
        if self.mirror is not None:
            self.mirror.close()
