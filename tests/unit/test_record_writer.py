"""summarylog.records.RecordWriter: framing identical to TensorBoard's, the
native flusher, durability, O_EXCL, bounded memory, I/O errors, threads,
zstd blocks, crashes."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import zstandard

from conftest import require_tool
from summarylog._native import lib
from summarylog.records import RecordReader, RecordWriter, masked_crc32c


def read_all(path: str) -> tuple[list[bytes], RecordReader]:
    r = RecordReader(path)
    out = list(r)
    r.close()
    return out, r


def wait_for(pred, timeout: float = 30.0) -> bool:
    """Poll pred() until true; the timeout only bounds a hang, never asserts speed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def run_child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout, cwd="/")


class TestFraming:
    def test_byte_identical_to_tensorboard_record_writer(self, tmp_path, rng) -> None:
        from tensorboard.summary.writer.record_writer import RecordWriter as TBRecordWriter

        payloads = [rng.randbytes(rng.choice([0, 1, 7, 40, 300, 70000])) for _ in range(200)]
        ours = tmp_path / "ours"
        with RecordWriter(ours) as w:
            for p in payloads[:100]:
                w.write(p)
            w.write_many(payloads[100:])
        buf = io.BytesIO()
        tb = TBRecordWriter(buf)
        for p in payloads:
            tb.write(p)
        assert ours.read_bytes() == buf.getvalue()

    def test_first_record_of_format_md(self, tmp_path) -> None:
        data = bytes.fromhex("09000080389 9d6d7411a0d627261696e2e4576656e743a32".replace(" ", ""))
        with RecordWriter(tmp_path / "f") as w:
            w.write(data)
        expected = bytes.fromhex("1800000000000000a37f4b22") + data + bytes.fromhex("124b36ab")
        assert (tmp_path / "f").read_bytes() == expected
        assert masked_crc32c(data) == 0xAB364B12

    def test_tensorboard_readers_read_our_events(self, tmp_path) -> None:
        from tensorboard.backend.event_processing.event_file_loader import (
            EventFileLoader,
            RawEventFileLoader,
        )
        from tensorboard.compat.proto import event_pb2, summary_pb2

        path = tmp_path / "events.out.tfevents.1.host.1.0"
        events = [event_pb2.Event(wall_time=1.5, file_version="brain.Event:2")]
        for step in range(50):
            s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss", simple_value=step / 2)])
            events.append(event_pb2.Event(wall_time=2.0 + step, step=step, summary=s))
        with RecordWriter(path) as w:
            w.write_many([e.SerializeToString() for e in events])
        raw = list(RawEventFileLoader(str(path)).Load())
        assert raw == [e.SerializeToString() for e in events]
        loaded = list(EventFileLoader(str(path)).Load())
        assert [e.step for e in loaded[1:]] == list(range(50))
        values = [e.summary.value[0] for e in loaded[1:]]
        assert all(v.tag == "loss" for v in values)

    def test_write_many_buffer_types(self, tmp_path) -> None:
        arr = np.arange(5, dtype=np.float32)
        items = [b"a", bytearray(b"bc"), memoryview(b"def"), arr, b""]
        with RecordWriter(tmp_path / "f") as w:
            assert w.write_many(items) == 5
            assert w.write_many(iter([b"gen"])) == 1
            assert w.write_many([]) == 0
            w.write(arr)
        got, _ = read_all(str(tmp_path / "f"))
        assert got == [b"a", b"bc", b"def", arr.tobytes(), b"", b"gen", arr.tobytes()]


class TestFiles:
    def test_never_clobbers(self, tmp_path) -> None:
        path = tmp_path / "f"
        path.write_bytes(b"precious")
        with pytest.raises(FileExistsError) as ei:
            RecordWriter(path)
        assert ei.value.filename == str(path)
        assert path.read_bytes() == b"precious"

    def test_missing_directory(self, tmp_path) -> None:
        path = tmp_path / "no" / "such" / "f"
        with pytest.raises(FileNotFoundError) as ei:
            RecordWriter(path)
        assert ei.value.filename == str(path)

    def test_mode(self, tmp_path) -> None:
        old = os.umask(0)
        try:
            with RecordWriter(tmp_path / "f", mode=0o600):
                pass
        finally:
            os.umask(old)
        assert (tmp_path / "f").stat().st_mode & 0o777 == 0o600


