"""summarylog.records.RecordReader: round trips, every kind of damage the
scanner classifies (docs/format.md §2), strict mode, resuming and following a
growing file, zstd files, and files written by tensorboardX and TensorBoard."""

from __future__ import annotations

import glob
import os
import subprocess
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
import zstandard

import reference_scanner as ref
from conftest import require_tool
from summarylog.errors import CorruptRecordError
from summarylog.records import Damage, RecordReader, RecordWriter, Tail

# Payloads whose bytes never form a valid header by accident (checked by
# the reference scanner in `_layout`), with nonzero first length bytes so a
# partial header is "torn", never "zero_tail".
FIVE = [b"alpha", b"bravo-" * 7, b"c", b"delta!" * 20, b"echo"]


def _layout(payloads: list[bytes]) -> tuple[bytes, list[int]]:
    """The framed stream and the start offset of each record (plus the end)."""
    data = b"".join(ref.frame(p) for p in payloads)
    offs = [0]
    for p in payloads:
        offs.append(offs[-1] + 16 + len(p))
    res = ref.scan(data)
    assert res.payloads == payloads and not res.damage and res.tail is None
    return data, offs


def read_all(path, **kw) -> tuple[list[bytes], RecordReader]:
    r = RecordReader(path, **kw)
    out = list(r)
    r.close()
    return out, r


def write_records(path, payloads, **kw) -> str:
    with RecordWriter(path, **kw) as w:
        for p in payloads:
            w.write(p)
    return w.path


class TestCleanRoundTrip:
    PAYLOADS = [b"", b"x", b"", bytes(range(256)) * 3, b"\x00" * 50, os.urandom(10_000), b""]

    @pytest.mark.parametrize("chunk", [64, 100, 4096, 8 << 20])
    def test_round_trip(self, tmp_path, chunk) -> None:
        path = write_records(tmp_path / "f", self.PAYLOADS)
        got, r = read_all(path, chunk_size=chunk)
        assert got == self.PAYLOADS
        assert r.damage == [] and r.tail is None
        assert r.offset == os.path.getsize(path)
        assert r.records_read == len(self.PAYLOADS)
        assert not r.compressed

    def test_payload_larger_than_chunk(self, tmp_path) -> None:
        big = os.urandom(1 << 20)
        path = write_records(tmp_path / "f", [b"a", big, b"b"])
        got, r = read_all(path, chunk_size=64)
        assert got == [b"a", big, b"b"] and r.damage == [] and r.tail is None

    def test_bytes_identical_to_reference_framing(self, tmp_path) -> None:
        path = write_records(tmp_path / "f", self.PAYLOADS)
        assert Path(path).read_bytes() == b"".join(ref.frame(p) for p in self.PAYLOADS)

    def test_more_records_than_one_scan_call_holds(self, tmp_path) -> None:
        # > 65536 spans in one chunk: the scanner returns "spans full" and is called again
        payloads = [b""] * 70_000 + [b"last"]
        path = tmp_path / "f"
        path.write_bytes(b"".join(ref.frame(p) for p in payloads))
        got, r = read_all(path)
        assert got == payloads and r.damage == [] and r.tail is None

    def test_more_damage_than_one_scan_call_holds(self, tmp_path) -> None:
        # > 256 damaged records in one chunk
        good = ref.frame(b"ok")
        bad = bytearray(ref.frame(b"bad"))
        bad[13] ^= 0xFF
        path = tmp_path / "f"
        path.write_bytes((good + bytes(bad)) * 300)
        got, r = read_all(path)
        assert got == [b"ok"] * 300
        assert r.damage == [Damage(i * 37 + 18, "bad_data_crc", 19) for i in range(300)]

    def test_context_manager_and_closed_reader(self, tmp_path) -> None:
        path = write_records(tmp_path / "f", [b"a"])
        with RecordReader(path) as r:
            assert list(r) == [b"a"]
        with pytest.raises(ValueError):
            list(r)
        r.close()  # idempotent

    @pytest.mark.parametrize("bad", [0, 63, -1])
    def test_chunk_size_too_small(self, tmp_path, bad) -> None:
        path = write_records(tmp_path / "f", [b"a"])
        with pytest.raises(ValueError):
            RecordReader(path, chunk_size=bad)
        with pytest.raises(TypeError):
            RecordReader(path, chunk_size=1.5e6)


