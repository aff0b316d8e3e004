"""Following live runs: yield events as writers append, new files included."""

from __future__ import annotations

import time
from typing import Callable, Iterator

from .discovery import Discovery, natural_key
from .events import Event
from .read_events import EventDecoder
from .records import RecordReader

__all__ = ["follow"]


def follow(discover: Callable[[], Discovery], verify: bool, run: str | None,
           poll_secs: float, idle_timeout: float | None,
           from_end: bool) -> Iterator[tuple[str, Event]]:
    """See Reader.follow."""
    readers: dict[str, tuple[str, RecordReader, EventDecoder]] = {}
    plugins: dict[str, dict[str, str]] = {}

    def add(r: str, path: str) -> tuple[str, RecordReader, EventDecoder]:
        try:
            rr = RecordReader(path, verify=verify)
        except OSError:
            return readers.get(path)  # type: ignore[return-value]  # vanished or not a file
        readers[path] = (r, rr, EventDecoder(path, plugins.setdefault(r, {})))
        return readers[path]

    last = time.monotonic()
    if from_end:
        for r, files in discover().runs.items():
            for path in files:
                if (run is None or r == run) and add(r, path):
                    _, rr, dec = readers[path]
                    for payload in rr:  # remember each tag's plugin on the way
                        dec.decode(payload)
    try:
        while True:
            got = False
            for r, files in sorted(discover().runs.items()):
                if run is not None and r != run:
                    continue
                for path in files:
                    if path not in readers:
                        add(r, path)
            for path in sorted(readers, key=natural_key):
                r, rr, dec = readers[path]
                for payload in rr:
                    got = True
                    for ev in dec.decode(payload):
                        yield r, ev
            now = time.monotonic()
            if got:
                last = now
            elif idle_timeout is not None and now - last >= idle_timeout:
                return
            time.sleep(poll_secs)
    finally:
        for _, rr, _ in readers.values():
            rr.close()
