"""Hostile input through the read side (issue 27): each test inflicts one
fault on the Reader or RecordReader and asserts the guarantee — no hang, no
unbounded memory or time, no silent loss, damage reported with its path.
Hang-prone cases run in a child Python with a generous timeout."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

from summarylog import Reader, Writer
from summarylog.dialects import mindspore as msd
from summarylog.dialects import tensorboard as tbd
from summarylog.pb import ms, tb
from summarylog.records import RecordReader, RecordWriter

from .conftest import child_env

MiB = 1 << 20


def _write(path, payloads) -> str:
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rw = RecordWriter(path)
    try:
        for p in payloads:
            rw.write(p)
    finally:
        rw.close()
    return path


def _bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _remove_chain(top: str) -> None:
    """Remove a deep chain of directories (top/d/d/...) without recursion:
    lift the child out, remove the parent, go on with the child."""
    parent, k, cur = os.path.dirname(top), 0, top
    while cur is not None:
        nxt = None
        if os.path.isdir(os.path.join(cur, "d")):
            k += 1
            nxt = os.path.join(parent, f".chain{k}")
            os.rename(os.path.join(cur, "d"), nxt)
        shutil.rmtree(cur)
        cur = nxt


def _child(code: str, timeout: float = 120) -> dict:
    """Run code in a child Python (the installed summarylog); it prints one
    JSON line, returned.  The timeout is the hang guard."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd="/",
                       env=child_env(), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _scalar(tag: bytes | str, value: float, step: int = 1) -> bytes:
    """A TensorBoard event holding one simple_value, its tag as raw bytes."""
    raw = tag if isinstance(tag, bytes) else tag.encode()
    body = b"\x0a" + bytes([len(raw)]) + raw + b"\x15" + struct.pack("<f", value)
    value_field = b"\x0a" + bytes([len(body)]) + body
    return (tb.Event(step=step, wall_time=1.0).SerializeToString()
            + b"\x2a" + bytes([len(value_field)]) + value_field)


# ---- item 2: an event with more values than a column chunk ----------------------

def test_event_with_65537_scalars_reads_in_bounded_time(tmp_path, figure):
    n = 65_537
    with Writer(tmp_path / "run") as w:
        w.log({f"t{i}": float(i) for i in range(n)}, step=3)
    out = _child(f"""
        import json, time, tracemalloc
        from summarylog import Reader
        tracemalloc.start()
        t = time.perf_counter()
        r = Reader({str(tmp_path)!r})
        tags = r.scalar_tags("run")
        kinds = r.tags("run")
        s = r.scalars("run", "t65536")
        rep = list(r.damage().values())[0]
        print(json.dumps({{"tags": len(tags), "kinds": len(kinds), "v": s.value.tolist(),
                          "step": s.step.tolist(), "ok": rep.ok,
                          "secs": time.perf_counter() - t,
                          "peak": tracemalloc.get_traced_memory()[1]}}))
    """)
    assert out["tags"] == n and out["kinds"] == n and out["ok"]
    assert out["v"] == [65536.0] and out["step"] == [3]
    figure(f"Reader on a {n}-scalar event: {out['secs']:.2f} s, "
           f"{out['peak'] / MiB:.1f} MiB peak Python allocation (it looped for ever before)")


# ---- item 3, 10, 13: discovery -------------------------------------------------------

