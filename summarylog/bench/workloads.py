"""The workloads of ``python -m summarylog.bench``: each times summarylog and
its peers side by side, in this process, on the same data and disk.

Peers are imported inside the bench functions, so importing this module
imports no peer (and, through tensorboardX, no torch).  Every workload checks
that summarylog and the peer produced the same result (same CRC, same file
bytes, same records) before its figures are used; none asserts a time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from importlib import metadata
from typing import Any, Callable

from .registry import Context, PeerMissing, Row, bench, need_peer, per_second, timed, write_back

__all__ = ["bench_crc32c", "bench_write_many", "bench_fsync_1mib", "bench_scan"]

PAYLOAD_SIZE = 40
FRAME_OVERHEAD = 16  # TFRecord: u64 length, u32 masked length CRC, u32 masked data CRC


def _ver(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def _payloads(ctx: Context, n: int, size: int = PAYLOAD_SIZE) -> list[bytes]:
    """``n`` distinct random payloads of ``size`` bytes (shared between benches)."""
    key = f"payloads-{size}"
    have: list[bytes] | None = ctx.cache.get(key)
    if have is None or len(have) < n:
        blob = os.urandom(n * size)
        have = [blob[i : i + size] for i in range(0, n * size, size)]
        ctx.cache[key] = have
    return have if len(have) == n else have[:n]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _same_file(a: str, b: str) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 22), fb.read(1 << 22)
            if x != y:
                return False
            if not x:
                return True


# --------------------------------------------------------------------------
# a. CRC32C


@bench("crc32c", goal=0.9, unit="GB/s", peer="crc32c package",
       description="CRC32C of a 64 MiB buffer (GB/s = 1e9 bytes/s)")
def bench_crc32c(ctx: Context) -> list[Row]:
    """CRC32C of a 64 MiB buffer: summarylog.records.crc32c vs the crc32c
    package (and google-crc32c); our portable fallback for information."""
    from ..records import crc32c, crc32c_impl, crc32c_impls
    from ..records.crc import _impl_crc

    size = ctx.pick(64 << 20, 8 << 20)
    passes = ctx.pick(8, 2)
    data = os.urandom(size)
    expected = crc32c(data)
    gb = size * passes / 1e9

    def loop(fn: Callable[[Any], int]) -> Callable[[], float]:
        if fn(data) != expected:  # also the warm-up
            raise RuntimeError(f"{fn!r} disagrees with summarylog.records.crc32c")

        def body() -> None:
            for _ in range(passes):
                fn(data)

        return timed(body)

    candidates = {"ours": loop(crc32c)}
    status: dict[str, str] = {}
    labels: dict[str, str] = {}
    try:
        pkg = need_peer("crc32c")
        candidates["crc32c"] = loop(pkg.crc32c)
        hw = "hardware" if getattr(pkg, "hardware_based", True) else "software"
        labels["crc32c"] = f"crc32c {_ver('crc32c')} ({hw})"
        status["crc32c"] = "ok"
    except PeerMissing as exc:
        labels["crc32c"], status["crc32c"] = "crc32c package", str(exc)
    try:
        g = need_peer("google_crc32c", hint="pip install google-crc32c")
        candidates["google_crc32c"] = loop(lambda d: g.value(d))
        labels["google_crc32c"] = (f"google-crc32c {_ver('google-crc32c')} "
                                   f"({getattr(g, 'implementation', '?')})")
        status["google_crc32c"] = "ok"
    except PeerMissing as exc:
        labels["google_crc32c"], status["google_crc32c"] = "google-crc32c", str(exc)
    if "portable" in crc32c_impls():
        candidates["portable"] = loop(lambda d: _impl_crc("portable", d))

    ctx.log(f"crc32c: {size >> 20} MiB x {passes} passes, {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    ours = per_second(gb, res["ours"])
    what = f"{size >> 20} MiB buffer, {passes} passes per run"
    rows = [
        Row("crc32c", "crc32c", labels[p], "GB/s", ours,
            per_second(gb, res[p]) if p in res else None, status[p],
            note=f"{what}; summarylog impl {crc32c_impl()}" if p == "crc32c" else "")
        for p in ("crc32c", "google_crc32c")
    ]
    if "portable" in res:
        rows.append(Row("crc32c", "crc32c, our portable fallback", labels["crc32c"], "GB/s",
                        per_second(gb, res["portable"]),
                        per_second(gb, res["crc32c"]) if "crc32c" in res else None,
                        status["crc32c"], primary=False,
                        note="slicing-by-8 C fallback used when the CPU has no CRC instruction"))
    return rows


# --------------------------------------------------------------------------
# b. framing + writing many small records


def _tbx_crc_backend(rw_module: Any) -> str:
    try:
        import crc32c as pkg
    except ImportError:
        pkg = None
    if pkg is not None and getattr(rw_module, "crc32c", None) is pkg.crc32c:
        return "crc32c package"
    return "pure-Python CRC"


@bench("write_many", goal=20, unit="records/s", peer="tensorboardX RecordWriter",
       description="frame + write 1,000,000 payloads of 40 B, incl. open and close")
def bench_write_many(ctx: Context) -> list[Row]:
    """Frame and write 1,000,000 40-byte payloads, open to close:
    RecordWriter.write_many vs tensorboardX's RecordWriter.write per record."""
    from ..records import RecordWriter

    n = ctx.pick(1_000_000, 100_000)
    payloads = _payloads(ctx, n)
    size = n * (PAYLOAD_SIZE + FRAME_OVERHEAD)
    checked: dict[str, str] = {}

    def candidate(write: Callable[..., None], key: str) -> Callable[[], float]:
        state: dict[str, str] = {}

        def setup() -> None:
            write_back()
            state["path"] = ctx.path(key)

        def body() -> None:
            write(state["path"])

        def teardown() -> None:
            path = state["path"]
            got = os.path.getsize(path)
            if got != size:
                raise RuntimeError(f"{key}: wrote {got} bytes, expected {size}")
            if key not in checked:  # first run of each: keep the file to compare
                checked[key] = path
            else:
                _unlink(path)

        return timed(body, setup, teardown)

    def ours_many(durability: str) -> Callable[..., None]:
        def write(path: str, items: list[bytes] = payloads) -> None:
            w = RecordWriter(path, durability=durability)
            w.write_many(items)
            w.close()

        return write

    def ours_loop(path: str, items: list[bytes] = payloads) -> None:
        w = RecordWriter(path)
        wr = w.write
        for p in items:
            wr(p)
        w.close()

    writers: list[Callable[..., None]] = [ours_many("flush"), ours_many("none"), ours_loop]

    candidates = {
        "ours": candidate(writers[0], "ours"),
        "ours_none": candidate(writers[1], "ours_none"),
        "ours_loop": candidate(writers[2], "ours_loop"),
    }
    peer = "tensorboardX RecordWriter"
    status, crc_note = "ok", ""
    try:
        rw = need_peer("tensorboardX.record_writer")
        tbx_writer = rw.RecordWriter
        backend = _tbx_crc_backend(rw)
        peer = f"tensorboardX {_ver('tensorboardX')} RecordWriter"
        crc_note = f"; tensorboardX computes CRCs with the {backend}"

        def tbx(path: str, items: list[bytes] = payloads) -> None:
            w = tbx_writer(path)
            wr = w.write
            for p in items:
                wr(p)
            w.close()

        writers.append(tbx)
        candidates["peer"] = candidate(tbx, "peer")
    except PeerMissing as exc:
        status = str(exc)

    # untimed warm-up: each writer's first-call costs stay out of the rounds
    for write in writers:
        warm = ctx.path("warm")
        write(warm, payloads[:1000])
        _unlink(warm)

    ctx.log(f"write_many: {n:,} x {PAYLOAD_SIZE} B payloads, {ctx.repeat} rounds "
            f"in {ctx.tmpdir}")
    try:
        res = ctx.rounds(candidates)
        ref = checked["ours"]
        for key, path in checked.items():
            if key != "ours" and not _same_file(ref, path):
                raise RuntimeError(f"{key} wrote different bytes than RecordWriter.write_many")
    finally:
        for path in checked.values():
            _unlink(path)

    peer_runs = per_second(n, res["peer"]) if "peer" in res else None
    base = f"{n:,} x {PAYLOAD_SIZE} B, open to close, same bytes on disk{crc_note}"
    return [
        Row("write_many", "write_many", peer, "records/s", per_second(n, res["ours_none"]),
            peer_runs, status,
            note=f"{base}; like for like: durability='none', neither side fsyncs"),
        Row("write_many", "write_many, default durability='flush'", peer, "records/s",
            per_second(n, res["ours"]), peer_runs, status, primary=False,
            note="ours also fdatasyncs the 56 MB at close(); tensorboardX's close() does not"),
        Row("write_many", "write() per record", peer, "records/s",
            per_second(n, res["ours_loop"]), peer_runs, status, primary=False,
            note="one RecordWriter.write call per payload, durability='flush'"),
    ]


