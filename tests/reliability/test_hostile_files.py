"""Hostile event files through summarylog.Reader: random bytes, every flipped
bit, truncation at every offset, zero-filled tails, a length of 2^63, an
empty file, a directory named like an event file.  The Reader never
crashes, never allocates more than the file's size plus a fixed scratch
(0.45 MiB of columns, whatever a length field claims),
reports each kind of damage, and recovers every intact record after a
damaged one.  (The native scanner's own fuzz, 10^5 streams under
ASan+UBSan, is tests/test_c_core.py.)"""

from __future__ import annotations

import collections
import os
import struct
import sys
import tracemalloc

import numpy as np
import pytest

from summarylog import Reader, Writer

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import reference_scanner as ref  # noqa: E402

# a Reader's fixed scratch: 16 384 values x 28 B of columns for small files
SCRATCH = 1 << 20
N = 20  # scalars in the sample file: records 1..N (record 0 is the file version)


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> tuple[bytes, list[int], str]:
    d = tmp_path_factory.mktemp("sample")
    with Writer(d) as w:
        for i in range(N):
            w.add_scalar("x", float(i), i)
    (path,) = w.files
    with open(path, "rb") as f:
        data = f.read()
    offs, pos = [0], 0
    while pos < len(data):
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
        offs.append(pos)
    assert offs[-1] == len(data) and len(offs) == N + 2
    return data, offs, os.path.basename(path)


def _read(path: str) -> tuple[np.ndarray, object]:
    r = Reader(path)
    runs = r.runs()
    steps = r.scalars(runs[0], "x").step if runs and "x" in r.tags(runs[0]) else np.array([], int)
    (rep,) = r.damage().values()
    return steps, rep


def _put(tmp_path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_truncation_at_every_offset(tmp_path, sample, figure):
    data, offs, name = sample
    torn = 0
    for k in range(len(data) + 1):
        steps, rep = _read(_put(tmp_path, name, data[:k]))
        whole = sum(1 for e in offs[2:] if e <= k)  # scalar records wholly inside
        np.testing.assert_array_equal(steps, np.arange(whole))
        assert rep.damage == [] and rep.bad_events == 0
        if k in offs:
            assert rep.tail is None
        else:
            assert rep.tail is not None and rep.tail.kind == "torn", (k, rep)
            torn += 1
    figure(f"{len(data) + 1} truncations of a {len(data)} B file: every intact record read, "
           f"{torn} torn tails reported, no false damage")


def test_every_flipped_bit(tmp_path, sample, figure):
    data, offs, name = sample
    kinds: collections.Counter[str] = collections.Counter()
    for bit in range(len(data) * 8):
        buf = bytearray(data)
        buf[bit // 8] ^= 1 << (bit % 8)
        steps, rep = _read(_put(tmp_path, name, bytes(buf)))
        rec = next(i for i in range(len(offs) - 1) if offs[i] <= bit // 8 < offs[i + 1])
        # exactly the record holding the bit is lost (record 0 holds no scalar)
        want = [i for i in range(N) if i + 1 != rec]
        np.testing.assert_array_equal(steps, want, err_msg=f"bit {bit} (record {rec})")
        assert rep.damage or rep.tail, (bit, rep)  # and it is reported, never silent
        for d in rep.damage:
            kinds[d.kind] += 1
        if rep.tail:
            kinds[f"tail:{rep.tail.kind}"] += 1
    assert {"bad_length_crc", "bad_data_crc"} <= set(kinds), kinds
    figure(f"{len(data) * 8} single-bit flips: each lost exactly its own record and every "
           f"record after it was recovered; damage reported every time ({dict(kinds)})")


def test_zero_filled_tails(tmp_path, sample, figure):
    data, offs, name = sample
    for k in range(1, len(data) - offs[1]):
        steps, rep = _read(_put(tmp_path, name, data[:-k] + b"\0" * k))
        # the records the zeros left as they were (a tail byte may be 0 already)
        changed = next((i for i in range(len(data) - k, len(data)) if data[i]), len(data))
        whole = sum(1 for e in offs[2:] if e <= changed)
        np.testing.assert_array_equal(steps, np.arange(whole))
        if changed < len(data):
            assert rep.damage or rep.tail, (k, rep)
    figure(f"{len(data) - offs[1] - 1} zero-filled tails: every record before the zeros read, "
           f"the zeros reported each time")


@pytest.mark.parametrize("length", [1 << 63, (1 << 64) - 1, 1 << 40, (1 << 31) + 5])
def test_huge_length_field(tmp_path, sample, length, figure):
    data, offs, name = sample
    # a header with a valid length CRC claiming `length` bytes, between records 5 and 6
    bad = data[:offs[6]] + ref.header(length) + data[offs[6]:]
    path = _put(tmp_path, name, bad)
    _read(path)  # warm: imports and the Reader's fixed scratch
    tracemalloc.start()
    try:
        steps, rep = _read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(steps, np.arange(N))  # the records after it recovered
    assert [d.kind for d in rep.damage] == ["length_past_eof"], rep
    assert peak < len(bad) + SCRATCH, peak  # never sized by the claim
    # as the last thing in the file: reported (a tail still being written, or damage)
    steps, rep = _read(_put(tmp_path, name, data + ref.header(length)))
    np.testing.assert_array_equal(steps, np.arange(N))
    assert rep.damage or rep.tail, rep
    figure(f"length field {length:#x}: mid-file, all {N} records recovered and "
           f"length_past_eof reported; at the end, reported as "
           f"{rep.damage[0].kind if rep.damage else rep.tail.kind}; peak Python allocation "
           f"{peak} B for a {len(bad)} B file")


def test_empty_file_and_directory_named_like_event_files(tmp_path, sample, figure):
    data, _, name = sample
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.out.tfevents.1.host.0").write_bytes(b"")
    (run / "events.out.tfevents.2.host.0").mkdir()  # a directory with an event file's name
    (run / "events.out.tfevents.2.host.0" / name).write_bytes(data)
    (run / name).write_bytes(data)
    r = Reader(tmp_path)
    runs = r.runs()
    assert "run" in runs
    np.testing.assert_array_equal(r.scalars("run", "x").step, np.arange(N))
    reports = r.damage("run")
    empty = reports[str(run / "events.out.tfevents.1.host.0")]
    assert empty.records == 0 and empty.ok and empty.tail is None
    r2 = Reader(run / "events.out.tfevents.1.host.0")  # the empty file on its own
    assert r2.runs() == [] or r2.scalar_tags(r2.runs()[0]) == []
    figure(f"empty file: 0 records, no damage; directory named like an event file: treated as "
           f"a run directory, not opened as a file (runs {sorted(runs)})")


def test_random_bytes(tmp_path, rng, figure):
    reported = 0
    for i in range(300):
        blob = rng.randbytes(rng.randrange(0, 4096))
        path = _put(tmp_path, f"events.out.tfevents.{i}.host.0", blob)
        tracemalloc.start()
        try:
            r = Reader(path)
            for run in r.runs():
                for tag in r.scalar_tags(run):
                    r.scalars(run, tag)
            (rep,) = r.damage().values()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < len(blob) + SCRATCH, (len(blob), peak)
        if blob:
            assert not rep.ok or rep.tail is not None, rep
            reported += 1
        os.unlink(path)
    figure(f"300 files of random bytes (0-4 KiB): no crash, damage reported for all {reported} "
           f"non-empty ones")