class TestValidation:
    @pytest.mark.parametrize("kwargs,exc,word", [
        ({"flush_secs": 0}, ValueError, "flush_secs"),
        ({"flush_secs": "1"}, TypeError, "flush_secs"),
        ({"flush_bytes": -1}, ValueError, "flush_bytes"),
        ({"max_buffer": 1.5}, TypeError, "max_buffer"),
        ({"durability": "always"}, ValueError, "durability"),
        ({"on_full": "explode"}, ValueError, "on_full"),
        ({"compression": "gzip"}, ValueError, "compression"),
    ])
    def test_bad_arguments(self, tmp_path, kwargs, exc, word) -> None:
        with pytest.raises(exc, match=word):
            RecordWriter(tmp_path / "f", **kwargs)
        assert not (tmp_path / "f").exists()

    def test_bad_payload(self, tmp_path) -> None:
        with RecordWriter(tmp_path / "f") as w:
            with pytest.raises(TypeError, match="payload"):
                w.write("text")  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                w.write_many(["text"])  # type: ignore[list-item]

    def test_closed(self, tmp_path) -> None:
        w = RecordWriter(tmp_path / "f")
        w.write(b"x")
        w.close()
        w.close()  # idempotent
        assert w.closed and w.stats.closed
        for call in (lambda: w.write(b"y"), lambda: w.write_many([b"y"]), w.flush):
            with pytest.raises(ValueError, match="closed"):
                call()
        assert read_all(str(tmp_path / "f"))[0] == [b"x"]


