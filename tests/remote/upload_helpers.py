"""What the write-side remote tests share: read back what a bucket holds."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from summarylog.records import RecordReader
from summarylog.remote.store import TAIL_DIR
from summarylog.remote.urls import filesystem


def segment_objects(url: str, options: dict[str, Any] | None) -> dict[str, bytes]:
    """{file name: bytes} of the sealed segments under ``url`` (tails left out)."""
    fs, path = filesystem(url, options)
    fs.invalidate_cache()
    out = {}
    # detail: a listing racing the first upload can name the prefix itself, a directory
    for key, info in sorted(fs.find(path, detail=True).items()):
        rel = key[len(path):].lstrip("/")
        if info.get("type") != "file" or not rel or rel.startswith(TAIL_DIR) or "/" in rel:
            continue
        out[rel] = bytes(fs.cat_file(key))
    return out


def scalar_steps(objects: dict[str, bytes], tag: str = "loss") -> list[int]:
    """Every ``tag`` step the objects hold, in file order (duplicates kept)."""
    from summarylog import Reader

    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run")
        os.mkdir(run)
        for name, data in objects.items():
            with open(os.path.join(run, name), "wb") as f:
                f.write(data)
        steps: list[int] = []
        for name in sorted(objects):  # one file at a time: no merging hides a duplicate
            sub = os.path.join(d, "one")
            os.makedirs(sub, exist_ok=True)
            for old in os.listdir(sub):
                os.unlink(os.path.join(sub, old))
            os.link(os.path.join(run, name), os.path.join(sub, name))
            r = Reader(sub)
            if tag in r.scalar_tags("."):
                steps += r.scalars(".", tag).step.tolist()
    return steps


def record_count(data: bytes) -> int:
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        with RecordReader(f.name) as rr:
            return sum(1 for _ in rr.read())
