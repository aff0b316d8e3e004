"""Where a SummaryRecord's recorded steps go, on the background stage.

A recorded step is a pool of values by plugin.  :class:`StepBuilder` runs
its ``add_later()`` builders, checks what they made and reads every value
to numpy; a sink then encodes the step in its dialect:

- :class:`MindSporeSink`: one summary Event per step, lineage to the
  ``_lineage`` file (summarylog.files.MindSporeFiles);
- :class:`TensorBoardSink`: the step's values as TensorBoard events in the
  record's Writer, histograms of the steps of one drain binned in one
  native call, lineage folded into the run's hparams at the end.

Both run inside the Writer-style pipeline's drain (summarylog.pipeline), so
they write at once, in order, never through the queue again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from google.protobuf import json_format

from .dialects.base import DialectEncoder
from .dialects.mindspore import user_info_dict
from .pipeline import BATCH
from .record_values import (BORROWED_MAX, LANDSCAPE, LATER, LINEAGE_PLUGINS, SUMMARY_PLUGINS,
                            check_summary_tag, export_name, real_subdir, resolve,
                            summary_value)
from .records import MAX_PAYLOAD

__all__ = ["StepBuilder", "MindSporeSink", "TensorBoardSink", "StepWriteError", "MAX_RECORD"]

log = logging.getLogger("summarylog")

Pool = dict[str, list[tuple[str, Any]]]
Filter = Callable[[str], bool] | None

#: the largest record a step may write: protobuf's message limit, which the
#: native writer enforces too (a module attribute: tests lower it)
MAX_RECORD = MAX_PAYLOAD


class StepWriteError(ValueError):
    """Part of a recorded step could not be written: a record over
    :data:`MAX_RECORD`, or a value its encoder refused.  That part is lost;
    the step's other records and later steps are written."""

    def __init__(self, step: int, lost: list[str]) -> None:
        self.step, self.lost = step, list(lost)
        super().__init__(f"step {step}: lost " + "; ".join(self.lost))


def encode_values(enc: DialectEncoder, wall: float, step: int,
                  values: list[tuple[str, str, Any]], lost: list[str]) -> list[bytes]:
    """``enc.summary`` of a step's values; when it fails, the values it
    refuses are found one by one and dropped (named in ``lost``)."""
    try:
        return enc.summary(wall, step, values)
    except OSError:
        raise
    except Exception:
        pass
    kept = []
    for value in values:
        try:
            enc.summary(wall, step, [value])
        except OSError:
            raise
        except Exception as exc:
            lost.append(f"the {value[0]} {value[1]!r} (refused by the encoder: "
                        f"{type(exc).__name__}: {exc})")
            continue
        kept.append(value)
    return enc.summary(wall, step, kept) if kept else []


def check_record(payload: Any, what: str) -> None:
    """A record over :data:`MAX_RECORD` raises ValueError, before any write."""
    if len(payload) > MAX_RECORD:
        raise ValueError(f"{what} is {len(payload)} bytes, over the {MAX_RECORD} bytes a "
                         f"record may hold (2 GiB - 1, protobuf's message limit)")


