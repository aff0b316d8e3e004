"""The ``summarylog`` command: look at event logs from a shell.

Subcommands (``summarylog COMMAND --help`` for each):

  inspect  runs, files, tags (kind, count, step range, last scalar), damage
  verify   check every event file; exit 1 on damage (CI-friendly)
  cat      every event as a JSON line
  export   all scalars to CSV, JSON lines or Parquet (long format)
  tail     the last events of each run; ``-f`` follows new ones
  plot     a PNG line plot of chosen scalars

Exit status: 0 success; 1 damage found (verify) or a file that could not be
read or written; 2 bad arguments, a missing path or a missing optional
dependency.  Errors are one line on stderr, prefixed ``summarylog: ``.
Progress bars go to stderr, and only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import datetime
import errno
import fnmatch
import json
import math
import os
import sys
import time
from typing import Any, Iterator, NoReturn, Sequence

__all__ = ["main"]

PROG = "summarylog"
DAMAGE_KINDS = ("bad_length_crc", "bad_data_crc", "length_past_eof", "zero_fill", "bad_zstd_frame")
EVENT_KINDS = ("scalar", "histogram", "image", "text", "tensor", "hparams", "file_version",
               "session_log", "graph", "landscape", "other")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".parquet": "parquet", ".pq": "parquet"}


class CLIError(Exception):
    """An expected failure: one line on stderr, then exit with ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# -- output helpers ----------------------------------------------------------------

def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class _Progress:
    """``label [#####.....] done/total`` on stderr, redrawn in place; only when
    stderr is a terminal, and cleared when done."""

    WIDTH = 30

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.on = total > 0 and _isatty(sys.stderr)
        self._drawn = False
        self._last = 0.0
        self._draw()

    def _draw(self, force: bool = True) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        filled = self.WIDTH * self.done // max(self.total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        sys.stderr.flush()
        self._drawn = True

    def _clear(self) -> None:
        if self.on and self._drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._drawn = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw(force=self.done >= self.total)

    def print(self, line: str, file: Any = None) -> None:
        """A line on stdout (or ``file``) without tearing the bar."""
        if self.on:
            self._clear()
            print(line, file=file, flush=True)
            self._draw()
        else:
            print(line, file=file)

    def close(self) -> None:
        self._clear()
        self.on = False

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _json_float(x: float) -> Any:
    if math.isfinite(x):
        return x
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _json_num(x: float) -> str:
    """A float as JSON text (repr is exact and valid JSON for finite floats)."""
    return repr(x) if math.isfinite(x) else f'"{_json_float(x)}"'


def _jsonable(v: Any) -> Any:
    """Plain JSON values: non-finite floats as "NaN"/"Infinity"/"-Infinity",
    bytes as base64, numpy arrays as nested lists, complex as [re, im]."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return _json_float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, complex):
        return [_json_float(v.real), _json_float(v.imag)]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    tolist = getattr(v, "tolist", None)  # numpy arrays and scalars
    if tolist is not None:
        return _jsonable(tolist())
    return str(v)


def _stdout_is_utf8() -> bool:
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return enc == "utf8"


def _dumps(obj: Any, indent: int | None = None, ascii_only: bool = False) -> str:
    """Strict JSON (no bare NaN); ``ascii_only`` for a stdout that is not UTF-8."""
    return json.dumps(obj, ensure_ascii=ascii_only, allow_nan=False, indent=indent)


def _fmt_num(x: float) -> str:
    return f"{x:.6g}"


def _fmt_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _one_line(s: str, width: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _brief(kind: str, value: Any) -> str:
    """A one-line human summary of an event's value."""
    try:
        if kind == "scalar":
            return _fmt_num(value)
        if kind == "histogram":
            return (f"n={_fmt_num(value['num'])} min={_fmt_num(value['min'])} "
                    f"max={_fmt_num(value['max'])} buckets={len(value['counts'])}")
        if kind == "image":
            n = len(value["pngs"])
            return f"{value['width']}x{value['height']} ({n} png{'s' if n != 1 else ''})"
        if kind == "text":
            return _one_line(value if isinstance(value, str) else str(_jsonable(value)))
        if kind == "tensor":
            import numpy as np

            text = np.array2string(value, threshold=8, edgeitems=2, max_line_width=10_000)
            return _one_line(f"{value.dtype}{list(value.shape)} {text}")
        if kind in ("graph", "other") and isinstance(value, (bytes, bytearray)):
            return f"{len(value)} bytes"
        if kind == "session_log":
            return str(value.get("status"))
        if isinstance(value, str):
            return _one_line(value)
        return _one_line(_dumps(_jsonable(value)), 100)
    except Exception:  # a summary is never worth dying for
        return _one_line(repr(value))


