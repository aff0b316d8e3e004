"""SummaryWriter.add_figure draws off the caller's thread: the figure is pickled at the
call and a separate copy is drawn by the writer.  The caller may change the figure
right after the call, pyplot's figure list and current figure are left alone, a figure
that does not pickle is drawn at the call, and the caller's own matplotlib work runs
while the writer draws.  (Pixels equal to torch's: tests/integration/test_sw_media_tb.py.)"""

from __future__ import annotations

import io
import logging
import os
import threading
import time

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog.pb import tb
from summarylog.records import RecordReader
from summarylog.summary_writer import figure_snapshot
from summarylog.summary_writer import media as media_mod

plt = require_module("matplotlib.pyplot")
require_module("PIL")
from matplotlib.ticker import FuncFormatter  # noqa: E402


def pictures_of(logdir: str) -> dict[str, np.ndarray]:
    from PIL import Image

    out = {}
    for name in sorted(os.listdir(logdir)):
        with RecordReader(os.path.join(logdir, name)) as r:
            for payload in r:
                for v in tb.Event.FromString(payload).summary.value:
                    if not v.HasField("image"):  # not an image (a scalar)
                        continue
                    png = io.BytesIO(v.image.encoded_image_string)
                    out[v.tag] = np.asarray(Image.open(png).convert("RGB"))
    return out


def line_plot(k: int = 0, unpicklable: bool = False):
    fig = plt.figure(figsize=(3.2, 2.4), dpi=50)
    ax = fig.add_subplot()
    ax.plot(np.arange(20), np.sin(np.arange(20) / (k + 1)) - 0.5, label=f"k={k}")
    ax.set_title(f"figure {k}")
    ax.legend()
    if unpicklable:  # a lambda does not pickle
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, pos: f"{x:.1f}"))
    return fig


def reference(k: int = 0, unpicklable: bool = False) -> np.ndarray:
    """The RGB pixels of the same figure drawn here, as the peers draw it at the call."""
    fig = line_plot(k, unpicklable)
    rgb = figure_snapshot.rasterise(fig)[:, :, :3]
    plt.close(fig)
    return rgb


class Held:
    """The writer's thread held (a job waiting on an event) until release()."""

    def __init__(self, w: summarylog.SummaryWriter) -> None:
        self.go, self.started = threading.Event(), threading.Event()
        w.writer.submit(self._wait)
        assert self.started.wait(30)

    def _wait(self) -> list[bytes]:
        self.started.set()
        self.go.wait(30)
        return []

    def release(self) -> None:
        self.go.set()


def test_changes_after_the_call_are_not_logged(tmp_path):
    want = reference()
    with summarylog.SummaryWriter(tmp_path) as w:
        held = Held(w)
        fig = line_plot()
        w.add_figure("kept", fig, 1, close=False)
        # the writer has not drawn yet: change everything the drawing would show
        ax = fig.axes[0]
        ax.set_title("changed")
        ax.plot(np.arange(20), np.cos(np.arange(20)), "r-", lw=4)
        ax.lines[0].set_ydata(np.zeros(20))
        fig.set_facecolor("black")
        held.release()
    now = figure_snapshot.rasterise(fig)[:, :, :3]
    plt.close(fig)
    got = pictures_of(str(tmp_path))["kept"]
    changed = int((now != want).any(-1).sum())
    print(f"figure changed after add_figure: {changed} pixels differ now; logged pixels "
          f"equal to the figure at the call")
    assert changed > 1000  # the changes are visible, so the test can see them
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("close", [False, True])
def test_pyplot_figure_list_and_current_figure_left_alone(tmp_path, close):
    plt.close("all")
    logged = line_plot(1)
    other = line_plot(2)  # the current figure
    assert figure_snapshot.snapshot(logged) is not None
    assert logged.__getstate__().get("_restore_to_pylab")  # plain unpickling would register it
    with summarylog.SummaryWriter(tmp_path) as w:
        held = Held(w)
        w.add_figure("f", logged, 0, close=close)
        nums, current = plt.get_fignums(), plt.gcf()
        held.release()
        w.flush()
        after = plt.get_fignums(), plt.gcf()
    print(f"close={close}: figure numbers {nums} before the writer draws, {after[0]} after; "
          f"current figure kept: {after[1] is current}")
    assert after == (nums, current) and current is other
    assert (logged.number in nums) is not close
    plt.close("all")
    np.testing.assert_array_equal(pictures_of(str(tmp_path))["f"], reference(1))


def spy_threads(monkeypatch, module, name, seen):
    fn = getattr(module, name)

    def wrapped(*a, **k):
        seen.setdefault(name, set()).add(threading.current_thread().name)
        return fn(*a, **k)

    monkeypatch.setattr(module, name, wrapped)