class StepBuilder:
    """Builds, checks and reads a recorded step's values (background thread)."""

    def __init__(self, export_dir: Callable[[], str] | None) -> None:
        self._export_dir = export_dir

    def build_later(self, step: int, pool: Pool, plugin_filter: Filter) -> None:
        """Run the step's add_later() builders into ``pool``."""
        for build, _, on_error, owned in pool.pop(LATER, []):
            report = on_error or (lambda p, t, e: log.warning(
                "summarylog: dropped the %s %r of step %d: %s", p, t, step, e))
            try:
                values = list(build())
            except Exception as exc:
                report("", "", exc)
                continue
            taken = {(p, t) for p in SUMMARY_PLUGINS for t, _ in pool.get(p, ())}
            for plugin, tag, value in values:
                if plugin_filter is not None and not plugin_filter(plugin):
                    continue
                try:
                    if plugin not in SUMMARY_PLUGINS:
                        raise ValueError(f"add_later() takes summary plugins only "
                                         f"({', '.join(SUMMARY_PLUGINS)}), got {plugin!r}")
                    check_summary_tag(tag)
                    item = summary_value(plugin, value, copy=not owned)
                except Exception as exc:
                    report(plugin, tag, exc)
                    continue
                if (plugin, tag) in taken:  # add_value()'s, or an earlier one, wins
                    log.warning("summarylog: %r has duplicate values. Only the newest one "
                                "will be recorded.", f"{tag}/{plugin}")
                    continue
                taken.add((plugin, tag))
                pool.setdefault(plugin, []).append((tag, item))

    def build(self, step: int, pool: Pool, plugin_filter: Filter) -> Pool:
        """The step's values, read to numpy (one that can't be read is dropped
        alone), tensors exported when asked."""
        if LATER in pool:
            self.build_later(step, pool, plugin_filter)
        resolved: Pool = dict(pool)
        for plugin in SUMMARY_PLUGINS:
            out = []
            for tag, snap in pool.get(plugin, []):
                try:
                    out.append((tag, resolve(plugin, snap)))
                except Exception as exc:
                    log.warning("summarylog: dropped the %s %r of step %d: %s", plugin, tag,
                                step, exc)
            resolved[plugin] = out
        if self._export_dir is not None:
            self._export(step, resolved.get("tensor", []))
        return resolved

    def _export(self, step: int, tensors: list[tuple[str, Any]]) -> None:
        """Each tensor to ``<export dir>/<tag>_<step>.npy``, read-only as
        MindSpore leaves it; a step recorded again replaces its files (the
        newest value wins).  Written to a fresh temporary name and renamed,
        so a planted symlink is replaced, never followed."""
        if not tensors:
            return
        assert self._export_dir is not None
        d = self._export_dir()
        for tag, arr in tensors:
            fd, tmp = tempfile.mkstemp(prefix=".export-", suffix=".npy.tmp", dir=d)
            try:
                with os.fdopen(fd, "wb") as f:
                    np.save(f, arr)
                    os.fchmod(f.fileno(), 0o400)
                os.replace(tmp, os.path.join(d, export_name(tag, step)))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise


def export_dir(base: str, names: Any) -> Callable[[], str]:
    """``base/export_<sec>/tensor`` of the current file pair, made safely."""
    return lambda: real_subdir(base, f"export_{names.sec if names is not None else 0}", "tensor")


class MindSporeSink:
    holds_scalars = False  # (each step is written whole, at once)

    def __init__(self, files: Any, encoder: DialectEncoder, builder: StepBuilder,
                 limits: Any = None) -> None:
        self.files, self.enc, self.builder = files, encoder, builder
        self.limits = limits  # MindInsight's display limits (summarylog.record_limits)
        self.last_step = 0

    def write_step(self, step: int, wall: float, pool: Pool, plugin_filter: Filter) -> None:
        """Each record of the step on its own: one that can't be made or is
        too large is lost alone (StepWriteError, raised after the others
        were written); an I/O error (OSError) is raised at once."""
        pool = self.builder.build(step, pool, plugin_filter)
        enc, lost = self.enc, []
        values = [(plugin, tag, arr) for plugin in (*SUMMARY_PLUGINS, LANDSCAPE)
                  for tag, arr in pool.get(plugin, [])]
        if self.limits is not None:
            self.limits.count(step, values, len(pool.get("graph", ())))
        for _, graph in pool.get("graph", []):
            self._write(lambda g=graph: [enc.graph(wall, g, step)], "the graph event", lost)
        if values:
            self.last_step = max(self.last_step, step)
            self._write(lambda: encode_values(enc, wall, step, values, lost),
                        "the summary event", lost)
        for plugin in LINEAGE_PLUGINS:
            for _, message in pool.get(plugin, []):
                self._write(lambda p=plugin, m=message: [enc.lineage(wall, p, m)],
                            f"the {plugin} record", lost, lineage=True)
        if lost:
            raise StepWriteError(step, lost)

    def _write(self, make: Callable[[], list[bytes]], what: str, lost: list[str],
               lineage: bool = False) -> None:
        try:
            payloads = make()
            for payload in payloads:
                check_record(payload, what)
        except OSError:
            raise
        except Exception as exc:
            lost.append(str(exc) if str(exc).startswith(what) else f"{what} ({exc})")
            return
        for payload in payloads:
            self.files.write(payload, lineage=lineage)

    def drained(self, final: bool = True) -> None:
        pass

    def finish(self) -> None:
        pass


