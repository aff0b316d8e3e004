"""The remote arguments of a Writer, checked (TypeError/ValueError naming the
argument) without importing the upload machinery: local writers stay as light."""

from __future__ import annotations

import os
from typing import Any, Mapping

from .urls import check_dir_or_url

__all__ = ["RemoteOptions", "check_remote_options", "SEGMENT_BYTES", "SEGMENT_SECS",
           "MAX_SPOOL", "CLOSE_TIMEOUT", "UPLOAD_TIMEOUT"]

SEGMENT_BYTES = 64 << 20  #: default segment size (bytes)
SEGMENT_SECS = 60.0  #: default segment age (s)
MAX_SPOOL = 1 << 30  #: default spool bound (bytes)
CLOSE_TIMEOUT = 30.0  #: default wait of close() for the last uploads (s)
UPLOAD_TIMEOUT = 60.0  #: default deadline of one upload call (s)


def _number(name: str, value: Any, low: float, allow_none: bool = False) -> Any:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number{' or None' if allow_none else ''}, "
                        f"got {type(value).__name__}")
    if not value >= low or value != value or value == float("inf"):
        raise ValueError(f"{name} must be a finite number >= {low}, got {value!r}")
    return value


def _int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


class RemoteOptions:
    """The checked remote arguments of a Writer or SummaryRecord logging to a URL
    (``s3://``, ``gs://``, any fsspec URL; ``pip install 'summarylog[remote]'``).

    Records go to a local spool and are cut into sealed segments (complete event
    files), each uploaded once, create-only, by a background thread as ``<url>/<file
    name>``; the training loop never waits on the network (unless ``on_full="block"``
    and the spool is full).

      storage_options: fsspec options (endpoint, credentials...).
      spool_dir: the spool (default ``$XDG_CACHE_HOME`` or ``~/.cache``
        ``/summarylog/spool/<hash of the URL>``; one URL per spool; mode 0700).
      segment_bytes, segment_secs: a segment is sealed past this size (default 64 MiB)
        or age (default 60 s).
      max_spool: bytes the spool may hold (default 1 GiB); when full, ``on_full``.
      live_tail_secs: also upload the current segment's bytes at most this often
        (s; default None: off) to ``<url>/.summarylog-tail/<file name>.tail``.
      close_timeout: ``close()`` waits this long for the last uploads (s; default 30);
        what is left waits in the spool for the next writer on it or
        ``summarylog upload SPOOL``.
      upload_timeout: the deadline of one upload call (s; default 60).
      retry_wait: (first, longest) wait between upload attempts (s; default (0.5, 30)).

    A store that fails (missing bucket, credentials, unreachable) is reported once per
    outage: raised (OSError) from the next call when strict, logged and counted in the
    writer's stats otherwise; the segments wait in the spool.
    """

    def __init__(self, storage_options: Mapping[str, Any] | None = None,
                 spool_dir: str | os.PathLike[str] | None = None,
                 segment_bytes: int = SEGMENT_BYTES, segment_secs: float = SEGMENT_SECS,
                 max_spool: int = MAX_SPOOL, live_tail_secs: float | None = None,
                 close_timeout: float = CLOSE_TIMEOUT, upload_timeout: float = UPLOAD_TIMEOUT,
                 retry_wait: tuple[float, float] = (0.5, 30.0)) -> None:
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise TypeError(f"storage_options must be a mapping or None, "
                            f"got {type(storage_options).__name__}")
        self.storage_options = dict(storage_options or {})
        if spool_dir is not None:
            spool_dir = os.fspath(spool_dir) if isinstance(spool_dir, os.PathLike) else spool_dir
            if not isinstance(spool_dir, str) or not spool_dir or "\0" in spool_dir:
                raise TypeError(f"spool_dir must be a non-empty local path or None, "
                                f"got {spool_dir!r}")
            if "://" in spool_dir:
                raise ValueError(f"spool_dir must be a local directory, got {spool_dir!r}")
        self.spool_dir = spool_dir
        self.segment_bytes = _int("segment_bytes", segment_bytes, 1 << 10)
        self.segment_secs = _number("segment_secs", segment_secs, 0.01)
        self.max_spool = _int("max_spool", max_spool, 1)
        if self.max_spool < 2 * self.segment_bytes:
            raise ValueError(f"max_spool must hold at least two segments "
                             f"(2 * segment_bytes = {2 * self.segment_bytes}), got {max_spool}")
        self.live_tail_secs = _number("live_tail_secs", live_tail_secs, 0.01, allow_none=True)
        self.close_timeout = _number("close_timeout", close_timeout, 0)
        self.upload_timeout = _number("upload_timeout", upload_timeout, 0.1)
        if (not isinstance(retry_wait, (tuple, list)) or len(retry_wait) != 2):
            raise TypeError(f"retry_wait must be a (first, longest) pair of seconds, "
                            f"got {retry_wait!r}")
        self.retry_wait = (_number("retry_wait[0]", retry_wait[0], 0.001),
                           _number("retry_wait[1]", retry_wait[1], 0.001))


    def file_limits(self, max_file_size: int | None) -> tuple[int, float]:
        """(size, age) past which a spooled file is sealed: the segment's, or the
        writer's own ``max_file_size`` when smaller."""
        return min(self.segment_bytes, max_file_size or self.segment_bytes), self.segment_secs


def check_remote_options(name: str, url: Any, given: Mapping[str, Any]) -> RemoteOptions | None:
    """RemoteOptions for a URL, None for a local path (ValueError if remote-only
    arguments were given with one)."""
    url = check_dir_or_url(name, url)
    if "://" not in url:
        extra = sorted(k for k, v in given.items() if v is not None)
        if extra:
            raise ValueError(f"{', '.join(extra)}: only for a URL {name} (s3://, gs://...), "
                             f"got the local path {url!r}")
        return None
    return RemoteOptions(**{k: v for k, v in given.items() if v is not None})
