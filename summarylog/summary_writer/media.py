"""SummaryWriter's add_audio, add_video, add_figure, add_image_with_boxes."""

from __future__ import annotations

from .base import SummaryWriterBase

__all__ = ["MediaMethods"]


class MediaMethods(SummaryWriterBase):
    """add_audio, add_video, add_figure, add_image_with_boxes (the peers' signatures)."""
