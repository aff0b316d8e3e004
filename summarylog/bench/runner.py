"""Runs the registered benches in one process and turns their rows into the
printed table and the JSON document."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .machine import default_tmpdir, machine_facts
from .registry import REGISTRY, BenchSpec, Context, PeerMissing, Row, iter_specs

__all__ = ["Result", "run", "format_table", "to_json", "format_figure", "in_ci",
           "missing_peers"]

JSON_SCHEMA = 1


@dataclass
class Result:
    """One workload's outcome: its rows, or the error that stopped it."""

    spec: BenchSpec
    rows: list[Row]
    error: str | None = None
    missing: str | None = None  #: set when a missing peer stopped the whole bench

    @property
    def primary(self) -> Row | None:
        for r in self.rows:
            if r.primary:
                return r
        return None

    @property
    def met(self) -> bool | None:
        """All measurable primary rows meet the goal (None: none measurable)."""
        judged = [r.met for r in self.rows if r.primary and r.met is not None]
        if self.error is not None or not judged:
            return None
        return all(judged)


def load_workloads() -> None:
    """Register every bench (importing a workload module registers its benches)."""
    from . import (collector_workloads, dataset_workloads, engine_workloads,  # noqa: F401
                   frames_workloads, landscape_workloads, reader_workloads,
                   remote_read_workloads, remote_write_workloads, scale_workloads,
                   stream_workloads, summary_writer_workloads, workloads, writer_workloads)  # (importing registers the benches)


def run(only: list[str] | None = None, *, quick: bool = False, repeat: int = 3,
        tmpdir: str | None = None,
        log: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[Result]]:
    """Run the benches (all, or those named in ``only``) and return the
    machine facts and one :class:`Result` per bench.  A bench that raises is
    reported as an error; the others still run."""
    load_workloads()
    if log is None:
        def log(msg: str) -> None:
            print(f"[bench] {msg}", file=sys.stderr, flush=True)
    base = tmpdir or default_tmpdir()
    os.makedirs(base, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="summarylog-bench-", dir=base)
    facts = machine_facts(scratch)
    facts["tmpdir"] = base
    results: list[Result] = []
    try:
        ctx = Context(quick=quick, repeat=repeat, tmpdir=scratch, log=log)
        for spec in iter_specs(only):
            try:
                rows = spec.func(ctx)
            except PeerMissing as exc:  # an error still, named so CI can say what is missing
                log(f"{spec.name}: peer {exc}")
                results.append(Result(spec, [], traceback.format_exc(), missing=str(exc)))
                continue
            except Exception:
                log(f"{spec.name}: failed")
                results.append(Result(spec, [], traceback.format_exc()))
                continue
            for r in rows:
                if r.primary:
                    r.goal = spec.goal
            results.append(Result(spec, rows))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return facts, results


