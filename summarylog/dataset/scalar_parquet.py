"""The scalar table's Parquet parts, written from the Reader's numpy columns without
building Arrow tables: the scalars are nearly all of an export's rows, and pyarrow's
general writer cost several times what this layout needs (the bench's
``export_parquet`` row).  The other tables are written by pyarrow.

The file is what pyarrow writes for :func:`~summarylog.arrow_tables.scalar_schema`
(its Arrow schema in the footer, so pyarrow reads run and tag back as dictionaries):
optional columns; run and tag dictionary-encoded (one entry per tag of a row group,
indices as runs); steps DELTA_BINARY_PACKED; wall times and values BYTE_STREAM_SPLIT;
every page zstd-compressed; min/max statistics per column chunk (NaN left out, as
Parquet's ordering asks).  Row groups follow :mod:`.row_groups`."""

from __future__ import annotations

import base64
import struct as _st
import threading
from typing import Any

import numpy as np

from .._native import ffi, lib
from .._version import __version__
from ..arrow_tables import arrow_text, scalar_schema
from ..read_types import Scalars
from . import thrift
from .row_groups import row_groups

__all__ = ["write_scalars"]

_PAGE_ROWS = 1 << 17  # a page of doubles is then 1 MiB, pyarrow's default page size
_ZSTD_LEVEL = 1  # pyarrow's default for zstd
# Parquet's enums (parquet.thrift)
_BYTE_ARRAY, _INT64, _DOUBLE = 6, 2, 5
_OPTIONAL, _UTF8, _ZSTD = 1, 0, 6
_PLAIN, _RLE, _DELTA, _RLE_DICT, _SPLIT = 0, 3, 5, 8, 9
_DATA_PAGE, _DICT_PAGE = 0, 2

_local = threading.local()
_footer_fields: list[tuple[int, str, Any]] | None = None


def _compressor() -> Any:
    """This thread's zstd compressor (one context, reused: creating one costs)."""
    c = getattr(_local, "zstd", None)
    if c is None:
        import zstandard

        c = _local.zstd = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return c


def _constant_footer() -> list[tuple[int, str, Any]]:
    """The footer's fields every file shares, encoded once: the schema, pyarrow's
    Arrow schema, the writer's name and the column orders."""
    global _footer_fields
    if _footer_fields is None:
        arrow = base64.b64encode(scalar_schema().serialize().to_pybytes())
        _footer_fields = [
            (2, "list:struct", thrift.value("list:struct", _schema())),
            (5, "list:struct", thrift.value("list:struct", [[(1, "bin", b"ARROW:schema"),
                                                             (2, "bin", arrow)]])),
            (6, "bin", f"summarylog version {__version__}"),
            (7, "list:struct", thrift.value("list:struct", [[(1, "struct", [])]] * 5))]
    return _footer_fields


def _levels(n: int) -> bytes:
    """Definition levels of n present values: one RLE run of 1s, length-prefixed."""
    run = thrift.uvarint(n << 1) + b"\x01"
    return _st.pack("<I", len(run)) + run