def _event_record(run: str, ev: Any) -> dict[str, Any]:
    value = ev.value
    if ev.kind == "image" and isinstance(value, dict):
        value = {"width": value.get("width"), "height": value.get("height"),
                 "pngs": len(value.get("pngs", ()))}
    return {"run": run, "tag": ev.tag, "kind": ev.kind, "step": int(ev.step),
            "wall_time": _json_float(float(ev.wall_time)), "value": _jsonable(value)}


def _event_line(run: str, ev: Any) -> str:
    try:
        when = datetime.datetime.fromtimestamp(ev.wall_time).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        when = repr(ev.wall_time)
    return f"{run}  {when}  step {ev.step}  {ev.kind}  {ev.tag or '-'}  {_brief(ev.kind, ev.value)}"


def _tag_matches(tag: str, patterns: Sequence[str] | None) -> bool:
    if not patterns:
        return True
    return any(tag == p or fnmatch.fnmatchcase(tag, p) for p in patterns)


# -- reading -------------------------------------------------------------------------

def _open(path: str) -> Any:
    from .reader import Reader

    try:
        return Reader(path)
    except FileNotFoundError:
        raise CLIError(f"{path}: no such file or directory") from None


def _select_runs(reader: Any, wanted: Sequence[str] | None, *,
                 need_files: bool = True) -> list[str]:
    runs = reader.runs()
    if not runs and need_files:
        raise CLIError(f"{reader.path}: no event files found")
    if not wanted:
        return runs
    missing = [r for r in wanted if r not in runs]
    if missing:
        raise CLIError(f"no run {missing[0]!r} under {reader.path} "
                       f"(runs: {', '.join(runs) or 'none'})")
    return [r for r in runs if r in wanted]


def _file_size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _report_dict(rep: Any) -> dict[str, Any]:
    return {
        "path": rep.path,
        "size": rep.size if rep.size is not None else _file_size(rep.path),
        "records": rep.records,
        "ok": rep.ok,
        "damage": [{"offset": d.offset, "kind": d.kind, "length": d.length} for d in rep.damage],
        "tail": (None if rep.tail is None else
                 {"offset": rep.tail.offset, "kind": rep.tail.kind, "length": rep.tail.length}),
        "bad_events": rep.bad_events,
    }


def _tag_stats(reader: Any, run: str) -> dict[str, dict[str, Any]]:
    kinds = reader.tags(run)
    stats: dict[str, dict[str, Any]] = {}
    others: set[str] = set()
    for tag, kind in kinds.items():
        s = None
        if kind == "scalar":
            try:
                s = reader.scalars(run, tag)
            except KeyError:  # a scalar tag whose values were all purged
                pass
        if s is not None and len(s.step):
            steps = s.step
            stats[tag] = {"kind": "scalar", "count": len(steps), "first_step": steps[0].item(),
                          "last_step": steps[-1].item(), "last_value": s.value[-1].item()}
        else:
            stats[tag] = {"kind": kind, "count": 0, "first_step": None, "last_step": None,
                          "last_value": None}
            others.add(tag)
    if others:
        for ev in reader.events(run):
            st = stats.get(ev.tag) if ev.tag in others else None
            if st is None:
                continue
            st["count"] += 1
            if st["first_step"] is None:
                st["first_step"] = int(ev.step)
            st["last_step"] = int(ev.step)
            if ev.kind == "scalar":
                st["last_value"] = float(ev.value)
    return stats


