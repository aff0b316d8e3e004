"""Create-only writes of sealed segments to an fsspec store, and their verification.

One call, ``put_new``, writes an object only if its key is free: S3
``If-None-Match: *``, GCS ``ifGenerationMatch=0`` (multipart: the only kind the
GCS emulator checks, hence a chunksize above any segment), ``memory://``'s
exclusive open, and for local targets a temporary file linked into place (atomic,
EEXIST when taken, never a partial file).  A taken key is checked against the
segment (size, then MD5 when the store reports one): the same bytes mean an
earlier attempt of ours committed (a lost response), anything else is a conflict.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import secrets
from typing import Any, Mapping

from .urls import filesystem, redact

__all__ = ["Store", "PUT_DONE", "PUT_WAS_OURS", "PUT_CONFLICT", "TAIL_DIR"]

PUT_DONE, PUT_WAS_OURS, PUT_CONFLICT = "uploaded", "already there", "conflict"
#: live tails live under this prefix: hidden, and no "tfevents" in their names
TAIL_DIR = ".summarylog-tail"
_GiB = 1 << 30


def _md5_of(info: Mapping[str, Any]) -> str | None:
    """The hex MD5 a store reports for an object, or None (multipart ETags are not MD5s)."""
    b64 = info.get("md5Hash")
    if isinstance(b64, str):
        with contextlib.suppress(ValueError):
            return base64.b64decode(b64).hex()
    etag = info.get("ETag") or info.get("etag")
    if isinstance(etag, str):
        etag = etag.strip('"').lower()
        if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag):
            return etag
    return None


class Store:
    """The run directory ``url`` on its filesystem: segments put there create-only.

    ``timeout`` bounds each call on an async filesystem (s3fs, gcsfs: fsspec's own
    deadline, which also ends a stalled connection the libraries would wait on forever).
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None, *,
                 timeout: float = 60.0, max_object: int = 4 * _GiB) -> None:
        self.url = url
        self.shown = redact(url)
        opts = dict(storage_options or {})
        scheme = url.split("://", 1)[0].lower()
        if scheme == "s3":  # our own retry loop: the library's stay small
            cfg = dict(opts.get("config_kwargs") or {})
            cfg.setdefault("connect_timeout", min(10.0, timeout))
            cfg.setdefault("read_timeout", timeout)
            cfg.setdefault("retries", {"total_max_attempts": 2, "mode": "standard"})
            opts["config_kwargs"] = cfg
        elif scheme in ("gs", "gcs"):
            opts.setdefault("requests_timeout", min(30.0, timeout))
        self._opts = opts
        try:
            self.fs, self.path = filesystem(url, opts)
        except OSError as exc:  # e.g. HDFS without its JVM: say which URL it was for
            raise OSError(exc.errno, f"cannot open the filesystem of {self.shown!r}: "
                          f"{exc}") from exc
        if scheme == "s3":
            with contextlib.suppress(AttributeError):
                self.fs.retries = 1
        self.timeout = timeout
        self.local = "file" in _protocols(self.fs)
        self.async_fs = bool(getattr(self.fs, "async_impl", False))
        self.big_chunks = scheme in ("s3", "gs", "gcs")
        self.max_object = max_object

    def reset(self) -> None:
        """A fresh filesystem instance: calls cut at their deadline can leave the old
        client's connection pool full of stalled connections that never come back."""
        self.fs, self.path = filesystem(self.url, dict(self._opts, skip_instance_cache=True))

    def key(self, name: str) -> str:
        return f"{self.path}/{name}" if self.path else name

    def _kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.async_fs:
            kw["timeout"] = self.timeout
        if self.big_chunks:  # one request per segment (GCS: multipart, create-only honoured)
            kw["chunksize"] = self.max_object
        return kw

    # -- sealed segments ------------------------------------------------------------------
    def put_new(self, name: str, data: bytes) -> str:
        """Write ``data`` as ``name`` unless the key is taken: PUT_DONE, PUT_WAS_OURS
        (the same bytes are there) or PUT_CONFLICT (other bytes; left untouched)."""
        key = self.key(name)
        try:
            if self.local:
                self._link_new(key, data)
            else:
                self.fs.pipe_file(key, data, mode="create", **self._kwargs())
            return PUT_DONE
        except FileExistsError:
            return PUT_WAS_OURS if self.holds(name, data) else PUT_CONFLICT

    def _link_new(self, key: str, data: bytes) -> None:
        path = self.fs._strip_protocol(key) if hasattr(self.fs, "_strip_protocol") else key
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.part")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o644)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, path)  # atomic; EEXIST (FileExistsError) when taken
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def holds(self, name: str, data: bytes) -> bool:
        """Whether the object ``name`` has exactly ``data``'s size (and MD5, if known)."""
        info = self.info(name)
        if info is None or int(info.get("size") or 0) != len(data):
            return False
        md5 = _md5_of(info)
        if md5 is not None:
            return md5 == hashlib.md5(data).hexdigest()
        if self.local or not self.async_fs:  # cheap to read back whole
            return bytes(self.fs.cat_file(self.key(name))) == data
        return True  # same size, no hash given: taken as ours (names are unique per writer)

    def info(self, name: str) -> dict[str, Any] | None:
        kw = {"timeout": self.timeout} if self.async_fs else {}
        with contextlib.suppress(FileNotFoundError):
            with contextlib.suppress(TypeError):  # a filesystem that takes no refresh=
                return self.fs.info(self.key(name), refresh=True, **kw)
            return self.fs.info(self.key(name), **kw)
        return None

    # -- the live tail and the first-write check ------------------------------------------
    def put_tail(self, name: str, data: bytes) -> None:
        """Overwrite the live tail object of segment ``name``."""
        key = self.key(f"{TAIL_DIR}/{name}.tail")
        if self.local:
            path = self.fs._strip_protocol(key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{secrets.token_hex(6)}.part"
            with open(tmp, "xb") as f:
                f.write(data)
            os.replace(tmp, path)
            return
        self.fs.pipe_file(key, data, **self._kwargs())

    def drop_tail(self, name: str) -> None:
        kw = {"timeout": self.timeout} if self.async_fs else {}
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self.key(f"{TAIL_DIR}/{name}.tail"), **kw)

    def check(self) -> None:
        """Raise what the first write would meet: the bucket missing (FileNotFoundError),
        no credentials or access (PermissionError...), an unreachable endpoint."""
        if self.local:
            os.makedirs(self.fs._strip_protocol(self.key("")) or "/", exist_ok=True)
            return
        bucket = self.path.split("/", 1)[0]
        kw = {"timeout": self.timeout} if self.async_fs else {}
        if not self.big_chunks:
            return  # memory:// and friends: nothing to reach
        with contextlib.suppress(TypeError):
            self.fs.invalidate_cache(bucket)
        self.fs.info(bucket, **kw)  # FileNotFoundError naming the bucket when missing


def _protocols(fs: Any) -> tuple[str, ...]:
    p = getattr(fs, "protocol", ())
    return (p,) if isinstance(p, str) else tuple(p)
