"""What a SummaryRecord takes from MindSpore when the user's program loaded it:
the values of its summary operators (``ops.ScalarSummary`` and friends inside
a Cell's ``construct``), and the check of ``record(train_network=...)``.

MindSpore is never imported here: it is looked up in ``sys.modules``, so a
program that does not use it pays one dict lookup per record.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .record_values import SUMMARY_OP_NAME

__all__ = ["check_train_network", "drop_mindspore_summary_ops", "mindspore_summary_ops",
           "take_summary_ops"]

log = logging.getLogger("summarylog")

#: MindSpore's module holding the summary operators' values: graph mode's
#: callback caches them there; PyNative mode's wait in debug_ops until
#: ``_record_summary_tensor_data`` moves them over
_MSR = "mindspore.train.summary.summary_record"


def mindspore_summary_ops() -> Mapping[str, Any] | None:
    """``{"TAG[:TYPE]": Tensor}`` of the summary operators run since the last
    call (taken: MindSpore's cache is emptied), or None when MindSpore is
    not loaded.  MindSpore's own SummaryRecord.record takes them the same way."""
    msr = sys.modules.get(_MSR)
    if msr is None:
        return None
    try:
        msr._record_summary_tensor_data()  # PyNative: move debug_ops' list over
    except Exception as exc:  # a bad operator value (MindSpore's record raises it)
        log.warning("summarylog: summary operators' values of this step dropped: %s", exc)
    try:
        return dict(msr._get_summary_tensor_data())
    except Exception as exc:  # pragma: no cover - MindSpore's internals vary by version
        log.warning("summarylog: could not take MindSpore's summary operators' values: %s", exc)
        return None


def take_summary_ops(sources: Iterable[Callable[[], Mapping[str, Any]]],
                     add_value: Callable[[str, str, Any], None]) -> None:
    """The values of the summary operators run since the last record, from
    the adapters' ``sources``, then from MindSpore when it is loaded (its
    cache is taken: a source that took it already leaves nothing), each
    ``add_value(plugin, tag, value)``; a bad 'TAG[:TYPE]' name is skipped."""
    for ops in (*(source() for source in sources), mindspore_summary_ops()):
        for full, tensor in (ops or {}).items():
            m = SUMMARY_OP_NAME.match(full) if isinstance(full, str) else None
            if m is None:
                log.warning("summarylog: the name %r is invalid, expected 'TAG[:TYPE]'.", full)
                continue
            add_value(m.group(2).lower(), m.group(1), tensor)


def drop_mindspore_summary_ops() -> None:
    """Forget the values cached before this record existed (MindSpore's
    SummaryRecord does so when it opens)."""
    msr = sys.modules.get(_MSR)
    if msr is not None:
        try:
            msr._get_summary_tensor_data()
        except Exception:  # pragma: no cover - MindSpore's internals vary by version
            pass


_NETWORK_TYPES = "['Cell', 'GraphProto', 'ModelProto', 'bytes', 'NoneType']"


def check_train_network(value: Any) -> None:
    """``record(train_network=...)`` takes a network or its graph: a MindSpore
    Cell, a graph message, its bytes, or None; anything else raises
    TypeError naming ``train_network`` (MindSpore checks for Cell or None)."""
    if value is None or isinstance(value, (bytes, bytearray)):
        return
    nn = sys.modules.get("mindspore.nn")
    cell = getattr(nn, "Cell", None) if nn is not None else None
    if cell is not None and isinstance(value, cell):
        return
    if not isinstance(value, type) and (hasattr(value, "SerializeToString")
                                        or hasattr(value, "get_func_graph_proto")):
        return  # a graph message, or a Cell-like object
    raise TypeError(f"The type of 'train_network' should be one of {_NETWORK_TYPES}, "
                    f"but got type '{type(value).__name__}'.")