class TestTruncationAtEveryOffset:
    def test_every_cut(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        path = tmp_path / "f"
        for cut in range(len(data) + 1):
            path.write_bytes(data[:cut])
            for chunk in (64, 4096):
                got, r = read_all(path, chunk_size=chunk)
                whole = sum(1 for e in offs[1:] if e <= cut)
                assert got == FIVE[:whole], (cut, chunk)
                assert r.damage == [], (cut, chunk)
                start = offs[whole]
                if cut == start:
                    assert r.tail is None, cut
                else:
                    assert r.tail == Tail(start, "torn", cut - start), (cut, chunk)
                assert r.offset == start


class TestZeroFilledTail:
    def test_zero_tail(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + bytes(4096))
        for chunk in (64, 1000, 8 << 20):
            got, r = read_all(path, chunk_size=chunk)
            assert got == FIVE
            assert r.damage == []
            assert r.tail == Tail(len(data), "zero_tail", 4096)

    @pytest.mark.parametrize("n", [1, 11, 12, 13, 27])
    def test_short_zero_tail(self, tmp_path, n) -> None:
        data, _ = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + bytes(n))
        got, r = read_all(path)
        assert got == FIVE and r.damage == [] and r.tail == Tail(len(data), "zero_tail", n)

    def test_zeros_replaced_by_records(self, tmp_path) -> None:
        # preallocated space the writer fills in later: the reader resumes
        data, _ = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + bytes(4096))
        r = RecordReader(path, chunk_size=256)
        assert list(r) == FIVE and r.tail.kind == "zero_tail"
        more = b"".join(ref.frame(b"more%d" % i) for i in range(5))
        with open(path, "r+b") as f:
            f.seek(len(data))
            f.write(more)
        assert list(r) == [b"more%d" % i for i in range(5)]
        assert r.damage == []
        assert r.tail == Tail(len(data) + len(more), "zero_tail", 4096 - len(more))
        r.close()


class TestZerosInTheMiddle:
    def test_zero_fill_then_records(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        head, tail = data[: offs[2]], data[offs[2]:]
        path = tmp_path / "f"
        path.write_bytes(head + bytes(1000) + tail)
        for chunk in (64, 333, 4096):
            got, r = read_all(path, chunk_size=chunk)
            assert got == FIVE
            assert r.damage == [Damage(offs[2], "zero_fill", 1000)]
            assert r.tail is None

    def test_zeroed_record(self, tmp_path) -> None:
        # a record overwritten with zeros in place (e.g. a lost page)
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        buf[offs[1]: offs[2]] = bytes(offs[2] - offs[1])
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        got, r = read_all(path)
        assert got == [FIVE[0]] + FIVE[2:]
        assert r.damage == [Damage(offs[1], "zero_fill", offs[2] - offs[1])]


class TestBadLengthCrc:
    @pytest.mark.parametrize("byte", [0, 3, 7, 8, 11])
    def test_flipped_bit_in_header(self, tmp_path, byte) -> None:
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        buf[offs[2] + byte] ^= 0x10
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        for chunk in (64, 4096):
            got, r = read_all(path, chunk_size=chunk)
            assert r.damage == [Damage(offs[2], "bad_length_crc", offs[3] - offs[2])]
            assert got == FIVE[:2] + FIVE[3:]
            assert r.tail is None

    def test_garbage_to_eof(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + b"\xff" * 100)
        got, r = read_all(path, chunk_size=64)
        assert got == FIVE
        assert r.damage == [Damage(len(data), "bad_length_crc", 100)]
        assert r.tail is None

    def test_garbage_then_zeros_to_eof_is_damage(self, tmp_path) -> None:
        data, _ = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + b"\x01" + bytes(200))
        got, r = read_all(path, chunk_size=64)
        assert got == FIVE
        assert r.damage == [Damage(len(data), "bad_length_crc", 201)]
        assert r.tail is None


