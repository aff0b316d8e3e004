"""SummaryWriter's add_audio, add_video, add_figure, add_image_with_boxes, as
torch.utils.tensorboard and tensorboardX lay them out and TensorBoard shows them.  The
caller's thread checks and copies (a figure: pickles it); WAV, GIF and PNG encoding, box
drawing and figure drawing run on the writer's thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import check_size, check_tag
from ..dialects.tb_media import audio_payload, legacy_image_payload
from ..media_codecs import encode_gif, encode_wav, require_pillow
from ..png import encode_png
from .base import SummaryWriterBase
from .images import GRID_COLUMNS, check_image_tensor, png_payloads, to_hwc_uint8
from .media_checks import (
    check_boxes,
    check_figures,
    figure_size,
    check_labels,
    check_positive,
    check_samples,
    check_video,
)
from .figure_snapshot import FigureSnapshot, pixels, rasterise, snapshot
from .media_prep import draw_boxes, pcm16, video_frames

__all__ = ["MediaMethods"]


def _audio_payloads(wall: float, step: int, tag: str, samples: np.ndarray,
                    sample_rate: float) -> list[bytes]:
    pcm = pcm16(samples)
    wav = encode_wav(pcm, round(sample_rate))
    channels = 1 if pcm.ndim == 1 else pcm.shape[1]
    return [audio_payload(wall, step, tag, wav, float(sample_rate), channels, pcm.shape[0])]


def _video_payloads(wall: float, step: int, tag: str, ntchw: np.ndarray,
                    fps: float) -> list[bytes]:
    frames = video_frames(ntchw)
    _, h, w, c = frames.shape
    return [legacy_image_payload(wall, step, tag, encode_gif(frames, fps), h, w, c)]


def _boxes_payloads(wall: float, step: int, tag: str, img: np.ndarray, fmt: str,
                    boxes: np.ndarray, labels: Sequence[str] | None,
                    rescale: float) -> list[bytes]:
    drawn = draw_boxes(to_hwc_uint8(img, fmt), boxes, labels, rescale)
    h, w, c = drawn.shape
    return [legacy_image_payload(wall, step, tag, encode_png(drawn), h, w, c)]


def _figure_payloads(wall: float, step: int, tag: str,
                     items: list[FigureSnapshot | np.ndarray], batch: bool) -> list[bytes]:
    rgba = [pixels(item) for item in items]  # snapshots unpickled and drawn here
    if len({p.shape for p in rgba}) > 1:  # sizes were checked at the call; a figure
        raise ValueError(f"add_figure {tag!r}: the figures drew at different sizes "
                         f"{sorted({p.shape[1::-1] for p in rgba})}")  # that resizes itself
    if batch:  # as the peers: the figures stacked and tiled as add_images tiles them
        hwc = to_hwc_uint8(np.stack([p[:, :, :3] for p in rgba]), "NHWC")
    else:
        hwc = np.ascontiguousarray(rgba[0][:, :, :3])
    return png_payloads(wall, step, tag, hwc)


class MediaMethods(SummaryWriterBase):
    """add_audio, add_video, add_figure, add_image_with_boxes (the peers' signatures)."""

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None,
                  sample_rate: float = 44100, walltime: float | None = None) -> None:
        """Log a sound as a WAV (16-bit PCM) TensorBoard's Audio tab plays: values in
        [-1, 1] (outside clipped), shape (L,), (1, L) or (L, 1), or (L, 2) for stereo
        (tensorboardX); ``sample_rate`` in Hz."""
        check_tag(tag)
        samples, rate = check_samples(snd_tensor, sample_rate)
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_audio_payloads, wall, step, tag, samples, rate)

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None,
                  fps: float = 4, walltime: float | None = None,
                  dataformats: str = "NTCHW") -> None:
        """Log a video as an animated GIF (shown in the Images tab): ``vid_tensor``
        (N, T, C, H, W) (``dataformats``, tensorboardX's, names another order), uint8
        or values in [0, 1]; the N clips tiled into one grid per frame, as the peers
        tile them.  Needs Pillow (``summarylog[video]``)."""
        check_tag(tag)
        require_pillow("add_video", "video")
        ntchw = check_video(vid_tensor, dataformats)
        check_positive(fps, "fps")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_video_payloads, wall, step, tag, ntchw, fps)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None,
                   close: bool = True, walltime: float | None = None) -> None:
        """Log a matplotlib figure, or a list of same-sized figures tiled as add_images
        tiles a batch, as RGB; ``close`` closes them (pyplot) before returning.  The
        figure is pickled at the call (later changes to it are not logged) and drawn by
        Agg on the writer's thread; one that does not pickle is drawn at the call.
        rcParams read while drawing (tick label sizes, hinting) are those in force when
        the writer draws.  Needs matplotlib (``summarylog[figure]``)."""
        check_tag(tag)
        figures, batch = check_figures(figure)
        step, wall = self.at(global_step, walltime)
        sizes = {figure_size(f) for f in figures}
        if len(sizes) > 1:
            raise ValueError(f"figure: the figures of a list must have one size, got "
                             f"{sorted(sizes)} (width, height)")
        w, h = sizes.pop()
        check_size(len(figures) * w * h * 4, "figure")
        # a snapshot each (pickled), or the pixels of one that does not pickle
        items = [snapshot(f) or rasterise(f) for f in figures]
        if close:
            import matplotlib.pyplot as plt

            for f in figures:
                plt.close(f)
        nbytes = sum(len(i.data) if isinstance(i, FigureSnapshot) else i.nbytes for i in items)
        self.writer.submit(_figure_payloads, wall, step, tag, items, batch,
                           nbytes=nbytes)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any,
                             global_step: int | None = None, walltime: float | None = None,
                             rescale: float = 1, dataformats: str = "CHW",
                             labels: Sequence[str] | str | None = None, **kwargs: Any) -> None:
        """Log an image with boxes drawn as the peers draw them (red, 2 px, each
        label on a red band at its box's bottom left): ``box_tensor`` (N, 4) rows of
        xmin, ymin, xmax, ymax in pixels; ``labels`` one str per box (another count
        drops them, as the peers do); the result resized by ``rescale``.  Needs Pillow
        (``summarylog[image]``)."""
        if kwargs:
            raise TypeError(f"add_image_with_boxes got unexpected keyword arguments "
                            f"{sorted(kwargs)}")
        check_tag(tag)
        require_pillow("add_image_with_boxes", "image")
        img, fmt = check_image_tensor(img_tensor, dataformats, (2, 3, 4))
        boxes = check_boxes(box_tensor)
        names = check_labels(labels, len(boxes))
        check_positive(rescale, "rescale")
        h, w = to_hwc_shape(img.shape, fmt)
        if int(h * rescale) < 1 or int(w * rescale) < 1:
            raise ValueError(f"rescale={rescale!r} leaves no pixel of a {w}x{h} image")
        check_size(int(h * rescale) * int(w * rescale) * 4, "img_tensor rescaled")
        step, wall = self.at(global_step, walltime)
        self.writer.submit(_boxes_payloads, wall, step, tag, img, fmt, boxes, names, rescale)


def to_hwc_shape(shape: tuple[int, ...], fmt: str) -> tuple[int, int]:
    """(height, width) of the image to_hwc_uint8 makes of an array of ``shape``."""
    if "N" not in fmt:
        return shape[fmt.index("H")], shape[fmt.index("W")]
    n = shape[fmt.index("N")]
    cols = min(n, GRID_COLUMNS)
    return shape[fmt.index("H")] * -(-n // cols), shape[fmt.index("W")] * cols
