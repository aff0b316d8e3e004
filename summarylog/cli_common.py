"""What the ``summarylog`` commands share: finding the runs to read, and reporting
the problems met on the way as one stderr line each, with the exit status they call for."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import sys
from typing import Any, Sequence

from .cli_output import CLIError

__all__ = ["PROG", "Status", "say", "reason", "printable", "utf8", "plural", "tag_matches",
           "open_reader", "unreadable", "open_runs", "check_run", "report_dict", "damage_text",
           "tail_text", "READER_OPTIONS", "storage_option"]

PROG = "summarylog"


def say(message: str) -> None:
    print(f"{PROG}: {printable(message)}", file=sys.stderr, flush=True)


def reason(e: OSError) -> str:
    return e.strerror or str(e)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


class Status:
    """Problems a command went on past (damaged files, ...): a stderr line each; exit 1."""

    def __init__(self) -> None:
        self.code = 0
        self._pending: list[str] = []

    def later(self, message: str) -> None:
        """Reported by :meth:`flush` (after a progress bar, or a run's output)."""
        self._pending.append(message)
        self.code = 1

    def flush(self) -> int:
        for message in self._pending:
            say(message)
        self._pending.clear()
        return self.code


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(s: str) -> str:
    """Text for a terminal: control characters (escape sequences in a tag or path) as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def utf8(s: str) -> str:
    """Text that encodes as UTF-8: lone surrogates (non-UTF-8 name bytes) as ``\\udcXX``."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def tag_matches(tag: str, patterns: Sequence[str] | None) -> bool:
    return not patterns or any(tag == p or fnmatch.fnmatchcase(tag, p) for p in patterns)


# -- reading -------------------------------------------------------------------------

#: Reader options of this command (``--storage-option``, ``--ranks``), set by main()
READER_OPTIONS: dict[str, Any] = {}


def storage_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--storage-option``: VALUE as JSON when it parses (numbers,
    booleans, objects such as ``client_kwargs={"region_name": "x"}``), else as text."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def open_reader(path: str) -> Any:
    from .reader import Reader
    from .remote.urls import RemoteUnavailable, is_url, redact

    opts = dict(READER_OPTIONS)
    if not is_url(path):
        opts.pop("storage_options", None)
    try:
        return Reader(path, **opts)
    except FileNotFoundError:
        raise CLIError(f"{redact(path)}: no such file or directory") from None
    except RemoteUnavailable as exc:
        raise CLIError(str(exc), 2) from None
    except TimeoutError as exc:
        raise CLIError(f"cannot read {exc.filename or redact(path)}: {exc.strerror}", 1) from None


def unreadable(reader: Any) -> list[tuple[str, str]]:
    """(path, reason) of every directory the discovery could not list."""
    return [(reader.path if getattr(e, "filename", None) is None else os.fsdecode(e.filename),
             reason(e) if isinstance(e, OSError) else str(e)) for e in reader.discovery_errors]


def open_runs(path: str, wanted: Sequence[str] | None, *,
              need_files: bool = True) -> tuple[Status, Any, list[str]]:
    """A command's Status, Reader and runs to read.  Directories that could not be listed
    are reported and make the exit status 1: a run must never go missing silently."""
    status = Status()
    reader = open_reader(path)
    runs = reader.runs()
    lost = unreadable(reader)
    for where, why in lost:
        say(f"cannot read {where}: {why}")
        status.code = 1
    if not runs and need_files:  # lost directories were reported above: nothing more to say
        raise CLIError(None, 1) if lost else CLIError(f"{reader.path}: no event files found")
    if missing := [r for r in wanted or () if r not in runs]:
        raise CLIError(f"no run {missing[0]!r} under {reader.path} "
                       f"(runs: {', '.join(runs) or 'none'})")
    return status, reader, [r for r in runs if not wanted or r in wanted]


def check_run(reader: Any, run: str, status: Status) -> None:
    """Report (later) each damaged file or malformed value met in ``run`` (a torn tail is fine)."""
    mine = set(reader.lineage_files(run))
    lineage = [(path, rep) for path, rep in reader.lineage_damage().items() if path in mine]
    for path, rep in [*reader.damage(run).items(), *lineage]:
        if not rep.ok:
            name = reader.name(path) if hasattr(reader, "name") else path
            status.later(f"{name}: {', '.join(damage_text(report_dict(rep)) or ['damaged'])}")


def report_dict(rep: Any, name: str | None = None) -> dict[str, Any]:
    """``rep`` as a dict; ``name``: what to call the file (its URL when mirrored)."""
    size = rep.size
    if size is None:
        with contextlib.suppress(OSError):
            size = os.path.getsize(rep.path)
    return {"path": name or rep.path, "size": size, "records": rep.records, "ok": rep.ok,
            "damage": [d._asdict() for d in rep.damage],  # Damage and Tail: offset, kind, length
            "tail": None if rep.tail is None else rep.tail._asdict(),
            "bad_events": rep.bad_events, "bad_values": rep.bad_values,  # values not decoded
            # damaged regions past the list's cap, counted (only when there are some)
            **({"damage_past_cap": n} if (n := getattr(rep, "damage_past_cap", 0)) else {})}


def damage_text(rep: dict[str, Any], limit: int = 8) -> list[str]:
    parts = [f"{d['kind']} at {d['offset']} ({d['length']} bytes)" for d in rep["damage"][:limit]]
    more = len(rep["damage"]) - limit + rep.get("damage_past_cap", 0)
    if more > 0:
        parts.append(f"... {more} more")
    if rep["bad_events"]:
        parts.append(plural(rep["bad_events"], "malformed event"))
    if rep.get("bad_values", 0):
        parts.append(plural(rep["bad_values"], "malformed value"))
    return parts


def tail_text(tail: dict[str, Any]) -> str:
    return f"{tail['kind']} tail at {tail['offset']} ({tail['length']} bytes)"
