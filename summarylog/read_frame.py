"""The Reader's long scalar DataFrame, built from concatenated numpy columns in one go
(one small DataFrame per tag made the cost grow with the number of tags, not rows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .read_types import Scalars

__all__ = ["scalars_frame", "ranked_frame", "COLUMNS"]

COLUMNS = ["run", "tag", "step", "wall_time", "value"]


def scalars_frame(pd: Any, runs: list[tuple[str, dict[str, Scalars]]],
                  tags: list[str] | None) -> Any:
    """run, tag, step, wall_time, value: runs in the given order, each run's tags sorted
    (or in ``tags`` order, missing ones skipped), each series in file order.  ``run`` and
    ``tag`` are categoricals (categories: the runs as given, the tags sorted)."""
    parts: list[Scalars] = []
    run_codes: list[int] = []
    tag_names: list[str] = []  # per part
    run_index: dict[str, int] = {}
    for run, series in runs:
        code = run_index.setdefault(run, len(run_index))
        for tag in tags if tags is not None else sorted(series):
            if (s := series.get(tag)) is not None:
                parts.append(s)
                run_codes.append(code)
                tag_names.append(tag)
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    lengths = np.fromiter((len(s.step) for s in parts), np.int64, len(parts))
    categories = sorted(set(tag_names))
    index = {t: i for i, t in enumerate(categories)}
    tag_codes = np.fromiter((index[t] for t in tag_names), np.int64, len(parts))
    codes_dtype = np.int32
    return pd.DataFrame({
        "run": pd.Categorical.from_codes(
            np.repeat(np.asarray(run_codes, codes_dtype), lengths), list(run_index)),
        "tag": pd.Categorical.from_codes(np.repeat(tag_codes.astype(codes_dtype), lengths),
                                         categories),
        "step": np.concatenate([s.step for s in parts]),
        "wall_time": np.concatenate([s.wall_time for s in parts]),
        "value": np.concatenate([s.value for s in parts]),
    }, copy=False)


def ranked_frame(pd: Any, runs: list[tuple[str, dict[str, Any]]], tags: list[str] | None) -> Any:
    """:func:`scalars_frame` of per-rank results: with ``ranks="all"`` (series that
    carry a ``rank`` array) a ``rank`` column follows ``value``."""
    frame = scalars_frame(pd, runs, tags)
    ranked = [s.rank for _, series in runs for t in (tags if tags is not None else sorted(series))
              if (s := series.get(t)) is not None and hasattr(s, "rank")]
    if ranked:
        frame["rank"] = np.concatenate(ranked)
    return frame
