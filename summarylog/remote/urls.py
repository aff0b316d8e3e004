"""What is a URL, and the fsspec filesystem behind one.

The one place that decides whether a log directory is local or remote, and
the one place fsspec is imported from (``summarylog[remote]``: fsspec, s3fs,
gcsfs).  Local paths never reach fsspec.
"""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

__all__ = ["is_url", "check_dir_or_url", "filesystem", "for_reading", "redact",
           "RemoteUnavailable"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


class RemoteUnavailable(ImportError):
    """fsspec (or the scheme's filesystem package) is not installed."""


def is_url(path: Any) -> bool:
    """Whether ``path`` is ``scheme://...`` (``s3://``, ``gs://``, ``memory://``...)."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def redact(url: str) -> str:
    """``url`` with any ``user:password@`` dropped, for messages."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/@]*@", r"\1", url)


def check_dir_or_url(name: str, path: Any) -> str:
    """A local directory path or a URL of a directory: TypeError for anything
    else, ValueError for NUL or control characters, or a URL with nothing after
    its scheme."""
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(path, str) or not path:
        raise TypeError(f"{name} must be a non-empty str or PathLike[str], got {path!r}")
    if "\0" in path:
        raise ValueError(f"{name} must not contain NUL, got {path!r}")
    if is_url(path):
        if any(ord(c) < 32 or ord(c) == 127 for c in path):
            raise ValueError(f"{name} must not contain control characters, got {path!r}")
        rest = path.split("://", 1)[1].strip("/")
        if not rest:
            raise ValueError(f"{name} {redact(path)!r} names no bucket or directory")
    return path


def for_reading(url: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``storage_options`` for reading event files at ``url``: on S3, botocore's own
    checksum of each response is left off unless asked for, since every record carries
    a CRC32C the Reader checks: botocore would checksum every fetched byte a second time."""
    if url.split("://", 1)[0].lower() not in ("s3", "s3a"):
        return None if storage_options is None else dict(storage_options)
    opts = dict(storage_options or {})
    config = dict(opts.get("config_kwargs") or {})
    config.setdefault("response_checksum_validation", "when_required")
    opts["config_kwargs"] = config
    return opts


def filesystem(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """``(fs, path)``: the fsspec filesystem for ``url`` (with ``storage_options``:
    endpoint, credentials...) and the path inside it, without a trailing slash.
    RemoteUnavailable names the package to install when one is missing."""
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise TypeError(f"storage_options must be a mapping or None, "
                        f"got {type(storage_options).__name__}")
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("gs", "gcs"):
        # gcsfs's experimental hierarchical-namespace path breaks plain buckets and emulators
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    try:
        import fsspec
    except ImportError as exc:
        raise RemoteUnavailable(f"{redact(url)!r} needs fsspec: pip install "
                                f"'summarylog[remote]'") from exc
    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as exc:
        raise RemoteUnavailable(f"{redact(url)!r} needs the {scheme}:// filesystem package "
                                f"(pip install 'summarylog[remote]'): {exc}") from exc
    except ValueError as exc:  # an unknown protocol
        raise ValueError(f"{redact(url)!r}: {exc}") from exc
    return fs, path.rstrip("/")
