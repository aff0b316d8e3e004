"""``summarylog upload SPOOL``: send what a Writer left in its spool (a crash, or a
close() that ran out of time) to the URL the spool was made for, exactly once."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any, Sequence

__all__ = ["main", "add_arguments", "run", "parse_storage_options"]


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``["endpoint_url=http://h:9000", "client_kwargs.region_name=eu"]`` as fsspec
    options: a dotted key nests, a JSON value (number, true, {...}) is decoded."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--storage-option must be KEY=VALUE, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        *parents, leaf = key.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--storage-option {key!r}: {part!r} is already a value")
        node[leaf] = value
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spool", help="the spool directory (a Writer's spool_dir)")
    p.add_argument("--storage-option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="an fsspec option for the store (endpoint_url=..., key=...); repeat")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="give up after this many seconds (default 600); what is left stays")
    p.add_argument("--upload-timeout", type=float, default=60.0,
                   help="deadline of one upload call (s; default 60)")


def run(args: argparse.Namespace) -> int:
    """Upload the spool's leftovers: 0 when the spool is empty afterwards, 1 if not,
    2 for a bad argument (not a spool, a malformed --storage-option)."""
    try:
        return _upload(args)
    except (ValueError, TypeError) as exc:
        print(f"summarylog upload: {exc}", file=sys.stderr)
        return 2


def _upload(args: argparse.Namespace) -> int:
    from .remote.spool import Spool
    from .remote.store import Store
    from .remote.uploader import Uploader

    spool = Spool.open_existing(args.spool)
    store = Store(spool.url, parse_storage_options(args.storage_option),
                  timeout=args.upload_timeout)
    up = Uploader(store, spool, retry_wait=(0.5, 10.0))
    t0 = time.monotonic()
    up.start()
    up.recovered.wait(args.timeout)
    end = t0 + args.timeout
    while spool.segment_names() and time.monotonic() < end:
        if up.idle():  # what is left was locked (a writer closing): take it when free
            for name, lock in spool.take_leftovers():
                up.submit(name, lock)
        time.sleep(0.1)
    up.close(max(0.0, end - time.monotonic()))
    c = up.counts
    print(f"{spool.url}: {c['segments_uploaded']} segment(s) uploaded "
          f"({c['bytes_uploaded']} bytes), {c['conflicts']} conflict(s), "
          f"{len(spool.segment_names())} left in {spool.dir}")
    return 0 if not spool.segment_names() and not c["conflicts"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="summarylog upload", description=__doc__)
    add_arguments(p)
    args = p.parse_args(argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        return run(args)
    except OSError as exc:
        print(f"summarylog upload: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
