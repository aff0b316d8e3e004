"""Huge runs in bounded memory: iter_scalars' peak RSS does not grow with the run
(runs of 1x, 4x and 16x the values, as hard links of one file: no disk cost), and the
Reader's virtual memory on a file of images vs a small one (reported)."""

from __future__ import annotations

import json
import os

import summarylog

from .conftest import run_script

# x 2 tags: 800 000 scalars per file (about 22 MB: past the reader's two 8 MiB windows,
# so the smallest run already holds all the working memory a bigger one will)
BASE_STEPS = 400_000
CHUNK = 65536
# what may differ between the runs' peaks: allocator pools, page rounding; far below
# what holding the values would add (28 B x 6 M scalars between 1x and 16x)
FLAT_BOUND = 8 << 20


def _base_file(tmp_path) -> str:
    d = tmp_path / "base"
    with summarylog.Writer(d) as w:
        for s in range(BASE_STEPS):
            w.log({"loss": s * 0.5, "acc": 1.0 / (s + 1)}, step=s)
    (path,) = w.files
    return path


def _run_of(tmp_path, base: str, copies: int) -> str:
    """A run of ``copies`` hard links to base (each a whole event file)."""
    d = tmp_path / f"x{copies}"
    d.mkdir()
    files = []
    for k in range(copies):
        files.append(str(d / f"events.out.tfevents.{1000 + k}.host"))
        os.link(base, files[-1])
    listing = tmp_path / f"x{copies}.json"
    listing.write_text(json.dumps(files))
    return str(listing)


def _child(mode: str, listing: str) -> dict:
    out = run_script("stream_child.py", mode, listing, str(CHUNK), timeout=300)
    return json.loads(out.stdout.splitlines()[-1])


def test_iter_scalars_peak_rss_is_flat(tmp_path, figure) -> None:
    base = _base_file(tmp_path)
    grew = {}
    for copies in (1, 4, 16):
        res = _child("stream", _run_of(tmp_path, base, copies))
        assert res["values"] == copies * 2 * BASE_STEPS
        grew[copies] = (res["end"]["VmHWM"] - res["base"]["VmHWM"]) << 10
    assert grew[16] - grew[1] < FLAT_BOUND, grew
    figure("iter_scalars peak RSS above start-up, 0.8 M / 3.2 M / 12.8 M scalars: "
           + " / ".join(f"{v / 2**20:.1f} MiB" for v in grew.values()))
