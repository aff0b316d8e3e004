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
# zstd level -1: literals stored rather than Huffman-coded, and only matches of 7 bytes
# or more looked for.  On byte streams of doubles this compresses in half the time of
# level 1, and DuckDB reads the pages faster, for files about 7 % larger (the figures
# are in docs/datasets.md).  A 256 KiB window instead of the level's 512 KiB finds the
# same matches in these streams (files within bytes of the same size) in less time.
_ZSTD_LEVEL = -1
_ZSTD_MIN_MATCH = 7
_ZSTD_WINDOW_LOG = 18
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

        params = zstandard.ZstdCompressionParameters.from_level(
            _ZSTD_LEVEL, min_match=_ZSTD_MIN_MATCH, window_log=_ZSTD_WINDOW_LOG)
        c = _local.zstd = zstandard.ZstdCompressor(compression_params=params)
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


def _zz(n: int) -> bytes:
    """A thrift integer >= 0 (zigzag varint)."""
    return thrift.uvarint(n << 1)


def data_page_header(raw: int, size: int, rows: int, encoding: int) -> bytes:
    """thrift.struct of PageHeader{DATA_PAGE, raw, size, DataPageHeader{rows, encoding,
    RLE, RLE}}, spelled out: a file has one per page (the tests check it is the same)."""
    return b"".join((b"\x15\x00\x15", _zz(raw), b"\x15", _zz(size), b"\x2c\x15", _zz(rows),
                     b"\x15", _zz(encoding), b"\x15\x06\x15\x06\x00\x00"))


def dict_page_header(raw: int, size: int, entries: int) -> bytes:
    """thrift.struct of PageHeader{DICTIONARY_PAGE, raw, size,
    DictionaryPageHeader{entries, PLAIN}}, spelled out as data_page_header."""
    return b"".join((b"\x15\x04\x15", _zz(raw), b"\x15", _zz(size), b"\x4c\x15",
                     _zz(entries), b"\x15\x00\x00\x00"))


class ColumnChunk:
    """One column chunk being written: its pages' bytes and the sizes the footer needs."""

    def __init__(self, out: list[bytes], pos: int) -> None:
        self.out, self.start, self.pos = out, pos, pos
        self.raw = 0  # bytes before compression, page headers included
        self.dict_offset: int | None = None
        self.data_offset: int | None = None
        self.pages = 0

    def _add(self, head: bytes, data: bytes, n: int) -> None:
        self.out += (head, data)
        self.pos += len(head) + len(data)
        self.raw += len(head) + n

    def dict_page(self, body: bytes, entries: int) -> None:
        data = _compressor().compress(body)
        self.dict_offset = self.pos
        self._add(dict_page_header(len(body), len(data), entries), data, len(body))

    def data_page(self, body: Any, n: int, rows: int, encoding: int) -> None:
        """A page of ``rows`` rows: the first ``n`` bytes of ``body``."""
        data = _compressor().compress(body[:n])
        if self.data_offset is None:
            self.data_offset = self.pos
        self.pages += 1
        self._add(data_page_header(n, len(data), rows, encoding), data, n)

    def meta(self, head: bytes, rows: int, lo: bytes | None, hi: bytes | None,
             encoding: int) -> bytes:
        """The ColumnChunk: ``head`` the ColumnMetaData's fields 1-4 (:func:`_meta_head`)."""
        key = (self.dict_offset is not None, encoding, self.pages)
        enc_stats = _ENC_STATS.get(key)
        if enc_stats is None:
            entries = [[(1, "i32", _DICT_PAGE), (2, "i32", _PLAIN), (3, "i32", 1)]] if key[0] \
                else []
            entries.append([(1, "i32", _DATA_PAGE), (2, "i32", encoding), (3, "i32", self.pages)])
            enc_stats = _ENC_STATS[key] = thrift.value("list:struct", entries)
        # Statistics{null_count 0, max_value, min_value}, then ColumnMetaData's fields from
        # 5 on, spelled out as the page headers are (the tests compare with thrift.struct)
        stats = [b"\x36\x00"]
        if hi is not None and lo is not None:
            stats += (b"\x28", thrift.uvarint(len(hi)), hi, b"\x18", thrift.uvarint(len(lo)), lo)
        stats.append(b"\x00")
        meta = [b"\x26\x00\x1c", head, b"\x16", _zz(rows), b"\x16", _zz(self.raw), b"\x16",
                _zz(self.pos - self.start), b"\x26", _zz(self.data_offset)]
        if self.dict_offset is not None:
            meta += (b"\x26", _zz(self.dict_offset), b"\x1c")
        else:
            meta.append(b"\x3c")
        # ... and the ColumnChunk's stop after ColumnChunk{file_offset 0, meta_data}
        meta += (*stats, b"\x19", enc_stats, b"\x00\x00")
        return b"".join(meta)


