"""The scalar table's own Parquet writer (summarylog.dataset.scalar_parquet) against
pyarrow's: the same table read back (types, dictionaries, every value bit for bit:
NaN, -0.0, infinities, int64 extremes, non-UTF-8 tags), the same statistics, pages
and row groups cut where the layout says; DuckDB and pyarrow.dataset read it, next to
a part pyarrow wrote."""

from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import require_module

from summarylog.arrow_tables import arrow_text, scalar_schema
from summarylog.dataset.row_groups import GROUP_MAX, GROUP_MIN
from summarylog.dataset.scalar_parquet import write_scalars
from summarylog.read_types import Scalars

pa = require_module("pyarrow")
pq = require_module("pyarrow.parquet")
pds = require_module("pyarrow.dataset")
duckdb = require_module("duckdb")

I64 = np.iinfo(np.int64)


def _series(n: int, seed: int, steps: str = "count") -> Scalars:
    rng = np.random.default_rng(seed)
    if steps == "count":
        step = np.arange(n, dtype=np.int64)
    else:  # any int64, extremes included, in step order as the export keeps them
        step = rng.integers(I64.min, I64.max, n, dtype=np.int64, endpoint=True)
        step[: min(n, 2)] = [I64.min, I64.max][: min(n, 2)]
        step.sort(kind="stable")
    wall = 1.7e9 + np.cumsum(rng.random(n))
    value = rng.normal(size=n)
    special = [np.nan, -0.0, 0.0, np.inf, -np.inf, 5e-324, -np.nan]
    value[: min(n, len(special))] = special[: min(n, len(special))]
    return Scalars(step, wall, value)


def _pyarrow_file(run: str, series: list[tuple[str, Scalars]]) -> bytes:
    """The same rows written by pyarrow (one row group per tag slice as ours)."""
    text = pa.dictionary(pa.int32(), pa.string())
    t = pa.table({"run": pa.array([arrow_text(run)] * sum(len(s.step) for _, s in series)
                                  ).cast(text),
                  "tag": pa.array([arrow_text(tag) for tag, s in series for _ in s.step]
                                  ).cast(text),
                  "step": np.concatenate([s.step for _, s in series]),
                  "wall_time": np.concatenate([s.wall_time for _, s in series]),
                  "value": np.concatenate([s.value for _, s in series])}, schema=scalar_schema())
    sink = io.BytesIO()
    pq.write_table(t, sink, compression="zstd")
    return sink.getvalue()


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint64 if a.itemsize == 8 else a.dtype),
                                                 b.view(np.uint64 if b.itemsize == 8 else b.dtype))


def _values(*v: float) -> Scalars:
    return Scalars(np.arange(len(v), dtype=np.int64), np.full(len(v), 1.7e9), np.array(v))


CASES = {
    "one row": [("loss", _series(1, 0))],
    # a zero min is written -0.0 and a zero max +0.0, whichever zero the rows hold
    "zero bounds": [("z1", _values(-1.0, -0.0))],
    "zero bounds+": [("z2", _values(0.0, 2.0))],
    "all NaN": [("n", _values(np.nan, np.nan))],
    "shared row group": [("a", _series(300, 1)), ("b", _series(5, 2, "any")),
                         ("c\udcff", _series(70, 3)), ("d\u00e9", _series(1, 4))],
    "big tag, pages": [("acc", _series(GROUP_MIN, 5)), ("big", _series((1 << 17) * 2 + 3, 6, "any")),
                       ("small", _series(10, 7))],
    # small tags sharing a row group of two pages: a page's rows come from several
    # tags, and the second page starts inside a tag
    "tags across pages": [("a", _series(50_000, 8)), ("b", _series(60_000, 9, "any")),
                          ("c", _series(40_000, 10)), ("d", _series(3, 11, "any"))],
}


