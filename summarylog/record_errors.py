"""What stops or loses a SummaryRecord's steps, and when it is raised.

An I/O error stops recording (raised from the next call when strict, else
logged once); a step that can't be encoded is lost alone and counted.
"""

from __future__ import annotations

import logging

log = logging.getLogger("summarylog")


class RecordErrors:
    """A record's error state: ``stopped`` (an I/O error ended recording),
    ``pending`` (an error to raise from the next call, strict only) and
    ``lost_steps``."""

    def __init__(self, where: str, fmt: str, strict: bool) -> None:
        self.where, self.format, self.strict = where, fmt, strict
        self.stopped = False
        self.pending: BaseException | None = None
        self.lost_steps = 0

    def fail(self, exc: BaseException) -> None:
        """An error stops recording: raised from the next call (strict) or logged once."""
        if self.strict:
            self.pending = self.pending or exc
        elif not self.stopped:
            log.error("summarylog: recording to %s stops: %s", self.where, exc)
        self.stopped = True

    def lose_step(self, step: int, exc: Exception) -> None:
        """A step (or part of it) not written: counted, logged (the first few,
        then every 100th), raised from the next call if strict."""
        self.lost_steps += 1
        n = self.lost_steps
        if n <= 5 or n % 100 == 0:
            log.error("summarylog: %s: step %d of %s not written: %s%s", self.where, step,
                      self.format, exc, "" if n < 5 else
                      f" ({n} steps lost so far; see SummaryRecord.stats())")
        if self.strict:
            self.pending = self.pending or exc

    def upload_failed(self, exc: BaseException) -> None:
        """An upload failure (a URL's): raised from the next call if strict, never a
        stop (the files wait in the spool)."""
        if self.strict:
            self.pending = self.pending or exc

    def raise_pending(self) -> None:
        if self.pending is not None:  # set only when strict
            err, self.pending = self.pending, None
            raise err
