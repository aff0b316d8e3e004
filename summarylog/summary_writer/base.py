"""What every SummaryWriter method stands on: the run directory named as the peers name
it, the summarylog.Writer behind it (reopened after close, as the peers reopen a file),
sub-runs, and the step and wall time a call records (``use_metadata`` defaults)."""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
from typing import Any, Iterator

from ..checks import check_flush_secs, check_step, check_walltime
from ..files import check_local_dir, check_suffix, host_name
from ..remote.urls import check_dir_or_url, is_url
from ..writer import Writer

__all__ = ["SummaryWriterBase"]

#: summarylog's writer hands events to the OS at least this often, whatever flush_secs says
FLUSH_CAP_SECS = 1.0


class _Discard:
    """The writer of ``write_to_disk=False``: every call is accepted and dropped."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def default_log_dir(comment: str = "") -> str:
    """``runs/<Mon><DD>_<HH-MM-SS>_<host><comment>``, as torch and tensorboardX name it."""
    now = datetime.datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{now}_{host_name()}{comment}")


def check_sub_run(name: Any, what: str) -> str:
    """A sub-run directory name: relative, inside the run (no ``..`` component)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"{what} must be a non-empty str, got {name!r}")
    if "\0" in name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise ValueError(f"{what} must be a relative path inside the run, got {name!r}")
    return name


