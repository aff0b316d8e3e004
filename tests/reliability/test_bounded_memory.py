"""A Writer whose disk stalls stays under its memory cap and applies its
full-buffer policy: "block" holds the logging thread (and loses nothing),
"drop" keeps it running and counts what it dropped.  A SummaryRecord's queue
of recorded steps is capped too (record() waits)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from summarylog import Reader

from .conftest import run_script

CAP = 16 << 20
SECONDS = 3.0
# what the cap covers (queued values, the file's two buffers) plus working
# memory it does not: the caller's 2 MB copy, binning temporaries, allocator
# pools that are not handed back (measured: about 1.3 x CAP + 3 MiB)
RSS_BOUND = CAP * 3 // 2 + (8 << 20)


@pytest.mark.parametrize("on_full", ["block", "drop", "summary_record"])
def test_stalled_disk_stays_under_the_cap(tmp_path, on_full, figure):
    res = json.loads(run_script("stall_child.py", tmp_path, on_full, CAP, SECONDS,
                                timeout=120).stdout.splitlines()[-1])
    grew = res["peak"] - res["base"]
    # what an uncapped queue would hold: 2 MB histograms / 1 MB tensors, 28 B scalars
    offered = res["scalars"] * 28 + res["hists"] * (
        1_000_000 if on_full == "summary_record" else 2_000_000)
    assert grew < RSS_BOUND, res
    held = res["stats_while_stalled"]  # summarylog's own accounting, while stalled
    assert held["queued_bytes"] <= CAP // 2 + 2_000_000, held  # + the one item always let in
    assert held["file"]["buffered_bytes"] <= CAP // 4, held
    st = res["stats"]
    r = Reader(res["file"])
    (run,) = r.runs()
    s = r.scalars(run, "x")
    hists = sum(1 for e in r.events(run) if e.kind in ("histogram", "tensor")
                and e.tag in ("h", "t"))
    if on_full in ("block", "summary_record"):
        # the logging thread was held while the disk stalled, and nothing was lost
        assert res["progress_in_second_half"] == 0, res
        assert st["dropped_values"] == 0 and st["file"]["records_dropped"] == 0, st
        np.testing.assert_array_equal(s.step, np.arange(res["scalars"]))
        assert hists == res["hists"]
        what = (f"logging thread held for the second half of the stall, all {res['scalars']} "
                f"scalars and {hists} histograms written after")
    else:
        # never held; what did not fit was dropped and counted
        assert res["progress_in_second_half"] > 0, res
        dropped = st["dropped_values"] + st["file"]["records_dropped"]
        assert dropped > 0, st
        assert len(s.step) + hists + dropped >= res["scalars"] + res["hists"]
        assert (np.diff(s.step) > 0).all()
        what = (f"logging never held ({res['scalars']} scalars, {res['hists']} histograms "
                f"offered), {dropped} values/records dropped and counted, "
                f"{len(s.step)} scalars written")
    figure(f"on_full={on_full}, max_buffer {CAP >> 20} MiB, disk stalled {SECONDS:.0f} s: "
           f"queued {held['queued_bytes'] / 2**20:.1f} MiB + buffered "
           f"{held['file']['buffered_bytes'] / 2**20:.1f} MiB; process RSS "
           f"grew {grew / 2**20:.1f} MiB (an uncapped queue would hold "
           f"{offered / 2**20:.0f} MiB); {what}")
