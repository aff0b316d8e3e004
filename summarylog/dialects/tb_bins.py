"""Histogram buckets as torch.utils.tensorboard and tensorboardX make them: numpy's
``np.histogram`` with ``bins`` an int, a numpy rule name or edges, the ``'tensorflow'``
exponential edges, the ``max_bins`` merge, and the support trim (one empty bucket
left of the first non-empty one, none right of the last).  Runs on the writer's
thread; a rule that would make more than MAX_BINS buckets is capped (numpy would
allocate them all first: tensorboardX#1 saw 66 billion from ``'auto'``)."""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np

from ..histograms import equal_width_counts

__all__ = ["MAX_BINS", "RULES", "tensorflow_edges", "peer_buckets", "rule_bucket_count", "Buckets"]

#: most buckets a numpy rule may make; more are merged as max_bins merges them
MAX_BINS = 1 << 16
#: numpy's bin rules the peers pass through to np.histogram
RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


class Buckets(NamedTuple):
    counts: np.ndarray  #: per bucket
    limits: np.ndarray  #: right edges, as many as counts
    min: float
    max: float
    num: int
    sum: float
    sum_squares: float


@functools.lru_cache(maxsize=1)
def tensorflow_edges() -> np.ndarray:
    """The peers' ``'tensorflow'`` edges: ±1e-12 * 1.1**k below 1e20, and 0 (the
    float steps are the peers' repeated multiplication, so every edge is theirs)."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return np.array([-x for x in reversed(pos)] + [0.0] + pos, dtype=np.float64)


def _numpy_selector(rule: str) -> Callable[..., float] | None:
    for mod in ("_histograms_impl", "histograms"):  # numpy 2 / numpy 1
        selectors = getattr(getattr(np.lib, mod, None), "_hist_bin_selectors", None)
        if selectors is not None:
            return selectors.get(rule)
    return None


def _rule_width(rule: str, x: np.ndarray) -> float | None:
    """The bucket width numpy's rule picks for finite ``x`` (numpy's own selector
    where this numpy has it, else its documented formula for the rules without a
    bound; None: leave the rule to np.histogram)."""
    selector = _numpy_selector(rule)
    if selector is not None:
        return float(selector(x, (x.min(), x.max())))
    n = x.size
    if rule == "scott":
        return (24.0 * math.pi ** 0.5 / n) ** (1.0 / 3.0) * float(np.std(x))
    if rule not in ("fd", "auto"):
        return None
    q75, q25 = np.percentile(x, [75, 25])
    fd = 2.0 * float(q75 - q25) * n ** (-1.0 / 3.0)
    if rule == "fd":
        return fd
    sturges = float(x.max() - x.min()) / (math.log2(n) + 1.0)
    return min(fd, sturges) if fd else sturges  # numpy 1's auto (numpy 2 bounds it more)


def rule_bucket_count(rule: str, x: np.ndarray) -> int | None:
    """How many buckets numpy's rule makes for finite ``x`` (None: unknown)."""
    if x.size == 0:
        return 1
    width = _rule_width(rule, x)
    if width is None:
        return None
    span = float(x.max()) - float(x.min())
    return int(math.ceil(span / width)) if width and span else 1


def _merged(counts: np.ndarray, edges: np.ndarray, max_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The peers' max_bins merge: every ``len // max_bins`` buckets summed (the
    last group zero-padded), edges kept at the group starts and the very end."""
    n = len(counts)
    step = n // max_bins
    if n % step:
        counts = np.concatenate([counts, np.zeros(step - n % step, counts.dtype)])
    counts = counts.reshape(-1, step).sum(axis=-1)
    return counts, np.concatenate([edges[:-1:step], edges[-1:]])


def _capped_rule(x: np.ndarray, n: int, max_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """What the peers' rule of ``n`` buckets over finite ``x`` then merged to
    ``max_bins`` gives, without making the ``n`` buckets: the merged groups' edges
    are numpy's linspace points at every ``n // max_bins``-th index."""
    lo, hi = float(x.min()), float(x.max())
    step = n // max_bins
    starts = np.arange(0, n, step, dtype=np.float64) * ((hi - lo) / n) + lo
    edges = np.concatenate([starts, [hi]])
    return np.histogram(x, bins=edges)[0], edges


def _support(counts: np.ndarray, limits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The peers' trim: from the bucket left of the first non-empty one (an empty
    one added when that is the first) to the last non-empty one."""
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:  # the peers' searchsorted arithmetic gives these two
        start, end = 0, 1
    else:
        start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    out = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    return out, limits[start:end + 1]


def peer_buckets(values: np.ndarray, bins: int | str | np.ndarray, max_bins: int | None,
                 on_cap: Callable[[int, int], None] | None = None) -> Buckets:
    """The peers' histogram of float64 ``values`` (1-D).  ``bins``: an int, a rule
    of RULES, ``'tensorflow'`` or increasing edges.  Where the peers raise
    (non-finite values with an int or a rule), the finite values are binned and
    min/max/sum are theirs.  ``on_cap(asked, kept)`` is told when a rule is capped."""
    x = values
    if isinstance(bins, str) and bins == "tensorflow":
        bins = tensorflow_edges()
    exact = isinstance(bins, np.ndarray)
    if not exact:
        finite = np.isfinite(x)
        if not finite.all():
            x = x[finite]
    merged = False
    if isinstance(bins, str):
        n = rule_bucket_count(bins, x)
        if n is not None and n > MAX_BINS:
            counts, edges = _capped_rule(x, n, min(max_bins or MAX_BINS, MAX_BINS))
            merged = True
            if on_cap is not None:
                on_cap(n, len(counts))
        elif n is not None and _numpy_selector(bins) is not None:
            bins = n  # numpy's own count: its equal-width edges follow
        else:  # a bound from the formulas only: numpy counts
            counts, edges = np.histogram(x, bins=bins)
    if exact:
        edges = bins
        counts = np.histogram(x, bins=edges)[0]
    elif isinstance(bins, int):
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, bins + 1)
        counts = equal_width_counts(x, edges) if x.size else np.zeros(bins, np.int64)
    if max_bins is not None and not merged and len(counts) > max_bins:
        counts, edges = _merged(counts, edges, max_bins)
    counts, limits = _support(counts, edges)
    if exact:  # the peers' statistics over every value
        stats_of = values
    else:
        stats_of = x if x.size else np.zeros(1)
    return Buckets(counts=counts.astype(np.float64), limits=limits,
                   min=float(stats_of.min()), max=float(stats_of.max()), num=values.size,
                   sum=float(stats_of.sum()), sum_squares=float(stats_of.dot(stats_of)))
