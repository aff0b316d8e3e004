"""What every framework's SummaryCollector shares: MindSpore's arguments and
their checks, the collector core over one SummaryRecord, the values that
``summary()`` calls hand in between collections, and open/flush/close."""

from __future__ import annotations

import threading
from typing import Any, Mapping

from ..collector import CollectionPolicy, CollectorCore

__all__ = ["CollectorBase", "op_key"]

_KINDS = {"scalar": "Scalar", "image": "Image", "tensor": "Tensor", "histogram": "Histogram"}


def op_key(tag: Any, kind: Any) -> str:
    """The ``TAG[:Kind]`` name of a ``summary()`` value, as MindSpore's summary
    operators name theirs (bad ``kind``: ValueError; bad ``tag``: TypeError)."""
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if not isinstance(tag, str) or not tag:
        raise TypeError(f"tag must be a non-empty str, got {tag!r}")
    return f"{tag}[:{_KINDS[kind]}]"


class CollectorBase:
    """A collector over :class:`CollectorCore`, once opened with :meth:`_open`.

    Subclasses give ``_active`` (their framework's open collectors, newest
    last: ``summary()`` feeds the newest) and may give :meth:`_train_lineage`
    (written at close)."""

    _active: list["CollectorBase"]
    _active_lock = threading.Lock()

    def __init__(self, policy: CollectionPolicy) -> None:
        self.policy = policy
        self.core: CollectorCore | None = None
        self._ops: dict[str, Any] = {}
        self._closed = False

    def _open(self, **core_args: Any) -> CollectorCore:
        core = self.core = CollectorCore(self.policy, **core_args)
        core.record.summary_op_sources.append(self._take_ops)
        return core

    def _register(self) -> None:
        """From now on ``summary()`` feeds this collector (until close)."""
        with self._active_lock:
            self._active.append(self)

    # -- summary() values --------------------------------------------------------------
    @classmethod
    def feed(cls, key: str, value: Any) -> None:
        """A summary() value (``TAG[:Kind]``) for the newest open collector's next collection."""
        with cls._active_lock:
            if cls._active:
                cls._active[-1]._ops[key] = value

    @property
    def has_pending_ops(self) -> bool:
        """summary() values wait for the next collection."""
        return bool(self._ops)

    def _take_ops(self) -> Mapping[str, Any]:
        if not self._ops:  # the common case, without the lock
            return {}
        with self._active_lock:
            ops, self._ops = self._ops, {}
        return ops

    # -- open, flush, close ----------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("step() on a closed SummaryCollector")

    def _train_lineage(self) -> dict[str, Any] | None:
        """The train lineage written at close (None: none)."""
        return None

    def flush(self) -> None:
        if self.core is not None:
            self.core.flush()

    def close(self) -> None:
        """Write the train lineage and close the files.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._active_lock:
            if self in self._active:
                self._active.remove(self)
        if self.core is None:
            return
        try:
            lineage = self._train_lineage()
            if lineage is not None:
                self.core.train_end(lineage)
        finally:
            self.core.close()

    @property
    def files(self) -> list[str]:
        return self.core.record.files if self.core is not None else []

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
