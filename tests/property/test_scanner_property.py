"""Property tests: the native RecordReader against the pure-Python reference
scanner (tests/reference_scanner.py) on random record streams with random
damage, for every chunk size, plain and zstd-compressed.

Profiles (tests/conftest.py): HYPOTHESIS_PROFILE=default|ci (200 examples) or
long (20000 examples)."""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import reference_scanner as ref
from summarylog.errors import CorruptRecordError
from summarylog.records import RecordReader
from summarylog.records.reader import ZSTD_MAGIC

# Every test writes its own temporary file; function-scoped fixtures such as
# tmp_path are not reset between hypothesis examples, so use tempfile.
_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                           HealthCheck.data_too_large])

HUGE_LENGTHS = [2**63, 2**64 - 1, 2**64 - 16, 2**63 - 1, 2**32, 2**40, 2**31 - 1]

# -- strategies --------------------------------------------------------------

_small_payload = st.binary(max_size=300)
_large_payload = st.integers(301, 6000).flatmap(
    lambda n: st.sampled_from([b"\x00", b"\xab", b"\x12\x34\x56"]).map(lambda u: (u * n)[:n])
)
_payload = st.one_of(
    _small_payload,
    _small_payload,
    _small_payload,
    _large_payload,
    # a payload that itself holds a whole record: a tempting false resync point
    st.builds(lambda a, b, c: a + ref.frame(b) + c, st.binary(max_size=8),
              st.binary(max_size=40), st.binary(max_size=8)),
    st.just(b""),
)