def in_ci() -> bool:
    """CI=true (or 1, yes): every peer is required, as in the test suite."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_peers(results: list[Result]) -> list[str]:
    """``"<bench>[ / <row>]: <status>"`` for every bench a missing peer stopped
    and every row whose peer is missing."""
    out = []
    for res in results:
        if res.missing is not None:
            out.append(f"{res.spec.name}: {res.missing}")
        for r in res.rows:
            if r.peer_status.startswith("missing"):
                where = r.workload if r.label == r.workload else f"{r.workload} / {r.label}"
                out.append(f"{where}: {r.peer_status}")
    return out


# -- formatting ---------------------------------------------------------------


def format_figure(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "records/s":
        if value >= 1e6:
            return f"{value / 1e6:.2f} M rec/s"
        return f"{value / 1e3:.1f} k rec/s"
    if unit == "GB/s":
        return f"{value:.2f} GB/s"
    if unit == "MiB/s":
        return f"{value:.0f} MiB/s"
    return f"{value:.4g} {unit}"


def _ratio(r: float | None) -> str:
    if r is None:
        return "-"
    # three significant digits, so a near miss (0.796x) never prints as the goal (0.80x)
    return f"{r:.0f}x" if r >= 100 else f"{r:#.3g}x"


def _cells(res: Result) -> list[list[str]]:
    if res.error is not None:
        last = res.error.strip().splitlines()[-1]
        return [[res.spec.name, res.spec.peer, "-", f"error: {last}", "-",
                 f">= {res.spec.goal:g}x", "error"]]
    out = []
    for r in res.rows:
        label = r.label if r.label == r.workload else f"  {r.label}"
        if r.peer_status != "ok":
            peer_fig = r.peer_status
        else:
            peer_fig = format_figure(r.peer_value, r.unit)
        if not r.primary:
            goal, met = "-", "info"
        else:
            goal = f">= {r.goal:g}x" if r.goal is not None else "-"
            met = {True: "yes", False: "NO", None: "n/a"}[r.met]
        out.append([label, r.peer, peer_fig, format_figure(r.ours_value, r.unit),
                    _ratio(r.ratio), goal, met])
    return out


def format_table(facts: dict[str, Any], results: list[Result], *, repeat: int,
                 quick: bool) -> str:
    ni = facts["native_info"]
    peers = ", ".join(f"{k} {v or 'missing'}" for k, v in facts["peers"].items())
    fs = facts["tmpdir_fs"]
    lines = [
        f"summarylog bench{' --quick' if quick else ''}: median of {repeat} run(s); figures "
        "are throughputs (higher is better); ratio = summarylog / peer",
        f"machine:    {facts['cpu_model']}, {facts['cpus_usable']} of {facts['cpus']} CPUs, "
        f"{facts['platform']}, {facts['python_impl']} {facts['python']}"
        + (f"; load average {facts['loadavg_1m']:.2f} at start"
           if facts.get("loadavg_1m") is not None else ""),
        f"summarylog: {facts['summarylog']}; native core {ni.get('version')}, "
        f"crc32c={ni.get('crc32c')} (available: {ni.get('crc32c_available')})",
        f"peers:      {peers}",
        f"files in:   {facts['tmpdir']} ({fs['type']} on {fs['device']}, mounted at "
        f"{fs['mount']})" + ("  WARNING: in RAM, not a disk" if facts["tmpdir_in_ram"] else ""),
        "",
    ]
    header = ["workload", "peer", "peer figure", "summarylog", "ratio", "goal", "met"]
    body = [c for res in results for c in _cells(res)]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    right = {2, 3, 4}

    def fmt(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    lines.append(fmt(header))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(fmt(row) for row in body)
    lines.append("")
    lines.append("notes:")
    for res in results:
        if res.error is not None:
            lines.append(f"  {res.spec.name}: ERROR\n" +
                         "\n".join("    " + s for s in res.error.rstrip().splitlines()))
            continue
        seen: set[str] = set()
        for r in res.rows:
            if r.note and r.note not in seen:
                seen.add(r.note)
                where = r.workload if r.label == r.workload else f"{r.workload} / {r.label}"
                lines.append(f"  {where}: {r.note}")
    judged = [res for res in results if res.met is not None]
    met = [res.spec.name for res in judged if res.met]
    missed = [res for res in judged if not res.met]
    lines.append("")
    summary = f"goals met: {len(met)} of {len(results)}"
    if missed:
        summary += "; not met: " + ", ".join(  # each primary row that misses the goal
            f"{r.workload if r.label == r.workload else f'{r.workload} / {r.label}'} "
            f"({_ratio(r.ratio)} < {res.spec.goal:g}x)"
            for res in missed for r in res.rows if r.primary and r.met is False)
    unjudged = [res.spec.name for res in results if res.met is None]
    if unjudged:
        summary += "; not judged (peer missing or error): " + ", ".join(unjudged)
    lines.append(summary)
    return "\n".join(lines)


def to_json(facts: dict[str, Any], results: list[Result], *, repeat: int,
            quick: bool) -> dict[str, Any]:
    workloads: dict[str, Any] = {}
    for res in results:
        p = res.primary
        workloads[res.spec.name] = {
            "description": res.spec.description,
            "unit": res.spec.unit,
            "goal": res.spec.goal,
            "peer": p.peer if p else res.spec.peer,
            "peer_status": p.peer_status if p else "error",
            "peer_value": p.peer_value if p else None,
            "ours_value": p.ours_value if p else None,
            "ratio": p.ratio if p else None,
            "met": res.met,
            "error": res.error,
            "rows": [r.to_json() for r in res.rows],
        }
    return {
        "schema": JSON_SCHEMA,
        "quick": quick,
        "repeat": repeat,
        "machine": facts,
        "registered": list(REGISTRY),
        "workloads": workloads,
    }
