"""SummaryWriter's add_histogram, add_histogram_raw, add_pr_curve, add_pr_curve_raw,
add_custom_scalars (+ _marginchart, _multilinechart), add_mesh, add_hparams, add_tensor,
and add_scalar's new_style / double_precision / display_name forms: checked and copied
on the caller's thread, encoded by :mod:`summarylog.dialects.tb_plugins` on the writer's."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping

import numpy as np

from ..checks import check_tag
from ..dialects import tb_plugins as tbp
from ..dialects.tb_bins import MAX_BINS
from ..values import Deferred, resolve_array, resolve_scalar, snapshot_scalar
from ..writer import Writer
from .base import SummaryWriterBase, check_sub_run
from .plugin_checks import (check_bins, check_count, check_max_bins, check_tags,
                            json_config, layout_charts, numeric_array, real_number,
                            small_vector)

__all__ = ["PluginMethods"]

log = logging.getLogger("summarylog")

_capped_tags: set[str] = set()
_capped_lock = threading.Lock()


def _say_capped(tag: str, bins: str) -> Any:
    def report(asked: int, kept: int) -> None:
        with _capped_lock:
            if tag in _capped_tags:
                return
            _capped_tags.add(tag)
        log.warning("summarylog: add_histogram(%r, bins=%r): the rule asked for %d buckets; "
                    "merged into %d (max %d: set max_bins or an int bins to choose)",
                    tag, bins, asked, kept, MAX_BINS)
    return report


def _histogram(wall: float, step: int, tag: str, values: Any, bins: Any,
               max_bins: int | None) -> list[bytes]:
    on_cap = _say_capped(tag, bins) if isinstance(bins, str) else None
    return [tbp.histogram_event(wall, step, tag, resolve_array(values), bins, max_bins, on_cap)]


def _pr_curve(wall: float, step: int, tag: str, labels: Any, predictions: Any,
              num_thresholds: int, weights: Any) -> list[bytes]:
    # each in its own dtype, as the peers take them: a float32 prediction's bucket is
    # floor of a float32 product
    lab = np.ravel(resolve_array(labels))
    pred = np.ravel(resolve_array(predictions))
    w = weights if weights is None or isinstance(weights, float) else np.ravel(
        resolve_array(weights))
    return [tbp.pr_curve_event(wall, step, tag, lab, pred, num_thresholds, w)]


def _scalar(wall: float, step: int, tag: str, value: Any, *form: Any) -> list[bytes]:
    v = resolve_scalar(value) if isinstance(value, Deferred) else value
    return [tbp.scalar_event(wall, step, tag, v, *form)]


def _resolved(encode: Any, *head: Any) -> Any:
    """An encoder of ``encode(*head, arrays...)`` that first reads Deferred arrays."""
    def run(*arrays: Any) -> list[bytes]:
        return [encode(*head, *(resolve_array(a) for a in arrays))]
    return run


class PluginMethods(SummaryWriterBase):
    """add_histogram, add_histogram_raw, add_pr_curve, add_pr_curve_raw, add_custom_scalars
    (+ _marginchart, _multilinechart), add_mesh, add_hparams, add_tensor, and add_scalar's
    new_style / double_precision / display_name forms (the peers' signatures)."""

    # -- histograms ---------------------------------------------------------------------------
    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Log a histogram of ``values`` (any shape; numpy, list or a tensor on any
        device, read on the background thread) binned as the peers bin:
        ``bins='tensorflow'`` their exponential edges (±1e-12·1.1^k, and 0), an int
        (equal width over the range), numpy's rules (``'auto'``, ``'fd'``, ``'doane'``,
        ``'scott'``, ``'stone'``, ``'rice'``, ``'sturges'``, ``'sqrt'``) or edges;
        ``max_bins`` merges buckets as they merge them.  A rule asking for more than
        65 536 buckets is merged down to that many (logged once per tag).  Non-finite
        values, which the peers refuse with an int or a rule, are left out of those."""
        check_tag(tag)
        bins = check_bins(bins)
        max_bins = check_max_bins(max_bins)
        snap, _, nbytes = numeric_array(values, "values")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_histogram, wall, step, tag, snap, bins, max_bins, nbytes=nbytes)

    def add_histogram_raw(self, tag: str, min: Any, max: Any, num: Any, sum: Any,
                          sum_squares: Any, bucket_limits: Any, bucket_counts: Any,
                          global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Log a histogram already binned: statistics and buckets (right edges
        ``bucket_limits`` and their ``bucket_counts``, as many, at least one)."""
        check_tag(tag)
        stats = [real_number(v, n) for v, n in ((min, "min"), (max, "max"), (num, "num"),
                                                (sum, "sum"), (sum_squares, "sum_squares"))]
        limits = small_vector(bucket_limits, "bucket_limits")
        counts = small_vector(bucket_counts, "bucket_counts")
        if len(limits) != len(counts):
            raise ValueError(f"bucket_limits and bucket_counts must be as long, got "
                             f"{len(limits)} and {len(counts)}")
        if not len(limits):
            raise ValueError("bucket_limits and bucket_counts must not be empty")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_resolved(tbp.histogram_raw_event, wall, step, tag, stats),
                           limits, counts)

    # -- pr curves ----------------------------------------------------------------------------
    def add_pr_curve(self, tag: str, labels: Any, predictions: Any,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Any = None, walltime: float | None = None) -> None:
        """Log a precision-recall curve of ``labels`` (true/false, any shape) and
        ``predictions`` (probabilities in [0, 1], as many), computed on the background
        thread as the peers compute it (``num_thresholds`` above 127 written as 127)."""
        check_tag(tag)
        num_thresholds = check_count(num_thresholds, "num_thresholds")
        lab, lshape, lbytes = numeric_array(labels, "labels")
        pred, pshape, pbytes = numeric_array(predictions, "predictions")
        n = int(np.prod(pshape))
        if int(np.prod(lshape)) != n:
            raise ValueError(f"labels and predictions must have as many elements, got "
                             f"shapes {lshape} and {pshape}")
        w: Any = None
        if weights is not None:
            if isinstance(weights, (int, float)) and not isinstance(weights, bool):
                w = float(weights)
            else:
                w, wshape, _ = numeric_array(weights, "weights")
                if int(np.prod(wshape)) not in (1, n):
                    raise ValueError(f"weights must be one number or one per prediction, "
                                     f"got shape {wshape} for {n} predictions")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_pr_curve, wall, step, tag, lab, pred, num_thresholds, w,
                           nbytes=lbytes + pbytes)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any,
                         precision: Any, recall: Any, global_step: int | None = None,
                         num_thresholds: int = 127, weights: Any = None,
                         walltime: float | None = None) -> None:
        """Log a precision-recall curve already computed: six 1-D rows of one
        length (``weights`` is accepted and unused, as by the peers)."""
        check_tag(tag)
        num_thresholds = check_count(num_thresholds, "num_thresholds")
        names = ("true_positive_counts", "false_positive_counts", "true_negative_counts",
                 "false_negative_counts", "precision", "recall")
        rows = [small_vector(v, n) for v, n in zip(
            (true_positive_counts, false_positive_counts, true_negative_counts,
             false_negative_counts, precision, recall), names)]
        lengths = {n: len(r) for n, r in zip(names, rows)}
        if len(set(lengths.values())) != 1 or not rows[0].size:
            raise ValueError(f"true_positive_counts ... recall must be non-empty and as long "
                             f"as each other, got lengths {lengths}")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(lambda *r: [tbp.pr_curve_raw_event(wall, step, tag, r, num_thresholds)],
                           *rows)

    # -- custom scalars -----------------------------------------------------------------------
    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, list[Any]]]) -> None:
        """Lay out the Custom Scalars tab: ``{category: {title: ["Multiline", [tag
        regexes]] or ["Margin", [value, lower, upper]]}}``."""
        charts = layout_charts(layout)
        step, wall = self.at(None, None)
        self.writer.submit(lambda: [tbp.custom_scalars_event(wall, step, charts)], nbytes=0)

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        """One multiline chart of ``tags`` in the Custom Scalars tab."""
        self.add_custom_scalars({category: {title: ["Multiline", check_tags(tags, "tags")]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """One margin chart of ``tags`` = [value, lower, upper] in the Custom Scalars tab."""
        tags = check_tags(tags, "tags")
        if len(tags) != 3:
            raise ValueError(f"tags must be 3 tags (value, lower, upper), got {len(tags)}")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # -- mesh ---------------------------------------------------------------------------------
    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: Mapping[str, Any] | None = None, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a mesh or point cloud for the Mesh tab: ``vertices`` [B, N, 3],
        optional ``colors`` [B, N, 3] and ``faces`` [B, F, 3]; ``config_dict`` the
        three.js configuration."""
        check_tag(tag)
        parts: dict[str, Any] = {}
        for key, value, name in (("VERTEX", vertices, "vertices"), ("FACE", faces, "faces"),
                                 ("COLOR", colors, "colors")):
            if value is None and name != "vertices":
                continue
            snap, shape, _ = numeric_array(value, name, empty_ok=True)
            if len(shape) != 3:
                raise ValueError(f"{name} must be [B, N, 3] (3-D), got shape {shape}")
            parts[key] = snap
        config = json_config(config_dict)
        step, wall = self.at(global_step, walltime)
        keys = list(parts)

        def encode(*arrays: Any) -> list[bytes]:
            return [tbp.mesh_event(wall, step, tag, dict(zip(keys, map(resolve_array, arrays))),
                                   config)]
        self.writer.submit(encode, *parts.values())

    # -- hparams ------------------------------------------------------------------------------
    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Mapping[str, list[Any]] | None = None,
                    run_name: str | None = None, global_step: int | None = None, *,
                    name: str | None = None) -> None:
        """Record hyperparameters and their metrics for the HParams tab, as torch: in
        the sub-run ``<log_dir>/<run_name>`` (default: the time), the experiment
        record (the hparams, with ``hparam_domain_discrete``'s choices, and exactly
        the metrics of ``metric_dict``), the session, and each metric as a scalar at
        ``global_step``.  ``name`` (tensorboardX's third argument) is ``run_name``."""
        if isinstance(hparam_domain_discrete, str):  # tensorboardX: (hparams, metrics, name)
            if name is not None and name != hparam_domain_discrete:
                raise ValueError(f"name given twice: {hparam_domain_discrete!r} and {name!r}")
            name, hparam_domain_discrete = hparam_domain_discrete, None
        if name is not None:
            if run_name is not None and run_name != name:
                raise ValueError(f"run_name and name differ: {run_name!r} and {name!r}")
            run_name = name
        if run_name is not None and not isinstance(run_name, str):
            raise TypeError(f"run_name must be a str, got {type(run_name).__name__}")
        if not isinstance(metric_dict, Mapping):
            raise TypeError(f"metric_dict must be a dict of tag to value, "
                            f"got {type(metric_dict).__name__}")
        for k, v in metric_dict.items():
            snapshot_scalar(v, f"metric_dict[{k!r}]")
        step, wall = self.at(global_step, None)
        events = tbp.hparams_events(wall, hparam_dict, metric_dict, hparam_domain_discrete,
                                    step=step)
        run = check_sub_run(run_name or str(time.time()), "run_name")
        if not self.write_to_disk:
            return
        # a file of its own that is closed at once, as the peers write it: a sweep
        # calling this per trial leaves no writer open per trial
        with Writer(self.sub_run_dir(run, "run_name"), **self.writer_options()) as w:
            w.submit(lambda: events, nbytes=0)
            for tag, value in metric_dict.items():
                w.add_scalar(tag, value, step, wall)

    # -- tensors and scalars ------------------------------------------------------------------
    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        """Log a tensor as it is (dtype and shape kept), with torch's plugin metadata
        (``"tensor"``)."""
        check_tag(tag)
        snap, _, nbytes = numeric_array(tensor, "tensor", kinds="biufcUS", empty_ok=True)
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_resolved(tbp.tensor_event, wall, step, tag), snap, nbytes=nbytes)

    def add_scalar_form(self, tag: str, scalar_value: Any, global_step: Any, walltime: Any,
                        new_style: bool, double_precision: bool, display_name: str,
                        summary_description: str) -> None:
        """add_scalar as torch's ``new_style`` tensor (float32, float64 with
        ``double_precision``) and with tensorboardX's ``display_name`` and
        ``summary_description`` in its metadata."""
        display_name, summary_description = display_name or "", summary_description or ""
        if not (new_style or display_name or summary_description):
            super().add_scalar_form(tag, scalar_value, global_step, walltime,  # type: ignore[misc]
                                    new_style, double_precision, display_name,
                                    summary_description)
            return
        check_tag(tag)
        for value, what in ((display_name, "display_name"),
                            (summary_description, "summary_description")):
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a str, got {type(value).__name__}")
        snap = snapshot_scalar(scalar_value, "scalar_value")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_scalar, wall, step, tag, snap, bool(new_style),
                           bool(double_precision), display_name, summary_description, nbytes=64)