class SummaryWriterBase:
    """The constructor and plumbing of :class:`summarylog.SummaryWriter`."""

    def __init__(self, log_dir: str | os.PathLike[str] | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = "",
                 write_to_disk: bool = True, *, logdir: str | os.PathLike[str] | None = None,
                 comet_config: dict[str, Any] | None = None, **writer_options: Any) -> None:
        if log_dir is not None and logdir is not None and os.fspath(log_dir) != os.fspath(logdir):
            raise ValueError(f"log_dir and logdir name different directories: "
                             f"{log_dir!r} and {logdir!r}")
        if not isinstance(comment, str):
            raise TypeError(f"comment must be a str, got {type(comment).__name__}")
        path = log_dir if log_dir is not None else logdir
        path = path if path is not None else default_log_dir(comment)
        self.remote = is_url(path)  # s3://, gs://...: the Writers spool and upload
        self.log_dir = (check_dir_or_url("log_dir", path).rstrip("/") if self.remote
                        else check_local_dir("log_dir", path))
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError(f"max_queue must be a positive int, got {max_queue!r}")
        self.max_queue = max_queue  # accepted for the peers: summarylog's queue is bounded by bytes
        if comet_config is not None and not comet_config.get("disabled", True):
            raise ValueError("comet_config: summarylog does not log to Comet; pass "
                             "comet_config=None or {'disabled': True}")
        for bad in ("logdir", "flush_secs", "filename_suffix", "purge_step"):
            if bad in writer_options:
                raise TypeError(f"SummaryWriter got {bad!r} twice")
        self._purge_step = None if purge_step is None else check_step(purge_step)
        # flush_secs keeps the peers' meaning, an upper bound on how long an event
        # waits; summarylog hands events to the OS within FLUSH_CAP_SECS regardless
        self._options = dict(writer_options, filename_suffix=check_suffix(
            "filename_suffix", filename_suffix),
            flush_secs=min(check_flush_secs(flush_secs), FLUSH_CAP_SECS))
        self.write_to_disk = bool(write_to_disk)
        self._lock = threading.Lock()
        self._w: Writer | None = None
        self._runs: dict[str, Writer] = {}
        self._closed_run_files: dict[str, list[str]] = {}  # sub-runs' files of closed writers
        self._exported: dict[str, int] = {}  # export_scalars_to_json: rows already exported
        self._defaults: dict[str, Any] = {}
        if self.write_to_disk and not self.remote:  # the peers make the directory now
            os.makedirs(self.log_dir, exist_ok=True)

    # -- the writer behind -----------------------------------------------------------------
    def _open(self) -> Writer:
        with self._lock:
            if self._w is None:
                self._w = Writer(self.log_dir, purge_step=self._purge_step, **self._options)
                self._purge_step = None  # the peers write the purge marker once
            return self._w

    @property
    def writer(self) -> Writer:
        """The summarylog.Writer of the run (opened again after :meth:`close`, as the
        peers reopen a file); with ``write_to_disk=False`` one that drops everything."""
        if not self.write_to_disk:
            return _Discard()  # type: ignore[return-value]
        return self._w or self._open()

    def sub_run_dir(self, name: str, what: str) -> str:
        """``<log_dir>/<name>``, refused (ValueError naming ``what``) when it would leave
        the run: an absolute name, a ``..`` component, or a symbolic link on the way."""
        if self.remote:
            return f"{self.log_dir}/{check_sub_run(name, what).replace(chr(92), '/')}"
        path = self.log_dir
        for part in check_sub_run(name, what).replace("\\", "/").split("/"):
            path = os.path.join(path, part)
            if os.path.islink(path):
                raise ValueError(f"{what} {name!r}: {path!r} is a symbolic link; a sub-run "
                                 f"must be a directory inside the run")
        return os.path.join(self.log_dir, name)

    def sub_writer(self, name: str) -> Writer:
        """The Writer of the sub-run ``<log_dir>/<name>`` (kept open until close())."""
        if not self.write_to_disk:
            return _Discard()  # type: ignore[return-value]
        with self._lock:
            w = self._runs.get(name)
            if w is None:
                sub = self.sub_run_dir(name, "sub-run name")
                opts = {k: v for k, v in self._options.items() if k != "filename_suffix"}
                if opts.get("spool_dir") is not None:  # one spool per URL: the sub-run's own
                    opts["spool_dir"] = os.path.join(os.fspath(opts["spool_dir"]), "runs", name)
                w = self._runs[name] = Writer(sub, filename_suffix=self._options["filename_suffix"],
                                              **opts)
            return w

    def sub_run_files(self) -> dict[str, list[str]]:
        """Each sub-run's files written by this SummaryWriter, oldest first."""
        with self._lock:
            out = {k: list(v) for k, v in self._closed_run_files.items()}
            for name, w in self._runs.items():
                out.setdefault(name, []).extend(w.files)
        return out

    def writer_options(self) -> dict[str, Any]:
        """The keyword arguments each summarylog.Writer of this run is made with."""
        return dict(self._options)

    def at(self, global_step: Any, walltime: Any) -> tuple[int, float]:
        """The step and wall time of a call (``use_metadata`` fills in what is None)."""
        if self._defaults:
            if global_step is None:
                global_step = self._defaults.get("global_step")
            if walltime is None:
                walltime = self._defaults.get("walltime")
        return check_step(global_step, "global_step"), check_walltime(walltime)

    @contextlib.contextmanager
    def use_metadata(self, *, global_step: int | None = None,
                     walltime: float | None = None) -> Iterator["SummaryWriterBase"]:
        """Within the block, calls without ``global_step``/``walltime`` record these
        (tensorboardX)."""
        saved = self._defaults
        self._defaults = {k: v for k, v in (("global_step", global_step),
                                            ("walltime", walltime)) if v is not None}
        if global_step is not None:
            check_step(global_step)
        if walltime is not None:
            check_walltime(walltime)
        try:
            yield self
        finally:
            self._defaults = saved

    # -- the peers' file management ----------------------------------------------------------
    def get_logdir(self) -> str:
        """The run directory."""
        return self.log_dir

    @property
    def logdir(self) -> str:
        """The run directory (tensorboardX's name for it)."""
        return self.log_dir

    def flush(self) -> None:
        """Return when everything logged so far reached the OS (the disk, with fsync)."""
        for w in self._open_writers():
            w.flush()

    def close(self) -> None:
        """Flush and close every file of the run.  Logging again opens new files."""
        with self._lock:
            for name, w in self._runs.items():
                self._closed_run_files.setdefault(name, []).extend(w.files)
            writers, self._w, self._runs = self._open_writers(), None, {}
        for w in writers:
            w.close()

    def _open_writers(self) -> list[Writer]:
        return ([self._w] if self._w is not None else []) + list(self._runs.values())

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<summarylog.SummaryWriter {self.log_dir!r}>"