@st.composite
def record(draw: Any) -> bytes:
    """One record, usually intact, sometimes damaged at the record level."""
    payload = draw(_payload)
    body = payload + struct.pack("<I", ref.masked_crc32c(payload))
    kind = draw(st.sampled_from(
        ["ok"] * 8 + ["huge", "wrong_len", "bad_data", "zeros", "garbage", "bad_len_crc"]
    ))
    if kind == "ok":
        return ref.header(len(payload)) + body
    if kind == "huge":  # a length CRC that validates, a length far past any EOF
        return ref.header(draw(st.sampled_from(HUGE_LENGTHS))) + body
    if kind == "wrong_len":  # valid length CRC, mis-framed record
        delta = draw(st.integers(-len(payload), 64).filter(lambda d: d != 0))
        return ref.header(len(payload) + delta) + body
    if kind == "bad_data":
        rec = bytearray(ref.header(len(payload)) + body)
        i = draw(st.integers(12, len(rec) - 1))
        rec[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(rec)
    if kind == "bad_len_crc":
        rec = bytearray(ref.header(len(payload)) + body)
        i = draw(st.integers(0, 11))
        rec[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(rec)
    if kind == "zeros":  # a zero-filled gap, then the record
        return bytes(draw(st.integers(1, 700))) + ref.header(len(payload)) + body
    # random bytes, then the record
    return draw(st.binary(min_size=1, max_size=64)) + ref.header(len(payload)) + body


@st.composite
def mutate(draw: Any, data: bytes) -> bytes:
    """Byte-level damage anywhere in the stream."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(
            ["flip", "overwrite", "truncate", "zero_tail", "zero_range", "insert", "delete",
             "huge_at_record"]
        ))
        n = len(buf)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite" and n:
            i = draw(st.integers(0, n - 1))
            chunk = draw(st.binary(min_size=1, max_size=16))
            buf[i : i + len(chunk)] = chunk[: n - i]
        elif op == "truncate":
            del buf[draw(st.integers(0, n)) :]
        elif op == "zero_tail":
            buf += bytes(draw(st.sampled_from([1, 7, 11, 12, 13, 100, 4096])))
        elif op == "zero_range" and n:
            i = draw(st.integers(0, n - 1))
            k = draw(st.integers(1, 600))
            buf[i : i + k] = bytes(min(k, n - i))
        elif op == "insert":
            i = draw(st.integers(0, n))
            buf[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del buf[i : i + draw(st.integers(1, 16))]
        elif op == "huge_at_record":
            # set the length of a record the reference sees to 2**63, with
            # its length CRC recomputed so that it validates
            offs = ref.scan(bytes(buf)).record_offsets
            if offs:
                i = draw(st.sampled_from(offs))
                buf[i : i + 12] = ref.header(draw(st.sampled_from(HUGE_LENGTHS)))
    return bytes(buf)


@st.composite
def streams(draw: Any) -> bytes:
    recs = draw(st.lists(record(), max_size=12))
    return draw(mutate(b"".join(recs)))


chunk_sizes = st.one_of(st.integers(64, 4096), st.sampled_from([64, 65, 76, 77, 4096]))

# -- helpers -----------------------------------------------------------------


def _write(data: bytes, suffix: str = "") -> str:
    if not suffix:
        # a file that starts with the zstd magic is read as zstd (a plain
        # record would need a length >= 0xFD2FB528 to start that way)
        assume(not data.startswith(ZSTD_MAGIC))
    fd, path = tempfile.mkstemp(prefix="slg-prop-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _read(path: str, **kw: Any) -> tuple[list[bytes], list[tuple], tuple | None]:
    with RecordReader(path, **kw) as r:
        payloads = list(r)
        return payloads, [tuple(d) for d in r.damage], None if r.tail is None else tuple(r.tail)


def _expected(data: bytes, verify: bool = True) -> tuple[list[bytes], list[tuple], tuple | None]:
    res = ref.scan(data, verify=verify)
    tail = None if res.tail is None else tuple(res.tail)
    return res.payloads, [tuple(d) for d in res.damage], tail


def _check_equal(got: tuple, want: tuple, data: bytes) -> None:
    assert_msg = f"data ({len(data)} B) = {data.hex()}"
    try:
        note(assert_msg)
    except Exception:  # outside a hypothesis test
        pass
    assert got[1] == want[1], "damage differs"
    assert got[2] == want[2], "tail differs"
    assert len(got[0]) == len(want[0]), "number of payloads differs"
    assert got[0] == want[0], "payloads differ"


# -- tests -------------------------------------------------------------------


@_SETTINGS
@given(data=streams(), chunk=chunk_sizes)
def test_reader_matches_reference(data: bytes, chunk: int) -> None:
    path = _write(data)
    try:
        want = _expected(data)
        with RecordReader(path, chunk_size=chunk) as r:
            got = (list(r), [tuple(d) for d in r.damage],
                   None if r.tail is None else tuple(r.tail))
            _check_equal(got, want, data)
            # reading again without growth: nothing new, same damage and tail
            assert list(r) == []
            assert [tuple(d) for d in r.damage] == want[1]
            assert (None if r.tail is None else tuple(r.tail)) == want[2]
            # offset: where the next read starts
            if want[2] is not None:
                assert r.offset == want[2][0]
    finally:
        os.unlink(path)


@_SETTINGS
@given(data=streams(), chunk=chunk_sizes)
def test_reader_matches_reference_without_verify(data: bytes, chunk: int) -> None:
    path = _write(data)
    try:
        _check_equal(_read(path, chunk_size=chunk, verify=False), _expected(data, verify=False),
                     data)
    finally:
        os.unlink(path)


@_SETTINGS
@given(data=streams(), chunks=st.lists(chunk_sizes, min_size=2, max_size=3))
def test_chunk_size_does_not_matter(data: bytes, chunks: list[int]) -> None:
    path = _write(data)
    try:
        results = [_read(path, chunk_size=c) for c in chunks] + [_read(path)]
        for other in results[1:]:
            assert other == results[0]
    finally:
        os.unlink(path)


@_SETTINGS
@given(data=streams(), chunk=chunk_sizes)
def test_strict_raises_iff_damage(data: bytes, chunk: int) -> None:
    res = ref.scan(data)
    path = _write(data)
    try:
        got: list[bytes] = []
        r = RecordReader(path, chunk_size=chunk, strict=True)
        try:
            for p in r:
                got.append(p)
        except CorruptRecordError as e:
            note(f"data = {data.hex()}")
            assert res.damage, f"raised {e} but the reference finds no damage"
            first = res.damage[0]
            assert (e.offset, e.kind, e.length) == tuple(first)
            assert e.path == path
            # "raise at the first damage instead of ... reading on": exactly
            # the records before the damage were yielded
            before = [p for p, off in zip(res.payloads, res.record_offsets) if off < first.offset]
            assert got == before
        else:
            assert not res.damage, f"no error, but the reference finds {res.damage}"
            assert got == res.payloads
            assert (None if r.tail is None else tuple(r.tail)) == (
                None if res.tail is None else tuple(res.tail))
        finally:
            r.close()
    finally:
        os.unlink(path)


@_SETTINGS
@given(data=streams(), chunk=chunk_sizes, cuts=st.lists(st.floats(0, 1), max_size=3),
       level=st.sampled_from([1, 3]))
def test_zstd_frames_match_reference(data: bytes, chunk: int, cuts: list[float],
                                     level: int) -> None:
    """The same stream, compressed as several zstd frames, reads back like the
    plain stream (damage offsets are decompressed-stream offsets)."""
    points = sorted({int(c * len(data)) for c in cuts} | {0, len(data)})
    cctx = zstandard.ZstdCompressor(level=level)
    blob = b"".join(cctx.compress(data[a:b]) for a, b in zip(points, points[1:]) if b > a)
    assume(blob)  # an empty file is not recognisably zstd
    path = _write(blob, suffix=".zst")
    try:
        want = _expected(data)
        with RecordReader(path, chunk_size=chunk) as r:
            assert r.compressed
            got = (list(r), [tuple(d) for d in r.damage],
                   None if r.tail is None else tuple(r.tail))
            _check_equal(got, want, data)
            assert list(r) == []
            assert [tuple(d) for d in r.damage] == want[1]
    finally:
        os.unlink(path)


@_SETTINGS
@given(data=streams(), chunk=chunk_sizes, split=st.floats(0, 1),
       more=st.lists(st.binary(max_size=80), max_size=4))
def test_resume_after_growth(data: bytes, chunk: int, split: float, more: list[bytes]) -> None:
    """Read a prefix, let the file grow, read again with the same reader: the
    second read scans the grown file from where the first one stopped (its
    tail's start, else the old end of file)."""
    final = data + b"".join(ref.frame(p) for p in more)
    cut = int(split * len(data))
    path = _write(final[:cut])
    try:
        with RecordReader(path, chunk_size=chunk) as r:
            first = list(r)
            res1 = ref.scan(final[:cut])
            assert first == res1.payloads
            assert [tuple(d) for d in r.damage] == [tuple(d) for d in res1.damage]
            restart = res1.tail.offset if res1.tail is not None else cut
            assert r.offset == restart
            with open(path, "ab") as f:
                f.write(final[cut:])
            second = list(r)
            res2 = ref.scan(final[restart:])
            note(f"final = {final.hex()} cut = {cut}")
            assert second == res2.payloads
            assert [tuple(d) for d in r.damage[len(res1.damage):]] == [
                (o + restart, k, n) for o, k, n in res2.damage]
            assert (None if r.tail is None else tuple(r.tail)) == (
                None if res2.tail is None
                else (res2.tail.offset + restart, res2.tail.kind, res2.tail.length))
    finally:
        os.unlink(path)


@pytest.mark.parametrize("length", HUGE_LENGTHS)
def test_huge_length_record_examples(tmp_path, length: int) -> None:
    """A deterministic spot check of the 2**63-style headers, each position."""
    good = [ref.frame(bytes([i]) * (i * 3)) for i in range(4)]
    for k in range(len(good) + 1):
        data = b"".join(good[:k]) + ref.header(length) + b"junk" * 5 + b"".join(good[k:])
        path = tmp_path / f"h{k}"
        path.write_bytes(data)
        for chunk in (64, 100, 4096):
            _check_equal(_read(str(path), chunk_size=chunk), _expected(data), data)
