"""The options of a remote read (``Reader(url, remote_options={...})``) and the
mirror's request counters."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

__all__ = ["MirrorOptions", "PollStats"]

_MiB = 1 << 20


@dataclasses.dataclass(frozen=True)
class MirrorOptions:
    """How a remote run is read (``Reader(url, remote_options={...})``).

    cache_dir: where the mirror lives (default: a private temporary directory removed
      with the Reader); a given directory is created 0700 and reused, so a later Reader
      fetches only what it lacks.
    timeout: seconds one listing or one batch of ranged reads may take (default 60).
    concurrency: ranged reads in flight at once, so open connections too (default 4).
    chunk_bytes: bytes of one ranged read (default 16 MiB): buffers are at most
      concurrency x chunk_bytes.  Fewer, bigger reads cost fewer requests, and less
      work on servers that read a whole object to answer a range (moto does).
    max_objects: event files one listing may bring in (default 100 000); the rest is
      reported, not read.
    retries: further tries of a failed ranged read (default 3), after the filesystem's own.
    """

    cache_dir: str | None = None
    timeout: float = 60.0
    concurrency: int = 4
    chunk_bytes: int = 16 * _MiB
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
