"""Many threads into one Writer, many processes into one run directory in
the same second, and a Writer inherited across fork()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

from summarylog import Reader
from summarylog.records import RecordReader

from .conftest import SCRIPTS, child_env, run_script


def test_eight_threads_one_writer(tmp_path, figure):
    from summarylog import Writer

    n_threads, per = 8, 100_000
    w = Writer(tmp_path)
    go = threading.Barrier(n_threads)

    def work(t: int) -> None:
        go.wait()
        tag = f"t{t}"
        for i in range(per):
            if i % 4 == 3:  # log() and add_scalar interleaved from every thread
                w.log({tag: float(i)}, step=i)
            else:
                w.add_scalar(tag, float(i), i)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    secs = time.perf_counter() - t0
    r = Reader(tmp_path)
    (run,) = r.runs()
    total = 0
    for t in range(n_threads):
        s = r.scalars(run, f"t{t}")
        np.testing.assert_array_equal(s.step, np.arange(per))  # in order, none lost or doubled
        np.testing.assert_array_equal(s.value, np.arange(per, dtype=np.float64))
        total += len(s.step)
    assert total == n_threads * per
    (rep,) = r.damage(run).values()
    assert rep.ok and rep.tail is None and rep.records == total + 1, rep
    figure(f"{n_threads} threads x {per} scalars: {total} values back, 0 torn, 0 interleaved "
           f"({total / secs / 1e6:.2f} M scalars/s, {secs:.2f} s)")


def test_four_processes_same_second(tmp_path, figure):
    n = 100_000
    start_at = float(int(time.time()) + 2)  # the start of a whole second, shared
    procs = [subprocess.Popen([sys.executable, str(SCRIPTS / "process_child.py"), str(tmp_path),
                               str(n), str(start_at)], cwd="/", env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    files = [f for out, _ in outs for f in json.loads(out)["files"]]
    assert len(set(files)) == 4 and sorted(os.listdir(tmp_path)) == sorted(
        os.path.basename(f) for f in files)
    seconds = {os.path.basename(f).split(".")[3] for f in files}
    r = Reader(tmp_path)
    (run,) = r.runs()
    got = 0
    for f in files:
        s = Reader(f).scalars(Reader(f).runs()[0], "p")
        np.testing.assert_array_equal(s.step, np.arange(n))
        got += len(s.step)
    assert all(rep.ok and rep.tail is None for rep in r.damage().values())
    assert got == 4 * n
    figure(f"4 processes x {n} scalars into one logdir, file-name seconds {sorted(seconds)}: "
           f"4 files, {got} values back, no damage")


def test_writer_inherited_across_fork(tmp_path, figure):
    n = 10_000
    res = json.loads(run_script("fork_child.py", tmp_path, n).stdout.splitlines()[-1])
    assert os.WIFEXITED(res["child_status"]) and os.WEXITSTATUS(res["child_status"]) == 0
    # a RecordWriter is tied to its process: the child gets a clear error
    assert res["raw_error"].startswith("RuntimeError") and "forked child" in res["raw_error"]
    (parent_file,), (child_file,) = res["parent_files"], res["child_files"]
    assert parent_file != child_file and str(os.getpid()) not in child_file
    p = Reader(parent_file)
    s = p.scalars(p.runs()[0], "parent")
    # the parent's buffered records were written once, by the parent only
    np.testing.assert_array_equal(s.step, np.arange(2 * n))
    assert p.tags(p.runs()[0]).keys() == {"parent"}
    c = Reader(child_file)
    assert c.tags(c.runs()[0]).keys() == {"child"}
    np.testing.assert_array_equal(c.scalars(c.runs()[0], "child").step, np.arange(n, 2 * n))
    with RecordReader(str(tmp_path / "raw.tfrecord")) as rr:
        assert list(rr) == [b"parent record", b"parent again"]
        assert rr.damage == [] and rr.tail is None
    for rep in Reader(tmp_path).damage().values():
        assert rep.ok and rep.tail is None, rep
    figure(f"fork with {n} un-flushed parent records: parent file {2 * n} values exactly once, "
           f"child's own file {n} values, inherited RecordWriter refused in the child "
           f"({res['raw_error'][:60]}...)")