_ENC_STATS: dict[tuple[bool, int, int], bytes] = {}


def _meta_head(ptype: int, name: str, encodings: list[int]) -> bytes:
    """ColumnMetaData's fields 1-4 (type, encodings, path, codec), the same in every file."""
    return thrift.struct([(1, "i32", ptype), (2, "list:i32", encodings), (3, "list:bin", [name]),
                          (4, "i32", _ZSTD)])[:-1]


META_HEADS = {"run": _meta_head(_BYTE_ARRAY, "run", [_PLAIN, _RLE, _RLE_DICT]),
              "tag": _meta_head(_BYTE_ARRAY, "tag", [_PLAIN, _RLE, _RLE_DICT]),
              "step": _meta_head(_INT64, "step", [_RLE, _DELTA]),
              "wall_time": _meta_head(_DOUBLE, "wall_time", [_RLE, _SPLIT]),
              "value": _meta_head(_DOUBLE, "value", [_RLE, _SPLIT])}


def _text_column(col: ColumnChunk, names: list[bytes], runs: list[tuple[int, int]],
                 rows: int) -> None:
    """A dictionary column: ``names`` in a PLAIN dictionary page, then the rows as runs
    of (dictionary index, count), in pages of _PAGE_ROWS rows."""
    col.dict_page(b"".join(_st.pack("<I", len(s)) + s for s in names), len(names))
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
        page = b"".join(body)
        col.data_page(page, len(page), n, _RLE_DICT)


def _page_buffer(levels: bytes, size: int) -> tuple[memoryview, Any]:
    """A page's buffer: the levels, then room for ``size`` bytes of values (a C pointer
    to them).  The thread's one scratch buffer: a page is compressed (copied out) before
    the next is built, and fresh memory for each page costs page faults."""
    need = len(levels) + size
    kept = getattr(_local, "page", None)
    if kept is None or len(kept[0]) < need:
        buf = bytearray(max(need, 1 << 20))
        kept = _local.page = (buf, ffi.from_buffer("uint8_t[]", buf))
    buf, ptr = kept
    buf[:len(levels)] = levels
    return memoryview(buf)[:need], ptr + len(levels)


Pieces = list[tuple[int, int, int]]  # (series, first row, end row) slices, in order


def _paged(pieces: Pieces) -> list[Pieces]:
    """``pieces`` cut into pages of _PAGE_ROWS rows (the last one shorter)."""
    pages: list[Pieces] = []
    page: Pieces = []
    room = _PAGE_ROWS
    for i, a, b in pieces:
        while a < b:
            take = min(room, b - a)
            page.append((i, a, a + take))
            a, room = a + take, room - take
            if not room:
                pages.append(page)
                page, room = [], _PAGE_ROWS
    if page:
        pages.append(page)
    return pages


def _segments(columns: list[Any], page: Pieces, ctype: str) -> tuple[Any, Any, int, int]:
    """A page's slices as the encoders take them: pointers, lengths, count, rows."""
    lens = [b - a for _, a, b in page]
    return (ffi.new(f"{ctype} *[]", [columns[i] + a for i, a, _ in page]),
            ffi.new("uint64_t[]", lens), len(page), sum(lens))


def _steps(col: ColumnChunk, columns: list[Any], pages: list[Pieces]) -> tuple[bytes, bytes]:
    """The step pages (``columns``: series -> pointer to its steps); the column's min
    and max."""
    lo = hi = None
    mm = ffi.new("int64_t[2]")
    for page in pages:
        seg, lens, nseg, rows = _segments(columns, page, "int64_t")
        levels = _levels(rows)
        cap = lib.slg_pq_delta_bound(rows)
        buf, values = _page_buffer(levels, cap)
        n = lib.slg_pq_delta_int64(seg, lens, nseg, values, cap, mm)
        if n < 0:  # pragma: no cover - the buffer is sized by slg_pq_delta_bound
            raise RuntimeError("slg_pq_delta_int64: buffer too small")
        col.data_page(buf, len(levels) + n, rows, _DELTA)
        lo = mm[0] if lo is None else min(lo, mm[0])
        hi = mm[1] if hi is None else max(hi, mm[1])
    return _st.pack("<q", lo), _st.pack("<q", hi)