def test_symlink_loops_and_deep_trees_are_walked_once(tmp_path, figure):
    root = tmp_path / "root"
    with Writer(root / "a") as w:
        w.add_scalar("x", 1.0, 1)
    os.symlink(".", root / "loop1")
    os.symlink(".", root / "loop2")
    os.symlink(str(root / "a"), root / "a_again")
    deep = root / "deep"
    d = str(deep)
    depth = 1500
    os.makedirs(d)
    for _ in range(depth):  # one level at a time: a path too long for makedirs
        os.mkdir(os.path.join(d, "d"))
        d = os.path.join(d, "d")
    cwd = os.getcwd()
    os.chdir(d)  # write the deepest run relative to itself (the path is long)
    try:
        with Writer(".") as w:
            w.add_scalar("x", 2.0, 1)
    finally:
        os.chdir(cwd)
    try:
        out = _child(f"""
            import json, time
            from summarylog import Reader
            t = time.perf_counter()
            r = Reader({str(root)!r})
            runs = r.runs()
            print(json.dumps({{"runs": runs, "errors": [(e.filename is not None, e.errno)
                                                       for e in r.discovery_errors],
                              "secs": time.perf_counter() - t}}))
        """)
    finally:
        _remove_chain(str(deep))  # pytest's own cleanup recurses once per level
    runs = out["runs"]
    assert runs.count("a") + runs.count("a_again") == 1, runs  # one directory, walked once
    assert not any(r.startswith("loop") for r in runs), runs
    deep_runs = [r for r in runs if r.startswith("deep")]
    # runs deeper than PATH_MAX are reported, never a RecursionError
    assert deep_runs or out["errors"], out
    assert all(named for named, _ in out["errors"])
    figure(f"two symlinks to '.', a link to a run and a {depth}-deep tree: "
           f"{len(runs)} runs found once each (the run {depth + 1} levels down "
           f"{'found' if deep_runs else 'reported'}) in {out['secs']:.2f} s, "
           f"{len(out['errors'])} errors (each with its path)")