def _damage_text(rep: dict[str, Any], limit: int = 8) -> list[str]:
    parts = [f"{d['kind']} at {d['offset']} ({d['length']} bytes)" for d in rep["damage"][:limit]]
    if len(rep["damage"]) > limit:
        parts.append(f"... {len(rep['damage']) - limit} more")
    if rep["bad_events"]:
        parts.append(f"{rep['bad_events']} malformed event{'s' if rep['bad_events'] != 1 else ''}")
    return parts


def _tail_text(tail: dict[str, Any]) -> str:
    return f"{tail['kind']} tail at {tail['offset']} ({tail['length']} bytes)"


# -- subcommands ------------------------------------------------------------------------

def cmd_inspect(args: argparse.Namespace) -> int:
    reader = _open(args.path)
    runs = _select_runs(reader, args.run)
    out: dict[str, Any] = {}
    with _Progress(sum(len(reader.files(r)) for r in runs), "inspect") as bar:
        for run in runs:
            files = [_report_dict(rep) for rep in reader.damage(run).values()]  # before events()
            out[run] = {"files": files, "records": sum(f["records"] for f in files),
                        "tags": _tag_stats(reader, run)}
            bar.advance(len(files))
    if args.json:
        doc = {"path": args.path, "runs": out}
        try:  # usually plain JSON already; else convert NaN, bytes, numpy
            text = _dumps(doc, ascii_only=not _stdout_is_utf8())
        except (TypeError, ValueError):
            text = _dumps(_jsonable(doc), ascii_only=not _stdout_is_utf8())
        print(text)
        return 0
    for i, (run, info) in enumerate(out.items()):
        files = info["files"]
        if i:
            print()
        size = sum(f["size"] or 0 for f in files)
        print(f"run {run}: {len(files)} file{'s' if len(files) != 1 else ''}, "
              f"{info['records']} records, {_fmt_size(size)}")
        tags = info["tags"]
        if tags:
            w = max(12, *(len(t) for t in tags))
            print(f"  {'tag':<{w}}  {'kind':<9}  {'count':>7}  {'steps':<15}  last")
            for tag, st in tags.items():
                steps = ("-" if st["first_step"] is None
                         else f"{st['first_step']}..{st['last_step']}")
                last = "" if st["last_value"] is None else _fmt_num(st["last_value"])
                line = f"  {tag:<{w}}  {st['kind']:<9}  {st['count']:>7}  {steps:<15}  {last}"
                print(line.rstrip())
        else:
            print("  (no tags)")
        print("  files:")
        for f in files:
            status = "OK" if f["ok"] else "DAMAGED: " + ", ".join(_damage_text(f))
            size = "?" if f["size"] is None else _fmt_size(f["size"])
            print(f"    {f['path']}  {f['records']} records, {size}  {status}")
            if f["tail"] is not None:
                print(f"      unfinished: {_tail_text(f['tail'])}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .reader import Reader

    reader = _open(args.path)
    # directories the discovery could not list are skipped silently by
    # os.walk: a check must not pass because it could not look
    walk_errors: list[OSError] = []
    if os.path.isdir(args.path):
        for _ in os.walk(args.path, onerror=walk_errors.append, followlinks=True):
            pass
    runs = _select_runs(reader, None) if not walk_errors else reader.runs()
    paths = [p for r in runs for p in reader.files(r)]
    counts = collections.Counter()
    with _Progress(len(paths), "verify") as bar:
        for e in walk_errors:
            counts["UNREADABLE"] += 1
            reason = e.strerror or str(e)
            bar.print(f"{'UNREADABLE':<8} {e.filename}: {reason}")
            bar.print(f"{PROG}: cannot read {e.filename}: {reason}", sys.stderr)
        for path in paths:
            try:
                rep = _report_dict(next(iter(Reader(path).damage().values())))
            except OSError as e:  # report it and check the other files
                counts["UNREADABLE"] += 1
                reason = e.strerror or str(e)
                bar.print(f"{'UNREADABLE':<8} {path}: {reason}")
                bar.print(f"{PROG}: cannot read {path}: {reason}", sys.stderr)
                bar.advance()
                continue
            problems = _damage_text(rep)
            if rep["tail"] is not None:
                problems.append(_tail_text(rep["tail"]))
            if not rep["ok"]:
                status = "DAMAGED"
            elif rep["tail"] is not None:
                status = "TORN"
            else:
                status = "OK"
            counts[status] += 1
            detail = f": {'; '.join(problems)}" if problems else ""
            bar.print(f"{status:<8} {path}  ({rep['records']} records){detail}")
            bar.advance()
    if len(paths) + len(walk_errors) > 1:
        unreadable = (f"; {counts['UNREADABLE']} unreadable path"
                      f"{'s' if counts['UNREADABLE'] != 1 else ''}" if counts["UNREADABLE"] else "")
        print(f"{len(paths)} file{'s' if len(paths) != 1 else ''}: {counts['OK']} OK, "
              f"{counts['DAMAGED']} damaged, {counts['TORN']} with an unfinished tail{unreadable}")
    if counts["DAMAGED"] or counts["UNREADABLE"] or (args.strict and counts["TORN"]):
        return 1
    return 0


def cmd_cat(args: argparse.Namespace) -> int:
    reader = _open(args.path)
    runs = _select_runs(reader, args.run)
    kinds = set(args.kind or ())
    ascii_only = not _stdout_is_utf8()
    write = sys.stdout.write
    for run in runs:
        for ev in reader.events(run):
            if kinds and ev.kind not in kinds:
                continue
            if args.tag and not _tag_matches(ev.tag, args.tag):
                continue
            write(_dumps(_event_record(run, ev), ascii_only=ascii_only) + "\n")
    return 0


def _export_format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    if args.output == "-":
        raise CLIError("export to stdout (-o -) needs --format")
    ext = os.path.splitext(args.output)[1].lower()
    fmt = FORMATS.get(ext)
    if fmt is None:
        raise CLIError(f"cannot tell the format from {args.output!r}: use --format "
                       f"csv|jsonl|parquet or a .csv, .jsonl or .parquet name")
    return fmt


def _series(reader: Any, runs: list[str], tags: Sequence[str] | None,
            bar: _Progress) -> Iterator[tuple[str, str, Any]]:
    for run in runs:
        for tag in reader.scalar_tags(run):
            if _tag_matches(tag, tags):
                yield run, tag, reader.scalars(run, tag)
        bar.advance(len(reader.files(run)))


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES,
                 errno.EPERM, errno.EISDIR, errno.ENOTDIR, errno.EXDEV}


