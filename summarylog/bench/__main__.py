"""``python -m summarylog.bench``: time summarylog and its peers side by side
in one process and print a table of figures, ratios and goals.

Exit status: 0 when every bench ran (whether or not its goal was met; no
time is ever asserted), 1 when one of them failed with an error (or, under
CI=true, when a peer is missing), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from .runner import format_table, in_ci, load_workloads, missing_peers, run, to_json

__all__ = ["main"]


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def main(argv: list[str] | None = None) -> int:
    from .registry import REGISTRY

    load_workloads()

    ap = argparse.ArgumentParser(
        prog="python -m summarylog.bench",
        description="Time summarylog against its peers (tensorboardX, tensorboard, the crc32c "
                    "package, dd) in one process and print ratios against the goals.")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes (a few seconds in all); for smoke tests")
    ap.add_argument("--json", metavar="PATH", help="also write every figure to PATH as JSON")
    ap.add_argument("--only", metavar="NAME[,NAME]", action="append", type=_names,
                    help=f"run only these benches (of: {', '.join(REGISTRY)})")
    ap.add_argument("--repeat", metavar="N", type=int, default=3,
                    help="runs per figure; the table shows the median (default 3)")
    ap.add_argument("--tmpdir", metavar="DIR",
                    help="where the write benches put files (default: $SUMMARYLOG_BENCH_TMPDIR, "
                         "else the temp dir unless it is tmpfs, else the current dir)")
    ap.add_argument("--list", action="store_true", help="list the benches and exit")
    args = ap.parse_args(argv)

    if args.list:
        for spec in REGISTRY.values():
            print(f"{spec.name:12s} goal >= {spec.goal:g}x {spec.peer:32s} {spec.description}")
        return 0
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    only = None
    if args.only:
        only = [n for group in args.only for n in group]
        unknown = sorted(set(only) - set(REGISTRY))
        if unknown:
            ap.error(f"unknown bench(es) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")

    try:
        facts, results = run(only, quick=args.quick, repeat=args.repeat, tmpdir=args.tmpdir)
    except OSError as exc:  # the scratch directory could not be made
        ap.error(f"cannot use the scratch directory: {exc}")
    print(format_table(facts, results, repeat=args.repeat, quick=args.quick), flush=True)
    if args.json:
        doc = to_json(facts, results, repeat=args.repeat, quick=args.quick)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    missing = missing_peers(results)
    if missing and in_ci():  # a row CI cannot judge is a failure there, not a skip
        print("CI=true: every peer is required; missing:\n  " + "\n  ".join(missing),
              file=sys.stderr)
        return 1
    return 1 if any(r.error is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