class TestFlushing:
    def test_flush_makes_records_visible(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        with RecordWriter(path, flush_secs=3600, flush_bytes=1 << 30) as w:
            w.write_many([b"r%d" % i for i in range(1000)])
            w.flush()
            got, r = read_all(path)
            assert len(got) == 1000 and r.tail is None
            assert w.stats.records_written == 1000 and w.stats.buffered_bytes == 0

    def test_timer_flushes_without_flush_call(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        with RecordWriter(path, flush_secs=0.05, flush_bytes=1 << 30) as w:
            w.write(b"tick")
            assert wait_for(lambda: os.path.getsize(path) == 4 + 16)
            assert w.stats.records_written == 1

    def test_size_threshold_wakes_flusher(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        with RecordWriter(path, flush_secs=3600, flush_bytes=4096) as w:
            w.write_many([bytes(100)] * 100)  # 11.6 kB > 4 kB
            assert wait_for(lambda: os.path.getsize(path) > 0)

    def test_nothing_buffered_is_cheap_to_flush(self, tmp_path) -> None:
        with RecordWriter(tmp_path / "f") as w:
            for _ in range(100):
                w.flush()
            assert w.stats.flushes == 0


class TestDurability:
    def test_fsync_group_commit(self, tmp_path) -> None:
        with RecordWriter(tmp_path / "f", durability="fsync", flush_secs=3600) as w:
            w.write_many([b"x"] * 10000)
            w.flush()
            st = w.stats
            assert st.fsyncs == st.flushes == 1  # one fdatasync for 10 000 records
            w.write(b"y")
            w.flush()
            assert w.stats.fsyncs == 2

    def test_flush_mode_syncs_on_close_only(self, tmp_path) -> None:
        w = RecordWriter(tmp_path / "f", durability="flush")
        w.write(b"x")
        w.flush()
        assert w.stats.fsyncs == 0
        w.close()
        assert w.stats.fsyncs == 1

    def test_none_never_syncs(self, tmp_path) -> None:
        w = RecordWriter(tmp_path / "f", durability="none")
        w.write(b"x")
        w.flush()
        w.close()
        assert w.stats.fsyncs == 0 and w.stats.records_written == 1


class TestBoundedMemory:
    N = 100_000

    def test_block_policy_waits_and_keeps_everything(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        with RecordWriter(path, max_buffer=4096, on_full="block") as w:
            for i in range(self.N // 10):
                w.write(b"%600d" % i)
            st = w.stats
        assert st.records_dropped == 0
        assert w.stats.records_written == self.N // 10
        assert len(read_all(path)[0]) == self.N // 10

    def test_drop_policy_counts(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        with RecordWriter(path, max_buffer=4096, on_full="drop") as w:
            results = [w.write(b"%600d" % i) for i in range(self.N)]
        st = w.stats
        accepted = sum(results)
        assert accepted + st.records_dropped == self.N
        assert st.records_dropped == results.count(False) > 0
        got = read_all(path)[0]
        assert len(got) == accepted == st.records_written
        assert got == sorted(got, key=int)  # what was kept is in order

    def test_record_larger_than_buffer(self, tmp_path) -> None:
        big = os.urandom(1 << 20)
        with RecordWriter(tmp_path / "f", max_buffer=4096) as w:
            w.write(b"small")
            w.write(big)
            w.write(b"after")
        assert read_all(str(tmp_path / "f"))[0] == [b"small", big, b"after"]


class TestErrors:
    def _inject(self, w: RecordWriter, err: int, count: int = 1) -> None:
        lib.slg_writer_inject_fault(w._h, err, count)

    def test_strict_raises_with_path_and_keeps_earlier_records(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        w = RecordWriter(path, flush_secs=3600)
        w.write_many([b"good%d" % i for i in range(100)])
        w.flush()
        self._inject(w, errno.ENOSPC)
        w.write_many([b"lost%d" % i for i in range(50)])
        with pytest.raises(OSError) as ei:
            w.flush()
        assert ei.value.errno == errno.ENOSPC and ei.value.filename == path
        got, r = read_all(path)
        assert got == [b"good%d" % i for i in range(100)] and not r.damage and r.tail is None
        st = w.stats
        assert (st.errors, st.records_lost, st.last_errno) == (1, 50, errno.ENOSPC)
        w.write(b"after")  # space is back: writing goes on
        w.close()
        assert read_all(path)[0][-1] == b"after"

    def test_error_surfaces_on_next_write_or_close(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        w = RecordWriter(path, flush_secs=0.01)
        self._inject(w, errno.EIO)
        w.write(b"x")
        assert wait_for(lambda: w.stats.errors == 1)
        with pytest.raises(OSError) as ei:
            w.write(b"y")
        assert ei.value.errno == errno.EIO
        w.close()  # reported once, not again

        w2 = RecordWriter(str(tmp_path / "g"), flush_secs=3600)
        self._inject(w2, errno.EIO)
        w2.write(b"x")
        with pytest.raises(OSError):
            w2.close()
        assert w2.closed

    def test_not_strict_logs_once_and_goes_on(self, tmp_path, caplog) -> None:
        path = str(tmp_path / "f")
        w = RecordWriter(path, flush_secs=3600, strict=False)
        self._inject(w, errno.ENOSPC, count=3)
        with caplog.at_level(logging.WARNING, logger="summarylog"):
            for i in range(5):
                w.write(b"r%d" % i)
                w.flush()
            w.close()
        warnings = [r for r in caplog.records if "I/O error" in r.getMessage()]
        assert len(warnings) == 1 and path in warnings[0].getMessage()
        st = w.stats
        assert st.errors == 3 and st.records_lost == 3 and st.records_written == 2
        got, r = read_all(path)
        assert got == [b"r3", b"r4"] and not r.damage

    def test_real_file_size_limit(self, tmp_path) -> None:
        """RLIMIT_FSIZE makes write(2) fail with EFBIG for real."""
        code = """
            import json, resource, signal, sys
            from summarylog.records import RecordWriter
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
            strict = sys.argv[2] == "strict"
            w = RecordWriter(sys.argv[1], strict=strict, flush_secs=3600)
            raised = None
            try:
                for i in range(2000):
                    w.write(b"%084d" % i)      # 100 B framed
                    if i % 100 == 99:
                        w.flush()
                w.close()
            except OSError as e:
                raised = [e.errno, e.filename]
                w.close() if not w.closed else None
            print(json.dumps({"raised": raised, "stats": w.stats._asdict()}))
        """
        for mode in ("strict", "lenient"):
            path = str(tmp_path / mode)
            res = run_child(code, path, mode)
            assert res.returncode == 0, res.stderr
            out = json.loads(res.stdout)
            st = out["stats"]
            if mode == "strict":
                assert out["raised"] == [errno.EFBIG, path]
            else:
                assert out["raised"] is None and st["errors"] >= 1
            assert st["last_errno"] == errno.EFBIG
            got, r = read_all(path)
            assert len(got) == st["records_written"] and got == [b"%084d" % i for i in range(len(got))]
            assert not r.damage and r.tail is None and os.path.getsize(path) <= 65536


class TestThreads:
    def test_many_threads_one_writer(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        threads, per = 8, 20_000
        with RecordWriter(path, max_buffer=1 << 16) as w:
            def work(t: int) -> None:
                for i in range(per):
                    if i % 1000 == 0:
                        w.write_many([b"%d:%d:many" % (t, i + k) for k in range(10)])
                    w.write(b"%d:%d" % (t, i))
            ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        got, r = read_all(path)
        assert not r.damage and r.tail is None
        assert len(got) == threads * per + threads * (per // 1000) * 10
        for t in range(threads):  # each thread's records stay in its order
            mine = [g for g in got if g.startswith(b"%d:" % t) and not g.endswith(b"many")]
            assert mine == [b"%d:%d" % (t, i) for i in range(per)]


class TestZstd:
    def test_blocks_and_plain_zstd(self, tmp_path) -> None:
        base = str(tmp_path / "f")
        payloads = [b"payload %d " % i * (i % 7) for i in range(3000)]
        with RecordWriter(base, compression="zstd", flush_secs=3600) as w:
            assert w.path == base + ".zst"
            for i, p in enumerate(payloads):
                w.write(p)
                if i % 1000 == 999:
                    w.flush()
        raw = Path(w.path).read_bytes()
        assert raw.count(b"\x28\xb5\x2f\xfd") >= 3  # one frame per flush
        with RecordWriter(str(tmp_path / "plain")) as p:
            p.write_many(payloads)
        plain = Path(p.path).read_bytes()
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
        assert reader.read() == plain
        zstd = require_tool("zstd")
        out = str(tmp_path / "decompressed")
        subprocess.run([zstd, "-q", "-d", w.path, "-o", out], check=True)
        assert Path(out).read_bytes() == plain
        assert read_all(w.path)[0] == payloads

    def test_zstd_write_many_and_stats(self, tmp_path) -> None:
        with RecordWriter(tmp_path / "f", compression="zstd") as w:
            assert w.write_many([b"a", b"b"]) == 2
        assert w.stats.records_written == 2
        assert read_all(w.path)[0] == [b"a", b"b"]


CRASH_CHILD = """
    import os, signal, sys
    from summarylog.records import RecordWriter
    w = RecordWriter(sys.argv[1], durability=sys.argv[2], flush_secs=3600,
                     compression=None if sys.argv[3] == "none" else "zstd")
    for i in range(5000):
        w.write(b"rec%06d" % i)
        if i == 2999:
            w.flush()
            print("flushed", 3000, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


class TestCrash:
    @pytest.mark.parametrize("durability", ["none", "flush", "fsync"])
    @pytest.mark.parametrize("compression", ["none", "zstd"])
    def test_sigkill_keeps_flushed_records(self, tmp_path, durability, compression) -> None:
        path = str(tmp_path / "f")
        res = run_child(CRASH_CHILD, path, durability, compression)
        assert res.returncode == -signal.SIGKILL
        assert "flushed 3000" in res.stdout
        got, r = read_all(path + (".zst" if compression == "zstd" else ""))
        assert got[:3000] == [b"rec%06d" % i for i in range(3000)]
        assert not r.damage


class TestBigRecords:
    """Records of 256 KiB and more skip the buffer (one pwritev from the
    caller's memory), in order with the buffered ones around them."""

    def test_order_kept_across_paths(self, tmp_path) -> None:
        big = [os.urandom(300_000 + i) for i in range(3)]
        items = [b"a", big[0], b"b", b"c", big[1], big[2], b"d"]
        path = str(tmp_path / "f")
        with RecordWriter(path) as w:
            w.write_many(items)            # the C list path
            for it in items:               # one by one
                w.write(it)
            w.write_many([bytearray(x) for x in items])  # the general path
        assert read_all(path)[0] == items * 3

    def test_fsync_groups_direct_writes(self, tmp_path) -> None:
        with RecordWriter(tmp_path / "f", durability="fsync", flush_secs=3600) as w:
            for _ in range(4):
                w.write(bytes(1 << 20))
            assert w.stats.fsyncs == 0  # not one per record ...
            w.flush()
            assert w.stats.fsyncs == 1  # ... one for the group
        assert w.stats.records_written == 4

    def test_fault_on_direct_write(self, tmp_path) -> None:
        path = str(tmp_path / "f")
        w = RecordWriter(path, flush_secs=3600)
        w.write(b"before")
        w.flush()  # so the next write(2) is the big record's
        lib.slg_writer_inject_fault(w._h, errno.ENOSPC, 1)
        with pytest.raises(OSError) as ei:
            w.write(bytes(1 << 20))
        assert ei.value.errno == errno.ENOSPC
        w.write(b"after")
        w.close()
        got, r = read_all(path)
        assert got == [b"before", b"after"] and not r.damage
        assert w.stats.records_lost == 1