@contextlib.contextmanager
def _output(path: str, binary: bool = False) -> Iterator[Any]:
    """A file written next to ``path`` and renamed over it only when complete
    (``-``: stdout)."""
    if path == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        return
    if os.path.isdir(path):
        raise CLIError(f"cannot write {path}: is a directory", 1)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        if binary:
            f = open(tmp, "wb")
        else:
            f = open(tmp, "w", newline="", encoding="utf-8", errors="backslashreplace")
    except OSError as e:
        raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
    try:
        with f:
            yield f
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno in _WRITE_ERRNOS and e.filename in (None, tmp, path):
            raise CLIError(f"cannot write {path}: {e.strerror or e}", 1) from None
        raise


def cmd_export(args: argparse.Namespace) -> int:
    if os.path.isdir(args.output):
        raise CLIError(f"cannot write {args.output}: is a directory", 1)
    fmt = _export_format(args)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise CLIError("export --format parquet needs pyarrow: pip install pyarrow") from None
    reader = _open(args.path)
    runs = _select_runs(reader, args.run)
    total = sum(len(reader.files(r)) for r in runs)
    rows = 0
    with _Progress(total, "export") as bar:
        if fmt == "csv":
            import csv

            with _output(args.output) as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["run", "tag", "step", "wall_time", "value"])
                for run, tag, s in _series(reader, runs, args.tag, bar):
                    w.writerows(zip([run] * len(s.step), [tag] * len(s.step), s.step.tolist(),
                                    map(repr, s.wall_time.tolist()), map(repr, s.value.tolist())))
                    rows += len(s.step)
        elif fmt == "jsonl":
            ascii_only = args.output == "-" and not _stdout_is_utf8()
            with _output(args.output) as f:
                for run, tag, s in _series(reader, runs, args.tag, bar):
                    head = (f'{{"run": {_dumps(run, ascii_only=ascii_only)}, '
                            f'"tag": {_dumps(tag, ascii_only=ascii_only)}, "step": ')
                    f.writelines(
                        f'{head}{st}, "wall_time": {_json_num(wt)}, "value": {_json_num(v)}}}\n'
                        for st, wt, v in zip(s.step.tolist(), s.wall_time.tolist(),
                                             s.value.tolist()))
                    rows += len(s.step)
        else:
            schema = pa.schema([("run", pa.string()), ("tag", pa.string()), ("step", pa.int64()),
                                ("wall_time", pa.float64()), ("value", pa.float64())])
            with _output(args.output, binary=True) as f:
                with pq.ParquetWriter(f, schema) as pw:
                    for run, tag, s in _series(reader, runs, args.tag, bar):
                        n = len(s.step)
                        pw.write_table(pa.table({
                            "run": pa.array([run] * n, pa.string()),
                            "tag": pa.array([tag] * n, pa.string()),
                            "step": pa.array(s.step, pa.int64()),
                            "wall_time": pa.array(s.wall_time, pa.float64()),
                            "value": pa.array(s.value, pa.float64())}, schema=schema))
                        rows += n
    if args.output != "-" and _isatty(sys.stderr):
        print(f"{rows} points written to {args.output} ({fmt})", file=sys.stderr)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import iter_convert

    reader = _open(args.path)
    runs = _select_runs(reader, args.run)
    if os.path.exists(args.dst) and not os.path.isdir(args.dst):
        raise CLIError(f"cannot convert into {args.dst}: not a directory", 1)
    total: dict[str, int] = {}
    try:
        with _Progress(len(runs), f"convert to {args.to}") as bar:
            for run, counts in iter_convert(args.path, args.dst, args.to, runs):
                for k, n in counts.items():
                    total[k] = total.get(k, 0) + n
                bar.advance()
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    parts = ", ".join(f"{n} {k}" for k, n in sorted(total.items())) or "nothing"
    print(f"converted {len(runs)} run{'s' if len(runs) != 1 else ''} to {args.to} in "
          f"{args.dst}: {parts}")
    return 0


