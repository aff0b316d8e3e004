"""Hostile input to the write side (hardening round 2): an event file that
can't be created, a step recorded twice with npy export, planted symlinks,
odd RANK values, NUL or over-long file name suffixes, and URLs given as
directories.  Each is a clear error or counted and reported; nothing hangs,
and nothing is written where it was not asked to be."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord, Writer


@pytest.mark.parametrize("case", ["logdir is a file", "name too long", "unwritable dir"])
def test_flush_and_close_return_when_the_file_cannot_be_created(tmp_path, figure, case):
    """Not strict: the values are counted as dropped and the error is logged
    once; flush() and close() return.  Strict: flush() and close() raise
    OSError.  Never a hang (each call runs under a 60 s guard in a child)."""
    if case == "logdir is a file":
        (tmp_path / "f").write_text("x")
        logdir, kw = str(tmp_path / "f"), {}
    elif case == "name too long":
        # a suffix the constructor takes, on a host whose name makes the file name too long
        logdir, kw = str(tmp_path / "long"), {"filename_suffix": "x" * 135}
    elif os.getuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        logdir, kw = str(d / "sub"), {}
        os.chmod(d, 0o500)
    else:  # root writes into any directory: a path below a regular file instead
        (tmp_path / "f").write_text("x")
        logdir, kw = str(tmp_path / "f" / "sub"), {}
    script = f"""
import logging
logging.basicConfig(level=logging.WARNING)
import summarylog.files as files
files.host_name = lambda: "h" * 120  # a long host name: past the 255-byte name limit
import time
from summarylog import Writer
for strict in (False, True):
    w = Writer({logdir!r}, strict=strict, **{kw!r})
    t0 = time.monotonic()
    for i in range(1000):
        w.add_scalar("x", float(i), i)
    w.add_histogram("h", [1.0, 2.0], 0)
    try:
        w.flush()
        flushed = "returned"
    except OSError:
        flushed = "OSError"
    try:
        w.close()
        closed = "returned"
    except OSError:
        closed = "OSError"
    print(strict, flushed, closed, w.stats["dropped_values"], round(time.monotonic() - t0, 3))
"""
    # (cwd: not the checkout, whose source tree would shadow the installed package)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [ln.split() for ln in r.stdout.strip().splitlines()]
    (s0, f0, c0, d0, t0), (s1, f1, *rest) = lines[0], lines[1]
    assert (s0, f0, c0) == ("False", "returned", "returned"), lines
    assert int(d0) >= 1001, lines  # every value counted as dropped
    assert r.stderr.count("could not write to") == 1, r.stderr  # logged once
    assert (s1, f1) == ("True", "OSError"), lines  # strict: the error, from flush()
    figure(f"{case}: not strict, 1001 values dropped and counted, flush+close returned in "
           f"{t0} s, logged once; strict: OSError from flush()")


def test_a_step_recorded_twice_with_npy_export_keeps_recording(tmp_path, figure):
    """MindSpore records a step again at an epoch's end: the export of that
    step is replaced (newest wins) and recording goes on; a planted symlink
    at the export's name is replaced, its target untouched."""
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    with SummaryRecord(tmp_path / "run", export_options={"tensor_format": "npy"}) as rec:
        for value in (1.0, 2.0):
            rec.add_value("tensor", "t", np.full(3, value, np.float32))
            rec.record(5)
            rec.flush()
        export = next((tmp_path / "run").glob("export_*")) / "tensor"
        planted = export / "t_6.npy"
        planted.symlink_to(target)
        rec.add_value("tensor", "t", np.full(3, 6.0, np.float32))
        rec.record(6)
        for step in range(7, 10):
            rec.add_value("scalar", "s", float(step))
            rec.record(step)
    assert np.load(export / "t_5.npy").tolist() == [2.0] * 3
    assert not (export / "t_6.npy").is_symlink() and np.load(export / "t_6.npy")[0] == 6.0
    assert target.read_text() == "keep me"
    assert oct((export / "t_5.npy").stat().st_mode & 0o777) == "0o400"
    steps = Reader(str(tmp_path / "run")).scalars(".", "s").step.tolist()
    assert steps == [7, 8, 9]
    figure("step 5 recorded twice: export replaced (newest wins), steps 7-9 still recorded; "
           "a symlink planted at t_6.npy replaced, its target untouched")


def test_a_planted_export_directory_symlink_is_refused(tmp_path, caplog):
    """export_<sec> planted as a symlink to elsewhere: nothing is written
    through it (recording of that step's tensors stops with an error)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rec = SummaryRecord(tmp_path / "run", export_options={"tensor_format": "npy"})
    name = os.path.basename(rec.log_dir)
    sec = name.split(".out.events.summary.")[1].split(".")[0]
    (tmp_path / "run" / f"export_{sec}").symlink_to(elsewhere, target_is_directory=True)
    rec.add_value("tensor", "t", np.ones(2, np.float32))
    with caplog.at_level(logging.ERROR, logger="summarylog"):
        rec.record(1)
        rec.close()
    assert list(elsewhere.iterdir()) == []
    assert "not a directory" in caplog.text


@pytest.mark.parametrize("value", ["²", "٣", "1e3", "-1", " ", "0x1"])
def test_odd_rank_values_in_the_environment_are_ignored(tmp_path, monkeypatch, value):
    monkeypatch.setenv("RANK", value)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with Writer(tmp_path / "w") as w:
        w.add_scalar("x", 1.0, 0)
    assert w.rank is None and not w.files[0].endswith(value)
    with SummaryRecord(tmp_path / "s") as rec:
        rec.add_value("scalar", "x", 1.0)
        rec.record(0)
    assert rec.rank is None


@pytest.mark.parametrize("suffix,exc", [("a\0b", ValueError), ("a/b", ValueError),
                                        ("x" * 200, ValueError), (b"x", TypeError)])
def test_file_name_suffixes_that_cannot_name_a_file_are_refused(tmp_path, suffix, exc):
    with pytest.raises(exc, match="filename_suffix"):
        Writer(tmp_path, filename_suffix=suffix)
    with pytest.raises(exc, match="file_suffix"):
        SummaryRecord(tmp_path, file_suffix=suffix)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["memory://b/r", "nosuchscheme://b/r", "s3+http://b/r",
                                 "hdfs://nn/x"])
def test_urls_are_never_written_to_a_local_folder(tmp_path, monkeypatch, url):
    """A URL is written through the spool (issue 25) or refused with a clear error
    (an unknown scheme, a missing filesystem package or its runtime), never made a
    local folder named after its scheme."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for make in (Writer, SummaryRecord):
        try:
            make(url).close()
        except (ValueError, ImportError, OSError) as exc:  # OSError: HDFS with no JVM
            assert "memory" not in url, exc
    assert list(cwd.iterdir()) == []


def test_a_log_dir_whose_name_is_not_utf8_is_written_as_named(tmp_path):
    """A directory name of undecodable bytes (as os.fsdecode gives it, with
    surrogate escapes) names the same directory on disk."""
    name = os.fsdecode(b"run-\xff\xfe")
    logdir = os.path.join(str(tmp_path), name)
    with Writer(logdir) as w:
        w.add_scalar("x", 1.0, 0)
    assert os.listdir(os.fsencode(str(tmp_path))) == [b"run-\xff\xfe"]
    assert Reader(logdir).scalars(".", "x").value.tolist() == [1.0]