class TestBadDataCrc:
    @pytest.mark.parametrize("where", ["payload", "crc"])
    def test_flipped_bit(self, tmp_path, where) -> None:
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        i = offs[3] + 12 + 5 if where == "payload" else offs[4] - 1
        buf[i] ^= 0x01
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        got, r = read_all(path, chunk_size=64)
        assert got == FIVE[:3] + FIVE[4:]
        assert r.damage == [Damage(offs[3], "bad_data_crc", offs[4] - offs[3])]
        assert r.tail is None


class TestHugeLength:
    @staticmethod
    def _peak_read(path, **kw) -> tuple[list[bytes], RecordReader, int]:
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            r = RecordReader(path, **kw)
            got = list(r)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        r.close()
        return got, r, peak

    @pytest.mark.parametrize("length", [2**63, 2**64 - 1, 2**64 - 16, 2**40])
    def test_at_end_is_torn_and_allocates_nothing(self, tmp_path, length) -> None:
        data, offs = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data + ref.header(length) + b"partial payload")
        size = os.path.getsize(path)
        got, r, peak = self._peak_read(path)
        assert got == FIVE and r.damage == []
        assert r.tail == Tail(len(data), "torn", 12 + len(b"partial payload"))
        assert peak < 10 * size + (1 << 20), peak

    def test_followed_by_good_records(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        junk = ref.header(2**63) + b"junk" * 10
        path = tmp_path / "f"
        path.write_bytes(data[: offs[2]] + junk + data[offs[2]:])
        for chunk in (64, 4096):
            got, r, peak = self._peak_read(path, chunk_size=chunk)
            assert got == FIVE
            assert r.damage == [Damage(offs[2], "length_past_eof", len(junk))]
            assert r.tail is None
            assert peak < 10 * os.path.getsize(path) + (1 << 20)

    def test_zstd_huge_length_is_torn(self, tmp_path) -> None:
        data, _ = _layout(FIVE)
        path = tmp_path / "f.zst"
        path.write_bytes(zstandard.ZstdCompressor().compress(data + ref.header(2**63) + b"p"))
        got, r, peak = self._peak_read(path, chunk_size=64)
        assert got == FIVE and r.damage == []
        assert r.tail == Tail(len(data), "torn", 13)
        assert peak < 10 * len(data) + (1 << 20)


class TestEmptyAndMissing:
    def test_empty_file(self, tmp_path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"")
        got, r = read_all(path)
        assert got == [] and r.damage == [] and r.tail is None and r.offset == 0

    def test_directory(self, tmp_path) -> None:
        with pytest.raises(IsADirectoryError):
            RecordReader(tmp_path)

    def test_missing(self, tmp_path) -> None:
        with pytest.raises(FileNotFoundError):
            RecordReader(tmp_path / "nope")


class TestStrict:
    def _damaged(self, tmp_path) -> tuple[Path, list[int]]:
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        buf[offs[2] + 12] ^= 0x40  # payload of record 2
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        return path, offs

    def test_raises_with_details(self, tmp_path) -> None:
        path, offs = self._damaged(tmp_path)
        got = []
        r = RecordReader(path, strict=True, chunk_size=64)
        with pytest.raises(CorruptRecordError) as ei:
            for p in r:
                got.append(p)
        e = ei.value
        assert e.path == str(path)
        assert (e.offset, e.kind, e.length) == (offs[2], "bad_data_crc", offs[3] - offs[2])
        assert isinstance(e, ValueError)
        assert got[:2] == FIVE[:2]
        r.close()

    @pytest.mark.parametrize("chunk", [64, 4096])
    def test_nothing_after_the_damage_is_yielded(self, tmp_path, chunk) -> None:
        # "raise at the first damage instead of recording it and reading on"
        path, offs = self._damaged(tmp_path)
        got = []
        with RecordReader(path, strict=True, chunk_size=chunk) as r:
            with pytest.raises(CorruptRecordError):
                for p in r:
                    got.append(p)
        assert got == FIVE[:2]

    def test_clean_file_does_not_raise(self, tmp_path) -> None:
        data, _ = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data[:-3])  # torn tail is not damage
        got, r = read_all(path, strict=True)
        assert got == FIVE[:4] and r.tail.kind == "torn"
        path.write_bytes(data + bytes(100))  # nor is a zero tail
        got, r = read_all(path, strict=True)
        assert got == FIVE and r.tail.kind == "zero_tail"