@pytest.mark.parametrize("case", list(CASES))
def test_reads_back_as_pyarrows_file_does(case):
    series = CASES[case]
    mine = b"".join(write_scalars("run/\udcfe", series))
    ref = _pyarrow_file("run/\udcfe", series)
    ours, theirs = pq.ParquetFile(io.BytesIO(mine)), pq.ParquetFile(io.BytesIO(ref))
    a, b = ours.read(), theirs.read()
    assert a.schema == b.schema == scalar_schema()
    for name in ("run", "tag"):
        assert a.column(name).to_pylist() == b.column(name).to_pylist()
    for name in ("step", "wall_time", "value"):
        assert _same_bits(a.column(name).to_numpy(), b.column(name).to_numpy()), name
    # statistics: what pyarrow computes for the same column chunks' rows
    for g in range(ours.metadata.num_row_groups):
        rg = ours.metadata.row_group(g)
        rows = a.slice(sum(ours.metadata.row_group(k).num_rows for k in range(g)), rg.num_rows)
        for c, name in enumerate(a.column_names):
            st = rg.column(c).statistics
            col = rows.column(name).combine_chunks()
            if name in ("run", "tag"):
                col = col.dictionary_decode()
            else:
                col = pa.array(col.to_numpy(), type=col.type)
            want = pq.ParquetFile(io.BytesIO(_one_column(name, col))).metadata.row_group(0)
            expect = want.column(0).statistics
            assert st.null_count == 0
            assert st.has_min_max == expect.has_min_max, name
            if expect.has_min_max:
                assert (_key(st.min), _key(st.max)) == (_key(expect.min), _key(expect.max)), name
    print(f"\n{case}: {len(a):,} rows in {ours.metadata.num_row_groups} row groups, "
          f"{len(mine):,} B (pyarrow's file: {len(ref):,} B)")


def _key(x):
    """Statistics compared with the sign of zero."""
    return (x, np.copysign(1.0, x)) if isinstance(x, float) else x


def _one_column(name: str, col) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({name: col}), sink)
    return sink.getvalue()


def test_layout_encodings_and_row_groups():
    """Tags of GROUP_MIN rows or more alone in row groups of at most GROUP_MAX rows,
    small ones sharing; the encodings docs/datasets.md names."""
    series = [("a", _series(GROUP_MAX + 5, 1)), ("b", _series(100, 2)),
              ("c", _series(GROUP_MIN - 1, 3)), ("d", _series(GROUP_MIN, 4))]
    meta = pq.ParquetFile(io.BytesIO(b"".join(write_scalars("r", series)))).metadata
    groups = [(meta.row_group(g).column(1).statistics.min, meta.row_group(g).column(1).statistics.max,
               meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
    assert groups == [("a", "a", GROUP_MAX), ("a", "a", 5), ("b", "c", GROUP_MIN + 99),
                      ("d", "d", GROUP_MIN)]
    rg = meta.row_group(0)
    enc = {rg.column(c).path_in_schema: (rg.column(c).encodings, rg.column(c).compression)
           for c in range(5)}
    assert enc == {"run": (("PLAIN", "RLE", "RLE_DICTIONARY"), "ZSTD"),
                   "tag": (("PLAIN", "RLE", "RLE_DICTIONARY"), "ZSTD"),
                   "step": (("RLE", "DELTA_BINARY_PACKED"), "ZSTD"),
                   "wall_time": (("RLE", "BYTE_STREAM_SPLIT"), "ZSTD"),
                   "value": (("RLE", "BYTE_STREAM_SPLIT"), "ZSTD")}


def test_duckdb_and_pyarrow_dataset_read_it_beside_a_pyarrow_part(tmp_path):
    series = CASES["shared row group"]
    d = tmp_path / "scalars" / "run_key=r"
    d.mkdir(parents=True)
    (d / "part-1.parquet").write_bytes(b"".join(write_scalars("r", series)))
    (d / "part-0.parquet").write_bytes(_pyarrow_file("r", series))
    glob = str(tmp_path / "scalars" / "*" / "*.parquet")
    got = duckdb.sql(f"select tag, count(*), min(step), max(step), "
                     f"coalesce(sum(value) filter (where isfinite(value)), 0) from read_parquet('{glob}') "
                     f"group by tag order by tag").fetchall()
    want = sorted((arrow_text(tag), 2 * len(s.step), int(s.step.min()), int(s.step.max()),
                   2 * float(s.value[np.isfinite(s.value)].sum())) for tag, s in series)
    assert [g[:4] for g in got] == [w[:4] for w in want]
    assert np.allclose([g[4] for g in got], [w[4] for w in want])
    # a filter the statistics decide: only tag b's rows
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}') where tag = 'b'"
                      ).fetchall() == [(10,)]
    t = pds.dataset(str(tmp_path / "scalars"), format="parquet", partitioning="hive").to_table()
    assert t.num_rows == 2 * sum(len(s.step) for _, s in series)


