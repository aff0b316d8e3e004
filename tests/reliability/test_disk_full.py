"""A full disk (a small tmpfs when root, else RLIMIT_FSIZE): strict mode
raises OSError naming the file, the default records the error and goes on;
what was written before the fault reads back; with space freed a new
Writer continues."""

from __future__ import annotations

import errno
import json
import os
import subprocess

import numpy as np
import pytest

from summarylog import Reader

from .conftest import run_script

LIMIT = 256 << 10  # bytes the log may have


def _tmpfs(path: str) -> bool:
    if os.geteuid() != 0:
        return False
    os.makedirs(path)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path],
                       capture_output=True)
    return r.returncode == 0


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("fs", ["tmpfs", "rlimit"])
def test_disk_full(tmp_path, fs, strict, figure):
    mnt = str(tmp_path / "mnt")
    if fs == "tmpfs":
        if not _tmpfs(mnt):
            pytest.skip("mounting a tmpfs needs root (the RLIMIT_FSIZE case covers this)")
        try:  # leave LIMIT bytes free: fill the rest with a file to delete later
            filler = os.path.join(mnt, "filler")
            free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
            with open(filler, "wb") as f:
                f.write(b"\0" * (free - LIMIT))
            logdir = os.path.join(mnt, "run")
            res = json.loads(run_script("diskfull_child.py", logdir, int(strict),
                                        f"rm:{filler}").stdout.splitlines()[-1])
            _check(logdir, res, strict, figure, fs)
        finally:
            subprocess.run(["umount", "-l", mnt], check=False)
    else:
        logdir = str(tmp_path / "run")
        res = json.loads(run_script("diskfull_child.py", logdir, int(strict), "rlimit",
                                    LIMIT).stdout.splitlines()[-1])
        _check(logdir, res, strict, figure, fs)


def _check(logdir: str, res: dict, strict: bool, figure, fs: str) -> None:
    first, = res["files"]
    if strict:
        assert res["raised"] is not None, res  # OSError, naming the file
        assert res["filename"] == first and first in res["raised"], res
        assert res["errno"] in (errno.ENOSPC, errno.EFBIG), res
    else:
        assert res["raised"] is None, res  # no exception: training went on
        assert res["stats"]["errors"] >= 1 and res["stats"]["records_lost"] > 0, res
        assert res["stats"]["last_errno"] in (errno.ENOSPC, errno.EFBIG), res
    r = Reader(first)
    (run,) = r.runs()
    s = r.scalars(run, "x")
    n = len(s.step)
    # everything written before the fault: a clean prefix, no damage
    np.testing.assert_array_equal(s.step, np.arange(n))
    assert n - 1 >= res["acked"] >= 0, (n, res)
    rep = r.damage()[first]
    assert rep.ok and rep.tail is None, rep
    assert os.path.getsize(first) <= LIMIT
    # space freed: a new writer continues in the same run directory
    second, = res["files2"]
    s2 = Reader(second).scalars(Reader(second).runs()[0], "x")
    np.testing.assert_array_equal(s2.step, np.arange(100_000, 101_000))
    mode = "strict" if strict else "lenient"
    what = res["raised"] if strict else (f"no exception; stats errors={res['stats']['errors']}, "
                                         f"records_lost={res['stats']['records_lost']}")
    figure(f"{fs}/{mode}: limit {LIMIT} B, {n} scalars read back (acknowledged up to step "
           f"{res['acked']}), file {os.path.getsize(first)} B, no damage; {what}; "
           f"after freeing space a new Writer wrote 1000 more")
