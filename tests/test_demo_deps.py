"""The demo (``./dev demo``) runs clean on a machine that has only what
``pip install summarylog[demo]`` brings: a child Python makes every installed
package outside that set unimportable, as on a fresh machine, and runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import require_module

# Runs the demo with only summarylog's [demo] closure importable: its declared
# requirements (core + the extra), theirs, and so on.  An optional import a
# library tries (and survives) is blocked as it would be missing there.
_FRESH = textwrap.dedent("""
    import importlib.metadata as md
    import json
    import re
    import sys

    from packaging.requirements import Requirement

    def canon(name):
        return re.sub(r"[-_.]+", "-", name).lower()

    def closure(dist, extras):
        seen, todo = set(), [(dist, set(extras))]
        while todo:
            name, ex = todo.pop()
            if (canon(name), frozenset(ex)) in seen:
                continue
            seen.add((canon(name), frozenset(ex)))
            try:
                reqs = md.requires(name) or []
            except md.PackageNotFoundError:
                continue  # declared but not installed: the import fails anyway
            for line in reqs:
                req = Requirement(line)
                if req.marker and not any(req.marker.evaluate({"extra": e})
                                          for e in ex | {""}):
                    continue
                todo.append((req.name, set(req.extras)))
        return {n for n, _ in seen}

    allowed = closure("summarylog", {"demo"})
    owners = md.packages_distributions()
    blocked = set()

    def hidden(name):
        top = name.partition(".")[0]
        if top in owners and not any(canon(d) in allowed for d in owners[top]):
            blocked.add(top)
            return True
        return False

    class Fresh:  # imports of a hidden package fail
        def find_spec(self, name, path=None, target=None):
            if path is None and hidden(name):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    import importlib.util

    real_find_spec = importlib.util.find_spec

    def find_spec(name, package=None):  # and probing for one says it is not there
        if not name.startswith(".") and hidden(name):
            return None
        return real_find_spec(name, package)

    importlib.util.find_spec = find_spec
    sys.meta_path.insert(0, Fresh())
    from summarylog.demo import main

    rc = main(sys.argv[1:])
    print(json.dumps({"allowed": len(allowed), "blocked": sorted(blocked)}))
    sys.exit(rc)
""")


def test_demo_runs_clean_with_only_its_declared_dependencies(tmp_path) -> None:
    require_module("packaging")
    require_module("torch")
    r = subprocess.run([sys.executable, "-P", "-c", _FRESH, "--logdir", str(tmp_path),
                        "--epochs", "1"], capture_output=True, text=True, timeout=600, cwd="/")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"demo with only summarylog[demo]'s {res['allowed']} distributions importable: "
          f"exit 0; installed but undeclared, blocked: {', '.join(res['blocked']) or 'none'}")
    # the main job must run clean: a missing package shows as a warning, e.g. the
    # graph tracing's "No module named 'tensorboard'"
    assert "could not be traced" not in out, out[-4000:]
    assert "No module named" not in out, out[-4000:]
    # the main job: a real PyTorch run with the collector, a table, a plot
    assert "read back" in r.stdout and "damage: none" in r.stdout
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()
            if line.startswith("  ")}
    assert rows["loss/auto"][1:4] == ["scalar", "9", "1..64"]  # first step, then every 8th
    assert rows["train/accuracy"][1:4] == ["scalar", "64", "1..64"]
    assert rows["conv.weight/auto"][1] == "histogram" and rows["input_data/auto"][1] == "image"
    assert rows["activations/conv"][1] == "histogram"
    (png,) = list(tmp_path.glob("*/scalars.png"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