def cmd_tail(args: argparse.Namespace) -> int:
    if args.n < 0:
        raise CLIError(f"-n must be >= 0, got {args.n}")
    reader = _open(args.path)
    runs = _select_runs(reader, [args.run] if args.run and not args.follow else None,
                        need_files=not args.follow)
    if args.run:
        runs = [r for r in runs if r == args.run]
    seen: dict[str, int] = {}
    for run in runs:
        last: collections.deque = collections.deque(maxlen=args.n)
        count = 0
        for ev in reader.events(run):
            count += 1
            last.append(ev)
        seen[run] = count
        for ev in last:
            print(_event_line(run, ev))
    sys.stdout.flush()
    if not args.follow:
        return 0
    # follow() reads every file from its start: skip, run by run, the events
    # printed (or passed over) above
    try:
        for run, ev in reader.follow(run=args.run, poll_secs=args.poll_secs,
                                     idle_timeout=args.idle_timeout):
            if seen.get(run, 0) > 0:
                seen[run] -= 1
                continue
            print(_event_line(run, ev), flush=True)
    except KeyboardInterrupt:  # Ctrl-C is how tail -f ends
        pass
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise CLIError("plot needs matplotlib: pip install matplotlib") from None
    import numpy as np

    reader = _open(args.path)
    runs = _select_runs(reader, args.run)
    series: dict[str, list[tuple[str, Any]]] = {}  # tag -> [(run, Scalars)]
    available: set[str] = set()
    for run in runs:
        tags = reader.scalar_tags(run)
        available.update(tags)
        for tag in tags:
            if _tag_matches(tag, args.tag):
                series.setdefault(tag, []).append((run, reader.scalars(run, tag)))
    if not series:
        raise CLIError(f"no scalar tag {' or '.join(map(repr, args.tag))} in "
                       f"{'run ' + ', '.join(runs) if args.run else args.path} "
                       f"(scalar tags: {', '.join(sorted(available)) or 'none'})")
    tags = sorted(series)
    fig = Figure(figsize=(args.width, max(2.5, args.height_per_tag) * len(tags)), dpi=args.dpi,
                 layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(tags), 1, sharex=True, squeeze=False)[:, 0]
    for ax, tag in zip(axes, tags):
        for run, s in series[tag]:
            order = np.argsort(s.step, kind="stable")  # a line over steps, even when resumed
            values = np.where(np.isfinite(s.value), s.value, np.nan)[order]
            ax.plot(s.step[order], values, label=run, linewidth=1.2,
                    color=f"C{runs.index(run) % 10}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(tag)
        ax.set_ylabel("value")
        ax.grid(True, alpha=0.3)
        if len(series[tag]) > 1 or len(runs) > 1:
            ax.legend(loc="best", fontsize="small")
    axes[-1].set_xlabel("step")
    if args.title:
        fig.suptitle(args.title)
    with _output(args.output, binary=True) as f:
        fig.savefig(f, format="png")
    return 0


# -- the parser -----------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``summarylog: <cmd>: <message> (...)``."""

    def error(self, message: str) -> NoReturn:
        cmd = self.prog[len(PROG) + 1:] + ": " if self.prog != PROG else ""
        self.exit(2, f"{PROG}: {cmd}{message} (see '{self.prog} --help')\n")


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    p = _Parser(prog=PROG, description="Inspect, check, convert and plot summarylog / "
                "TensorBoard event logs. PATH is an event file, a run directory or a root "
                "of runs.", epilog="'summarylog COMMAND --help' describes each command.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, help: str, description: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=description)
        sp.add_argument("path", metavar="PATH", help="event file, run directory or root of runs")
        return sp

    sp = add("inspect", "runs, files, tags, step ranges, last values, damage",
             "For each run: its files (records, size, damage, unfinished tail) and its tags "
             "(kind, count, first..last step, last value of scalars).")
    sp.add_argument("--run", action="append", metavar="R", help="only run R (repeatable)")
    sp.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    sp.set_defaults(func=cmd_inspect)

    sp = add("verify", "check every event file; exit 1 on damage",
             "Check every event file under PATH (plain and zstd). One line per file: OK, "
             "DAMAGED (kinds and offsets) or TORN (an unfinished tail, as a live or crashed "
             "writer leaves). Exit 0 if every file is clean, 1 if any damage "
             f"({', '.join(DAMAGE_KINDS)}) or malformed event was found; an unfinished "
             "tail alone exits 0 unless --strict.")
    sp.add_argument("--strict", action="store_true", help="an unfinished tail also exits 1")
    sp.set_defaults(func=cmd_verify)

    sp = add("cat", "every event as a JSON line",
             'One JSON object per line: {"run", "tag", "kind", "step", "wall_time", "value"}. '
             'Non-finite numbers are the strings "NaN", "Infinity", "-Infinity"; histograms '
             'are objects; images are {"width", "height", "pngs": count}; tensors are nested '
             "lists; bytes are base64.")
    sp.add_argument("--run", action="append", metavar="R", help="only run R (repeatable)")
    sp.add_argument("--tag", action="append", metavar="T",
                    help="only tag T, or tags matching the glob T (repeatable)")
    sp.add_argument("--kind", action="append", metavar="K", choices=EVENT_KINDS,
                    help=f"only events of kind K (repeatable): {', '.join(EVENT_KINDS)}")
    sp.set_defaults(func=cmd_cat)

    sp = add("export", "all scalars to CSV, JSON lines or Parquet",
             "Write every scalar as a long table: run, tag, step, wall_time, value. The format "
             "comes from OUT's suffix (.csv, .jsonl, .parquet) unless --format is given; "
             "Parquet needs pyarrow. OUT is replaced only once it is complete.")
    sp.add_argument("-o", "--output", required=True, metavar="OUT",
                    help="output file ('-': stdout)")
    sp.add_argument("--format", choices=("csv", "jsonl", "parquet"), help="output format")
    sp.add_argument("--run", action="append", metavar="R", help="only run R (repeatable)")
    sp.add_argument("--tag", action="append", metavar="T",
                    help="only tag T, or tags matching the glob T (repeatable)")
    sp.set_defaults(func=cmd_export)

    sp = add("convert", "convert runs between TensorBoard and MindSpore files",
             "Convert every run under PATH (either dialect) into DST in the --to dialect, "
             "keeping the run layout: scalars, histograms, images, tensors; MindSpore lineage "
             "becomes TensorBoard hparams and TensorBoard hparams become MindSpore custom "
             "lineage. What a viewer has no place for is skipped and counted.")
    sp.add_argument("dst", metavar="DST", help="output root (created; must not be inside PATH)")
    sp.add_argument("--to", required=True, choices=("tensorboard", "mindinsight"),
                    help="output dialect")
    sp.add_argument("--run", action="append", metavar="R", help="only run R (repeatable)")
    sp.set_defaults(func=cmd_convert)

    sp = add("tail", "the last events of each run; -f follows new ones",
             "Print the last N events of each run, one line each (run, local time, step, kind, "
             "tag, value). With -f, keep printing events as writers append them (new files and "
             "runs included) until Ctrl-C or --idle-timeout seconds without a new event.")
    sp.add_argument("-n", type=int, default=10, metavar="N", help="events per run (default 10)")
    sp.add_argument("-f", "--follow", action="store_true", help="keep following new events")
    sp.add_argument("--idle-timeout", type=_positive, metavar="S",
                    help="with -f: stop after S seconds without a new event")
    sp.add_argument("--poll-secs", type=_positive, default=0.5, metavar="S",
                    help="with -f: how often to look for new events (default 0.5)")
    sp.add_argument("--run", metavar="R", help="only run R")
    sp.set_defaults(func=cmd_tail)

    sp = add("plot", "a PNG line plot of chosen scalars",
             "Plot the chosen scalar tags against step, one panel per tag and one line per "
             "run, into a PNG (matplotlib, Agg backend).")
    sp.add_argument("--tag", action="append", required=True, metavar="T",
                    help="tag T, or tags matching the glob T (repeatable)")
    sp.add_argument("--run", action="append", metavar="R", help="only run R (repeatable)")
    sp.add_argument("-o", "--output", required=True, metavar="OUT.png", help="the PNG to write")
    sp.add_argument("--title", help="a title over the figure")
    sp.add_argument("--width", type=_positive, default=8.0, help="inches (default 8)")
    sp.add_argument("--height-per-tag", type=_positive, default=3.0, help="inches (default 3)")
    sp.add_argument("--dpi", type=_positive, default=100.0, help="dots per inch (default 100)")
    sp.set_defaults(func=cmd_plot)
    return p


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so that the interpreter's
    final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, bad arguments (already reported)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    for stream in (sys.stdout, sys.stderr):
        # names from the file system or a log (lone surrogates, non-ASCII on a
        # non-UTF-8 terminal) print escaped instead of raising
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            status = args.func(args)
            sys.stdout.flush()
            return status
        except CLIError as e:
            print(f"{PROG}: {e.message}", file=sys.stderr)
            return e.code
        except BrokenPipeError:
            _quiet_stdout()
            return 141  # as a process killed by SIGPIPE
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except OSError as e:
            reason = e.strerror or str(e)
            if e.filename is not None:  # the event files are opened by name
                msg = f"cannot read {e.filename}: {reason}"
            elif e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                msg = f"cannot write the output: {reason}"
            else:
                msg = f"I/O error: {reason}"
            print(f"{PROG}: {msg}", file=sys.stderr)
            return 1
    except BrokenPipeError:  # stdout already gone while reporting
        _quiet_stdout()
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
