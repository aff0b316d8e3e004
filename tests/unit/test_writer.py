"""summarylog.Writer: file naming, events read back exactly, the C scalar
encoder equal to protobuf's bytes, validation, deferral of framework values,
off-thread heavy work, threads, rotation, fork."""

from __future__ import annotations

import math
import os
import re
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import require_module

import summarylog
from summarylog import writer as writer_mod
from summarylog._native import ffi, lib
from summarylog.dialects.tensorboard import TensorBoardEncoder
from summarylog.records import RecordReader


def events_of(logdir: str) -> list:
    """Every Event in every file of logdir, parsed with TensorBoard's class."""
    from tensorboard.compat.proto import event_pb2

    out = []
    for name in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, name)
        if os.path.isfile(path):
            with RecordReader(path) as r:
                out.extend(event_pb2.Event.FromString(p) for p in r)
                assert not r.damage and r.tail is None
    return out


def scalars_of(logdir: str) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for ev in events_of(logdir):
        for v in ev.summary.value:
            if v.WhichOneof("value") == "simple_value":
                out.setdefault(v.tag, []).append((ev.step, v.simple_value))
    return out


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


NAME = re.compile(r"^events\.out\.tfevents\.\d{10}\.[^/]+\.(\d+)\.(\d+)(\.(\d+))?$")