# --------------------------------------------------------------------------
# c. 1 MiB records, durability="fsync"

_DD_SECONDS = re.compile(r"copied,\s*([0-9.,eE+-]+)\s*s")


@bench("fsync_1mib", goal=0.8, unit="MiB/s", peer="dd conv=fsync",
       description="256 MiB in 1 MiB records with durability='fsync', incl. close")
def bench_fsync_1mib(ctx: Context) -> list[Row]:
    """256 MiB as 1 MiB records with durability="fsync" (open to close) vs
    ``dd if=/dev/zero bs=1M conv=fsync`` to the same disk."""
    from ..records import RecordWriter

    mib = ctx.pick(256, 32)
    payload = os.urandom(1 << 20)
    size = mib * ((1 << 20) + FRAME_OVERHEAD)
    fsyncs: list[int] = []

    def ours() -> float:
        write_back()
        path = ctx.path("fsync-ours")
        t0 = time.perf_counter()
        w = RecordWriter(path, durability="fsync")
        for _ in range(mib):
            w.write(payload)
        w.close()
        dt = time.perf_counter() - t0
        fsyncs.append(w.stats.fsyncs)
        got = os.path.getsize(path)
        _unlink(path)
        if got != size:
            raise RuntimeError(f"RecordWriter wrote {got} bytes, expected {size}")
        return dt

    candidates: dict[str, Callable[[], float]] = {"ours": ours}
    dd = shutil.which("dd")
    status = "ok" if dd else "missing (dd not found in PATH)"
    dd_self: list[float] = []
    spawn = 0.0
    if dd:
        env = dict(os.environ, LC_ALL="C")

        def run_dd(args: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run([dd, *args], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=env, check=True)

        # What spawning dd costs by itself; subtracted so dd is timed from
        # its start to its exit, as ours is timed from open to close.
        spans = []
        for _ in range(5):
            t0 = time.perf_counter()
            run_dd(["if=/dev/zero", "of=/dev/null", "count=0"])
            spans.append(time.perf_counter() - t0)
        spawn = sorted(spans)[len(spans) // 2]

        def peer() -> float:
            write_back()
            path = ctx.path("fsync-dd")
            t0 = time.perf_counter()
            cp = run_dd(["if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "conv=fsync"])
            dt = time.perf_counter() - t0
            got = os.path.getsize(path)
            _unlink(path)
            if got != mib << 20:
                raise RuntimeError(f"dd wrote {got} bytes, expected {mib << 20}")
            m = _DD_SECONDS.search(cp.stderr)
            if m:
                dd_self.append(float(m.group(1).replace(",", ".")))
            return max(dt - spawn, 1e-9)

        candidates["peer"] = peer

    ctx.log(f"fsync_1mib: {mib} MiB, {ctx.repeat} rounds in {ctx.tmpdir}")
    res = ctx.rounds(candidates)
    extra: dict[str, Any] = {"ours_fsyncs_per_run": fsyncs, "dd_spawn_seconds": spawn}
    if dd_self:
        extra["dd_self_reported_mib_s"] = [mib / s for s in dd_self]
    return [
        Row("fsync_1mib", "fsync_1mib", "dd bs=1M conv=fsync", "MiB/s",
            per_second(mib, res["ours"]),
            per_second(mib, res["peer"]) if "peer" in res else None, status,
            note=f"{mib} MiB as 1 MiB records, durability='fsync', open to close; dd writes zeros, we write random "
                 f"payloads; dd timed around the subprocess minus its spawn cost "
                 f"({spawn * 1e3:.1f} ms)", extra=extra),
    ]


# --------------------------------------------------------------------------
# d. scanning a file of many small records


def _tb_reader_kind() -> str:
    try:
        from tensorboard.compat import tf
    except ImportError:  # pragma: no cover - tensorboard without compat
        return "?"
    if getattr(tf, "__version__", "") == "stub":
        return "no TensorFlow: its pure-Python record reader and CRC"
    return f"TensorFlow {tf.__version__}'s record reader"


@bench("scan", goal=50, unit="records/s", peer="tensorboard RawEventFileLoader",
       description="read every record of a 1,000,000-record file in page cache")
def bench_scan(ctx: Context) -> list[Row]:
    """Read every payload of a 1,000,000-record file (40-byte payloads, in
    page cache): list(RecordReader(path)) vs tensorboard's RawEventFileLoader
    (timed on a 100,000-record file: at its speed 1,000,000 takes ~10 s a run)."""
    from ..records import RecordReader, RecordWriter

    n = ctx.pick(1_000_000, 100_000)
    n_peer = ctx.pick(100_000, 10_000)
    payloads = _payloads(ctx, n)
    path, peer_path = ctx.path("scan"), ctx.path("scan-peer")
    try:
        with RecordWriter(path) as w:
            w.write_many(payloads)
        with RecordWriter(peer_path) as w:
            w.write_many(payloads[:n_peer])
        for p in (path, peer_path):  # into the page cache before timing either
            with open(p, "rb") as f:
                while f.read(1 << 24):
                    pass
        return _scan_rows(ctx, RecordReader, path, peer_path, payloads, n, n_peer)
    finally:
        _unlink(path)
        _unlink(peer_path)


def _scan_rows(ctx: Context, reader_cls: Any, path: str, peer_path: str,
               payloads: list[bytes], n: int, n_peer: int) -> list[Row]:
    checked: set[str] = set()

    def candidate(read: Callable[[], list[bytes]], key: str, want: list[bytes]) -> Callable[[], float]:
        def run() -> float:
            t0 = time.perf_counter()
            out = read()
            dt = time.perf_counter() - t0
            if len(out) != len(want):
                raise RuntimeError(f"{key}: read {len(out)} records, expected {len(want)}")
            if key not in checked:
                checked.add(key)
                if out != want:
                    raise RuntimeError(f"{key}: records differ from what was written")
            return dt

        return run

    def ours(p: str, verify: bool = True) -> Callable[[], list[bytes]]:
        def read() -> list[bytes]:
            with reader_cls(p, verify=verify) as r:
                return list(r)

        return read

    want_peer = payloads[:n_peer]
    candidates = {
        "ours": candidate(ours(path), "ours", payloads),
        "ours_noverify": candidate(ours(path, False), "ours_noverify", payloads),
        "ours_small": candidate(ours(peer_path), "ours_small", want_peer),
    }
    peer = "tensorboard RawEventFileLoader"
    status, tb_kind = "ok", ""
    try:
        mod = need_peer("tensorboard.backend.event_processing.event_file_loader")
        loader_cls = mod.RawEventFileLoader
        peer = f"tensorboard {_ver('tensorboard')} RawEventFileLoader"
        tb_kind = f"; tensorboard runs with {_tb_reader_kind()}"

        def tb() -> list[bytes]:
            return list(loader_cls(peer_path).Load())

        candidates["peer"] = candidate(tb, "peer", want_peer)
    except PeerMissing as exc:
        status = str(exc)

    ctx.log(f"scan: {n:,}-record file (peer: {n_peer:,}), {ctx.repeat} rounds")
    res = ctx.rounds(candidates)
    peer_runs = per_second(n_peer, res["peer"]) if "peer" in res else None
    return [
        Row("scan", "scan", peer, "records/s", per_second(n, res["ours"]), peer_runs, status,
            note=f"ours: list(RecordReader(path)) over {n:,} records; peer timed on a "
                 f"{n_peer:,}-record file of the same records, as records/s; "
                 f"both in page cache, both check every CRC{tb_kind}"),
        Row("scan", f"scan, same {n_peer:,}-record file", peer, "records/s",
            per_second(n_peer, res["ours_small"]), peer_runs, status, primary=False,
            note="ours on exactly the peer's file"),
        Row("scan", "scan, verify=False", peer, "records/s",
            per_second(n, res["ours_noverify"]), peer_runs, status, primary=False,
            note="length CRCs only; the peer checks both CRCs, so not like for like"),
    ]
