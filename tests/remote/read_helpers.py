"""Helpers of the read-side remote tests: runs written locally, uploaded to an
emulator, and the requests the emulator answered (its ``requests()``), counted."""

from __future__ import annotations

import os
import time
from typing import Any

import summarylog


def write_run(root: str, run: str = "run", *, ranks: tuple[int, ...] = (0,), steps: int = 50,
              files: int = 1) -> dict[int, list[float]]:
    """Per rank, ``files`` event files of ``steps`` scalars each (loss = 1000*rank + i)."""
    values: dict[int, list[float]] = {}
    for r in ranks:
        for f in range(files):
            with summarylog.Writer(os.path.join(root, run), rank=r) as w:
                for i in range(f * steps, (f + 1) * steps):
                    w.add_scalar("loss", 1000.0 * r + i, i)
                    values.setdefault(r, []).append(1000.0 * r + i)
    return values


def upload(fs: Any, local_root: str, remote: str) -> list[str]:
    """Every file under ``local_root`` put under ``remote`` (a path inside ``fs``)."""
    keys = []
    for d, _, names in os.walk(local_root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), local_root).replace(os.sep, "/")
            with open(os.path.join(d, n), "rb") as f:
                fs.pipe_file(f"{remote}/{rel}", f.read())
            keys.append(f"{remote}/{rel}")
    return keys


def counted(server: Any, since: int) -> tuple[int, int, list[tuple[str, str, int]]]:
    """(listings, object GETs, requests) the server answered after the first ``since``."""
    time.sleep(0.15)  # the server writes its request line after answering
    got = server.requests()[since:]
    lists = [r for r in got if r[0] == "GET" and ("list-type" in r[1] or "/o?" in r[1]
                                                   or r[1].endswith("/o"))]
    gets = [r for r in got if r[0] == "GET" and r not in lists]
    return len(lists), len(gets), got
