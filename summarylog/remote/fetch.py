"""Ranged reads from an fsspec filesystem, bounded: at most ``concurrency`` ranges
of at most ``chunk_bytes`` each in flight (so at most concurrency x chunk_bytes of
buffers, and as many open connections), each batch under one deadline, failed
ranges retried a few times with backoff.

fsspec's async filesystems (s3fs, gcsfs) run a batch concurrently on their event
loop and take the deadline as ``timeout=`` (without it a stalled endpoint can hang
s3fs forever); synchronous ones (memory, local, ...) run on one worker thread
that is abandoned, not waited for, when the deadline passes.
"""

from __future__ import annotations

import concurrent.futures
import errno
import threading
import time
from typing import Any, Callable, Iterable, Iterator, NamedTuple

__all__ = ["Range", "RangeQueue", "Fetcher", "deadline_error"]

_PIECE = 1 << 20  # bytes asked of a streamed object at a time (fewer may come)


class Range(NamedTuple):
    """Bytes ``[start, end)`` of ``path`` (a path inside the filesystem)."""

    path: str
    start: int
    end: int
    whole: bool = False  #: the whole object as listed (start 0): it may come as one stream


class RangeQueue:
    """The ranges of one poll not started yet, taken in order; a reader may move the
    files it reads first to the front while they are fetched (thread-safe)."""

    def __init__(self, ranges: list[Range]) -> None:
        self._left, self._at = list(ranges), 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._left) - self._at

    def take(self) -> Range | None:
        with self._lock:
            if self._at == len(self._left):
                return None
            self._at += 1
            return self._left[self._at - 1]

    def prefer(self, rank: dict[str, int]) -> None:
        """Ranges of the paths in ``rank`` first, by rank; the others after, as they were."""
        with self._lock:
            last = len(rank)
            self._left = sorted(self._left[self._at:], key=lambda r: rank.get(r.path, last))
            self._at = 0


def deadline_error(what: str, seconds: float) -> TimeoutError:
    return TimeoutError(errno.ETIMEDOUT, f"no answer within {seconds:g} s "
                        f"(the remote_options timeout)", what)


