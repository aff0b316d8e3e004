"""The ``summarylog`` command: look at event logs from a shell.  Exit statuses and error lines:
the README's "The ``summarylog`` command" (a missing optional dependency also exits 2); the
guarantees: docs/reliability.md."""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import os
import sys
from typing import Any, Callable, Iterator, NoReturn, Sequence

from .cli_common import (PROG, READER_OPTIONS, check_run, damage_text, open_reader, open_runs,
                         plural, printable, reason, report_dict, say, storage_option, tag_matches,
                         tail_text, unreadable, utf8)
from .cli_format import (Progress, dumps, event_line, event_record, fmt_num, fmt_size, isatty,
                         json_num, jsonable, print_line, stdout_is_utf8, text)
from .cli_output import CLIError, check_target, output
from .cli_plot import MAX_PIXELS, MAX_SIDE, MIN_PANEL_HEIGHT, cmd_plot

__all__ = ["main"]

DAMAGE_KINDS = ("bad_length_crc", "bad_data_crc", "length_past_eof", "zero_fill", "bad_zstd_frame")
EVENT_KINDS = ("scalar", "histogram", "image", "text", "tensor", "hparams", "file_version",
               "session_log", "graph", "landscape", "other")
COLUMNS = ("run", "tag", "step", "wall_time", "value")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl",
           ".parquet": "parquet", ".pq": "parquet"}


def _tag_stats(reader: Any, run: str) -> dict[str, dict[str, dict[str, Any]]]:
    """tag -> kind -> {kind, count, first_step, last_step, last_value}, the tag's
    first kind first: a tag can hold more than one (a scalar and a histogram)."""
    stats: dict[str, dict[str, dict[str, Any]]] = {}
    from_events: set[tuple[str, str]] = set()  # (tag, kind) counted from the events
    for tag, kinds in sorted(reader.tag_kinds(run).items()):
        for kind in kinds[:1] + sorted(kinds[1:]):
            st = stats.setdefault(tag, {})[kind] = {"kind": kind, "count": 0, "first_step": None,
                                                    "last_step": None, "last_value": None}
            s = None
            if kind == "scalar":
                with contextlib.suppress(KeyError):  # a scalar tag whose values were all purged
                    s = reader.scalars(run, tag)
            if s is not None and len(s.step):
                st.update(count=len(s.step), first_step=s.step[0].item(),
                          last_step=s.step[-1].item(), last_value=s.value[-1].item())
            else:
                from_events.add((tag, kind))
    for ev in reader.events(run) if from_events else ():
        if (ev.tag, ev.kind) in from_events:
            st = stats[ev.tag][ev.kind]
            st["count"] += 1
            if st["first_step"] is None:
                st["first_step"] = int(ev.step)
            st["last_step"] = int(ev.step)
            if ev.kind == "scalar":
                st["last_value"] = float(ev.value)
    return stats


