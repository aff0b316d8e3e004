"""MindInsight's display limits, watched for a run a SummaryRecord writes.

MindInsight 2.3.1 keeps, per run (mindinsight/conf/constants.py and
datavisual/data_transform/events_data.py): 300 tags over all dashboards (a
new tag past them evicts the oldest), 10 graph tags and 6 tensor tags (the
same), and per tag the newest steps of a reservoir: 1 000 scalar steps
(sampled at random, the newest kept), 10 image steps, 50 histogram steps,
20 tensor steps, 1 graph step; a tensor of more than 10 000 000 values is not
shown (datavisual/data_transform/tensor_container.py).  Its run list holds at
most 999 summary directories (datavisual/data_transform/summary_watcher.py:
the base directory and its subdirectories, oldest first by modification
time, so the newest runs are the ones left out): :func:`check_run_listing`.  Past any of them the
data is in the files (summarylog's Reader reads it all) but MindInsight hides
part of it: :class:`DisplayLimits` warns once per kind of limit per run.

Counted on the background stage, from the values of each written step:
a dict update per value, nothing on the training thread.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

__all__ = ["MAX_RUNS", "MAX_TENSOR_VALUES", "STEPS_PER_TAG", "TAGS_PER_PLUGIN", "TOTAL_TAGS",
           "DisplayLimits", "check_run_listing"]

log = logging.getLogger("summarylog")

TOTAL_TAGS = 300  #: MAX_TAG_SIZE_PER_EVENTS_DATA
TAGS_PER_PLUGIN = {"graph": 10, "tensor": 6}  #: MAX_GRAPH_TAG_SIZE, MAX_TENSOR_TAG_SIZE
STEPS_PER_TAG = {"scalar": 1000, "image": 10, "histogram": 50, "tensor": 20}  #: reservoirs
MAX_TENSOR_VALUES = 10_000_000  #: tensor_container.MAX_TENSOR_COUNT
MAX_RUNS = 999  #: SummaryWatcher.MAX_SUMMARY_DIR_COUNT
_SUMMARY_NAME = re.compile(r"summary\.\d+")  # MindInsight's summary (and lineage) file names

_HIDES = {plugin: f"MindInsight shows only {n} steps per {plugin} tag (a random sample, "
                  f"the newest kept)" for plugin, n in STEPS_PER_TAG.items()}
_HIDES["scalar"] = "MindInsight shows a random sample of 1000 steps per scalar tag (the newest kept)"


class DisplayLimits:
    """Counts a run's tags and steps per tag; the first time a count passes
    one of MindInsight's limits, one warning on the ``summarylog`` logger
    says what MindInsight will hide (the files keep everything)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.warned: set[str] = set()  # kinds of limits passed (one warning each)
        self._steps: dict[tuple[str, str], list[int]] = {}  # (plugin, tag) -> [steps, last]
        self._tags_by_plugin: dict[str, int] = {}
        self._graphs = 0

    def count(self, step: int, values: list[tuple[str, str, Any]], graphs: int = 0) -> None:
        """A written step: its ``(plugin, tag, array)`` values and its number
        of graphs (each its own MindInsight tag once its file is new)."""
        steps = self._steps
        for plugin, tag, value in values:
            seen = steps.get((plugin, tag))
            if seen is None:
                steps[(plugin, tag)] = [1, step]
                self._new_tag(plugin, tag)
            elif seen[1] != step:  # a step recorded again replaces its value
                seen[0] += 1
                seen[1] = step
                limit = STEPS_PER_TAG.get(plugin)
                if limit is not None and seen[0] == limit + 1:
                    self._warn(f"steps:{plugin}", f"{plugin} tag {tag!r} has more than {limit} "
                               f"steps: {_HIDES[plugin]}")
            if plugin == "tensor" and getattr(value, "size", 0) > MAX_TENSOR_VALUES:
                self._warn("tensor_size", f"tensor {tag!r} has {value.size} values, more than "
                           f"{MAX_TENSOR_VALUES}: MindInsight does not show such a tensor")
        if graphs:
            self._graphs += graphs
            if self._graphs > TAGS_PER_PLUGIN["graph"]:
                self._warn("tags:graph", f"more than {TAGS_PER_PLUGIN['graph']} graphs: "
                           f"MindInsight shows at most {TAGS_PER_PLUGIN['graph']} graph tags "
                           f"per run (one per file, its newest graph) and drops the oldest")
            self._check_total("a graph")

    def _new_tag(self, plugin: str, tag: str) -> None:
        n = self._tags_by_plugin[plugin] = self._tags_by_plugin.get(plugin, 0) + 1
        limit = TAGS_PER_PLUGIN.get(plugin)
        if limit is not None and n > limit:
            self._warn(f"tags:{plugin}", f"more than {limit} {plugin} tags (the newest: "
                       f"{tag!r}): MindInsight shows {limit} {plugin} tags per run and drops "
                       f"the oldest ones")
        self._check_total(f"{tag!r}/{plugin}")

    def _check_total(self, newest: str) -> None:
        if len(self._steps) + self._graphs > TOTAL_TAGS:
            self._warn("tags", f"more than {TOTAL_TAGS} tags (the newest: {newest}): "
                       f"MindInsight shows {TOTAL_TAGS} tags per run over all its dashboards "
                       f"and drops the oldest ones")

    def _warn(self, kind: str, text: str) -> None:
        if kind not in self.warned:
            self.warned.add(kind)
            log.warning("summarylog: %s: %s (the files hold everything; summarylog's Reader "
                        "reads it all)", self.where, text)


def _holds_summaries(path: str) -> bool:
    try:
        with os.scandir(path) as it:
            return any(_SUMMARY_NAME.search(e.name) for e in it)
    except OSError:
        return False


def check_run_listing(log_dir: str) -> bool:
    """Warn (and return True) when the directory holding ``log_dir`` already
    holds :data:`MAX_RUNS` other runs: MindInsight started there lists the
    oldest 999 only, so this new run would not be listed.  One scan of that
    directory; its subdirectories are looked into only past 999 of them."""
    parent, me = os.path.split(os.path.normpath(log_dir))
    try:
        with os.scandir(parent) as it:
            dirs = [e.path for e in it if e.name != me and e.is_dir(follow_symlinks=False)]
    except OSError:
        return False
    if len(dirs) < MAX_RUNS:
        return False
    runs = 0
    for path in dirs:
        runs += _holds_summaries(path)
        if runs >= MAX_RUNS:
            log.warning("summarylog: %s: %s already holds %d runs: MindInsight started on it "
                        "lists at most %d (the oldest first), so it will not list this run "
                        "(summarylog's Reader reads them all)", log_dir, parent, MAX_RUNS,
                        MAX_RUNS)
            return True
    return False