class Fetcher:
    """Calls on ``fs`` with a deadline, and bounded batches of ranged reads."""

    def __init__(self, fs: Any, *, timeout: float, concurrency: int, chunk_bytes: int,
                 retries: int, name: Callable[[str], str]) -> None:
        self.fs = fs
        self.timeout, self.concurrency, self.chunk_bytes = timeout, concurrency, chunk_bytes
        self.retries = retries
        self.name = name  # path -> what messages call it (its URL)
        self.requests = 0  #: ranged reads sent (retries included)
        self._streams = True  # until the filesystem says it has no open_async
        self.bytes = 0  #: bytes received
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def call(self, what: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``func(*args, **kwargs)`` within the deadline: TimeoutError naming ``what``."""
        try:
            if getattr(self.fs, "async_impl", False):
                return func(*args, timeout=self.timeout, **kwargs)
            if self._pool is None:  # one thread: a stalled call is left behind, not joined
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="summarylog-fetch")
            return self._pool.submit(func, *args, **kwargs).result(self.timeout)
        except (TimeoutError, concurrent.futures.TimeoutError):
            if self._pool is not None:  # its thread may still be stuck: use a new one
                self._pool.shutdown(wait=False)
                self._pool = None
            raise deadline_error(what, self.timeout) from None

    def split(self, path: str, start: int, end: int) -> Iterator[Range]:
        """``[start, end)`` of ``path`` as ranges of at most ``chunk_bytes``; a whole
        object that fits one range is marked ``whole`` (``end``: its listed size)."""
        if start == 0 and 0 < end <= self.chunk_bytes:
            yield Range(path, 0, end, True)
            return
        for s in range(start, end, self.chunk_bytes):
            yield Range(path, s, min(end, s + self.chunk_bytes))

    def stream(self, ranges: RangeQueue, piece: Callable[[Range, bytes], None],
               done: Callable[[Range, int | BaseException], None]) -> None:
        """Fetch ``ranges`` with at most ``concurrency`` in flight: ``piece(part, bytes)``
        as the bytes of a part of a range arrive (in order within the range), then
        ``done(range, bytes received or error)``.  At most concurrency x chunk_bytes are
        held.  An async filesystem keeps the window full (a new read starts as soon as
        one ends, each under the deadline) and streams a whole object where it can
        (``open_async``: no buffer the size of the range); a synchronous one goes a batch
        at a time."""
        if not ranges:
            return
        if not getattr(self.fs, "async_impl", False):
            for batch in self.batches(iter(ranges.take, None)):
                for r, data in zip(batch, self.fetch(batch)):
                    if not isinstance(data, BaseException) and data:
                        piece(r, data)
                    done(r, data if isinstance(data, BaseException) else len(data))
            return
        from fsspec.asyn import sync

        sync(self.fs.loop, self._window, ranges, piece, done)

    async def _window(self, ranges: RangeQueue, piece: Callable[[Range, bytes], None],
                      done: Callable[[Range, int | BaseException], None]) -> None:
        import asyncio

        async def lane() -> None:  # one of `concurrency` lanes, each taking the next range
            while (r := ranges.take()) is not None:
                done(r, await self._one(r, piece))

        await asyncio.gather(*(lane() for _ in range(min(self.concurrency, len(ranges)))))

    async def _one(self, r: Range, piece: Callable[[Range, bytes], None]) -> int | BaseException:
        import asyncio

        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))
            self.requests += 1
            if r.whole and self._streams:
                try:
                    got, exc = await self._stream(r, piece)
                except NotImplementedError:  # no streamed reads here: ranged reads from now on
                    self._streams = False
                else:
                    if exc is None:
                        return got
                    # bytes already written stay (the mirror keeps the prefix); a deadline
                    # is not retried, it would multiply the deadline
                    if got or not _retryable(exc) or attempt == self.retries:
                        return exc
                    continue
            try:
                data = await asyncio.wait_for(
                    self.fs._cat_file(r.path, start=r.start, end=r.end), self.timeout)
            except (TimeoutError, asyncio.TimeoutError):  # not retried: it would multiply the deadline
                return deadline_error(self.name(r.path), self.timeout)
            except Exception as exc:
                if _retryable(exc) and attempt < self.retries:
                    continue
                return exc
            self.bytes += len(data)
            if data:
                piece(r, data)
            return len(data)
        raise AssertionError("unreachable")

    async def _stream(self, r: Range, piece: Callable[[Range, bytes], None]
                      ) -> tuple[int, BaseException | None]:
        """Object ``r.path`` from byte 0 as one streamed GET, handed on in pieces of at
        most _PIECE bytes (no buffer the size of the object): the bytes received and
        the error that ended it early.  Bytes past ``r.end`` (the object grew since it
        was listed) are read and dropped, so the connection is left clean; the next
        poll fetches them.  NotImplementedError: the filesystem cannot stream."""
        import asyncio

        pos, f = 0, None
        try:
            f = await asyncio.wait_for(self.fs.open_async(r.path, "rb"), self.timeout)
            while chunk := await asyncio.wait_for(f.read(_PIECE), self.timeout):
                self.bytes += len(chunk)
                if pos < r.end:
                    keep = chunk[: r.end - pos]
                    piece(Range(r.path, pos, pos + len(keep)), keep)
                    pos += len(keep)
            return pos, None
        except NotImplementedError:
            raise
        except (TimeoutError, asyncio.TimeoutError):
            return pos, deadline_error(self.name(r.path), self.timeout)
        except Exception as exc:
            return pos, exc
        finally:
            # an answer cut or stalled midway still holds its connection: s3fs keeps the
            # body as `r`, and its file's close() does not release it
            body = getattr(f, "r", None)
            if body is not None and callable(getattr(body, "close", None)):
                body.close()

    def batches(self, ranges: Iterable[Range]) -> Iterator[list[Range]]:
        batch: list[Range] = []
        for r in ranges:
            batch.append(r)
            if len(batch) == self.concurrency:
                yield batch
                batch = []
        if batch:
            yield batch

    def fetch(self, batch: list[Range]) -> list[bytes | BaseException]:
        """Each range's bytes (fewer when the object is shorter) or its error, after
        retries; the whole batch at once (``len(batch) <= concurrency``)."""
        out: list[bytes | BaseException] = [b""] * len(batch)
        todo = list(range(len(batch)))
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0, 0.1 * 2 ** attempt))
            self.requests += len(todo)
            try:
                got = self.call(self.name(batch[todo[0]].path), self.fs.cat_ranges,
                                [batch[i].path for i in todo], [batch[i].start for i in todo],
                                [batch[i].end for i in todo], on_error="return")
            except TimeoutError as exc:  # not retried: a stall would multiply the deadline
                for i in todo:
                    out[i] = exc
                return out
            except OSError as exc:
                got = [exc] * len(todo)
            again = []
            for i, data in zip(todo, got):
                out[i] = data
                if isinstance(data, BaseException):
                    if _retryable(data):
                        again.append(i)
                else:
                    self.bytes += len(data)
            if not (todo := again):
                break
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def _retryable(exc: BaseException) -> bool:
    """Worth another try: not a missing object, a refusal or a deadline."""
    return not isinstance(exc, (FileNotFoundError, PermissionError, TimeoutError, ValueError,
                                TypeError, NotImplementedError))