class _Column:
    """One column chunk being written: its pages' bytes and the sizes the footer needs."""

    def __init__(self, out: list[bytes], pos: int) -> None:
        self.out, self.start, self.pos = out, pos, pos
        self.raw = 0  # bytes before compression, page headers included
        self.dict_offset: int | None = None
        self.data_offset: int | None = None
        self.pages = 0

    def page(self, kind: int, body: Any, header: list[tuple[int, str, Any]]) -> None:
        data = _compressor().compress(body)
        n = len(memoryview(body).cast("B"))
        head = thrift.struct([(1, "i32", kind), (2, "i32", n), (3, "i32", len(data)), *header])
        if kind == _DICT_PAGE:
            self.dict_offset = self.pos
        elif self.data_offset is None:
            self.data_offset = self.pos
        self.pages += kind == _DATA_PAGE
        self.out += (head, data)
        self.pos += len(head) + len(data)
        self.raw += len(head) + n

    def data_page(self, body: Any, rows: int, encoding: int) -> None:
        self.page(_DATA_PAGE, body, [(5, "struct", [(1, "i32", rows), (2, "i32", encoding),
                                                    (3, "i32", _RLE), (4, "i32", _RLE)])])

    def meta(self, ptype: int, name: str, rows: int, encodings: list[int],
             lo: bytes | None, hi: bytes | None, value_encoding: int) -> list[Any]:
        stats = [(3, "i64", 0), (5, "bin", hi), (6, "bin", lo)]
        enc_stats = ([[(1, "i32", _DICT_PAGE), (2, "i32", _PLAIN), (3, "i32", 1)]]
                     if self.dict_offset is not None else [])
        enc_stats.append([(1, "i32", _DATA_PAGE), (2, "i32", value_encoding),
                          (3, "i32", self.pages)])
        meta = [(1, "i32", ptype), (2, "list:i32", encodings), (3, "list:bin", [name]),
                (4, "i32", _ZSTD), (5, "i64", rows), (6, "i64", self.raw),
                (7, "i64", self.pos - self.start), (9, "i64", self.data_offset),
                (11, "i64", self.dict_offset), (12, "struct", stats),
                (13, "list:struct", enc_stats)]
        return [(2, "i64", 0), (3, "struct", meta)]


def _text_column(col: _Column, names: list[bytes], runs: list[tuple[int, int]],
                 rows: int) -> None:
    """A dictionary column: ``names`` in a PLAIN dictionary page, then the rows as runs
    of (dictionary index, count), in pages of _PAGE_ROWS rows."""
    col.page(_DICT_PAGE, b"".join(_st.pack("<I", len(s)) + s for s in names),
             [(7, "struct", [(1, "i32", len(names)), (2, "i32", _PLAIN)])])
    width = max(1, (len(names) - 1).bit_length())
    nbytes = (width + 7) // 8
    k, left = 0, runs[0][1] if runs else 0  # the run being paged, its rows not paged yet
    for start in range(0, rows, _PAGE_ROWS):
        n = min(_PAGE_ROWS, rows - start)
        body = [_levels(n), bytes([width])]
        want = n
        while want:
            take = min(left, want)
            body += (thrift.uvarint(take << 1), runs[k][0].to_bytes(nbytes, "little"))
            want -= take
            left -= take
            if not left and k + 1 < len(runs):
                k += 1
                left = runs[k][1]
        col.data_page(b"".join(body), n, _RLE_DICT)


def _steps(col: _Column, step: np.ndarray) -> None:
    for start in range(0, len(step), _PAGE_ROWS):
        part = np.ascontiguousarray(step[start:start + _PAGE_ROWS])
        levels = _levels(len(part))
        buf = np.empty(len(levels) + lib.slg_pq_delta_bound(len(part)), np.uint8)
        buf[:len(levels)] = np.frombuffer(levels, np.uint8)
        n = lib.slg_pq_delta_int64(ffi.from_buffer("int64_t[]", part), len(part),
                                   ffi.from_buffer("uint8_t[]", buf[len(levels):]),
                                   len(buf) - len(levels))
        if n < 0:  # pragma: no cover - the buffer is sized by slg_pq_delta_bound
            raise RuntimeError("slg_pq_delta_int64: buffer too small")
        col.data_page(buf[:len(levels) + n], len(part), _DELTA)


def _doubles(col: _Column, x: np.ndarray) -> None:
    for start in range(0, len(x), _PAGE_ROWS):
        part = np.ascontiguousarray(x[start:start + _PAGE_ROWS], np.float64)
        levels = _levels(len(part))
        buf = np.empty(len(levels) + 8 * len(part), np.uint8)
        buf[:len(levels)] = np.frombuffer(levels, np.uint8)
        lib.slg_pq_byte_split8(ffi.from_buffer("uint8_t[]", part.view(np.uint8)), len(part),
                               ffi.from_buffer("uint8_t[]", buf[len(levels):]))
        col.data_page(buf, len(part), _SPLIT)


