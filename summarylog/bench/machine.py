"""Facts about the machine, the native core and the peers, printed above the
table and stored in the JSON, so figures can be compared between runs."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
from importlib import metadata
from typing import Any

__all__ = ["cpu_model", "filesystem_of", "machine_facts", "peer_versions", "default_tmpdir"]

_RAM_FS = {"tmpfs", "ramfs", "devtmpfs"}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def filesystem_of(path: str) -> tuple[str, str, str]:
    """(mount point, filesystem type, device) holding ``path``, from
    ``/proc/self/mounts``; ("?", "?", "?") where that is not available."""
    real = os.path.realpath(path)
    best = ("?", "?", "?")
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                dev, mnt, fstype = parts[0], parts[1].replace("\\040", " "), parts[2]
                inside = real == mnt or real.startswith(mnt.rstrip("/") + "/")
                if inside and (best[0] == "?" or len(mnt) >= len(best[0])):
                    best = (mnt, fstype, dev)
    except OSError:
        pass
    return best


def default_tmpdir() -> str:
    """Where write benches put their files: $SUMMARYLOG_BENCH_TMPDIR, else the
    system temp dir unless it lives in RAM (tmpfs), else the current dir."""
    env = os.environ.get("SUMMARYLOG_BENCH_TMPDIR")
    if env:
        return env
    tmp = tempfile.gettempdir()
    if filesystem_of(tmp)[1] in _RAM_FS:
        return os.getcwd()
    return tmp


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def peer_versions() -> dict[str, str | None]:
    """Installed versions of the peers (None: not installed); nothing is imported."""
    return {d: _version(d) for d in
            ("tensorboardX", "tensorboard", "crc32c", "google-crc32c", "protobuf", "numpy")}


def machine_facts(tmpdir: str) -> dict[str, Any]:
    import summarylog

    mnt, fstype, dev = filesystem_of(tmpdir)
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 0
    return {
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_impl": platform.python_implementation(),
        "summarylog": summarylog.__version__,
        "native_info": summarylog.native_info(),
        "peers": peer_versions(),
        "tmpdir": tmpdir,
        "tmpdir_fs": {"mount": mnt, "type": fstype, "device": dev},
        "tmpdir_in_ram": fstype in _RAM_FS,
        "loadavg_1m": _loadavg(),
    }


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