def test_runs_on_two_mounts_with_the_same_inode_are_both_found(tmp_path, figure):
    """m1/run and m2/run on two fresh tmpfs mounts have the same inode
    number; keyed by the root's device, the second vanished."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare not available")
    script = tmp_path / "mounts.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, subprocess
        from summarylog import Reader, Writer
        root = {str(tmp_path / "root")!r}
        inodes = []
        for m in ("m1", "m2"):
            os.makedirs(os.path.join(root, m), exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "tmpfs", os.path.join(root, m)], check=True)
            with Writer(os.path.join(root, m, "run")) as w:
                w.add_scalar("x", 1.0, 1)
            inodes.append(os.stat(os.path.join(root, m, "run")).st_ino)
        r = Reader(root)
        print(json.dumps({{"runs": r.runs(), "inodes": inodes}}))
    """))
    r = subprocess.run(["unshare", "-rm", sys.executable, str(script)], cwd="/",
                       env=child_env(), capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and ("mount" in r.stderr or "unshare" in r.stderr):
        pytest.skip(f"no mount namespace here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["runs"] == ["m1/run", "m2/run"], out
    figure(f"runs on two tmpfs mounts with the same inode ({out['inodes'][0]}): "
           f"both found ({out['runs']})")


def test_unlistable_directory_is_reported_with_its_path(tmp_path, monkeypatch, figure):
    with Writer(tmp_path / "good") as w:
        w.add_scalar("x", 1.0, 1)
    bad = tmp_path / "bad"
    with Writer(bad) as w:
        w.add_scalar("x", 1.0, 1)
    real = os.scandir

    def scandir(path="."):  # EACCES with no filename, as some errors come
        if os.fspath(path) == str(bad):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    r = Reader(tmp_path)
    assert r.runs() == ["good"]
    (err,) = r.discovery_errors
    assert isinstance(err, PermissionError) and err.filename == str(bad)
    figure(f"an unlistable run directory: reported as {err!r}")


def test_fifo_named_like_an_event_file_never_blocks(tmp_path, figure):
    run = tmp_path / "run"
    with Writer(run) as w:
        w.add_scalar("x", 1.0, 1)
    fifo = run / "events.out.tfevents.9.fifo"
    os.mkfifo(fifo)
    out = _child(f"""
        import json, time
        from summarylog import Reader
        from summarylog.records import RecordReader
        t = time.perf_counter()
        try:
            RecordReader({str(fifo)!r})
            err = None
        except OSError as e:
            err = [type(e).__name__, e.filename, str(e)]
        r = Reader({str(tmp_path)!r})
        runs = r.runs()
        files = r.files("run")
        direct = Reader({str(fifo)!r})
        print(json.dumps({{"err": err, "runs": runs, "files": files,
                          "errors": [e.filename for e in r.discovery_errors],
                          "direct": direct.runs(),
                          "secs": time.perf_counter() - t}}))
    """, timeout=60)
    assert out["err"] is not None and out["err"][1] == str(fifo), out
    assert "regular file" in out["err"][2]
    assert out["runs"] == ["run"] and str(fifo) not in out["files"]
    assert out["errors"] == [str(fifo)]
    figure(f"RecordReader and Reader on a FIFO: refused in {out['secs']:.3f} s "
           f"({out['err'][0]}: {out['err'][2]})")


def test_record_reader_refuses_a_device(figure):
    with pytest.raises(OSError, match="regular file") as exc:
        RecordReader("/dev/null")
    assert exc.value.filename == "/dev/null"
    figure(f"RecordReader('/dev/null'): {exc.value}")


# ---- item 5: resume markers ----------------------------------------------------------

def _marker(step: int) -> bytes:
    return tb.Event(step=step, wall_time=1.0,
                    session_log=tb.SessionLog(status=tb.SessionLog.START)).SerializeToString()


def test_resume_markers_cost_linear_time(tmp_path, figure):
    rng = np.random.default_rng(5)
    # the rule checked against its definition on a small run
    steps = rng.integers(0, 50, 400)
    payloads, expect = [], []
    for i, s in enumerate(steps):
        if i % 7 == 3:
            payloads.append(_marker(int(s)))
            expect = [e for e in expect if e < s]
        else:
            payloads.append(_scalar("x", float(s), int(s)))
            expect.append(int(s))
    small = _write(tmp_path / "small" / "events.out.tfevents.1.h", payloads)
    assert Reader(small).scalars(".", "x").step.tolist() == expect
    n = 200_000  # marker/scalar pairs (12.8 s when markers were quadratic)
    big = _write(tmp_path / "big" / "events.out.tfevents.1.h",
                 [p for i in range(n) for p in (_marker(i), _scalar("x", 1.0, i))])
    out = _child(f"""
        import json, time
        from summarylog import Reader
        t = time.perf_counter()
        s = Reader({big!r}).scalars(".", "x")
        print(json.dumps({{"n": len(s.step), "secs": time.perf_counter() - t}}))
    """)
    assert out["n"] == n
    figure(f"{n} marker/scalar pairs read in {out['secs']:.2f} s")


# ---- item 6 and 17: zstd ------------------------------------------------------------

def _zstd_events(tmp_path, n: int, name: str = "events.out.tfevents.1.h") -> tuple[str, bytes]:
    """A plain event file of n scalars and its zstd-compressed bytes."""
    plain = _write(tmp_path / "plain" / name, [_scalar("x", float(i), i) for i in range(n)])
    import zstandard

    return plain, zstandard.ZstdCompressor(level=3).compress(_bytes(plain))


def test_zstd_bomb_output_is_bounded_per_step(tmp_path, figure):
    from summarylog.records.zstd_source import OUT_BUDGET

    n = 2_000_000  # identical-size records: ~60 MiB that compress to a few KiB
    import zstandard

    rec_path = _write(tmp_path / "one" / "r", [_scalar("x", 1.0, 7)])
    rec = _bytes(rec_path)
    data = zstandard.ZstdCompressor(level=3).compress(rec * n)
    p = tmp_path / "bomb" / "events.out.tfevents.1.h.zst"
    p.parent.mkdir()
    p.write_bytes(data)
    tracemalloc.start()
    t = time.perf_counter()
    rr = RecordReader(str(p))
    count = sum(nsp for _, _, nsp, _ in rr.scan_batches())
    secs = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    largest = rr.largest_step
    assert count == n and rr.damage == []
    assert largest <= OUT_BUDGET + (1 << 17), largest
    figure(f"a {len(data)} B zstd file of {len(rec) * n / MiB:.0f} MiB of records: at most "
           f"{largest / MiB:.2f} MiB decoded per step, {peak / MiB:.1f} MiB peak, {secs:.1f} s")


def test_zstd_record_header_claiming_2_40_bytes(tmp_path, figure):
    import zstandard

    plain, _ = _zstd_events(tmp_path, 20)
    data = _bytes(plain)
    header = struct.pack("<Q", 1 << 40)
    from summarylog._native import lib

    lie = header + struct.pack("<I", lib.slg_masked_crc32c(header, 8))
    stream = lie + b"\0" * 100 + data  # the lie, then every record intact
    p = tmp_path / "lie" / "events.out.tfevents.1.h.zst"
    p.parent.mkdir()
    p.write_bytes(zstandard.ZstdCompressor().compress(stream))
    tracemalloc.start()
    rr = RecordReader(str(p))
    recs = list(rr)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(recs) == 20 and rr.damage and rr.damage[0].offset == 0
    assert peak < 64 * MiB
    figure(f"a zstd record header claiming 2^40 bytes: damage {rr.damage[0].kind} reported, "
           f"all 20 records after it read, {peak / MiB:.1f} MiB peak")


def test_skippable_zstd_frames_are_valid(tmp_path, figure):
    _, data = _zstd_events(tmp_path, 30)
    import zstandard

    skip = struct.pack("<II", 0x184D2A50, 7) + b"summary"
    second = zstandard.ZstdCompressor().compress(b"")  # an empty frame between
    p = tmp_path / "zst" / "events.out.tfevents.1.h.zst"
    p.parent.mkdir()
    p.write_bytes(skip + data + struct.pack("<II", 0x184D2A5F, 0) + second + skip)
    r = Reader(str(p))
    rep = r.damage()[str(p)]
    assert r.scalars(".", "x").step.tolist() == list(range(30))
    assert rep.ok and rep.tail is None, rep
    rr = RecordReader(str(p))
    assert len(list(rr)) == 30 and rr.damage == [] and rr.tail is None
    figure("skippable frames before, between and after the data: 30 records, no damage")


# ---- item 7: tensor shapes ---------------------------------------------------------------

def test_tensor_shape_without_values_is_not_expanded(tmp_path, figure):
    t = tb.TensorProto(dtype=tb.DataType.values_by_name["DT_INT8"].number)
    t.tensor_shape.dim.add(size=1 << 28)
    ev = tb.Event(step=1, wall_time=1.0)
    ev.summary.value.add(tag="big", tensor=t)
    ev.summary.value.add(tag="loss", simple_value=0.5)
    one = tb.TensorProto(dtype=tb.DataType.values_by_name["DT_FLOAT"].number, float_val=[1.0])
    one.tensor_shape.dim.add(size=1 << 26)
    ev2 = tb.Event(step=2, wall_time=1.0)
    ev2.summary.value.add(tag="big", tensor=one)
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h",
                  [ev.SerializeToString(), ev2.SerializeToString()])
    size = os.path.getsize(path)
    tracemalloc.start()
    t0 = time.perf_counter()
    r = Reader(tmp_path)
    kinds = r.tag_kinds("run")
    events = list(r.events("run"))
    rep = r.damage("run", deep=True)[path]
    secs = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert kinds == {"big": ["tensor"], "loss": ["scalar"]}
    assert [(e.tag, e.value) for e in events] == [("loss", 0.5)]
    assert rep.bad_values == 2 and rep.bad_events == 0 and not rep.ok
    assert peak < 16 * MiB
    figure(f"a {size} B file declaring 2^28 + 2^26 tensor elements: tag listing, events and "
           f"damage in {secs:.2f} s, {peak / MiB:.1f} MiB peak; 2 values reported malformed, "
           f"'loss' kept (cap {tbd.MAX_EXPANDED_ELEMENTS} elements)")


def test_mindspore_tensor_shape_without_values_is_not_expanded(tmp_path, figure):
    ev = ms.Event(step=1, wall_time=1.0)
    v = ev.summary.value.add(tag="big")
    v.tensor.dims.extend([1 << 14, 1 << 14])
    v.tensor.data_type = ms.DataType.values_by_name["DT_FLOAT32"].number
    path = _write(tmp_path / "run" / "x.summary.1", [ev.SerializeToString()])
    tracemalloc.start()
    r = Reader(tmp_path)
    events = list(r.events("run"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert events == [] and r.damage("run", deep=True)[path].bad_values == 1
    assert peak < 16 * MiB
    figure(f"a {os.path.getsize(path)} B MindSpore file declaring 2^28 elements: "
           f"reported malformed, {peak / MiB:.1f} MiB peak")


def test_mindspore_tensor_data_not_matching_its_shape_is_reported(tmp_path, figure):
    ev = ms.Event(step=1, wall_time=1.0)
    v = ev.summary.value.add(tag="t")
    v.tensor.dims.extend([3])
    v.tensor.data_type = ms.DataType.values_by_name["DT_FLOAT32"].number
    v.tensor.float_data.extend([1.0, 2.0, 3.0, 4.0, 5.0])
    ev.summary.value.add(tag="loss", scalar_value=0.5)
    path = _write(tmp_path / "run" / "x.summary.1", [ev.SerializeToString()])
    r = Reader(tmp_path)
    assert [(e.tag, e.value) for e in r.events("run")] == [("loss", 0.5)]
    assert r.damage("run", deep=True)[path].bad_values == 1
    figure("a MindSpore tensor of 5 values with shape [3]: reported malformed (it read back as "
           "zeros before), 'loss' of the same event kept")


# ---- items 11 and 12: tags and values --------------------------------------------------

@pytest.mark.parametrize("dialect", ["tensorboard", "mindspore"])
def test_non_utf8_tags_stay_apart_and_are_reported(tmp_path, dialect, figure):
    tags = [b"acc\xff", b"acc\xfe", "acc\ufffd".encode(), b"acc"]
    if dialect == "tensorboard":
        payloads = [_scalar(t, float(i)) for i, t in enumerate(tags)]
        name = "events.out.tfevents.1.h"
    else:
        payloads = []
        for i, t in enumerate(tags):  # Value: tag = 1, scalar_value = 3 (float)
            body = b"\x0a" + bytes([len(t)]) + t + b"\x1d" + struct.pack("<f", float(i))
            value = b"\x0a" + bytes([len(body)]) + body
            payloads.append(ms.Event(step=1, wall_time=1.0).SerializeToString()
                            + b"\x2a" + bytes([len(value)]) + value)
        name = "x.summary.1"
    path = _write(tmp_path / "run" / name, payloads)
    r = Reader(tmp_path)
    expect = sorted(t.decode("utf-8", "surrogateescape") for t in tags)
    assert r.scalar_tags("run") == expect
    assert r.damage("run")[path].bad_values == 2
    events = list(r.events("run"))
    assert sorted(e.tag for e in events) == expect
    assert sorted(e.value for e in events) == [0.0, 1.0, 2.0, 3.0]
    assert r.damage("run", deep=True)[path].bad_values == 2
    figure(f"{dialect}: 4 values under acc\\xff, acc\\xfe, acc\\ufffd, acc read back as 4 tags "
           f"(2 reported malformed)")


def test_one_undecodable_value_keeps_the_rest_of_its_event(tmp_path, figure):
    ev = tb.Event(step=4, wall_time=1.0)
    ev.summary.value.add(tag="loss", simple_value=0.25)
    bad = ev.summary.value.add(tag="weird", tensor=tb.TensorProto(dtype=99))  # no such dtype
    bad.metadata.plugin_data.plugin_name = "other"
    ev.summary.value.add(tag="acc", simple_value=0.75)
    raw = tb.Event(step=5, wall_time=1.0)
    raw.summary.value.add(tag="loss", simple_value=0.5)
    broken = raw.SerializeToString()
    broken += b"\x2a\x05\x0a\x03\x0a\x05a"  # a second Summary whose value's tag is cut short
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h", [ev.SerializeToString(), broken])
    r = Reader(tmp_path)
    assert r.scalars("run", "loss").value.tolist() == [0.25, 0.5]  # the native path
    assert r.damage("run")[path].bad_values == 1
    got = [(e.tag, e.step, e.value) for e in r.events("run")]
    assert got == [("loss", 4, 0.25), ("acc", 4, 0.75), ("loss", 5, 0.5)], got
    rep = r.damage("run", deep=True)[path]
    assert rep.bad_values == 2 and rep.bad_events == 0 and not rep.ok
    figure(f"events with one undecodable value: the other values kept ({len(got)}), "
           f"{rep.bad_values} values reported malformed")


def test_group_fields_are_valid(tmp_path, figure):
    ev = tb.Event(step=1, wall_time=1.0)
    ev.summary.value.add(tag="x", simple_value=1.5)
    payload = ev.SerializeToString()
    # group 15 holding a varint and an (empty) group 16
    group = b"\x7b" + b"\x08\x01" + b"\x83\x01" + b"\x84\x01" + b"\x7c"
    # a group at the Event level and inside the value
    i = payload.index(b"\x0a\x01x")
    value = payload[i:] + group
    inner = b"\x0a" + bytes([len(value)]) + value
    payload = payload[: payload.index(b"\x2a")] + group + b"\x2a" + bytes([len(inner)]) + inner
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h", [payload])
    r = Reader(tmp_path)
    assert r.scalars("run", "x").value.tolist() == [1.5]
    assert [(e.tag, e.value) for e in r.events("run")] == [("x", 1.5)]
    assert r.damage("run", deep=True)[path].ok
    figure("protobuf group fields (nested) at the Event and Value level: read, nothing flagged")


def test_tag_of_several_kinds(tmp_path, figure):
    with Writer(tmp_path / "run") as w:
        w.add_scalar("w", 1.0, 1)
        w.add_histogram("w", np.arange(10.0), 1)
        w.add_scalar("loss", 2.0, 1)
    r = Reader(tmp_path)
    assert r.tag_kinds("run") == {"loss": ["scalar"], "w": ["scalar", "histogram"]}
    assert r.tags("run") == {"loss": "scalar", "w": "scalar"}
    figure(f"a tag with scalars and a histogram: tag_kinds {r.tag_kinds('run')}")


# ---- item 14: lineage ------------------------------------------------------------------

def test_hostile_lineage_metric(tmp_path, figure):
    enc = msd.MindSporeEncoder()
    payloads = [enc.lineage(1.0, "eval_lineage",
                            msd.lineage_message("eval_lineage", {"metric": metric}))
                for metric in ("[" * 100_000, "[1, 2]", json.dumps({"acc": 0.5}))]
    paths = []
    for i, p in enumerate(payloads):
        paths.append(_write(tmp_path / f"run{i}" / "x.summary.1_lineage", [p]))
    r = Reader(tmp_path)
    rows = {row["run"]: row for row in r.lineage()}
    assert rows["run0"]["metric"] == {"_raw": "[" * 100_000}
    assert rows["run1"]["metric"] == {"_raw": "[1, 2]"}
    assert rows["run2"]["metric"] == {"acc": 0.5}
    dmg = r.lineage_damage()
    assert [dmg[p].bad_values for p in paths] == [1, 1, 0]
    figure("lineage metrics nested 100 000 deep and a JSON list: kept raw, reported "
           "malformed, no RecursionError")


def test_zstd_frame_header_claiming_2_40_bytes(tmp_path, figure):
    import zstandard

    plain, _ = _zstd_events(tmp_path, 20)
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(_bytes(plain))
    fhd = frame[4]
    single = (fhd >> 5) & 1
    fcs_len = {0: single, 1: 2, 2: 4, 3: 8}[fhd >> 6]
    body = 5 + (0 if single else 1) + fcs_len
    lie = (frame[:4] + bytes([(fhd & 0x3F) | 0xC0]) + frame[5 : 5 + (0 if single else 1)]
           + struct.pack("<Q", 1 << 40) + frame[body:])
    good = zstandard.ZstdCompressor().compress(_bytes(plain))
    p = tmp_path / "fcs" / "events.out.tfevents.1.h.zst"
    p.parent.mkdir()
    p.write_bytes(lie + good)
    tracemalloc.start()
    rr = RecordReader(str(p))
    recs = list(rr)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [d.kind for d in rr.damage] == ["bad_zstd_frame"] and len(recs) == 20
    assert peak < 16 * MiB
    figure(f"a zstd frame header claiming 2^40 bytes: reported as {rr.damage[0].kind}, the "
           f"next frame's 20 records read, {peak / MiB:.1f} MiB peak")