def test_drawn_on_the_writer_thread(tmp_path, monkeypatch):
    seen: dict[str, set[str]] = {}
    spy_threads(monkeypatch, figure_snapshot, "rasterise", seen)  # the snapshot's drawing
    spy_threads(monkeypatch, media_mod, "rasterise", seen)  # the caller's-thread fallback
    spy_threads(monkeypatch, media_mod, "snapshot", seen)
    caller = threading.current_thread().name
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_figure("one", line_plot(0), 0)
        w.add_figure("list", [line_plot(k) for k in range(3)], 0)
    print({k: sorted(v) for k, v in seen.items()}, "caller:", caller)
    assert seen["snapshot"] == {caller}
    assert "rasterise" in seen and caller not in seen["rasterise"]
    assert not plt.get_fignums()


def test_a_figure_that_does_not_pickle_is_drawn_at_the_call(tmp_path, monkeypatch):
    seen: dict[str, set[str]] = {}
    spy_threads(monkeypatch, media_mod, "rasterise", seen)
    caller = threading.current_thread().name
    fig = line_plot(0, unpicklable=True)
    assert figure_snapshot.snapshot(fig) is None
    with summarylog.SummaryWriter(tmp_path) as w:
        held = Held(w)
        w.add_figure("lambda", fig, 0, close=False)
        fig.axes[0].set_title("changed")  # drawn at the call: not logged either
        w.add_figure("mixed", [line_plot(1), line_plot(2, unpicklable=True)], 0)
        held.release()
    plt.close(fig)
    got = pictures_of(str(tmp_path))
    print(f"unpicklable figure (lambda formatter) drawn on {sorted(seen['rasterise'])}, "
          f"caller {caller}; logged {sorted(got)}")
    assert seen["rasterise"] == {caller}
    np.testing.assert_array_equal(got["lambda"], reference(0, unpicklable=True))
    np.testing.assert_array_equal(got["mixed"][:, :160],
                                  reference(1))  # tiled: first figure on the left
    np.testing.assert_array_equal(got["mixed"][:, 160:], reference(2, unpicklable=True))
    assert not plt.get_fignums()


def test_caller_draws_other_figures_while_the_writer_draws(tmp_path):
    """Separate figures drawn at once, the caller's and the writer's copies (Agg)."""
    want = {k: reference(k) for k in range(4)}
    n = 24
    t0 = time.perf_counter()
    with summarylog.SummaryWriter(tmp_path) as w:
        for i in range(n):
            w.add_figure(f"f{i}", line_plot(i % 4), i)
            fig = line_plot(i % 4)
            mine = figure_snapshot.rasterise(fig)[:, :, :3]  # the caller draws meanwhile
            plt.close(fig)
            np.testing.assert_array_equal(mine, want[i % 4])
    got = pictures_of(str(tmp_path))
    print(f"{n} figures logged while the caller drew {n} others: "
          f"{time.perf_counter() - t0:.2f} s, all pixel-equal")
    assert len(got) == n
    for i in range(n):
        np.testing.assert_array_equal(got[f"f{i}"], want[i % 4])
    assert not plt.get_fignums()


def test_rcparams_changed_before_the_drawing_are_reported(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(figure_snapshot, "_warned_rc", False)
    with summarylog.SummaryWriter(tmp_path) as w, caplog.at_level(logging.WARNING):
        held = Held(w)
        with plt.rc_context({"xtick.labelsize": 20}):
            w.add_figure("rc", line_plot(), 0)
        held.release()
    msgs = [r.getMessage() for r in caplog.records if "rcParams" in r.getMessage()]
    print(msgs)
    assert len(msgs) == 1 and "xtick.labelsize" in msgs[0]
    assert "rc" in pictures_of(str(tmp_path))


@pytest.mark.parametrize("figsize,dpi", [((0, 1), 100), ((0.001, 1), 100),
                                         ((83886.08, 0.01), 100), ((1, 1e6), 100)])
def test_sizes_agg_cannot_draw_are_refused_at_the_call(tmp_path, figsize, dpi):
    """Drawn later on the writer's thread, such a figure would be dropped there; the
    peers raise at the call (torch: 'cannot write empty image', Agg: 'too large')."""
    fig = plt.figure(figsize=figsize, dpi=dpi)
    with summarylog.SummaryWriter(tmp_path) as w:
        w.add_scalar("before", 1.0, 0)
        with pytest.raises(ValueError, match="figure") as info:
            w.add_figure("f", fig, 0)
        w.add_scalar("after", 2.0, 0)
    print(f"figsize {figsize} at dpi {dpi}: {info.value}")
    assert plt.fignum_exists(fig.number)  # refused before anything, close included
    plt.close(fig)
    assert pictures_of(str(tmp_path)) == {}