class TensorBoardSink:
    """A recorded step as TensorBoard events in ``writer`` (from inside its
    pipeline's drain: written at once)."""

    def __init__(self, writer: Any, builder: StepBuilder, hold_bytes: int) -> None:
        self.w, self.builder = writer, builder
        self.pipe = writer.pipeline
        self._hold_bytes = hold_bytes
        self._hists: list[tuple[float, int, str, np.ndarray, int]] = []
        self._scalars: list[bytes] = []  # packed scalar events held back (see drained)
        self._scalars_since = 0.0
        self._hist_bytes = self._hist_borrowed = 0
        self.last_step = 0
        self.lineage_hparams: dict[str, Any] = {}
        self.lineage_metrics: dict[str, float] = {}

    def write_step(self, step: int, wall: float, pool: Pool, plugin_filter: Filter) -> None:
        pool = self.builder.build(step, pool, plugin_filter)
        if any(pool.get(p) for p in (*SUMMARY_PLUGINS, LANDSCAPE)):
            self.last_step = max(self.last_step, step)
        pipe, enc = self.pipe, self.pipe.encoder
        scalars = pool.get("scalar", [])
        if scalars:  # scalars and histograms: batched, encoded natively
            if not self._scalars:
                self._scalars_since = time.monotonic()
            self._scalars.append(pipe.scalar_record([t for t, _ in scalars], step, wall,
                                                    [float(a) for _, a in scalars]))
        for tag, arr in pool.get("histogram", []):  # the arrays are ours alone
            self._hold(wall, step, tag, arr)
        rest = [(p, tag, v) for p in ("image", "tensor", LANDSCAPE) for tag, v in pool.get(p, ())]
        lost: list[str] = []
        # (a payload over the record limit is dropped alone, counted, by write_payload)
        for payload in encode_values(enc, wall, step, rest, lost) if rest else ():
            pipe.write_payload(payload)
        for _, graph_def in pool.get("graph", []):
            pipe.write_payload(enc.graph(wall, graph_def))
        for plugin in LINEAGE_PLUGINS:
            for _, message in pool.get(plugin, []):
                self._lineage(plugin, message)
        self._write_past_limits()
        if lost:
            raise StepWriteError(step, lost)

    def _hold(self, wall: float, step: int, tag: str, arr: np.ndarray) -> None:
        """Keep a histogram for :meth:`drained`: those of all the steps of one
        drain go out in one native call (bins=0: MindSpore's bucket rule)."""
        self._hists.append((wall, step, tag, arr, 0))
        self._hist_bytes += arr.nbytes
        if not arr.flags.owndata:
            self._hist_borrowed += arr.nbytes

    def _write_past_limits(self) -> None:
        """Held histograms go out early when they pile up, or when they view
        a framework's memory (JAX arrays on the CPU), which its allocator
        can't reuse while they are held."""
        if self._hist_bytes >= self._hold_bytes or self._hist_borrowed >= BORROWED_MAX:
            self._write_histograms()

    @property
    def holds_scalars(self) -> bool:
        return bool(self._scalars)

    def drained(self, final: bool = True) -> None:
        """Write the histograms the drain's steps left, in one native call.  Their
        scalar events wait, so that many drains' go out in one native call (one a
        drain was the JAX collector's largest cost): until ``final``, BATCH of
        them, or half of flush_secs."""
        self._write_histograms()
        if self._scalars and (final or len(self._scalars) >= BATCH or time.monotonic()
                              - self._scalars_since >= self.pipe.flush_secs / 2):
            scalars, self._scalars = self._scalars, []
            self.pipe.write_scalar_records(scalars)

    def _write_histograms(self) -> None:
        hists, self._hists = self._hists, []
        self._hist_bytes = self._hist_borrowed = 0
        if hists:
            self.pipe.write_histograms(hists)

    def _lineage(self, plugin: str, message: Any) -> None:
        """Lineage becomes the run's hparams (and eval metrics), written at the end."""
        fields = json_format.MessageToDict(message, preserving_proto_field_name=True)
        if plugin == "train_lineage":
            for group in fields.values():
                if isinstance(group, dict):
                    self.lineage_hparams.update(
                        {k: v for k, v in group.items() if not isinstance(v, (dict, list))})
        elif plugin == "eval_lineage":
            try:
                metrics = json.loads(fields.get("metric") or "{}")
            except (ValueError, RecursionError):
                metrics = {}
            if not isinstance(metrics, Mapping):  # a list, a number: no named metrics
                metrics = {}
            self.lineage_metrics.update(
                {f"eval/{k}": float(v) for k, v in metrics.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)
                 and math.isfinite(float(v))})
        elif plugin == "custom_lineage_data":
            self.lineage_hparams.update(user_info_dict(fields))

    def finish(self) -> None:
        """The lineage as the run's hparams (from the caller's thread, before
        the writer closes)."""
        hp = {k: (v if isinstance(v, (bool, int, float, str)) else str(v))
              for k, v in self.lineage_hparams.items()}
        if hp:
            self.w.add_hparams(hp, self.lineage_metrics, step=self.last_step)
        elif self.lineage_metrics:  # eval only: the metrics as the run's scalars
            self.w.log(self.lineage_metrics, step=self.last_step)
