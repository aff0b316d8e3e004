"""Reading at scale (issue 23, points 3, 4's damage cap and 6): to_pandas() built in one
go, the damage list of a ruined file capped, a root of runs read on several threads."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

from conftest import require_module

import summarylog
from summarylog import Reader, SummaryRecord
from summarylog._native import lib
from summarylog.read_types import DAMAGE_CAP


def old_to_pandas(r: Reader, runs=None, tags=None):
    """Reader.to_pandas() before issue 23: one small DataFrame per tag, then concat."""
    pd = require_module("pandas")
    frames = []
    for run in runs if runs is not None else r.runs():
        for tag in tags if tags is not None else r.scalar_tags(run):
            if tag in r.scalar_tags(run):
                s = r.scalars(run, tag)
                codes = np.zeros(len(s.step), np.int8)
                frames.append(pd.DataFrame({
                    "run": pd.Categorical.from_codes(codes, [run]),
                    "tag": pd.Categorical.from_codes(codes, [tag]),
                    "step": s.step, "wall_time": s.wall_time, "value": s.value}))
    if not frames:
        return pd.DataFrame(columns=["run", "tag", "step", "wall_time", "value"])
    return pd.concat(frames, ignore_index=True)


def mixed_logdir(root, rng) -> None:
    """TensorBoard runs (several tags, text, a resumed run, a nested run, rotated
    files) and a MindSpore run with a step written twice."""
    for run, n in (("r1", 30), ("r2", 7), ("deep/er/r3", 12)):
        with summarylog.Writer(root / run) as w:
            for i in range(n):
                w.log({"loss": rng.random(), "acc": rng.random(), f"only_{run[-1]}": i},
                      step=i * 3 - 5, walltime=1e9 + rng.random())
            w.add_text("note", "not a scalar", 0)
    with summarylog.Writer(root / "r2", purge_step=4) as w:  # resumed: points >= 4 purged
        for i in range(4, 9):
            w.log({"loss": -float(i)}, step=i)
    with SummaryRecord(root / "ms") as rec:
        for step in (1, 2, 2, 3):
            rec.add_value("scalar", "loss", float(step) * rng.random())
            rec.add_value("scalar", "lr", 0.1)
            rec.record(step)


def same_frame(new, old) -> None:
    pd = require_module("pandas")
    assert list(new.columns) == list(old.columns)
    # run and tag are categoricals now everywhere (concat made them object when categories differed)
    for col in ("run", "tag"):
        assert isinstance(new[col].dtype, pd.CategoricalDtype)
        assert new[col].astype(str).tolist() == old[col].astype(str).tolist()
    for col in ("step", "wall_time", "value"):
        assert new[col].dtype == old[col].dtype
        np.testing.assert_array_equal(new[col].to_numpy(), old[col].to_numpy())


class TestToPandasInOneGo:
    def test_equal_to_old_output_on_mixed_logdir(self, tmp_path, rng) -> None:
        mixed_logdir(tmp_path, rng)
        r = Reader(tmp_path)
        assert len(r.runs()) == 4
        same_frame(r.to_pandas(), old_to_pandas(r))
        for runs, tags in ((["ms", "r1"], None), (None, ["loss", "nope", "acc"]),
                           (["r2", "r2"], ["loss"]), (["deep/er/r3"], ["only_3"])):
            same_frame(r.to_pandas(runs, tags), old_to_pandas(r, runs, tags))
        assert len(r.to_pandas(runs=[])) == 0 and len(r.to_pandas(tags=["nope"])) == 0

    def test_20k_tags_scale_with_rows(self, tmp_path) -> None:
        require_module("pandas")
        ntags, npoints = 20_000, 10
        names = [f"group{t // 100}/tag{t}" for t in range(ntags)]
        with summarylog.Writer(tmp_path) as w:
            for step in range(npoints):
                w.log(dict(zip(names, np.arange(ntags, dtype=float) + step)), step=step)
        r = Reader(tmp_path)
        t0 = time.perf_counter()
        r.scalar_tags(".")
        t1 = time.perf_counter()
        df = r.to_pandas()
        t2 = time.perf_counter()
        assert len(df) == ntags * npoints and df["tag"].nunique() == ntags
        s = r.scalars(".", names[12_345])
        part = df[df["tag"] == names[12_345]]
        np.testing.assert_array_equal(part["value"].to_numpy(), s.value)
        np.testing.assert_array_equal(part["step"].to_numpy(), np.arange(npoints))
        print(f"\nto_pandas() of {ntags} tags x {npoints} points: load {t1 - t0:.2f} s, "
              f"frame {t2 - t1:.3f} s")


# ---- the damage list of a ruined file is capped ----------------------------------------------

GARBAGE = 16 << 20


def crafted_garbage(path) -> int:
    """16 MiB of 16-byte records whose length CRC holds and data CRC does not: one
    damaged region per record, the most a file can hold.  Returns how many."""
    hdr = struct.pack("<Q", 0)
    rec = hdr + struct.pack("<I", lib.slg_masked_crc32c(hdr, 8)) + b"\xde\xad\xbe\xef"
    with open(path, "wb") as f:
        f.write(rec * (GARBAGE // len(rec)))
    return GARBAGE // len(rec)


def inspect_json(root) -> tuple[dict, int, int]:
    """``summarylog inspect --json root`` in a child: (document, bytes of JSON, peak RSS)."""
    code = ("import resource, runpy, sys\n"
            "sys.argv = ['summarylog', 'inspect', '--json', sys.argv[1]]\n"
            "try:\n    runpy.run_module('summarylog', run_name='__main__')\n"
            "finally:\n"
            "    try:  # VmHWM: ru_maxrss keeps the forking parent's peak across exec\n"
            "        kib = next(int(l.split()[1]) for l in open('/proc/self/status')\n"
            "                   if l.startswith('VmHWM'))\n"
            "    except OSError:\n"
            "        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "    print(kib, file=sys.stderr)\n")
    p = subprocess.run([sys.executable, "-P", "-c", code, str(root)], cwd="/",
                       capture_output=True, timeout=120)
    rss_kib = int(p.stderr.decode().strip().splitlines()[-1])
    return json.loads(p.stdout), len(p.stdout), rss_kib << 10


class TestDamageCap:
    def test_random_garbage_inspect_json_small(self, tmp_path) -> None:
        (tmp_path / "events.out.tfevents.1.garbage").write_bytes(os.urandom(GARBAGE))
        doc, size, rss = inspect_json(tmp_path)
        (f,) = doc["runs"]["."]["files"]
        assert not f["ok"] and f["records"] == 0 and f["damage"]
        assert size < 64 << 10
        print(f"\ninspect --json of 16 MiB of random bytes: {size} B of JSON, "
              f"{rss / 2**20:.0f} MiB peak RSS")

    def test_crafted_garbage_damage_capped_and_counted(self, tmp_path) -> None:
        path = tmp_path / "events.out.tfevents.1.crafted"
        n = crafted_garbage(path)
        tracemalloc.start()
        try:
            t0 = time.perf_counter()
            rep = Reader(tmp_path).damage()[str(path)]
            took = time.perf_counter() - t0
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(rep.damage) == DAMAGE_CAP and rep.damage_count == n and not rep.ok
        assert [d.offset for d in rep.damage] == [16 * i for i in range(DAMAGE_CAP)]
        assert {(d.kind, d.length) for d in rep.damage} == {("bad_data_crc", 16)}
        assert peak < 64 << 20  # listing every region took > 100 MiB more
        doc, size, rss = inspect_json(tmp_path)
        (f,) = doc["runs"]["."]["files"]
        assert len(f["damage"]) == DAMAGE_CAP and size < 256 << 10
        print(f"\n16 MiB of {n} damaged records: Reader.damage() {took:.1f} s, "
              f"{peak / 2**20:.1f} MiB traced peak; inspect --json {size} B of JSON, "
              f"{rss / 2**20:.0f} MiB peak RSS")

    def test_deep_pass_capped_too(self, tmp_path) -> None:
        path = tmp_path / "events.out.tfevents.1.crafted"
        n = crafted_garbage(path)
        r = Reader(tmp_path)
        rep = r.damage(deep=True)[str(path)]  # the events pass replaces the scalar pass's list
        assert len(rep.damage) == DAMAGE_CAP and rep.damage_count == n

    def test_record_reader_list_capped(self, tmp_path) -> None:
        """RecordReader itself (the deep pass, events(), follow()) keeps only the first
        DAMAGE_CAP regions and counts the rest: its memory no longer grows with them."""
        from summarylog.records import RecordReader
        path = tmp_path / "events.out.tfevents.1.crafted"
        n = crafted_garbage(path)
        tracemalloc.start()
        try:
            with RecordReader(str(path)) as rr:
                assert list(rr) == []
                _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(rr.damage) == DAMAGE_CAP and rr.damage_past_cap == n - DAMAGE_CAP
        assert peak < 32 << 20  # the 16 MiB read buffer; listing every region took ~190 MiB
        print(f"\nRecordReader over {n} damaged records: {len(rr.damage)} listed, "
              f"{rr.damage_past_cap} counted, {peak / 2**20:.1f} MiB traced peak")

    def test_small_file_under_cap_listed_whole(self, tmp_path) -> None:
        path = tmp_path / "events.out.tfevents.1.crafted"
        hdr = struct.pack("<Q", 0)
        rec = hdr + struct.pack("<I", lib.slg_masked_crc32c(hdr, 8)) + b"\xde\xad\xbe\xef"
        path.write_bytes(rec * 10)
        rep = Reader(tmp_path).damage()[str(path)]
        assert len(rep.damage) == 10 and rep.damage_past_cap == 0 and rep.damage_count == 10


# ---- a root of runs read on several threads ----------------------------------------------------

def many_runs(root, rng, n: int = 200) -> None:
    """n runs of different sizes and shapes: plain and zstd files, rotated segments,
    a resumed run, MindSpore runs, a damaged file."""
    for k in range(n):
        run = root / f"run{k:03d}"
        if k % 50 == 7:
            with SummaryRecord(run) as rec:
                for step in (1, 2, 2, 3):
                    rec.add_value("scalar", "loss", rng.random())
                    rec.record(step)
            continue
        kw = {"compression": "zstd"} if k % 10 == 3 else {}
        with summarylog.Writer(run, **kw) as w:
            for i in range(rng.randrange(1, 400)):
                w.log({"loss": rng.random(), f"t{k % 7}": float(i)}, step=i)
        if k % 40 == 5:
            with summarylog.Writer(run, purge_step=3) as w:
                w.log({"loss": -1.0}, step=3)
    bad = next((root / "run011").iterdir())  # damaged mid-file: read up to it, reported
    with open(bad, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 40)


def assert_same_reads(a: Reader, b: Reader) -> None:
    sa, sb = a.scalars_all(), b.scalars_all()
    assert list(sa) == list(sb) and a.run_errors == b.run_errors == {}
    for run in sa:
        assert list(sa[run]) == list(sb[run]), run
        for tag, s in sa[run].items():
            for x, y in zip(s, sb[run][tag]):
                assert x.dtype == y.dtype
                np.testing.assert_array_equal(x, y)
    assert a.damage() == b.damage()


class TestThreads:
    def test_threads_1_and_4_read_the_same(self, tmp_path, rng) -> None:
        many_runs(tmp_path, rng)
        one, four = Reader(tmp_path, threads=1), Reader(tmp_path, threads=4)
        assert four.threads == 4 and one.threads == 1
        t0 = time.perf_counter()
        assert_same_reads(one, four)
        assert not four.damage()[str(next((tmp_path / "run011").iterdir()))].ok
        pd = require_module("pandas")
        fresh1, fresh4 = Reader(tmp_path, threads=1), Reader(tmp_path, threads=4)
        pd.testing.assert_frame_equal(fresh1.to_pandas(), fresh4.to_pandas())
        same_frame(fresh4.to_pandas(), old_to_pandas(fresh1))
        print(f"\n200 runs read on 1 and 4 threads alike ({time.perf_counter() - t0:.1f} s)")

    def test_default_threads(self, tmp_path) -> None:
        r = Reader(tmp_path)
        assert 1 <= r.threads <= 8 and r.threads <= (os.cpu_count() or 1)
        for bad, exc in (("2", TypeError), (2.0, TypeError), (True, TypeError), (0, ValueError),
                         (-3, ValueError)):
            with pytest.raises(exc, match="threads"):
                Reader(tmp_path, threads=bad)

    def test_unreadable_run_does_not_stop_the_others(self, tmp_path, rng) -> None:
        many_runs(tmp_path, rng, n=40)
        want = Reader(tmp_path, threads=1).scalars_all()
        r = Reader(tmp_path, threads=4)
        runs = r.runs()  # discovered; then a run's file vanishes before it is read
        gone = next((tmp_path / "run020").iterdir())
        gone.unlink()
        errors = r.load()
        assert list(errors) == ["run020"] and isinstance(errors["run020"], FileNotFoundError)
        assert errors["run020"].filename == str(gone)
        got = r.scalars_all()
        assert r.run_errors == {"run020": r.run_errors["run020"]}
        assert sorted(got) == [x for x in runs if x != "run020"]
        for run in got:
            for tag, s in got[run].items():
                np.testing.assert_array_equal(s.value, want[run][tag].value)
        require_module("pandas")
        with pytest.raises(FileNotFoundError):  # as on one thread: to_pandas names the failure
            r.to_pandas()
        (tmp_path / "run020").rmdir()
        r.refresh()
        assert r.load() == {} and len(r.scalars_all()) == len(runs) - 1