def _doubles(col: ColumnChunk, columns: list[Any], pages: list[Pieces]
             ) -> tuple[bytes | None, bytes | None]:
    """The pages of a double column (``columns``: series -> pointer to its values);
    its min and max without NaN (none when all are NaN), a zero min written -0.0 and
    a zero max +0.0, as Parquet's ordering asks."""
    lo, hi = float("inf"), float("-inf")
    mm = ffi.new("double[2]")
    for page in pages:
        seg, lens, nseg, rows = _segments(columns, page, "double")
        levels = _levels(rows)
        buf, values = _page_buffer(levels, 8 * rows)
        if lib.slg_pq_split_f64(seg, lens, nseg, values, mm):
            lo, hi = min(lo, mm[0]), max(hi, mm[1])
        col.data_page(buf, len(buf), rows, _SPLIT)
    if lo > hi:
        return None, None
    return _st.pack("<d", -0.0 if lo == 0 else lo), _st.pack("<d", 0.0 if hi == 0 else hi)


def _schema() -> list[Any]:
    text = [(6, "i32", _UTF8), (10, "struct", [(1, "struct", [])])]
    leaf = [("run", _BYTE_ARRAY, text), ("tag", _BYTE_ARRAY, text), ("step", _INT64, []),
            ("wall_time", _DOUBLE, []), ("value", _DOUBLE, [])]
    return [[(3, "i32", 0), (4, "bin", "schema"), (5, "i32", len(leaf))]] + [
        [(1, "i32", t), (3, "i32", _OPTIONAL), (4, "bin", name), *extra]
        for name, t, extra in leaf]


def write_scalars(run: str, series: list[tuple[str, Scalars]]) -> list[bytes]:
    """The Parquet file of ``run``'s scalar ``series`` (tag, points in step order),
    tags in name order, as the buffers to write one after another."""
    out: list[bytes] = [b"PAR1"]
    pos = 4
    run_name = arrow_text(run).encode()
    names = [arrow_text(tag).encode() for tag, _ in series]
    groups = []
    total = 0
    # each series' columns as C arrays, once (the Reader's are contiguous already: no
    # copy); a row group's pages are encoded from its series' slices, never joined
    step = [ffi.from_buffer("int64_t[]", np.ascontiguousarray(s.step, np.int64))
            for _, s in series]
    wall, value = ([ffi.from_buffer("double[]", np.ascontiguousarray(s[k], np.float64))
                    for _, s in series] for k in (1, 2))
    for ordinal, group in enumerate(row_groups([len(s.step) for _, s in series])):
        pages = _paged(group)
        rows, raw = sum(b - a for _, a, b in group), 0
        first, chunks = pos, []
        for name in ("run", "tag", "step", "wall_time", "value"):
            col = ColumnChunk(out, pos)
            if name == "run":
                _text_column(col, [run_name], [(0, rows)], rows)
                lo = hi = run_name
                enc = _RLE_DICT
            elif name == "tag":
                tags = [names[i] for i, _, _ in group]
                _text_column(col, tags, [(k, b - a) for k, (_, a, b) in enumerate(group)], rows)
                lo, hi, enc = min(tags), max(tags), _RLE_DICT
            elif name == "step":
                lo, hi = _steps(col, step, pages)
                enc = _DELTA
            else:
                lo, hi = _doubles(col, wall if name == "wall_time" else value, pages)
                enc = _SPLIT
            chunks.append(col.meta(META_HEADS[name], rows, lo, hi, enc))
            raw += col.raw
            pos = col.pos
        groups.append([(1, "list:struct", chunks), (2, "i64", raw),
                       (3, "i64", rows), (5, "i64", first), (6, "i64", pos - first),
                       (7, "i16", ordinal)])
        total += rows
    fixed = _constant_footer()
    meta = thrift.struct([(1, "i32", 2), fixed[0], (3, "i64", total), (4, "list:struct", groups),
                          *fixed[1:]])
    out += (meta, _st.pack("<I", len(meta)), b"PAR1")
    return out