class TestVerifyFalse:
    def test_bad_data_crc_accepted(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        buf[offs[1] + 12] ^= 0x01
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        got, r = read_all(path, verify=False)
        assert got == [FIVE[0], bytes([FIVE[1][0] ^ 1]) + FIVE[1][1:]] + FIVE[2:]
        assert r.damage == []

    def test_length_crc_still_checked(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        buf = bytearray(data)
        buf[offs[1]] ^= 0x01
        path = tmp_path / "f"
        path.write_bytes(bytes(buf))
        got, r = read_all(path, verify=False)
        assert got == [FIVE[0]] + FIVE[2:]
        assert r.damage == [Damage(offs[1], "bad_length_crc", offs[2] - offs[1])]


class TestResume:
    @pytest.mark.parametrize("cut_in", [1, 11, 12, 13, 20, -1])
    def test_append_rest_of_torn_record(self, tmp_path, cut_in) -> None:
        data, offs = _layout(FIVE)
        cut = offs[3] + cut_in if cut_in > 0 else offs[4] + cut_in
        path = tmp_path / "f"
        path.write_bytes(data[:cut])
        r = RecordReader(path, chunk_size=64)
        assert list(r) == FIVE[:3]
        assert r.tail == Tail(offs[3], "torn", cut - offs[3])
        assert r.offset == offs[3]
        assert list(r) == []  # nothing new yet
        more = [b"six", b"", b"seven" * 30]
        with open(path, "ab") as f:
            f.write(data[cut:] + b"".join(ref.frame(p) for p in more))
        assert list(r) == FIVE[3:] + more
        assert r.damage == [] and r.tail is None
        assert list(r) == []
        r.close()

    def test_append_after_clean_end(self, tmp_path) -> None:
        data, offs = _layout(FIVE)
        path = tmp_path / "f"
        path.write_bytes(data[: offs[2]])
        r = RecordReader(path)
        assert list(r) == FIVE[:2]
        with open(path, "ab") as f:
            f.write(data[offs[2]:])
        assert list(r) == FIVE[2:]
        r.close()


class TestFollow:
    def test_follow_byte_dribble(self, tmp_path) -> None:
        payloads = [b"p%d" % i * (i % 7) for i in range(40)] + [b"", b"z" * 3000]
        data = b"".join(ref.frame(p) for p in payloads)
        path = tmp_path / "f"
        path.write_bytes(b"")
        done = threading.Event()
        errors = []

        def writer() -> None:
            try:
                with open(path, "ab", buffering=0) as f:
                    i = 0
                    step = 1
                    while i < len(data):
                        # 1..13 bytes at a time: splits headers, payloads, footers
                        f.write(data[i: i + step])
                        i += step
                        step = step % 13 + 1
                        time.sleep(0.0005)
            except BaseException as e:  # pragma: no cover
                errors.append(e)
            finally:
                done.set()

        got: list[bytes] = []
        t = threading.Thread(target=writer)
        r = RecordReader(path, chunk_size=64)
        t.start()
        try:
            for p in r.follow(poll_secs=0.01, idle_timeout=30,
                              stop=lambda: done.is_set() and len(got) >= len(payloads)):
                got.append(p)
        finally:
            t.join()
        assert not errors
        assert got == payloads
        assert r.damage == [] and r.tail is None
        r.close()

    def test_idle_timeout_ends_follow(self, tmp_path) -> None:
        path = write_records(tmp_path / "f", [b"a", b"b"])
        with RecordReader(path) as r:
            assert list(r.follow(poll_secs=0.01, idle_timeout=0.05)) == [b"a", b"b"]


def _zstd_file(tmp_path, groups: list[list[bytes]]) -> tuple[str, list[int]]:
    """A zstd file from RecordWriter, one frame per group; returns the path
    and the compressed offset where each frame starts (plus the end)."""
    w = RecordWriter(tmp_path / "z", compression="zstd", flush_secs=3600)
    bounds = [0]
    for g in groups:
        for p in g:
            w.write(p)
        w.flush()
        bounds.append(os.path.getsize(w.path))
    w.close()
    assert os.path.getsize(w.path) == bounds[-1]
    return w.path, bounds


GROUPS = [[b"g%d-%d" % (g, i) * (i + 1) for i in range(20)] for g in range(3)]
ALL = [p for g in GROUPS for p in g]


class TestZstd:
    @pytest.mark.parametrize("chunk", [64, 4096, 8 << 20])
    def test_frames_read_back(self, tmp_path, chunk) -> None:
        path, bounds = _zstd_file(tmp_path, GROUPS)
        assert path.endswith(".zst")
        with open(path, "rb") as f:
            assert f.read(4) == b"\x28\xb5\x2f\xfd"
        got, r = read_all(path, chunk_size=chunk)
        assert r.compressed
        assert got == ALL and r.damage == [] and r.tail is None

    def test_truncated_last_frame(self, tmp_path) -> None:
        path, bounds = _zstd_file(tmp_path, GROUPS)
        blob = Path(path).read_bytes()
        first_two = GROUPS[0] + GROUPS[1]
        start, end = bounds[2], bounds[3]
        cuts = sorted({start + 1, start + 4, start + 6, (start + end) // 2, end - 5, end - 1})
        for cut in cuts:
            p = tmp_path / f"cut{cut}.zst"
            p.write_bytes(blob[:cut])
            got, r = read_all(p, chunk_size=64)
            assert got[: len(first_two)] == first_two, cut
            assert got == ALL[: len(got)], cut
            assert r.damage == [], cut
            assert r.tail is None or r.tail.kind == "torn", cut

    def test_truncated_frame_completed_later(self, tmp_path) -> None:
        path, bounds = _zstd_file(tmp_path, GROUPS)
        blob = Path(path).read_bytes()
        p = tmp_path / "grow.zst"
        cut = (bounds[1] + bounds[2]) // 2
        p.write_bytes(blob[:cut])
        r = RecordReader(p, chunk_size=64)
        first = list(r)
        with open(p, "ab") as f:
            f.write(blob[cut:])
        assert first + list(r) == ALL
        assert r.damage == [] and r.tail is None
        r.close()

    @pytest.mark.parametrize("where", ["magic", "frame_header", "middle", "last_byte"])
    def test_corrupt_middle_frame(self, tmp_path, where) -> None:
        path, bounds = _zstd_file(tmp_path, GROUPS)
        blob = bytearray(Path(path).read_bytes())
        s, e = bounds[1], bounds[2]
        i = {"magic": s, "frame_header": s + 4, "middle": (s + e) // 2, "last_byte": e - 1}[where]
        blob[i] ^= 0xFF
        p = tmp_path / "bad.zst"
        p.write_bytes(bytes(blob))
        got, r = read_all(p, chunk_size=64)
        assert r.damage, "corruption went unnoticed"
        kinds = {d.kind for d in r.damage}
        assert kinds <= {"bad_zstd_frame", "bad_length_crc", "bad_data_crc", "length_past_eof",
                         "zero_fill"}
        assert got[: len(GROUPS[0])] == GROUPS[0]
        assert got[-len(GROUPS[2]):] == GROUPS[2]
        assert all(x in GROUPS[1] for x in got[len(GROUPS[0]): -len(GROUPS[2])])
        if "bad_zstd_frame" in kinds:
            d = next(d for d in r.damage if d.kind == "bad_zstd_frame")
            assert d.offset == s and d.length == e - s  # compressed offsets

    @pytest.mark.parametrize("zeros", [1, 3, 4, 5000, (1 << 20) + 7])
    def test_zero_filled_tail_is_a_tail_not_damage(self, tmp_path, zeros) -> None:
        """Zeros where the next frame should start (a preallocated file, or a
        crash on a filesystem that extends before it writes) are reported as
        a "zero_tail", as in a plain file; reading them again later picks up
        a frame written over them."""
        path, bounds = _zstd_file(tmp_path, GROUPS[:2])
        blob = Path(path).read_bytes()
        p = tmp_path / "zeros.zst"
        p.write_bytes(blob + bytes(zeros))
        for strict in (False, True):  # not damage: strict mode reads it too
            with RecordReader(p, strict=strict, chunk_size=64) as r:
                assert list(r) == GROUPS[0] + GROUPS[1]
                assert r.damage == [] and r.tail is not None
                assert (r.tail.kind, r.tail.length) == ("zero_tail", zeros)
        # a writer fills the zeros with the next frame; the same reader reads on
        (tmp_path / "more").mkdir()
        more, _ = _zstd_file(tmp_path / "more", [GROUPS[2]])
        with RecordReader(p, chunk_size=64) as r:
            assert list(r) == GROUPS[0] + GROUPS[1]
            frame = Path(more).read_bytes()
            with open(p, "r+b") as f:
                f.seek(len(blob))
                f.write(frame)
                f.truncate(len(blob) + len(frame))
            assert list(r) == GROUPS[2]
            assert r.damage == [] and r.tail is None

    def test_zeros_before_a_frame_are_damage(self, tmp_path) -> None:
        """Zeros with a frame after them are damage in the middle, as before."""
        path, bounds = _zstd_file(tmp_path, GROUPS)
        blob = bytearray(Path(path).read_bytes())
        blob[bounds[1]:bounds[2]] = bytes(bounds[2] - bounds[1])  # the middle frame zeroed
        p = tmp_path / "mid.zst"
        p.write_bytes(bytes(blob))
        got, r = read_all(p, chunk_size=64)
        assert got == GROUPS[0] + GROUPS[2]
        assert [(d.kind, d.offset, d.length) for d in r.damage] == \
            [("bad_zstd_frame", bounds[1], bounds[2] - bounds[1])]
        assert r.tail is None

    def test_corrupt_frame_strict(self, tmp_path) -> None:
        path, bounds = _zstd_file(tmp_path, GROUPS)
        blob = bytearray(Path(path).read_bytes())
        blob[bounds[1]] ^= 0xFF  # the middle frame's magic
        p = tmp_path / "bad.zst"
        p.write_bytes(bytes(blob))
        with RecordReader(p, strict=True) as r:
            with pytest.raises(CorruptRecordError) as ei:
                list(r)
        assert ei.value.kind == "bad_zstd_frame" and ei.value.offset == bounds[1]

    def test_zstd_cli_decompresses_to_plain_file(self, tmp_path) -> None:
        zstd = require_tool("zstd")
        path, _ = _zstd_file(tmp_path, GROUPS)
        out = tmp_path / "plain"
        subprocess.run([zstd, "-q", "-d", path, "-o", str(out)], check=True)
        got, r = read_all(out)
        assert not r.compressed
        assert got == ALL and r.damage == [] and r.tail is None

    def test_zstandard_multi_frame_decoding(self, tmp_path) -> None:
        path, _ = _zstd_file(tmp_path, GROUPS)
        with open(path, "rb") as f:
            reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
            plain = reader.read()
        assert plain == b"".join(ref.frame(p) for p in ALL)
        out = tmp_path / "plain"
        out.write_bytes(plain)
        got, r = read_all(out)
        assert got == ALL and r.damage == []

    def test_damage_classes_match_plain_file(self, tmp_path) -> None:
        # a bad length CRC, then a header whose length CRC validates but whose
        # length is past the end, then good records.  The plain file resyncs
        # straight to the good records (the huge header does not fit);
        # the zstd file must say the same for every chunk size.
        recs = [ref.frame(b"x" * i) for i in (5, 10, 20)]
        data = recs[0] + b"\xff" * 30 + ref.header(2**63) + b"\x01" * 100 + recs[1] + recs[2]
        want = ref.scan(data)
        plain = tmp_path / "plain"
        plain.write_bytes(data)
        z = tmp_path / "z.zst"
        z.write_bytes(zstandard.ZstdCompressor().compress(data))
        for p in (plain, z):
            for chunk in (64, 4096):
                got, r = read_all(p, chunk_size=chunk)
                assert got == want.payloads, (p.name, chunk)
                assert [tuple(d) for d in r.damage] == [tuple(d) for d in want.damage], (
                    p.name, chunk)

    def test_zero_tail_then_growth_no_duplicates(self, tmp_path) -> None:
        # a zero-filled tail longer than a chunk, then another frame appended:
        # the second read must resume at the tail's start, once
        first = [b"x" * i for i in (5, 10, 20)]
        more = [bytes([65 + i]) * (7 * i) for i in range(6)]
        d1 = b"".join(ref.frame(p) for p in first) + bytes(300)
        d2 = b"".join(ref.frame(p) for p in more)
        cctx = zstandard.ZstdCompressor()
        p = tmp_path / "z.zst"
        p.write_bytes(cctx.compress(d1))
        with RecordReader(p, chunk_size=64) as r:
            assert list(r) == first
            assert r.tail == Tail(len(d1) - 300, "zero_tail", 300)
            with open(p, "ab") as f:
                f.write(cctx.compress(d2))
            assert list(r) == more
            assert r.damage == [Damage(len(d1) - 300, "zero_fill", 300)]


class TestInterop:
    def test_tensorboardx_summary_writer(self, tmp_path) -> None:
        from tensorboard.compat.proto import event_pb2
        from tensorboardX import SummaryWriter

        w = SummaryWriter(logdir=str(tmp_path))
        for step in range(100):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.close()
        (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
        got, r = read_all(path)
        assert r.damage == [] and r.tail is None
        events = [event_pb2.Event.FromString(p) for p in got]
        assert events[0].file_version == "brain.Event:2"
        scalars = [(e.step, v.tag, v.simple_value) for e in events[1:] for v in e.summary.value]
        assert scalars == [
            (s, "loss", pytest.approx(1.0 / (s + 1), rel=1e-6)) for s in range(100)]

    def test_tensorboard_event_file_writer(self, tmp_path) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        w = EventFileWriter(str(tmp_path))
        for step in range(50):
            ev = event_pb2.Event(
                wall_time=1.5e9 + step, step=step,
                summary=summary_pb2.Summary(
                    value=[summary_pb2.Summary.Value(tag="acc", simple_value=step / 50)]))
            w.add_event(ev)
        w.close()
        (path,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
        got, r = read_all(path, chunk_size=64)
        assert r.damage == [] and r.tail is None
        events = [event_pb2.Event.FromString(p) for p in got]
        assert events[0].file_version == "brain.Event:2"
        assert [(e.step, e.summary.value[0].tag, e.summary.value[0].simple_value)
                for e in events[1:]] == [
            (s, "acc", pytest.approx(s / 50, rel=1e-6)) for s in range(50)]


def test_kept_scratch_never_mixes_files(tmp_path) -> None:
    """A thread's readers share one kept buffer and span array (records.scratch): two
    files read interleaved, in small chunks, one after the other and through scan_batches
    each yield exactly their own records; a closed reader's buffer is the next one's."""
    from summarylog.records import scratch

    a = write_records(tmp_path / "a", [os.urandom(300 + i) for i in range(400)])
    b = write_records(tmp_path / "b", [bytes([i % 251]) * (50 + i) for i in range(700)])
    want = {p: read_all(p)[0] for p in (a, b)}
    # interleaved in one thread, each in chunks of 4 KiB (many reads into its buffer)
    ra, rb = RecordReader(a, chunk_size=4096), RecordReader(b, chunk_size=4096)
    got = {a: [], b: []}
    ia, ib = iter(ra), iter(rb)
    for pa, pb in zip(ia, ib):
        got[a].append(pa)
        got[b].append(pb)
    got[b] += list(ib)
    ra.close()
    rb.close()
    assert got == want
    # one after the other: each reader hands its buffer (sized for its file) to the next
    for p in (a, b, a):
        assert read_all(p)[0] == want[p]
        kept = scratch.take_buffer(1)
        assert len(kept) >= os.path.getsize(p)
        scratch.give_buffer(kept)
    assert read_all(b)[0] == want[b]
    # readers on several threads at once
    errors: list[str] = []

    def reads(p: str) -> None:
        for _ in range(20):
            if read_all(p)[0] != want[p]:
                errors.append(p)

    threads = [threading.Thread(target=reads, args=(p,)) for p in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