class TestFiles:
    def test_name_and_lazy_creation(self, tmp_path) -> None:
        w = summarylog.Writer(tmp_path / "run", rank=None)
        assert not (tmp_path / "run").exists()  # no I/O before the first event
        w.add_scalar("a", 1.0, 0)
        w.close()
        (name,) = os.listdir(tmp_path / "run")
        m = NAME.match(name)
        assert m and int(m.group(1)) == os.getpid() and m.group(3) is None

    def test_rank_suffix_and_zstd_name(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path, rank=3, filename_suffix=".v2") as w:
            w.add_scalar("a", 1.0)
        assert re.search(r"\.\d+\.3\.v2$", w.files[0])
        with summarylog.Writer(tmp_path / "z", compression="zstd") as z:
            z.add_scalar("a", 1.0)
        (zname,) = os.listdir(tmp_path / "z")
        assert "tfevents" not in zname and zname.endswith(".zst") and "zevents" in zname
        assert scalars_of(str(tmp_path / "z")) == {"a": [(0, 1.0)]}

    def test_rank_from_environment(self, tmp_path, monkeypatch) -> None:
        monkeypatch.setenv("RANK", "5")
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("a", 1.0)
        assert w.files[0].endswith(".5")

    def test_writers_never_collide(self, tmp_path) -> None:
        ws = [summarylog.Writer(tmp_path) for _ in range(5)]
        for i, w in enumerate(ws):
            w.add_scalar("w", float(i), 0)
        for w in ws:
            w.close()
        assert len(os.listdir(tmp_path)) == 5
        assert sorted(v for _, v in scalars_of(str(tmp_path))["w"]) == [0, 1, 2, 3, 4]

    def test_processes_same_second(self, tmp_path) -> None:
        code = textwrap.dedent("""
            import sys, summarylog
            with summarylog.Writer(sys.argv[1]) as w:
                for i in range(1000):
                    w.add_scalar("p", float(i), i)
        """)
        procs = [subprocess.Popen([sys.executable, "-P", "-c", code, str(tmp_path)], cwd="/")
                 for _ in range(4)]
        assert [p.wait(120) for p in procs] == [0] * 4
        assert len(os.listdir(tmp_path)) == 4
        assert len(scalars_of(str(tmp_path))["p"]) == 4000

    def test_first_record_is_file_version(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("a", 1.0)
        first = events_of(str(tmp_path))[0]
        assert first.file_version == "brain.Event:2"
        assert first.source_metadata.writer == "summarylog"

    def test_rotation(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path, max_file_size=4096) as w:
            for i in range(3000):
                w.add_scalar("r", float(i), i)
                if i % 500 == 0:
                    w.flush()
        assert len(w.files) > 1 and [os.path.basename(f) for f in w.files] == sorted(
            os.listdir(tmp_path), key=lambda n: int(NAME.match(n).group(2)))
        for f in w.files:
            with RecordReader(f) as r:
                from tensorboard.compat.proto import event_pb2
                assert event_pb2.Event.FromString(next(iter(r))).file_version == "brain.Event:2"
        assert [s for s, _ in scalars_of(str(tmp_path))["r"]] == list(range(3000))

    def test_purge_step_marker(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path, purge_step=42) as w:
            w.add_scalar("a", 1.0, 42)
        evs = events_of(str(tmp_path))
        assert evs[1].step == 42 and evs[1].file_version == "brain.Event:2"
        assert evs[2].step == 42 and evs[2].session_log.status == 1  # START


class TestScalars:
    def test_round_trip(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path) as w:
            for i in range(100):
                w.add_scalar("loss", 1 / (i + 1), i, walltime=1000.0 + i)
            w.add_scalar("int", 7, -5)
            w.add_scalar("np", np.float64(2.5), 2**40)
            w.add_scalar("np0d", np.array(3, dtype=np.int16), 1)
            w.add_scalar("bool", True, 1)
        got = scalars_of(str(tmp_path))
        assert got["loss"] == [(i, f32(1 / (i + 1))) for i in range(100)]
        assert got["int"] == [(-5, 7.0)] and got["np"] == [(2**40, 2.5)]
        assert got["np0d"] == [(1, 3.0)] and got["bool"] == [(1, 1.0)]
        walls = [e.wall_time for e in events_of(str(tmp_path)) if e.summary.value and
                 e.summary.value[0].tag == "loss"]
        assert walls == [1000.0 + i for i in range(100)]

    def test_add_scalar_and_log_of_several_sizes_interleaved(self, tmp_path) -> None:
        # packed records of 28 (add_scalar), 32, 40 and 48 bytes (log() of 1-3 tags)
        # in one drain; [40, 32, 48] sums to 3 x 40, which once fooled a size check
        with summarylog.Writer(tmp_path) as w:
            for i in range(3000):
                if i % 4 == 0:
                    w.log({"a": float(i), "b": float(i)}, step=i)
                elif i % 4 == 1:
                    w.log({"a": float(i)}, step=i)
                elif i % 4 == 2:
                    w.log({"a": float(i), "b": float(i), "c": float(i)}, step=i)
                else:
                    w.add_scalar("a", float(i), i)
        got = scalars_of(str(tmp_path))
        assert got["a"] == [(i, float(i)) for i in range(3000)]
        assert got["b"] == [(i, float(i)) for i in range(3000) if i % 4 in (0, 2)]
        assert got["c"] == [(i, float(i)) for i in range(3000) if i % 4 == 2]
        assert w.stats["events"] == 3000

    def test_step_none_is_zero_and_nan_kept(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("a", float("nan"))
            w.add_scalar("b", float("inf"), 3)
        got = scalars_of(str(tmp_path))
        assert got["a"][0][0] == 0 and math.isnan(got["a"][0][1])
        assert got["b"] == [(3, math.inf)]

    def test_log_is_one_event(self, tmp_path) -> None:
        with summarylog.Writer(tmp_path) as w:
            w.log({"loss": 0.5, "lr": np.float32(0.1), "acc": 1}, step=9)
        evs = [e for e in events_of(str(tmp_path)) if e.summary.value]
        assert len(evs) == 1 and evs[0].step == 9
        assert [(v.tag, v.simple_value) for v in evs[0].summary.value] == [
            ("loss", 0.5), ("lr", f32(0.1)), ("acc", 1.0)]

    @given(st.lists(st.tuples(
        st.text(min_size=1, max_size=40),
        st.floats(width=32, allow_nan=False),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(min_value=0, max_value=4e9)), min_size=1, max_size=20))
    def test_c_encoder_equals_protobuf(self, rows) -> None:
        """csrc/scalar_codec.c makes exactly protobuf's bytes."""
        enc = TensorBoardEncoder()
        tags = sorted({t for t, *_ in rows})
        data = b"".join(t.encode() for t in tags)
        offsets = [0]
        for t in tags:
            offsets.append(offsets[-1] + len(t.encode()))
        n = len(rows)
        walls = ffi.new("double[]", [r[3] for r in rows])
        steps = ffi.new("int64_t[]", [r[2] for r in rows])
        counts = ffi.new("uint32_t[]", [1] * n)
        ids = ffi.new("uint32_t[]", [tags.index(r[0]) for r in rows])
        vals = ffi.new("double[]", [r[1] for r in rows])
        offs = ffi.new("uint64_t[]", offsets)
        need = lib.slg_tb_encode_scalars(ffi.NULL, 0, n, walls, steps, counts, ids, vals, data,
                                         offs, len(tags))
        out = ffi.new("char[]", need)
        assert lib.slg_tb_encode_scalars(out, need, n, walls, steps, counts, ids, vals, data,
                                         offs, len(tags)) == need
        framed = ffi.buffer(out, need)[:]
        from summarylog.records import RecordWriter  # noqa: F401
        expected = b""
        for tag, value, step, wall in rows:
            payload = enc.scalars(wall, step, [tag], [value])
            header = struct.pack("<Q", len(payload))
            expected += (header + struct.pack("<I", lib.slg_masked_crc32c(header, 8)) + payload
                         + struct.pack("<I", lib.slg_masked_crc32c(payload, len(payload))))
        assert framed == expected

    def test_bad_tag_id_rejected_by_c(self) -> None:
        one = ffi.new("double[]", [1.0])
        rc = lib.slg_tb_encode_scalars(ffi.NULL, 0, 1, one, ffi.new("int64_t[]", [0]),
                                       ffi.new("uint32_t[]", [1]), ffi.new("uint32_t[]", [5]),
                                       one, b"a", ffi.new("uint64_t[]", [0, 1]), 1)
        assert rc < 0


class TestValidation:
    @pytest.mark.parametrize("call,exc,word", [
        (lambda w: w.add_scalar("", 1.0), ValueError, "tag"),
        (lambda w: w.add_scalar(3, 1.0), TypeError, "tag"),
        (lambda w: w.add_scalar("a", "1.0"), TypeError, "value"),
        (lambda w: w.add_scalar("a", None), TypeError, "value"),
        (lambda w: w.add_scalar("a", np.ones(2)), ValueError, "value"),
        (lambda w: w.add_scalar("a", 1.0, 1.5), TypeError, "step"),
        (lambda w: w.add_scalar("a", 1.0, True), TypeError, "step"),
        (lambda w: w.add_scalar("a", 1.0, 2**64), ValueError, "step"),
        (lambda w: w.add_scalar("a", 1.0, 1, walltime=math.nan), ValueError, "walltime"),
        (lambda w: w.log([("a", 1.0)]), TypeError, "scalars"),
        (lambda w: w.log({"a": "x"}), TypeError, "scalars"),
        (lambda w: w.add_histogram("h", np.ones(3), bins=0), ValueError, "bins"),
        (lambda w: w.add_histogram("h", []), ValueError, "values"),
        (lambda w: w.add_histogram("h", np.array(["a"])), TypeError, "values"),
        (lambda w: w.add_image("i", np.zeros((5, 8, 8))), ValueError, "channels"),
        (lambda w: w.add_image("i", np.zeros((3, 8))), ValueError, "img"),
        (lambda w: w.add_image("i", np.zeros((3, 8, 8), np.int32)), TypeError, "img"),
        (lambda w: w.add_image("i", np.zeros((3, 8, 8)), dataformats="XYZ"), ValueError, "dataformats"),
        (lambda w: w.add_images("i", np.zeros((3, 8, 8))), ValueError, "imgs"),
        (lambda w: w.add_text("t", 5), TypeError, "text"),
        (lambda w: w.add_hparams({"lr": [1]}, {}), TypeError, "hparams"),
        (lambda w: w.add_hparams({}, {}), TypeError, "hparams"),
    ])
    def test_bad_input_raises_before_writing(self, tmp_path, call, exc, word) -> None:
        w = summarylog.Writer(tmp_path)
        with pytest.raises(exc, match=word):
            call(w)
        w.close()
        assert not tmp_path.exists() or os.listdir(tmp_path) == []

    def test_closed(self, tmp_path) -> None:
        w = summarylog.Writer(tmp_path)
        w.close()
        w.close()
        with pytest.raises(ValueError, match="closed"):
            w.add_scalar("a", 1.0)

    @pytest.mark.parametrize("kwargs,word", [
        ({"flush_secs": 0}, "flush_secs"), ({"durability": "x"}, "durability"),
        ({"compression": "gz"}, "compression"), ({"max_file_size": 0}, "max_file_size"),
        ({"rank": -1}, "rank"), ({"filename_suffix": "a/b"}, "filename_suffix"),
    ])
    def test_bad_arguments(self, tmp_path, kwargs, word) -> None:
        with pytest.raises((TypeError, ValueError), match=word):
            summarylog.Writer(tmp_path, **kwargs)


class TestDeferral:
    def _record_threads(self, monkeypatch) -> list[int]:
        seen: list[int] = []
        real = writer_mod.resolve_scalar

        def spy(d):
            seen.append(threading.get_ident())
            return real(d)

        monkeypatch.setattr(writer_mod, "resolve_scalar", spy)
        return seen

    def test_torch_tensor_read_on_writer_thread_and_snapshotted(self, tmp_path, monkeypatch) -> None:
        torch = require_module("torch")
        seen = self._record_threads(monkeypatch)
        t = torch.tensor(1.5)
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("t", t, 0)
            w.log({"u": torch.tensor([2.5])}, step=1)
            t.add_(10)  # mutated after logging: the log keeps 1.5
            w.flush()
        assert seen and threading.get_ident() not in seen
        assert scalars_of(str(tmp_path)) == {"t": [(0, 1.5)], "u": [(1, 2.5)]}

    def test_jax_array_read_on_writer_thread(self, tmp_path, monkeypatch) -> None:
        jnp = require_module("jax.numpy")
        seen = self._record_threads(monkeypatch)
        with summarylog.Writer(tmp_path) as w:
            w.add_scalar("j", jnp.float32(0.25) * 2, 3)
            w.flush()
        assert seen and threading.get_ident() not in seen
        assert scalars_of(str(tmp_path)) == {"j": [(3, 0.5)]}

    def test_framework_histograms(self, tmp_path) -> None:
        torch = require_module("torch")
        jnp = require_module("jax.numpy")
        with summarylog.Writer(tmp_path) as w:
            w.add_histogram("torch", torch.arange(100, dtype=torch.float32), 0)
            w.add_histogram("torch_bf16", torch.ones(10, dtype=torch.bfloat16), 0)
            w.add_histogram("jax", jnp.arange(50), 0)
        hs = {v.tag: v.histo for e in events_of(str(tmp_path)) for v in e.summary.value}
        assert hs["torch"].num == 100 and sum(hs["torch"].bucket) == 100
        assert hs["torch_bf16"].num == 10 and hs["jax"].max == 49


class TestHeavyValues:
    def test_histogram_with_nan_and_inf(self, tmp_path) -> None:
        vals = np.array([1.0, 2.0, 3.0, np.nan, np.inf, -np.inf, np.inf], np.float32)
        with summarylog.Writer(tmp_path) as w:
            w.add_histogram("h", vals, 1, bins=4)
            w.add_histogram("all_nan", np.full(5, np.nan), 1)
            w.add_histogram("const", np.full(5, 2.0), 1)
        hs = {v.tag: v.histo for e in events_of(str(tmp_path)) for v in e.summary.value}
        h = hs["h"]
        assert (h.num, h.min, h.max, h.sum) == (7, 1.0, 3.0, 6.0)
        assert len(h.bucket) == 4 and sum(h.bucket) == 6  # 3 finite + 3 inf; NaN only in num
        assert h.bucket[0] >= 2 and h.bucket[-1] >= 2 + 1
        assert hs["all_nan"].num == 5 and list(hs["all_nan"].bucket) == []
        assert hs["const"].min == hs["const"].max == 2.0 and sum(hs["const"].bucket) == 5

    @pytest.mark.parametrize("async_heavy", [True, False])
    def test_png_encoded_off_the_callers_thread(self, tmp_path, monkeypatch, async_heavy) -> None:
        import summarylog.png as png

        seen: list[int] = []
        real = png.encode_png
        monkeypatch.setattr(png, "encode_png", lambda a: (seen.append(threading.get_ident()), real(a))[1])
        img = np.random.default_rng(0).integers(0, 255, (3, 16, 16), dtype=np.uint8)
        with summarylog.Writer(tmp_path, async_heavy=async_heavy) as w:
            w.add_image("i", img, 0)
            img[:] = 0  # the caller's buffer is reused: the log keeps what was logged
            w.flush()
        me = threading.get_ident()
        assert seen == ([me] if not async_heavy else seen) and (me not in seen) == async_heavy
        ev = [e for e in events_of(str(tmp_path)) if e.summary.value][0]
        t = ev.summary.value[0].tensor
        assert ev.summary.value[0].metadata.plugin_data.plugin_name == "images"
        assert t.string_val[:2] == [b"16", b"16"] and t.string_val[2].startswith(b"\x89PNG")
        assert _decode_png(t.string_val[2]).tolist() == np.random.default_rng(0).integers(
            0, 255, (3, 16, 16), dtype=np.uint8).transpose(1, 2, 0).tolist()

    def test_images_formats(self, tmp_path) -> None:
        gray = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
        rgba = np.random.default_rng(1).integers(0, 255, (8, 8, 4), dtype=np.uint8)
        batch = np.random.default_rng(2).random((3, 1, 4, 5))
        with summarylog.Writer(tmp_path) as w:
            w.add_image("gray", gray, 0, dataformats="HW")
            w.add_image("rgba", rgba, 0, dataformats="HWC")
            w.add_images("batch", batch, 0)
        vals = {v.tag: v.tensor for e in events_of(str(tmp_path)) for v in e.summary.value}
        assert _decode_png(vals["gray"].string_val[2])[..., 0].tolist() == \
            (gray * 255 + 0.5).astype(np.uint8).tolist()
        assert _decode_png(vals["rgba"].string_val[2]).tolist() == rgba.tolist()
        assert len(vals["batch"].string_val) == 2 + 3 and vals["batch"].string_val[:2] == [b"5", b"4"]

    def test_text_and_tensor(self, tmp_path) -> None:
        from tensorboard.util import tensor_util

        arr = np.arange(12, dtype=np.int64).reshape(3, 4)
        with summarylog.Writer(tmp_path) as w:
            w.add_text("notes", "héllo **world**", 5)
            w.add_tensor("t", arr, 6)
            w.add_tensor("f16", np.ones(3, np.float16), 6)
        vals = {v.tag: (e.step, v) for e in events_of(str(tmp_path)) for v in e.summary.value}
        step, text = vals["notes"]
        assert step == 5 and text.tensor.string_val == ["héllo **world**".encode()]
        assert text.metadata.plugin_data.plugin_name == "text"
        got = tensor_util.make_ndarray(vals["t"][1].tensor)
        assert got.dtype == np.int64 and got.tolist() == arr.tolist()
        assert tensor_util.make_ndarray(vals["f16"][1].tensor).dtype == np.float16


def _decode_png(data: bytes) -> np.ndarray:
    """Tiny PNG decoder for 8-bit images with filters 0-4 (test oracle)."""
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    c = {0: 1, 4: 2, 2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * c
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - c] if x >= c else 0
            b = prev[x]
            cc = prev[x - c] if x >= c else 0
            pred = [0, a, b, (a + b) // 2, 0][f]
            if f == 4:
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
            cur[x] = (line[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    assert depth == 8
    return out.reshape(h, w, c).astype(np.uint8)


class TestConcurrency:
    def test_threads(self, tmp_path) -> None:
        n_threads, per = 8, 10_000
        with summarylog.Writer(tmp_path) as w:
            def work(t: int) -> None:
                for i in range(per):
                    w.add_scalar(f"t{t}", float(i), i)
            ts = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        got = scalars_of(str(tmp_path))
        for t in range(n_threads):
            assert got[f"t{t}"] == [(i, float(i)) for i in range(per)]

    def test_fork_child_gets_its_own_file(self, tmp_path) -> None:
        # in a fresh interpreter: fork() next to other tests' threads (jax) is unsafe
        code = textwrap.dedent("""
            import os, sys, summarylog
            w = summarylog.Writer(sys.argv[1])
            w.add_scalar("parent", 1.0, 0)
            w.flush()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    w.add_scalar("child", 2.0, 0)
                    w.close()
                except BaseException as exc:
                    print("child failed:", exc, file=sys.stderr)
                    code = 1
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WEXITSTATUS(status) == 0, status
            w.add_scalar("parent", 3.0, 1)
            w.close()
        """)
        res = subprocess.run([sys.executable, "-P", "-c", code, str(tmp_path)], cwd="/",
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert len(os.listdir(tmp_path)) == 2
        assert scalars_of(str(tmp_path)) == {"parent": [(0, 1.0), (1, 3.0)], "child": [(0, 2.0)]}
