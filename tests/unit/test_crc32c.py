"""summarylog.records.crc32c / masked_crc32c against the published vectors,
an independent pure-Python CRC32C and the `crc32c` package, on every
implementation this CPU has."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import require_module
from summarylog.records import crc, crc32c, crc32c_impl, crc32c_impls, mask, masked_crc32c, unmask

# docs/format.md §1.2 (RFC 3720 §B.4 and TensorBoard's masked_crc.rs)
VECTORS = [
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]
MASKED_VECTORS = [
    (b"\x1a\x11" + b"CRC test, one two", 0x5794D08A),
    (bytes(8), 0x07980329),
    (b"\x18" + bytes(7), 0x224B7FA3),
]
ALL_IMPLS = ["portable", "sse4.2", "arm64"]


def _table() -> list[int]:
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


_T = _table()


def reference_crc32c(data: bytes, value: int = 0) -> int:
    """Byte-at-a-time CRC32C, independent of the native core."""
    c = value ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _T[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


@pytest.fixture(params=ALL_IMPLS)
def impl(request: pytest.FixtureRequest) -> str:
    if request.param not in crc32c_impls():
        pytest.skip(f"this CPU/build has no {request.param} CRC32C (has {crc32c_impls()})")
    return request.param


class TestVectors:
    @pytest.mark.parametrize("data,expected", VECTORS)
    def test_public(self, data: bytes, expected: int) -> None:
        assert crc32c(data) == expected

    @pytest.mark.parametrize("data,expected", VECTORS)
    def test_each_impl(self, impl: str, data: bytes, expected: int) -> None:
        assert crc._impl_crc(impl, data) == expected

    @pytest.mark.parametrize("data,expected", MASKED_VECTORS)
    def test_masked(self, data: bytes, expected: int) -> None:
        assert masked_crc32c(data) == expected

    def test_mask_constants(self) -> None:
        assert mask(0) == 0xA282EAD8
        for x in (0, 1, 0xFFFFFFFF, 0x12345678, 0x80000000):
            assert unmask(mask(x)) == x

    def test_tfrecord_example(self) -> None:
        # the complete 40-byte record of docs/format.md §1.2
        data = bytes.fromhex("0900008038 99d6d741 1a0d627261696e2e4576656e743a32".replace(" ", ""))
        assert masked_crc32c(data) == 0xAB364B12


class TestExtend:
    def test_composition(self, impl: str) -> None:
        whole = crc._impl_crc(impl, b"hello world")
        assert crc._impl_crc(impl, b"world", crc._impl_crc(impl, b"hello ")) == whole
        assert crc32c(b"world", crc32c(b"hello ")) == crc32c(b"hello world")

    def test_every_split(self, impl: str) -> None:
        data = os.urandom(2048)
        whole = reference_crc32c(data)
        for i in range(0, len(data) + 1, 7):
            assert crc._impl_crc(impl, data[i:], crc._impl_crc(impl, data[:i])) == whole


class TestAgainstReference:
    def test_every_length_0_to_4096(self, impl: str, rng) -> None:
        blob = rng.randbytes(4096 + 16)
        for n in range(4097):
            off = rng.randrange(16)
            data = memoryview(blob)[off : off + n]
            assert crc._impl_crc(impl, data) == reference_crc32c(bytes(data)), (n, off)

    def test_long_buffers_match_crc32c_package(self, impl: str, rng) -> None:
        crc32c_pkg = require_module("crc32c")
        for n in (24575, 24576, 24577, 3 * 8192 * 5 + 13, 1 << 20, (1 << 22) + 5):
            data = rng.randbytes(n)
            for off in (0, 1, 5):
                assert crc._impl_crc(impl, data[off:]) == crc32c_pkg.crc32c(data[off:]), (n, off)

    @given(st.binary(max_size=4096), st.integers(0, 15), st.integers(0, 0xFFFFFFFF))
    def test_hypothesis_random_alignment(self, data: bytes, off: int, value: int) -> None:
        buf = memoryview(bytes(off) + data)[off:]
        expected = reference_crc32c(data, value)
        for name in crc32c_impls():
            assert crc._impl_crc(name, buf, value) == expected
        assert crc32c(buf, value) == expected


class TestBuffers:
    def test_buffer_types(self) -> None:
        data = b"123456789"
        for obj in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
            assert crc32c(obj) == 0xE3069283
            assert masked_crc32c(obj) == mask(0xE3069283)
        assert crc32c(np.arange(10, dtype=np.float32)) == crc32c(np.arange(10, dtype=np.float32).tobytes())

    def test_no_copy(self) -> None:
        big = bytearray(32 << 20)
        view = memoryview(big)
        tracemalloc.start()
        try:
            crc32c(view)
            crc32c(big)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 1 << 20, f"crc32c copied its input (peak {peak} bytes)"

    def test_bad_input(self) -> None:
        with pytest.raises(TypeError, match="bytes-like"):
            crc32c("text")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="value"):
            crc32c(b"x", "1")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="value"):
            crc32c(b"x", 1 << 32)
        with pytest.raises(ValueError, match="value"):
            crc32c(b"x", -1)
        with pytest.raises((TypeError, ValueError)):
            crc32c(memoryview(bytes(10))[::2])  # not contiguous


class TestImplSelection:
    def test_default_is_hardware_when_present(self) -> None:
        impls = crc32c_impls()
        assert "portable" in impls
        hw = [i for i in impls if i != "portable"]
        if "SUMMARYLOG_CRC32C" not in os.environ:
            assert crc32c_impl() == (hw[0] if hw else "portable")

    def test_force_portable_by_function(self) -> None:
        before = crc32c_impl()
        try:
            assert crc.use_crc32c_impl("portable") == "portable"
            assert crc32c(b"123456789") == 0xE3069283
        finally:
            crc.use_crc32c_impl(before)
        assert crc32c_impl() == before
        with pytest.raises(ValueError, match="name"):
            crc.use_crc32c_impl("avx9000")

    def test_force_portable_by_environment(self) -> None:
        code = ("from summarylog.records import crc32c, crc32c_impl;"
                "print(crc32c_impl(), hex(crc32c(b'123456789')))")
        env = dict(os.environ, SUMMARYLOG_CRC32C="portable")
        out = subprocess.run([sys.executable, "-P", "-c", code], env=env, check=True,
                             capture_output=True, text=True, cwd="/").stdout.split()
        assert out == ["portable", "0xe3069283"]
