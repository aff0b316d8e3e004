"""tbparse's static helpers of SummaryReader (histograms, image and audio tensors),
without TensorFlow: images decoded with Pillow, WAV by decode_wav's rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from .frames_build import rebin
from .frames_leaf import decode_png
from .frames_media import decode_wav

__all__ = ["FrameHelpers"]


class FrameHelpers:
    """The static methods SummaryReader shares with tbparse's."""

    @staticmethod
    def histogram_to_cdf(counts: np.ndarray, limits: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The cumulative probability at each (increasing) ``x``, interpolated linearly
        between the bucket limits (``counts[0]`` must be zero: ``limits[0]`` is the left
        edge of the first bucket)."""
        counts = np.asarray(counts, np.float64)
        limits = np.asarray(limits, np.float64)
        x = np.asarray(x)
        if len(counts) != len(limits):
            raise ValueError("counts and limits must have the same length")
        if not np.all(np.diff(x) > 0):
            raise ValueError("x must be increasing")
        cum = np.cumsum(counts)
        n = cum[-1]
        y = np.interp(x, limits, cum, left=0.0, right=n)
        y[x <= limits[0]] = 0.0
        return y / n

    @staticmethod
    def histogram_to_bins(counts: np.ndarray, limits: np.ndarray,
                          lower_bound: float | None = None, upper_bound: float | None = None,
                          n_bins: int = 30) -> tuple[np.ndarray, np.ndarray]:
        """Bin centres and counts of ``n_bins`` equal bins over [lower_bound, upper_bound],
        as TensorBoard's histogram dashboard rebins buckets."""
        return rebin(counts, limits, lower_bound, upper_bound, n_bins)

    @staticmethod
    def tensor_to_histogram(tensor: np.ndarray) -> dict[str, Any]:
        """A histogram tensor (rows of left edge, right edge, count) as a dict of
        ``limits`` (with the first left edge), ``counts`` (a 0 first), ``min``, ``max``,
        ``num``, ``sum`` and ``sum_squares`` (NaN: not in the tensor)."""
        t = np.asarray(tensor)
        limits = np.concatenate([t[:1, 0], t[:, 1]])
        counts = np.concatenate([[0], t[:, 2]])
        return {"limits": limits, "counts": counts, "min": limits[0], "max": limits[-1],
                "num": np.sum(counts), "sum": np.nan, "sum_squares": np.nan}

    @staticmethod
    def histogram_to_pdf(counts: np.ndarray, limits: np.ndarray,
                         x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The centres of the intervals of ``x`` and the probability density in each."""
        x = np.asarray(x)
        y = FrameHelpers.histogram_to_cdf(counts, limits, x)
        return (x[1:] + x[:-1]) / 2, (y[1:] - y[:-1]) / (x[1:] - x[:-1])

    @staticmethod
    def buckets_to_histogram_dict(lst: np.ndarray) -> dict[str, Any]:
        """tbparse's older name of :meth:`tensor_to_histogram`."""
        return FrameHelpers.tensor_to_histogram(lst)

    @staticmethod
    def tensor_to_image(tensor: np.ndarray) -> dict[str, Any]:
        """An image-plugin tensor (width, height, then one encoded image or more) as a
        dict of ``image`` (height x width x channels uint8; several stacked on a first
        axis), ``width`` and ``height``.  Needs Pillow."""
        images = np.stack([decode_png(bytes(b)) for b in tensor[2:]], axis=0)
        if images.shape[0] == 1:
            images = images.squeeze(axis=0)
        return {"image": images, "width": int(tensor[0]), "height": int(tensor[1])}

    @staticmethod
    def tensor_to_audio(tensor: np.ndarray) -> dict[str, Any]:
        """An audio-plugin tensor (rows of encoded WAV and an empty label) as a dict of
        ``audio`` (frames x channels float32; several clips stacked on a first axis),
        ``content_type``, ``length_frames`` and ``sample_rate`` (int32).  ValueError for
        a label that is not empty or bytes that are not a 16-bit PCM WAV."""
        tensor = np.asarray(tensor, dtype=object)
        if tensor.ndim != 2 or tensor.shape[1] != 2:
            raise ValueError(f"tensor must be rows of (WAV, label), not shape {tensor.shape}")
        if any(label != b"" for label in tensor[:, 1]):
            raise ValueError("tensor's second column (labels) must be empty")
        decoded = [decode_wav(bytes(b)) for b in tensor[:, 0]]
        audio = np.stack([a for a, _ in decoded], axis=0)
        rate = np.stack([np.int32(r) for _, r in decoded], axis=0)
        length = audio.shape[1]
        if audio.shape[0] == 1:
            audio, rate = audio.squeeze(axis=0), rate.squeeze(axis=0)
        return {"audio": audio, "content_type": "audio/wav", "length_frames": length,
                "sample_rate": rate}
