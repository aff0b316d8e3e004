"""``summarylog export ROOT -o DATASET/ --format parquet``: the Parquet dataset of
:mod:`summarylog.dataset`, brought up to date incrementally (a directory or a URL)."""

from __future__ import annotations

import argparse
import os
import sys

from .cli_common import READER_OPTIONS, printable, say
from .cli_output import CLIError
from .remote.urls import is_url

__all__ = ["wants_dataset", "cmd_export_dataset"]


def wants_dataset(output: str, fmt: str | None) -> bool:
    """OUT names a dataset: it ends with '/' (a directory or URL), or it is an existing
    directory and ``--format parquet`` was given (without it, an existing directory
    stays the error it always was: a file was meant)."""
    if output == "-":
        return False
    return output.endswith("/") or (fmt == "parquet" and not is_url(output)
                                    and os.path.isdir(output))


def cmd_export_dataset(args: argparse.Namespace) -> int:
    if args.format not in (None, "parquet"):
        raise CLIError(f"{args.output!r} is a directory: a dataset is written only as "
                       f"--format parquet, not {args.format}")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise CLIError("export --format parquet needs pyarrow: pip install pyarrow") from None
    from .dataset import export_dataset

    opts = READER_OPTIONS.get("storage_options")
    try:
        res = export_dataset(args.path, args.output, runs=args.run, tags=args.tag,
                             storage_options=opts if is_url(args.path) else None,
                             dest_storage_options=opts if is_url(args.output) else None,
                             prune=args.prune)
    except (KeyError, ValueError) as exc:
        raise CLIError(str(exc.args[0] if isinstance(exc, KeyError) else exc)) from None
    except FileNotFoundError as exc:
        raise CLIError(f"{exc.filename or args.path}: no such file or directory", 1) from None
    for run, why in res.runs_reexported.items():
        say(f"run {run!r} re-exported whole: {why}")
    for run, err in res.errors.items():
        say(f"run {run!r} not read (tried again next time): {err}")
    for path, err in res.unlisted.items():
        say(f"{path}: not listed, its runs not exported: {err}")
    for run in res.runs_gone:
        say(f"run {run!r} is no longer under {args.path}: "
            f"{'its parts removed' if res.pruned else 'kept (--prune removes it)'}")
    print(printable(res.summary()), file=sys.stdout)
    return 1 if res.errors or res.damage_rows or res.unlisted else 0