def _double_stats(x: np.ndarray) -> tuple[bytes | None, bytes | None]:
    """min, max without NaN (none when all are NaN); a zero min is -0.0, a zero max +0.0."""
    lo, hi = float(np.fmin.reduce(x)), float(np.fmax.reduce(x))
    if lo != lo:
        return None, None
    return _st.pack("<d", -0.0 if lo == 0 else lo), _st.pack("<d", 0.0 if hi == 0 else hi)


def _schema() -> list[Any]:
    text = [(6, "i32", _UTF8), (10, "struct", [(1, "struct", [])])]
    leaf = [("run", _BYTE_ARRAY, text), ("tag", _BYTE_ARRAY, text), ("step", _INT64, []),
            ("wall_time", _DOUBLE, []), ("value", _DOUBLE, [])]
    return [[(3, "i32", 0), (4, "bin", "schema"), (5, "i32", len(leaf))]] + [
        [(1, "i32", t), (3, "i32", _OPTIONAL), (4, "bin", name), *extra]
        for name, t, extra in leaf]


def write_scalars(run: str, series: list[tuple[str, Scalars]]) -> bytes:
    """The Parquet file of ``run``'s scalar ``series`` (tag, points in step order),
    tags in name order."""
    out: list[bytes] = [b"PAR1"]
    pos = 4
    run_name = arrow_text(run).encode()
    names = [arrow_text(tag).encode() for tag, _ in series]
    groups = []
    total = 0
    for ordinal, group in enumerate(row_groups([len(s.step) for _, s in series])):
        cols = [[series[i][1][k][a:b] for i, a, b in group] for k in range(3)]
        step, wall, value = (c[0] if len(c) == 1 else np.concatenate(c) for c in cols)
        rows = len(step)
        first, chunks = pos, []
        for name, ptype in (("run", _BYTE_ARRAY), ("tag", _BYTE_ARRAY), ("step", _INT64),
                            ("wall_time", _DOUBLE), ("value", _DOUBLE)):
            col = _Column(out, pos)
            if name == "run":
                _text_column(col, [run_name], [(0, rows)], rows)
                lo = hi = run_name
                encodings, venc = [_PLAIN, _RLE, _RLE_DICT], _RLE_DICT
            elif name == "tag":
                tags = [names[i] for i, _, _ in group]
                _text_column(col, tags, [(k, b - a) for k, (_, a, b) in enumerate(group)], rows)
                lo, hi = min(tags), max(tags)
                encodings, venc = [_PLAIN, _RLE, _RLE_DICT], _RLE_DICT
            elif name == "step":
                _steps(col, step)
                lo, hi = _st.pack("<q", int(step.min())), _st.pack("<q", int(step.max()))
                encodings, venc = [_RLE, _DELTA], _DELTA
            else:
                x = wall if name == "wall_time" else value
                _doubles(col, x)
                lo, hi = _double_stats(x)
                encodings, venc = [_RLE, _SPLIT], _SPLIT
            chunks.append((col.meta(ptype, name, rows, encodings, lo, hi, venc), col.raw))
            pos = col.pos
        raw = sum(r for _, r in chunks)
        groups.append([(1, "list:struct", [c for c, _ in chunks]), (2, "i64", raw),
                       (3, "i64", rows), (5, "i64", first), (6, "i64", pos - first),
                       (7, "i16", ordinal)])
        total += rows
    fixed = _constant_footer()
    meta = thrift.struct([(1, "i32", 2), fixed[0], (3, "i64", total), (4, "list:struct", groups),
                          *fixed[1:]])
    out += (meta, _st.pack("<I", len(meta)), b"PAR1")
    return b"".join(out)