def test_spelled_out_thrift_is_the_encoders():
    """The page headers and the column chunk, spelled out byte by byte for speed, are what
    the general thrift encoder makes of the same structs."""
    from summarylog.dataset import scalar_parquet as sp
    from summarylog.dataset import thrift

    def leb128(n: int) -> bytes:  # the varint as the format describes it, 7 bits at a time
        out = []
        while True:
            out.append(n & 0x7F | (0x80 if n >> 7 else 0))
            n >>= 7
            if not n:
                return bytes(out)

    for n in [*range(300), *range((1 << 14) - 3, (1 << 14) + 3), *range((1 << 21) - 3, (1 << 21) + 3),
              1 << 35, (1 << 63) - 1, (1 << 64) - 1]:
        assert thrift.uvarint(n) == leb128(n), n
    rng = np.random.default_rng(0)
    for raw, size, rows in [(0, 0, 1), (1, 127, 128), *rng.integers(0, 1 << 40, (20, 3)).tolist()]:
        for enc in (5, 8, 9):
            assert sp.data_page_header(raw, size, rows, enc) == thrift.struct(
                [(1, "i32", 0), (2, "i32", raw), (3, "i32", size),
                 (5, "struct", [(1, "i32", rows), (2, "i32", enc), (3, "i32", 3), (4, "i32", 3)])])
        assert sp.dict_page_header(raw, size, rows) == thrift.struct(
            [(1, "i32", 2), (2, "i32", raw), (3, "i32", size),
             (7, "struct", [(1, "i32", rows), (2, "i32", 0)])])
    col = sp.ColumnChunk([], 4)
    col.dict_page(b"\x03\x00\x00\x00abc", 1)
    col.data_page(b"0123456789", 10, 7, 8)
    got = col.meta(sp.META_HEADS["tag"], 7, b"abc", b"abc", 8)
    meta = [(1, "i32", 6), (2, "list:i32", [0, 3, 8]), (3, "list:bin", ["tag"]), (4, "i32", 6),
            (5, "i64", 7), (6, "i64", col.raw), (7, "i64", col.pos - 4),
            (9, "i64", col.data_offset), (11, "i64", 4),
            (12, "struct", [(3, "i64", 0), (5, "bin", b"abc"), (6, "bin", b"abc")]),
            (13, "list:struct", [[(1, "i32", 2), (2, "i32", 0), (3, "i32", 1)],
                                 [(1, "i32", 0), (2, "i32", 8), (3, "i32", 1)]])]
    assert got == thrift.struct([(2, "i64", 0), (3, "struct", meta)])
    # a column without a dictionary, of NaN only (no min/max), on two pages
    col = sp.ColumnChunk([], 1000)
    col.data_page(b"x" * 300, 300, 70, 9)
    col.data_page(b"y" * 20, 20, 5, 9)
    got = col.meta(sp.META_HEADS["value"], 75, None, None, 9)
    meta = [(1, "i32", 5), (2, "list:i32", [3, 9]), (3, "list:bin", ["value"]), (4, "i32", 6),
            (5, "i64", 75), (6, "i64", col.raw), (7, "i64", col.pos - 1000),
            (9, "i64", 1000), (12, "struct", [(3, "i64", 0)]),
            (13, "list:struct", [[(1, "i32", 0), (2, "i32", 9), (3, "i32", 2)]])]
    assert got == thrift.struct([(2, "i64", 0), (3, "struct", meta)])
