"""MindSpore lineage files into MindInsight's lineage rows.

A record's ``metric`` is JSON from the training script: it is parsed only
within :data:`MAX_METRIC_BYTES` and :data:`MAX_METRIC_DEPTH` (deep nesting
would exhaust the recursion limit); anything but a JSON object within them is
kept as ``{"_raw": text}`` and counted as a malformed value of its file.

A ``dataset_graph`` record comes back as a
:class:`~summarylog.read_dataset_graph.DatasetGraph`: the record's fields as
a dict (as before) that also has structured fields (operations with their
parameters and children, the dataset path and batch size)."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import numpy as np

from .read_dataset_graph import DatasetGraph
from .read_types import FileReport
from .records import RecordReader

__all__ = ["read_lineage", "MAX_METRIC_BYTES", "MAX_METRIC_DEPTH"]

MAX_METRIC_BYTES = 1 << 20  #: the longest metric JSON parsed (bytes)
MAX_METRIC_DEPTH = 64  #: the deepest nesting of a metric JSON parsed
_TRAIN_KEYS = {  # train lineage record part: its fields in a lineage row
    "hyper_parameters": ("optimizer", "learning_rate", "loss_function", "epoch",
                         "parallel_mode", "device_num", "batch_size"),
    "train_dataset": ("train_dataset_path", "train_dataset_size"),
    "algorithm": ("network", "loss"),
}


def _depth(text: str) -> int:
    """The deepest bracket nesting of JSON text (brackets inside strings
    included: an over-estimate that errs on the side of not parsing)."""
    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    step = (np.isin(b, (0x5B, 0x7B)).astype(np.int64) - np.isin(b, (0x5D, 0x7D)))
    return int(np.cumsum(step).max(initial=0))


def parse_metric(metric: Any) -> tuple[dict[str, Any], bool]:
    """(metric as a dict, ok); not ok: kept raw (see the module docstring)."""
    if not metric:
        return {}, True
    text = str(metric)
    if len(text) <= MAX_METRIC_BYTES and _depth(text) <= MAX_METRIC_DEPTH:
        with contextlib.suppress(ValueError, RecursionError):
            if isinstance(value := json.loads(text), dict):
                return value, True
    return {"_raw": text}, False


def read_lineage(run: str, files: list[str], verify: bool,
                 reports: dict[str, FileReport]) -> dict[str, Any]:
    """The lineage row of one run (see Reader.lineage); each file's report into reports."""
    from .dialects.mindspore import decode_lineage, user_info_dict

    row: dict[str, Any] = {"run": run, "summary_dir": os.path.dirname(files[0])}
    user: dict[str, Any] = {}
    for path in files:
        bad = bad_values = 0
        with RecordReader(path, verify=verify) as rr:
            for payload in rr:
                try:
                    member, _, fields = decode_lineage(payload)
                except Exception:
                    bad += 1
                    continue
                if member == "train_lineage":
                    for part, keys in _TRAIN_KEYS.items():
                        row.update({k: fields.get(part, {}).get(k) for k in keys})
                    model = fields.get("model", {})
                    row["model_path"] = model.get("path")
                    row["model_size"] = int(model["size"]) if "size" in model else None
                elif member == "evaluation_lineage":
                    row["metric"], ok = parse_metric(fields.get("metric"))
                    bad_values += not ok
                    vd = fields.get("valid_dataset", {})
                    row.update({k: vd.get(k) for k in ("valid_dataset_path", "valid_dataset_size")})
                elif member == "dataset_graph":  # the old dict, with structured fields
                    row["dataset_graph"] = DatasetGraph.of(fields)
                elif member == "user_defined_info":
                    user.update(user_info_dict(fields))
            reports[path] = FileReport(path, rr.records_read, [], rr.tail, bad, rr.size,
                                       bad_values)
            reports[path].set_damage(rr.damage, rr.damage_past_cap)  # capped: a ruined file's list stays small
    row["user_defined"] = user
    return row
