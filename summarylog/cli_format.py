"""How the ``summarylog`` commands show things: strict JSON (no bare NaN, bytes as base64,
numpy as lists), one-line value summaries, event lines, a progress bar on a terminal."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import json
import math
import sys
import time
from typing import Any

from .cli_common import plural, printable


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Progress(contextlib.AbstractContextManager):
    """``label [#####.....] done/total`` redrawn on stderr if a terminal, cleared when done."""

    WIDTH = 30

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.on = total > 0 and isatty(sys.stderr)  # then drawn till the end (print redraws)
        self._last = 0.0
        self._draw()

    def _draw(self, force: bool = True) -> None:
        now = time.monotonic()
        if not self.on or (not force and now - self._last < 0.1):
            return
        self._last = now
        bar = ("#" * (self.WIDTH * self.done // max(self.total, 1))).ljust(self.WIDTH, ".")
        sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        sys.stderr.flush()

    def _clear(self) -> None:
        if self.on:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw(force=self.done >= self.total)

    def print(self, line: str, file: Any = None) -> None:
        """A line on stdout (or ``file``) without tearing the bar."""
        self._clear()
        print(line, file=file, flush=self.on)
        self._draw()

    def __exit__(self, *exc: object) -> None:
        self._clear()
        self.on = False


def text(x: Any) -> str:
    """A name as text: a decoder may hand over bytes that are not UTF-8."""
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).decode("utf-8", "backslashreplace")
    return str(x)


def json_float(x: float) -> Any:
    return x if math.isfinite(x) else json.dumps(x)  # "NaN", "Infinity", "-Infinity"


def json_num(x: float) -> str:
    """A float as JSON text (repr is exact and valid JSON for finite floats)."""
    return repr(x) if math.isfinite(x) else f'"{json_float(x)}"'


def jsonable(v: Any) -> Any:
    """Plain JSON values: non-finite floats as "NaN"/"Infinity"/"-Infinity",
    bytes as base64, numpy arrays as nested lists, complex as [re, im]."""
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        return json_float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, complex):
        return [json_float(v.real), json_float(v.imag)]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    tolist = getattr(v, "tolist", None)  # numpy arrays and scalars
    if tolist is not None:
        return jsonable(tolist())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):  # a Landscape: its fields
        return {f.name: jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    return str(v)


def stdout_is_utf8() -> bool:
    enc = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    return enc == "utf8"


def dumps(obj: Any, ascii_only: bool = False) -> str:
    """Strict JSON (no bare NaN); ``ascii_only`` for a stdout that is not UTF-8."""
    return json.dumps(obj, ensure_ascii=ascii_only, allow_nan=False)


def fmt_num(x: float) -> str:
    return f"{x:.6g}"


def fmt_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def one_line(s: str, width: int = 80) -> str:
    s = " ".join(s.split())
    return s if len(s) <= width else s[: width - 1] + "…"


def print_line(line: str = "") -> None:
    """A line of human output: names from files may carry control characters."""
    print(printable(line))


def brief(kind: str, value: Any) -> str:
    """A one-line human summary of an event's value."""
    try:
        if kind == "scalar":
            return fmt_num(value)
        if kind == "histogram":
            return (f"n={fmt_num(value['num'])} min={fmt_num(value['min'])} "
                    f"max={fmt_num(value['max'])} buckets={len(value['counts'])}")
        if kind == "image":
            return f"{value['width']}x{value['height']} ({plural(len(value['pngs']), 'png')})"
        if kind == "text":
            return one_line(value if isinstance(value, str) else str(jsonable(value)))
        if kind == "tensor":
            import numpy as np

            text = np.array2string(value, threshold=8, edgeitems=2, max_line_width=10_000)
            return one_line(f"{value.dtype}{list(value.shape)} {text}")
        if kind == "landscape":
            return landscape_brief(value)
        if kind in ("graph", "other") and isinstance(value, (bytes, bytearray)):
            return f"{len(value)} bytes"
        if kind == "session_log":
            return str(value.get("status"))
        if isinstance(value, str):
            return one_line(value)
        return one_line(dumps(jsonable(value)), 100)
    except Exception:  # a summary is never worth dying for
        return one_line(repr(value))


def landscape_brief(ls: Any) -> str:
    """``PCA 40x40 over 1..9 step, loss 0.1..2.3`` (rows x columns = y x x)."""
    import numpy as np

    finite = ls.z[np.isfinite(ls.z)]
    loss = f"loss {fmt_num(finite.min())}..{fmt_num(finite.max())}" if finite.size else "no loss"
    where = f" over {ls.intervals[0]}..{ls.intervals[-1]} {ls.unit}" if ls.intervals else ""
    return f"{ls.decomposition} {ls.z.shape[0]}x{ls.z.shape[1]}{where}, {loss}"


def event_record(run: str, ev: Any) -> dict[str, Any]:
    value = ev.value
    if ev.kind == "image" and isinstance(value, dict):
        value = {"width": value.get("width"), "height": value.get("height"),
                 "pngs": len(value.get("pngs", ()))}
    return {"run": run, "tag": text(ev.tag), "kind": ev.kind, "step": int(ev.step),
            "wall_time": json_float(float(ev.wall_time)), "value": jsonable(value)}


def event_line(run: str, ev: Any) -> str:
    try:
        when = datetime.datetime.fromtimestamp(ev.wall_time).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        when = repr(ev.wall_time)
    return printable(f"{run}  {when}  step {ev.step}  {ev.kind}  {text(ev.tag) or '-'}  "
                      f"{brief(ev.kind, ev.value)}")