def _tag_doc(per_kind: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """inspect --json's entry of a tag: its first kind's figures, others in ``other_kinds``."""
    first, *others = per_kind.values()
    return {**first, "other_kinds": {st["kind"]: {n: v for n, v in st.items() if n != "kind"}
                                     for st in others}} if others else first


# -- subcommands ------------------------------------------------------------------------

def cmd_inspect(args: argparse.Namespace) -> int:
    status, reader, runs = open_runs(args.path, args.run)
    out: dict[str, Any] = {}
    with Progress(sum(len(reader.files(r)) for r in runs), "inspect") as bar:
        for run in runs:
            files = [report_dict(rep, reader.name(p))  # before events()
                     for p, rep in reader.damage(run).items()]
            out[run] = {"files": files, "records": sum(f["records"] for f in files),
                        "tags": _tag_stats(reader, run)}
            bar.advance(len(files))
    if args.json:
        doc: dict[str, Any] = {
            "path": args.path,
            "runs": {run: {**info, "tags": {t: _tag_doc(k) for t, k in info["tags"].items()}}
                     for run, info in out.items()},
            "unreadable": [{"path": p, "error": r} for p, r in unreadable(reader)]}
        print(dumps(jsonable(doc), ascii_only=not stdout_is_utf8()))  # NaN, bytes, numpy
        return status.code
    for i, (run, info) in enumerate(out.items()):
        files = info["files"]
        if i:
            print_line()
        print_line(f"run {run}: {plural(len(files), 'file')}, {info['records']} records, "
                   f"{fmt_size(sum(f['size'] or 0 for f in files))}")
        if info["tags"]:
            w = min(48, max(12, *map(len, info["tags"])))  # a huge tag pads no other row
            print_line(f"  {'tag':<{w}}  {'kind':<9}  {'count':>7}  {'steps':<15}  last")
            for tag, per_kind in info["tags"].items():
                for st in per_kind.values():  # one line per kind the tag holds
                    steps = ("-" if st["first_step"] is None
                             else f"{st['first_step']}..{st['last_step']}")
                    last = "" if st["last_value"] is None else fmt_num(st["last_value"])
                    print_line(f"  {tag:<{w}}  {st['kind']:<9}  {st['count']:>7}  {steps:<15}  "
                               f"{last}".rstrip())
        else:
            print_line("  (no tags)")
        print_line("  files:")
        for f in files:
            status_text = "OK" if f["ok"] else "DAMAGED: " + ", ".join(damage_text(f))
            size = "?" if f["size"] is None else fmt_size(f["size"])
            print_line(f"    {f['path']}  {f['records']} records, {size}  {status_text}")
            if f["tail"] is not None:
                print_line(f"      unfinished: {tail_text(f['tail'])}")
    return status.code


def _file_report(path: str, lineage: bool, quick: bool = False) -> dict[str, Any]:
    """The report of one event or lineage file, read by a Reader of its own (OSError
    when it cannot be read); ``quick``: the native pass only, else every value decoded."""
    from .reader import Reader

    reader = Reader(path)
    if not lineage:
        rep = next(iter(reader.damage(deep=not quick).values()), None)
    else:
        try:
            reader.lineage()
            rep = next(iter(reader.lineage_damage().values()), None)
        except (RecursionError, ValueError):  # a record the lineage decoder chokes on
            rep = None
        if rep is None:
            return {"path": path, "records": 0, "ok": False, "damage": [], "tail": None,
                    "bad_events": 1}
    if rep is None:  # no longer an event file (replaced since the discovery)
        raise OSError(errno.ENOENT, "not an event file", path)
    return report_dict(rep)


def cmd_verify(args: argparse.Namespace) -> int:
    reader = open_reader(args.path)
    runs = reader.runs()  # a directory it could not list fails the check
    lost = unreadable(reader)
    if not runs and not lost:
        raise CLIError(f"{reader.path}: no event files found")
    paths = [(p, lineage) for r in runs  # and MindSpore lineage files, run by run
             for lineage, names in ((False, reader.files(r)), (True, reader.lineage_files(r)))
             for p in names]
    counts: collections.Counter = collections.Counter()
    with Progress(len(paths), "verify") as bar:
        def cannot_read(where: str, why: str) -> None:
            counts["UNREADABLE"] += 1
            bar.print(f"{'UNREADABLE':<8} {printable(where)}: {why}")
            bar.print(f"{PROG}: cannot read {printable(where)}: {why}", sys.stderr)

        for where, why in lost:
            cannot_read(where, why)
        for path, lineage in paths:
            try:
                rep = _file_report(path, lineage, args.quick)
            except OSError as e:  # report it and check the other files
                cannot_read(reader.name(path), reason(e))
            else:
                problems = damage_text(rep)
                if rep["tail"] is not None:
                    problems.append(tail_text(rep["tail"]))
                status = "DAMAGED" if not rep["ok"] else "OK" if rep["tail"] is None else "TORN"
                counts[status] += 1
                detail = f": {'; '.join(problems)}" if problems else ""
                bar.print(f"{status:<8} {printable(reader.name(path))}  ({rep['records']} records)"
                          f"{detail}")
            bar.advance()
    if len(paths) + len(lost) > 1:
        more = f"; {plural(n, 'unreadable path')}" if (n := counts["UNREADABLE"]) else ""
        print(f"{plural(len(paths), 'file')}: {counts['OK']} OK, {counts['DAMAGED']} damaged, "
              f"{counts['TORN']} with an unfinished tail{more}")
    return 1 if counts["DAMAGED"] or counts["UNREADABLE"] or (args.strict and counts["TORN"]) else 0


def cmd_cat(args: argparse.Namespace) -> int:
    status, reader, runs = open_runs(args.path, args.run)
    kinds = set(args.kind or ())
    ascii_only = not stdout_is_utf8()
    write = sys.stdout.write
    for run in runs:
        reader.damage(run)  # the scalar pass first: events() then adds what it meets
        for ev in reader.events(run):
            if (not kinds or ev.kind in kinds) and tag_matches(text(ev.tag), args.tag):
                write(dumps(event_record(run, ev), ascii_only=ascii_only) + "\n")
        check_run(reader, run, status)
    sys.stdout.flush()
    return status.flush()


def cmd_export(args: argparse.Namespace) -> int:
    from .cli_dataset import cmd_export_dataset, wants_dataset

    if wants_dataset(args.output, args.format):  # a directory: the Parquet dataset
        return cmd_export_dataset(args)
    if args.prune:
        raise CLIError("--prune is for a dataset (-o DIR/): a long table is written whole")
    check_target(args.output)  # before the reading: a target that must not be replaced
    fmt = args.format or FORMATS.get(os.path.splitext(args.output)[1].lower())
    if fmt is None:
        raise CLIError("export to stdout (-o -) needs --format" if args.output == "-" else
                       f"cannot tell the format from {args.output!r}: use --format "
                       f"csv|jsonl|parquet or a .csv, .jsonl or .parquet name")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise CLIError("export --format parquet needs pyarrow: pip install pyarrow") from None
    status, reader, runs = open_runs(args.path, args.run)
    rows = 0

    def series() -> Iterator[tuple[str, str, Any]]:
        nonlocal rows
        for run in runs:
            for tag in reader.scalar_tags(run):
                if tag_matches(tag, args.tag):
                    s = reader.scalars(run, tag)
                    rows += len(s.step)
                    yield run, tag, s
            bar.advance(len(reader.files(run)))

    total = sum(len(reader.files(r)) for r in runs)
    with Progress(total, "export") as bar, output(args.output, binary=fmt == "parquet") as f:
        if fmt == "csv":
            import csv

            w = csv.writer(f, lineterminator="\n")
            w.writerow(COLUMNS)
            for run, tag, s in series():
                w.writerows(zip([run] * len(s.step), [tag] * len(s.step), s.step.tolist(),
                                map(repr, s.wall_time.tolist()), map(repr, s.value.tolist())))
        elif fmt == "jsonl":
            ascii_only = args.output == "-" and not stdout_is_utf8()
            for run, tag, s in series():
                head = (f'{{"run": {dumps(run, ascii_only=ascii_only)}, '
                        f'"tag": {dumps(tag, ascii_only=ascii_only)}, "step": ')
                f.writelines(
                    f'{head}{st}, "wall_time": {json_num(wt)}, "value": {json_num(v)}}}\n'
                    for st, wt, v in zip(s.step.tolist(), s.wall_time.tolist(), s.value.tolist()))
        else:
            types = (pa.string(), pa.string(), pa.int64(), pa.float64(), pa.float64())
            schema = pa.schema(list(zip(COLUMNS, types)))
            with pq.ParquetWriter(f, schema) as pw:
                for run, tag, s in series():
                    n = len(s.step)
                    cols = ([utf8(run)] * n, [utf8(tag)] * n, s.step, s.wall_time, s.value)
                    pw.write_table(pa.table([pa.array(c, t) for c, t in zip(cols, types)],
                                            schema=schema))
    for run in runs:
        check_run(reader, run, status)
    if args.output != "-" and isatty(sys.stderr):
        print(f"{rows} points written to {printable(args.output)} ({fmt})", file=sys.stderr)
    return status.flush()


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import DestinationError, iter_convert

    status, reader, runs = open_runs(args.path, args.run)
    if os.path.exists(args.dst) and not os.path.isdir(args.dst):
        raise CLIError(f"cannot convert into {args.dst}: not a directory", 1)
    total: dict[str, int] = {}
    try:
        with Progress(len(runs), f"convert to {args.to}") as bar:
            for run, counts in iter_convert(args.path, args.dst, args.to, runs, reader=reader):
                for k, n in counts.items():
                    total[k] = total.get(k, 0) + n
                    if k.startswith("malformed "):  # counted and skipped; never silent
                        status.later(f"run {run}: {plural(n, k + ' value')} skipped")
                check_run(reader, run, status)
                bar.advance()
    except DestinationError as exc:
        raise CLIError(f"cannot write {exc.filename}: {exc.strerror}", 1) from None
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    except OSError as exc:  # a file of DST that could not be created or written
        name, dst = exc.filename, os.path.abspath(args.dst)
        where = os.path.abspath(name) if isinstance(name, str) else ""
        if where != dst and not where.startswith(dst + os.sep):
            raise  # a source file: "cannot read"
        raise CLIError(f"cannot write {name}: {reason(exc)}", 1) from None
    parts = ", ".join(f"{n} {k}" for k, n in sorted(total.items())) or "nothing"
    print(f"converted {plural(len(runs), 'run')} to {args.to} in {args.dst}: {parts}")
    return status.flush()


def cmd_tail(args: argparse.Namespace) -> int:
    status, reader, runs = open_runs(args.path, [args.run] if args.run and not args.follow
                                     else None, need_files=not args.follow)
    if args.run:
        runs = [r for r in runs if r == args.run]
    seen: dict[str, int] = {}
    for run in runs:
        reader.damage(run)  # the scalar pass first: events() then adds what it meets
        last: collections.deque = collections.deque(maxlen=args.n)
        seen[run] = 0
        for ev in reader.events(run):
            seen[run] += 1
            last.append(ev)
        for ev in last:
            print(event_line(run, ev))
        check_run(reader, run, status)
    sys.stdout.flush()
    status.flush()
    if not args.follow:
        return status.code
    # follow() reads every file from its start: skip the events printed or passed over above
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how tail -f ends
        for run, ev in reader.follow(run=args.run, poll_secs=args.poll_secs,
                                     idle_timeout=args.idle_timeout):
            if seen.get(run, 0) > 0:
                seen[run] -= 1
            else:
                print(event_line(run, ev), flush=True)
    return status.code


# -- the parser -----------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``summarylog: <cmd>: <message> (...)``."""

    def error(self, message: str) -> NoReturn:
        cmd = self.prog[len(PROG) + 1:] + ": " if self.prog != PROG else ""
        self.exit(2, f"{PROG}: {cmd}{printable(message)} (see '{self.prog} --help')\n")


def _number(low: float, high: float, *, low_open: bool = False,
            integer: bool = False) -> Callable[[str], Any]:
    """An argparse type: a float (an int if ``integer``) in [low, high] (``(low, high]`` if
    ``low_open``); NaN, infinities and 1e300 never reach time.sleep or matplotlib."""
    def parse(arg: str) -> Any:
        try:
            v = (int if integer else float)(arg)
        except ValueError:
            what = "an integer" if integer else "a number"
            raise argparse.ArgumentTypeError(f"not {what}: {arg!r}") from None
        if not ((low < v) if low_open else (low <= v)) or not v <= high:
            bound = (f"from {low} to {high}" if integer else
                     f"{'more than' if low_open else 'at least'} {low:g} and at most {high:g}")
            raise argparse.ArgumentTypeError(f"must be {bound}, got {arg!r}")
        return v
    return parse


def _nonempty(text: str) -> str:
    """An argparse type for paths: '' is the current directory to some calls, nothing to others."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return text


def _storage_option(text: str) -> tuple[str, Any]:
    try:
        return storage_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ranks(text: str) -> Any:
    if text in ("all", "mean", "min", "max"):
        return text
    if text.isascii() and text.isdecimal():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a rank, all, mean, min or max, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    p = _Parser(prog=PROG, description="Inspect, check, convert and plot summarylog / "
                "TensorBoard event logs. PATH is an event file, a run directory or a root "
                "of runs.", epilog="'summarylog COMMAND --help' describes each command.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], int], help: str,
            description: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=description)
        sp.add_argument("path", metavar="PATH", type=_nonempty,
                        help="event file, run directory or root of runs, or a URL of one "
                             "(s3://, gs://, any fsspec URL)")
        sp.add_argument("--storage-option", action="append", type=_storage_option,
                        metavar="KEY=VALUE", help="for a URL PATH: an fsspec filesystem option "
                        "(endpoint_url=..., anon=true; JSON values parsed), repeatable; "
                        "credentials otherwise come from the environment, as fsspec reads them")
        sp.add_argument("--ranks", type=_ranks, metavar="R", default=None,
                        help="per-rank files: a rank (e.g. 0), all (a rank per point), or "
                             "mean, min, max per step (default: every file as one series)")
        sp.set_defaults(func=func)
        return sp

    runs: dict[str, Any] = {"action": "append", "metavar": "R", "help": "only run R (repeatable)"}
    tags: dict[str, Any] = {"action": "append", "metavar": "T",
                            "help": "only tag T, or tags matching the glob T (repeatable)"}

    sp = add("inspect", cmd_inspect, "runs, files, tags, step ranges, last values, damage",
             "For each run: its files (records, size, damage, unfinished tail) and its tags "
             "(kind, count, first..last step, last value of scalars).")
    sp.add_argument("--run", **runs)
    sp.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")

    sp = add("verify", cmd_verify, "check every event file; exit 1 on damage",
             "Check every event and MindSpore lineage file under PATH (plain and zstd), decoding "
             "every value. One line per file: OK, DAMAGED (kinds and offsets), TORN (an unfinished "
             "tail, as a live or crashed writer leaves) or UNREADABLE. Exit 1 if any damage "
             f"({', '.join(DAMAGE_KINDS)}), malformed event or value, or unreadable path was "
             "found, else 0 (an unfinished tail alone: 0 unless --strict).")
    sp.add_argument("--strict", action="store_true", help="an unfinished tail also exits 1")
    sp.add_argument("--quick", action="store_true",
                    help="only the native pass (framing, CRCs, scalars): several times faster, "
                         "but a malformed tensor, histogram or image goes unnoticed")

    sp = add("cat", cmd_cat, "every event as a JSON line",
             'One JSON object per line: {"run", "tag", "kind", "step", "wall_time", "value"}; '
             'non-finite numbers as "NaN", "Infinity", "-Infinity", histograms as objects, images '
             'as {"width", "height", "pngs": count}, tensors as nested lists, bytes as base64.')
    sp.add_argument("--run", **runs)
    sp.add_argument("--tag", **tags)
    sp.add_argument("--kind", action="append", metavar="K", choices=EVENT_KINDS,
                    help=f"only events of kind K (repeatable): {', '.join(EVENT_KINDS)}")

    sp = add("export", cmd_export, "all scalars to CSV, JSON lines or Parquet",
             "Write every scalar as a long table: run, tag, step, wall_time, value. The format "
             "comes from OUT's suffix (.csv, .jsonl, .parquet) unless --format is given; "
             "Parquet needs pyarrow. OUT is replaced only once it is complete. An OUT that "
             "ends with '/' (or an existing directory with --format parquet) gets a "
             "Hive-partitioned Parquet dataset of every "
             "kind (scalars, histograms, text, hparams, lineage, damage), brought up to date "
             "incrementally: only new or grown files are read on the next export.")
    sp.add_argument("-o", "--output", required=True, metavar="OUT", type=_nonempty,
                    help="output file ('-': stdout), or dataset directory or URL (ending in '/')")
    sp.add_argument("--format", choices=("csv", "jsonl", "parquet"), help="output format")
    sp.add_argument("--run", **runs)
    sp.add_argument("--tag", **tags)
    sp.add_argument("--prune", action="store_true",
                    help="dataset only: remove the runs no longer under PATH (kept by default)")

    sp = add("convert", cmd_convert, "convert runs between TensorBoard and MindSpore files",
             "Convert every run under PATH (either dialect) into DST in the --to dialect, "
             "keeping the run layout: scalars, histograms, images, tensors; MindSpore lineage "
             "becomes TensorBoard hparams and TensorBoard hparams become MindSpore custom "
             "lineage. What a viewer has no place for is skipped and counted.")
    sp.add_argument("dst", metavar="DST", type=_nonempty,
                    help="output root (created; must not be inside PATH)")
    sp.add_argument("--to", required=True, choices=("tensorboard", "mindinsight"),
                    help="output dialect")
    sp.add_argument("--run", **runs)

    sp = add("tail", cmd_tail, "the last events of each run; -f follows new ones",
             "Print the last N events of each run, one line each (run, local time, step, kind, "
             "tag, value). With -f, keep printing events as writers append them (new files and "
             "runs included) until Ctrl-C or --idle-timeout seconds without a new event.")
    sp.add_argument("-n", type=_number(0, sys.maxsize, integer=True), default=10, metavar="N",
                    help="events per run (default 10)")
    sp.add_argument("-f", "--follow", action="store_true", help="keep following new events")
    sp.add_argument("--idle-timeout", type=_number(0, 1e9, low_open=True), metavar="S",
                    help="with -f: stop after S seconds without a new event")
    sp.add_argument("--poll-secs", type=_number(0.01, 3600), default=0.5, metavar="S",
                    help="with -f: how often to look for new events (0.01 to 3600, default 0.5)")
    sp.add_argument("--run", metavar="R", help="only run R")

    sp = add("plot", cmd_plot, "a PNG line plot of chosen scalars",
             "Plot the chosen scalar tags against step, one panel per tag and one line per "
             "run, into a PNG (matplotlib, Agg backend).")
    sp.add_argument("--tag", action="append", required=True, metavar="T",
                    help="tag T, or tags matching the glob T (repeatable)")
    sp.add_argument("--run", **runs)
    sp.add_argument("-o", "--output", required=True, metavar="OUT.png", type=_nonempty,
                    help="the PNG to write ('-': stdout)")
    sp.add_argument("--title", help="a title over the figure")
    sp.add_argument("--width", type=_number(1, 300), default=8.0,
                    help="inches, 1 to 300 (default 8)")
    sp.add_argument("--height-per-tag", type=_number(0, 300, low_open=True), default=3.0,
                    help=f"inches per panel, at most 300 (default 3; at least "
                         f"{MIN_PANEL_HEIGHT:g} are used)")
    sp.add_argument("--dpi", type=_number(10, 2400), default=100.0,
                    help="dots per inch, 10 to 2400 (default 100); the image may have at most "
                         f"{MAX_SIDE} pixels a side and {MAX_PIXELS // 2**20} Mpx in all")

    from . import cli_upload  # argparse only: the upload machinery loads when it runs

    sp = sub.add_parser("upload", help="send what a URL writer left in its spool, each "
                        "segment once", description=cli_upload.__doc__)
    cli_upload.add_arguments(sp)  # SPOOL, -o/--storage-option KEY=VALUE, --timeout, --upload-timeout
    sp.set_defaults(func=cli_upload.run, reads=False)  # 0: spool empty, 1: some left/conflict, 2: bad input

    from . import cli_sql  # argparse only: DuckDB loads when the query runs

    sp = sub.add_parser("sql", help="one read-only DuckDB query over a dataset or event files",
                        description=cli_sql.__doc__)
    cli_sql.add_arguments(sp)  # SQL PATH, --format table|csv|json, --storage-option, --threads
    sp.set_defaults(func=cli_sql.run, reads=False)  # 0: printed, 1: unreadable source, 2: bad SQL
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    for stream in (sys.stdout, sys.stderr):
        # names from files or logs (lone surrogates, non-ASCII) print escaped, never raise
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, bad arguments (already reported)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    READER_OPTIONS.clear()
    if getattr(args, "reads", True):  # upload has its own options, and reads nothing
        if args.storage_option:
            READER_OPTIONS["storage_options"] = dict(args.storage_option)
        if args.ranks is not None:
            READER_OPTIONS["ranks"] = args.ranks
    try:
        try:
            status = args.func(args)
            sys.stdout.flush()
            return status
        except CLIError as e:
            if e.message is not None:  # None: already reported line by line
                say(e.message)
            return e.code
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                raise
            if e.filename is not None:  # the event files are opened by name
                say(f"cannot read {os.fsdecode(e.filename)}: {reason(e)}")
            elif e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                say(f"cannot write the output: {reason(e)}")
            else:
                say(f"I/O error: {reason(e)}")
            return 1
    except BrokenPipeError:  # stdout gone: /dev/null for the interpreter's final flush
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        return 141  # as a process killed by SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
