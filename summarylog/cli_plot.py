"""``summarylog plot``: chosen scalars as a PNG (matplotlib, Agg).  Tags, runs and the title
are drawn as plain, escaped, cut text (a huge title would take constrained layout minutes)."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

from .cli_common import Status, check_run, open_runs, plural, printable, tag_matches, utf8
from .cli_output import CLIError, check_target, output

__all__ = ["cmd_plot", "figure_pixels", "MAX_SIDE", "MAX_PIXELS", "MIN_PANEL_HEIGHT"]

MAX_SIDE = 32_768  # pixels; Agg refuses 2**16 and more
MAX_PIXELS = 1 << 26  # 256 MiB of RGBA
MIN_PANEL_HEIGHT = 2.5  # inches: a shorter panel leaves no room for its axes
MAX_LABEL = 120  # characters of a tag, run or title drawn


def _label(text: str, legend: bool = False) -> str:
    text = printable(utf8(text))
    if len(text) > MAX_LABEL:
        text = text[: MAX_LABEL - 1] + "…"
    if legend and text.startswith("_"):  # matplotlib's legend hides "_…" labels
        text = " " + text
    return text


def figure_pixels(width: float, height_per_tag: float, dpi: float, panels: int) -> tuple[int, int]:
    """(width, height) in pixels of a plot of ``panels`` panels."""
    return (round(width * dpi), round(max(MIN_PANEL_HEIGHT, height_per_tag) * panels * dpi))


def _panel(ax: Any, tag: str, series: list[tuple[str, Any]], runs: list[str],
           status: Status) -> None:
    """One tag's panel; a tag matplotlib cannot draw (values spanning more than a double,
    as ±1.7e308 do) gets a note in its panel and a line on stderr."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    for run, s in series:
        order = np.argsort(s.step, kind="stable")  # a line over steps, even when resumed
        values = np.where(np.isfinite(s.value), s.value, np.nan)[order]
        ax.plot(s.step[order], values, label=_label(run, legend=True), linewidth=1.2,
                color=f"C{runs.index(run) % 10}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(_label(tag))
    try:  # the tick locators are where an impossible range fails: try them now
        ax.get_xticks()
        ax.get_yticks()
    except (ValueError, OverflowError) as e:
        status.later(f"plot: tag {tag!r} cannot be drawn: {e}")
        ax.cla()
        ax.set_title(_label(tag))
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"cannot be drawn: {_label(str(e))}", ha="center", va="center",
                transform=ax.transAxes)
        return
    ax.set_ylabel("value")
    ax.grid(True, alpha=0.3)
    if len(series) > 1 or len(runs) > 1:
        ax.legend(loc="best", fontsize="small")


def cmd_plot(args: argparse.Namespace) -> int:
    check_target(args.output)  # before the reading: a target that must not be replaced
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CLIError("plot needs matplotlib: pip install matplotlib") from None

    status, reader, runs = open_runs(args.path, args.run)
    series: dict[str, list[tuple[str, Any]]] = {}  # tag -> [(run, Scalars)]
    available: set[str] = set()
    for run in runs:
        tags = reader.scalar_tags(run)
        available.update(tags)
        for tag in tags:
            if tag_matches(tag, args.tag):
                series.setdefault(tag, []).append((run, reader.scalars(run, tag)))
    if not series:
        shown = sorted(available)
        listed = ", ".join(map(_label, shown[:20])) + (", …" if len(shown) > 20 else "")
        raise CLIError(f"no scalar tag {' or '.join(repr(_label(t)) for t in args.tag)} in "
                       f"{'run ' + ', '.join(map(_label, runs)) if args.run else args.path} "
                       f"(scalar tags: {listed or 'none'})")
    tags = sorted(series)
    w, h = figure_pixels(args.width, args.height_per_tag, args.dpi, len(tags))
    if w > MAX_SIDE or h > MAX_SIDE or w * h > MAX_PIXELS or min(w, h) < 1:
        raise CLIError(
            f"plot: {plural(len(tags), 'panel')} at --width {args.width:g} "
            f"--height-per-tag {args.height_per_tag:g} --dpi {args.dpi:g} make a {w}x{h}-pixel "
            f"image; the limits are {MAX_SIDE} pixels a side and {MAX_PIXELS // 2**20} "
            f"Mpx in all (choose fewer tags, or a smaller size or dpi)")
    plain = {"text.parse_math": False, "text.usetex": False}  # whatever the matplotlibrc says
    with matplotlib.rc_context(plain), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs, layout notes: not the user's concern
        fig = Figure(figsize=(args.width, max(MIN_PANEL_HEIGHT, args.height_per_tag) * len(tags)),
                     dpi=args.dpi, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(tags), 1, sharex=True, squeeze=False)[:, 0]
        for ax, tag in zip(axes, tags):
            _panel(ax, tag, series[tag], runs, status)
        axes[-1].set_xlabel("step")
        if args.title:
            fig.suptitle(_label(args.title))
        try:
            with output(args.output, binary=True) as f:
                fig.savefig(f, format="png")
        except (ValueError, OverflowError, RuntimeError, MemoryError) as e:
            raise CLIError(f"plot: matplotlib could not draw the figure: {e}", 1) from None
    for run in runs:
        check_run(reader, run, status)
    return status.flush()
