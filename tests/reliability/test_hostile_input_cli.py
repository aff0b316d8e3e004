"""The ``summarylog`` command against hostile trees, files, outputs and
arguments (issue 27: items 3, 8, 12-15, 17).  Every test runs the installed
command in a child process, as a user runs it, with a generous hang guard,
and prints its figure.

- one discovery for every command: symlink loops and a 1 500-deep tree;
- directories that cannot be listed fail every command, naming the path;
- output files: never through a planted symlink, never replacing a device
  or a FIFO, keeping the old file's mode;
- convert: never outside DST, never stuck on a taken name, hostile lineage
  skipped and counted;
- plot: TeX-like text drawn as text, sizes checked before drawing;
- damaged files and malformed values are reported and fail the exit status;
- inspect lists every kind a tag holds;
- no traceback for any hostile argument.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord, Writer
from summarylog.pb import tb
from summarylog.records import RecordWriter

from .conftest import child_env

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from conftest import require  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
HANG_GUARD = 60  # seconds: every command must be long done by then


def run_cli(*args, prefix: tuple[str, ...] = (), timeout: float = HANG_GUARD,
            cwd: str = "/", exe: tuple[str, ...] | None = None) -> subprocess.CompletedProcess:
    """``python -m summarylog ARGS`` from ``/`` (so that the installed package,
    not the source tree, runs)."""
    cmd = [*prefix, *(exe or (sys.executable, "-P", "-m", "summarylog")), *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, env=child_env(), capture_output=True, text=True,
                          timeout=timeout)


def no_traceback(p: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in p.stderr, p.stderr[-3000:]


def one_line_error(p: subprocess.CompletedProcess, code: int, *words: str) -> str:
    no_traceback(p)
    assert p.returncode == code, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("summarylog: "), p.stderr
    for w in words:
        assert w in lines[0], (w, p.stderr)
    return lines[0]


def small_run(d, tag: str = "loss", steps: int = 5) -> str:
    with Writer(str(d)) as w:
        for s in range(steps):
            w.add_scalar(tag, 1.0 / (s + 1), s)
    return w.files[0]


def unprivileged() -> tuple[str, ...]:
    """A prefix that runs a command without the capabilities that let root
    read any directory (nothing when not root)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    require(setpriv is not None, "setpriv (to run as root without CAP_DAC_OVERRIDE)")
    return (setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search")


def has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# -- item 3: one discovery for every command -------------------------------------------------

def test_symlink_loops_and_a_deep_tree_end(tmp_path, figure):
    root = tmp_path / "root"
    small_run(root / "run")
    os.symlink(".", root / "a")  # two links to the root itself: os.walk(followlinks)
    os.symlink(".", root / "b")  # never ended on these
    os.symlink("..", root / "run" / "up")
    deep = tmp_path / "deep"
    levels = [str(deep)]
    for _ in range(1500):  # RecursionError in the old second walk
        levels.append(os.path.join(levels[-1], "d"))
    for d in levels:  # one by one: os.makedirs and shutil.rmtree recurse per level
        os.mkdir(d)
    small_run(levels[-1])
    times = {}
    try:
        for name, path in (("loops", root), ("1500 deep", deep)):
            for cmd in ("verify", "inspect", "cat", "tail"):
                t = time.monotonic()
                p = run_cli(cmd, path)
                times[f"{cmd} {name}"] = time.monotonic() - t
                no_traceback(p)
                assert p.returncode == 0 and p.stderr == "", (cmd, name, p.stderr[-2000:])
            p = run_cli("verify", path)
            ok = [ln for ln in p.stdout.splitlines() if ln.startswith("OK ")]
            assert len(ok) == 1, p.stdout  # the file once, whatever the links
    finally:
        for d in reversed(levels):
            for name in os.listdir(d):
                if name != "d":
                    os.unlink(os.path.join(d, name))
            os.rmdir(d)
    worst = max(times, key=times.get)
    figure(f"verify/inspect/cat/tail on two symlinks to '.' and a 1 500-deep tree: all exit 0, "
           f"the file listed once; slowest {worst} {times[worst]:.2f} s")


# -- item 13: directories that cannot be listed --------------------------------------------

def test_unlistable_run_directory_fails_every_command(tmp_path, figure):
    prefix = unprivileged()
    root = tmp_path / "root"
    small_run(root / "good")
    small_run(root / "locked")
    out = tmp_path / "out"
    out.mkdir()
    locked = root / "locked"
    cmds = {"inspect": (), "inspect --json": ("--json",), "cat": (), "tail": (), "verify": (),
            "export": ("-o", out / "x.csv"), "convert": (out / "conv", "--to", "tensorboard")}
    if has_matplotlib():
        cmds["plot"] = ("--tag", "loss", "-o", out / "x.png")
    os.chmod(locked, 0)
    try:
        for name, extra in cmds.items():
            cmd = name.split()[0]
            p = run_cli(cmd, root, *extra, prefix=prefix)
            no_traceback(p)
            assert p.returncode == 1, (name, p.returncode, p.stderr)
            assert f"summarylog: cannot read {locked}: Permission denied" in p.stderr.splitlines()
            if cmd in ("cat", "tail", "inspect"):
                assert "good" in p.stdout  # the other run is still shown
        # the root itself unlistable: the one error, exit 1
        os.chmod(root, 0)
        p = run_cli("cat", root, prefix=prefix)
        one_line_error(p, 1, f"cannot read {root}")
    finally:
        os.chmod(root, 0o755)
        os.chmod(locked, 0o755)
    figure(f"{len(cmds)} commands on a root with an unlistable run: each exit 1 with "
           f"'cannot read <path>: Permission denied' on stderr, the readable run still shown")


# -- item 8: output files -----------------------------------------------------------------

# plants the old scheme's temporary name (.OUT.<pid>.tmp) as a symlink to a
# victim, then becomes the command with the same pid
PLANT = ("import os, sys; out, victim = sys.argv[1], sys.argv[2]; "
         "d, b = os.path.split(out); "
         "os.symlink(victim, os.path.join(d, f'.{b}.{os.getpid()}.tmp')); "
         "os.execv(sys.executable, [sys.executable, '-P', '-m', 'summarylog', *sys.argv[3:]])")


def test_output_never_goes_through_a_planted_symlink(tmp_path, figure):
    src = tmp_path / "src"
    small_run(src)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    outs = [("export", tmp_path / "o" / "out.csv", ("--tag", "loss"))]
    if has_matplotlib():
        outs.append(("plot", tmp_path / "o" / "out.png", ("--tag", "loss")))
    (tmp_path / "o").mkdir()
    for cmd, out, extra in outs:
        p = run_cli(out, victim, cmd, src, *extra, "-o", out,
                    exe=(sys.executable, "-P", "-c", PLANT))
        no_traceback(p)
        assert p.returncode == 0, p.stderr
        assert victim.read_text() == "precious\n"
        assert out.is_file() and not out.is_symlink() and out.stat().st_size > 0
    left = sorted(n for n in os.listdir(tmp_path / "o") if not os.path.islink(tmp_path / "o" / n))
    assert left == sorted(o.name for _, o, _ in outs)  # no temporary file left behind
    figure(f"{len(outs)} outputs with a symlink planted at the old .OUT.<pid>.tmp name: the "
           f"victim untouched, OUT written, no temporary file left")


def test_output_refuses_devices_and_fifos_and_keeps_the_mode(tmp_path, figure):
    src = tmp_path / "src"
    small_run(src)
    checked = []
    # a FIFO: refused at once (never opened, so never a hang), still a FIFO
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    one_line_error(run_cli("export", src, "-o", fifo), 2, str(fifo), "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    link = tmp_path / "link.csv"
    os.symlink(fifo, link)
    one_line_error(run_cli("export", src, "-o", link), 2, "FIFO")
    assert os.path.islink(link)
    checked += ["FIFO", "symlink to a FIFO"]
    # a character device
    dev = tmp_path / "full.csv"
    if os.geteuid() == 0:  # root may make one: a copy of /dev/full
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    else:
        os.symlink(os.devnull, dev)
    one_line_error(run_cli("export", src, "-o", dev), 2, "character device")
    assert stat.S_ISCHR(os.stat(dev).st_mode)
    checked.append("character device" if os.geteuid() == 0 else "symlink to /dev/null")
    if has_matplotlib():
        one_line_error(run_cli("plot", src, "--tag", "loss", "-o", fifo), 2, "FIFO")
        checked.append("plot into a FIFO")
    # an existing file keeps its mode; a symlink to a file is replaced, not followed
    modes = {}
    for mode in (0o600, 0o640, 0o604):
        out = tmp_path / f"m{mode:o}.csv"
        out.write_text("old\n")
        os.chmod(out, mode)
        p = run_cli("export", src, "-o", out)
        assert p.returncode == 0, p.stderr
        modes[f"{mode:o}"] = f"{stat.S_IMODE(out.stat().st_mode):o}"
        assert stat.S_IMODE(out.stat().st_mode) == mode
        assert out.read_text().startswith("run,tag,step")
    target = tmp_path / "target.csv"
    target.write_text("keep\n")
    via = tmp_path / "via.csv"
    os.symlink(target, via)
    assert run_cli("export", src, "-o", via).returncode == 0
    assert target.read_text() == "keep\n" and not via.is_symlink()
    # stdout still works
    p = run_cli("export", src, "--format", "jsonl", "-o", "-")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 5
    figure(f"refused with one line, exit 2: {', '.join(checked)}; modes kept {modes}; a "
           f"symlink OUT replaced, its target untouched; '-o -' writes stdout")


# -- item 8, convert's side: stay inside DST ---------------------------------------------------

def test_convert_never_writes_outside_dst(tmp_path, figure):
    src = tmp_path / "src"
    small_run(src / "a")
    small_run(src / "b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dst = tmp_path / "dst"
    dst.mkdir()
    os.symlink(elsewhere, dst / "b")  # planted where run b goes
    p = one_line_error(run_cli("convert", src, dst, "--to", "tensorboard"), 1, str(dst / "b"),
                       "symlink")
    assert os.listdir(elsewhere) == []
    # taken _lineage names (planted symlinks): the pair of names moves past them
    tbsrc = tmp_path / "tbsrc"
    with Writer(str(tbsrc / "a")) as w:
        w.add_scalar("loss", 1.0, 0)
        w.add_hparams({"lr": 0.1}, {"loss": 0.1})
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    msdst = tmp_path / "msdst"
    (msdst / "a").mkdir(parents=True)
    host = __import__("socket").gethostname().replace("/", "_")
    now = int(time.time())
    for sec in range(now - 2, now + 40):
        os.symlink(victim, msdst / "a" / f"events.out.events.summary.{sec}.{host}_lineage")
    t = time.monotonic()
    q = run_cli("convert", tbsrc, msdst, "--to", "mindinsight")
    took = time.monotonic() - t
    no_traceback(q)
    assert q.returncode == 0, q.stderr
    assert victim.read_text() == "precious\n"
    made = [f for f in os.listdir(msdst / "a") if not os.path.islink(msdst / "a" / f)]
    assert len(made) == 2 and any(f.endswith("_lineage") for f in made), made
    figure(f"planted DST/run symlink refused ({p[len('summarylog: '):][:60]}…), nothing "
           f"written through it; 42 taken _lineage names: the pair moved past them in "
           f"{took:.2f} s (it looped for ever), the victim untouched")


# -- item 14, convert's side: hostile lineage ------------------------------------------------

def test_convert_skips_hostile_lineage_values(tmp_path, figure):
    metrics = {"list": "[1, 2]", "string": '"x"', "deep": "[" * 100_000 + "]" * 100_000,
               "deepvalue": '{"a": ' + "[" * 100_000 + "]" * 100_000 + ', "ok": 0.5}',
               "huge": '{"a": ' + "9" * 400 + ', "b": [1], "c": "text", "ok": 0.5}',
               "good": '{"ok": 0.5}'}
    for name, metric in metrics.items():
        with SummaryRecord(str(tmp_path / "src" / name)) as rec:
            rec.add_value("scalar", "loss", 1.0)
            rec.record(0)
            rec.add_value("eval_lineage", "x", {"metric": metric})
            rec.add_value("custom_lineage_data", "x", {"seed": 3})
            rec.record(1)
    t = time.monotonic()
    p = run_cli("convert", tmp_path / "src", tmp_path / "dst", "--to", "tensorboard")
    took = time.monotonic() - t
    no_traceback(p)
    assert "RecursionError" not in p.stderr and "AttributeError" not in p.stderr
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "converted 6 runs" in p.stdout
    for name in ("list", "string", "deep", "huge"):  # by convert, or as the Reader's damage
        assert any((f"run {name}: " in ln or f"/{name}/" in ln) and "malformed" in ln
                   for ln in p.stderr.splitlines()), (name, p.stderr)
    dst = Reader(tmp_path / "dst")
    for name in metrics:  # every run's own values made it
        assert dst.scalars(name, "loss").value.tolist() == [1.0]
    assert dst.scalars("good", "lineage/ok").value.tolist() == [0.5]
    assert dst.scalars("huge", "lineage/ok").value.tolist() == [0.5]
    v = run_cli("verify", tmp_path / "src")  # lineage files are checked too
    no_traceback(v)
    assert v.returncode == 1 and any(ln.startswith("DAMAGED ") and "/deep/" in ln
                                     and ln.split()[1].endswith("_lineage")
                                     for ln in v.stdout.splitlines()), v.stdout
    figure(f"6 runs, 5 with hostile lineage (\"[1, 2]\", a string, 100 000-deep nesting, a "
           f"400-digit number): converted in {took:.2f} s, exit 1, "
           f"{len(p.stderr.splitlines())} stderr lines, every good value kept")


# -- item 15: plot ----------------------------------------------------------------------------

def test_plot_draws_tex_like_text_as_text(tmp_path, figure):
    require(has_matplotlib(), "matplotlib")
    root = tmp_path / "root"
    hostile = ["$\\frac{$", "a$b", "$$", "\\", "_hidden", "esc\x1b[31m", "x" * 100_000]
    with Writer(str(root / "$\\frac{$")) as w:
        for i, tag in enumerate(hostile):
            w.add_scalar(tag, float(i), 0)
            w.add_scalar(tag, float(i) + 1, 1)
        w.add_scalar("loss", 1.0, 0)
    small_run(root / "other")
    out = tmp_path / "p.png"
    t = time.monotonic()
    p = run_cli("plot", root, "--tag", "*", "--title", "$\\frac{$", "-o", out)
    took = time.monotonic() - t
    no_traceback(p)
    assert p.returncode == 0 and p.stderr == "", p.stderr[-2000:]
    png = out.read_bytes()
    assert png[:8] == PNG
    height = int.from_bytes(png[20:24], "big")
    assert height == 300 * (len(hostile) + 1)  # every panel drawn, the TeX-like ones too
    figure(f"--tag '*' over {len(hostile)} hostile tags (TeX, control characters, 100 000 "
           f"characters) in a run named '$\\frac{{$', --title '$\\frac{{$': a "
           f"{len(hostile) + 1}-panel PNG in {took:.1f} s, stderr empty")


def test_plot_isolates_a_tag_it_cannot_draw(tmp_path, figure):
    require(has_matplotlib(), "matplotlib")
    run = tmp_path / "run"
    small_run(run)
    with RecordWriter(str(run / "events.out.tfevents.9999999999.x")) as rw:
        for step, val in ((0, 1.7e308), (1, -1.7e308)):  # a range past a double
            ev = tb.Event(wall_time=time.time(), step=step)
            v = ev.summary.value.add(tag="huge")
            v.metadata.plugin_data.plugin_name = "scalars"
            v.tensor.dtype = 2  # DT_DOUBLE
            v.tensor.double_val.append(val)
            rw.write(ev.SerializeToString())
    out = tmp_path / "p.png"
    p = run_cli("plot", run, "--tag", "*", "-o", out)
    no_traceback(p)
    assert p.returncode == 1, p.stderr
    (line,) = p.stderr.splitlines()
    assert line.startswith("summarylog: plot: tag 'huge' cannot be drawn"), line
    png = out.read_bytes()
    assert png[:8] == PNG and int.from_bytes(png[20:24], "big") == 600  # both panels
    figure(f"a tag spanning ±1.7e308 beside a plain one under --tag '*': the PNG has both "
           f"panels (the bad one says why), exit 1, stderr: {line[12:70]}…")


@pytest.mark.parametrize("args, words", [
    (("--dpi", "100000"), ("--dpi", "at most 2400")),
    (("--dpi", "nan"), ("--dpi",)),
    (("--width", "1e300"), ("--width", "at most 300")),
    (("--width", "inf"), ("--width",)),
    (("--width", "-1"), ("--width",)),
    (("--height-per-tag", "1e308"), ("--height-per-tag",)),
    (("--height-per-tag", "0"), ("--height-per-tag",)),
    (("--width", "300", "--dpi", "2400"), ("pixel",)),
])
def test_plot_sizes_are_one_line_errors(tmp_path, args, words):
    require(has_matplotlib(), "matplotlib")
    src = tmp_path / "src"
    small_run(src)
    out = tmp_path / "p.png"
    one_line_error(run_cli("plot", src, "--tag", "loss", *args, "-o", out), 2, *words)
    assert not out.exists()


def test_plot_too_many_panels_is_one_line_error(tmp_path, figure):
    require(has_matplotlib(), "matplotlib")
    src = tmp_path / "src"
    with Writer(str(src)) as w:
        w.log({f"t{i:03d}": 1.0 for i in range(300)}, 0)
    p = run_cli("plot", src, "--tag", "*", "-o", tmp_path / "p.png")
    line = one_line_error(p, 2, "300 panels", "pixel")
    figure(f"--tag '*' over 300 tags: {line[:110]}…")


@pytest.mark.parametrize("args", [
    ("tail", "-n", "99999999999999999999"), ("tail", "-n", "-1"),
    ("tail", "-f", "--poll-secs", "1e300"), ("tail", "-f", "--poll-secs", "0"),
    ("tail", "-f", "--idle-timeout", "nan"), ("tail", "-f", "--idle-timeout", "-5"),
])
def test_tail_numbers_are_one_line_errors(tmp_path, args):
    src = tmp_path / "src"
    small_run(src)
    one_line_error(run_cli(args[0], src, *args[1:]), 2, args[-2])


# -- item 12, the CLI's side: damage and malformed values fail the exit status ----------------

def _malformed_run(d) -> tuple[str, str]:
    """A run whose second file holds a record that is no Event and an event
    whose tensor claims 3 floats over 5 bytes (beside a valid loss)."""
    first = small_run(d, steps=3)
    bad = os.path.join(d, "events.out.tfevents.9999999999.bad")
    ev = tb.Event(wall_time=time.time(), step=3)
    ev.summary.value.add(tag="loss", simple_value=0.25)
    v = ev.summary.value.add(tag="weights")
    v.tensor.dtype = 1  # DT_FLOAT
    v.tensor.tensor_shape.dim.add(size=3)
    v.tensor.tensor_content = b"12345"
    with RecordWriter(bad) as rw:
        rw.write(tb.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString())
        rw.write(ev.SerializeToString())
        rw.write(b"\xff\xff\xff\xff")
    return first, bad


def test_malformed_values_fail_cat_tail_export_convert(tmp_path, figure):
    run = tmp_path / "run"
    _, bad = _malformed_run(run)
    out = tmp_path / "out"
    out.mkdir()
    cmds = {"cat": (), "tail": (), "verify": (), "export": ("-o", out / "x.csv"),
            "convert": (out / "conv", "--to", "tensorboard")}
    if has_matplotlib():
        cmds["plot"] = ("--tag", "loss", "-o", out / "x.png")
    for cmd, extra in cmds.items():
        p = run_cli(cmd, run, *extra)
        no_traceback(p)
        assert p.returncode == 1, (cmd, p.returncode, p.stderr)
        if cmd == "verify":  # on stdout, as every file's verdict
            assert any(ln.startswith(f"DAMAGED  {bad}") and "malformed" in ln
                       for ln in p.stdout.splitlines()), p.stdout
            continue
        assert any(ln.startswith(f"summarylog: {bad}: ") and "malformed" in ln
                   for ln in p.stderr.splitlines()), (cmd, p.stderr)
    cat = run_cli("cat", run)
    steps = [json.loads(ln)["step"] for ln in cat.stdout.splitlines()
             if json.loads(ln)["tag"] == "loss"]
    assert steps[:3] == [0, 1, 2]  # what could be read is still written
    # a torn tail alone is a live writer, not damage: exit 0, nothing on stderr
    torn = tmp_path / "torn"
    path = small_run(torn)
    with open(path, "rb+") as f:
        f.truncate(os.path.getsize(path) - 5)
    for cmd in ("cat", "tail"):
        p = run_cli(cmd, torn)
        assert p.returncode == 0 and p.stderr == "", (cmd, p.stderr)
    figure(f"{len(cmds)} commands on a run with malformed values: each exit 1 and names "
           f"{os.path.basename(bad)} on stderr; the readable values still written; a torn "
           f"tail alone exits 0")


# -- item 17, the CLI's side: every kind of a tag -------------------------------------------

def test_inspect_lists_every_kind_of_a_tag(tmp_path, figure):
    with Writer(str(tmp_path)) as w:
        for s in range(4):
            w.add_scalar("loss", 1.0 / (s + 1), s)
        w.add_histogram("loss", np.arange(10.0), 2)
    p = run_cli("inspect", tmp_path)
    assert p.returncode == 0, p.stderr
    rows = [ln.split() for ln in p.stdout.splitlines() if ln.startswith("  loss ")]
    assert [r[1:4] for r in rows] == [["scalar", "4", "0..3"], ["histogram", "1", "2..2"]], rows
    doc = json.loads(run_cli("inspect", "--json", tmp_path).stdout)
    loss = doc["runs"]["."]["tags"]["loss"]
    assert loss["kind"] == "scalar" and loss["count"] == 4
    assert loss["other_kinds"] == {"histogram": {"count": 1, "first_step": 2, "last_step": 2,
                                                 "last_value": None}}
    figure("a tag with 4 scalars and a histogram: inspect lists both kinds "
           "(scalar 4 0..3, histogram 1 2..2); --json gives other_kinds")


# -- no traceback for hostile arguments ------------------------------------------------------

def test_hostile_arguments_never_traceback(tmp_path, figure):
    root = tmp_path / "root"
    small_run(root / "run")
    fifo = tmp_path / "events.out.tfevents.fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    odd = tmp_path / "odd\nname\x1b[2J"
    small_run(odd)
    outdir = tmp_path / "outs"
    outdir.mkdir()
    long_name = outdir / ("x" * 300 + ".csv")
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "nowhere", dangling)
    paths = [root, fifo, loop, odd, tmp_path / "missing", os.devnull, "/dev"]
    argsets = []
    for path in paths:
        argsets += [("inspect", path), ("verify", path), ("cat", path, "--tag", "["),
                    ("tail", path, "-n", "3")]
    argsets += [
        ("cat", root, "--run", "nope"), ("cat", root, "--tag", "*" * 5000),
        ("cat", root, "--kind", "bogus"), ("inspect", root, "--run", "\x1b[31m"),
        ("export", root, "-o", outdir), ("export", root, "-o", outdir / "no" / "x.csv"),
        ("export", root, "-o", long_name), ("export", root, "-o", fifo),
        ("export", root, "-o", "x.unknown"), ("export", root, "--format", "csv", "-o", root),
        ("convert", root, root / "inside", "--to", "tensorboard"),
        ("convert", root, fifo, "--to", "tensorboard"),
        ("convert", root, os.devnull, "--to", "mindinsight"),
        ("convert", root, tmp_path / "c", "--to", "nothing"),
        ("convert", root, dangling, "--to", "tensorboard"),
        ("plot", root, "--tag", "nope", "-o", outdir / "p.png"),
        ("plot", root, "--tag", "loss", "-o", fifo),
        ("tail", root, "-f", "--idle-timeout", "0.3", "--poll-secs", "0.05"),
    ]
    codes: collections.Counter = collections.Counter()
    t = time.monotonic()
    for args in argsets:
        p = run_cli(*args)
        no_traceback(p)
        assert p.returncode in (0, 1, 2), (args, p.returncode, p.stderr)
        for line in p.stderr.splitlines():
            assert line.startswith("summarylog: "), (args, p.stderr)
            assert "\x1b" not in line and "\n" not in line
        codes[p.returncode] += 1
    took = time.monotonic() - t
    figure(f"{len(argsets)} hostile invocations (FIFO, symlink loop, control characters, "
           f"300-character names, bad globs...) in {took:.0f} s: no traceback, exit codes "
           f"{dict(sorted(codes.items()))}, every stderr line one 'summarylog: ' line")


def test_mutated_runs_through_every_command(tmp_path, rng, figure, long_run):
    """Valid records (good CRCs) whose payloads have random bytes changed, in
    both dialects with lineage, through every reading command in-process:
    exit codes only, never an exception."""
    require(hasattr(Reader, "tag_kinds"), "the hardened Reader (issue 27's reader side)")
    import contextlib
    import io

    from summarylog.cli import main
    from summarylog.records import RecordReader

    gen = np.random.default_rng(rng.randrange(1 << 30))
    base = tmp_path / "base"
    with Writer(str(base / "tb")) as w:
        for s in range(4):
            w.log({"loss": 1.0 / (s + 1)}, s)
            w.add_histogram("h", gen.standard_normal(100), s)
            w.add_image("img", gen.random((3, 4, 4)), s)
            w.add_text("t", "hello", s)
            w.add_tensor("tt", np.arange(6.0).reshape(2, 3), s)
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"loss": 0.1})
    with SummaryRecord(str(base / "ms")) as rec:
        for s in range(3):
            rec.add_value("scalar", "loss", 1.0)
            rec.add_value("histogram", "w", np.linspace(-1, 1, 50))
            rec.add_value("tensor", "t", np.arange(4))
            rec.add_value("image", "img", gen.random((1, 3, 4, 4)))
            rec.record(s)
        rec.add_value("eval_lineage", "x", {"metric": '{"acc": 0.5}'})
        rec.add_value("custom_lineage_data", "x", {"seed": 3})
        rec.record(3)
    sources = {}
    for d, _, names in os.walk(base):
        for name in names:
            path = os.path.join(d, name)
            with RecordReader(path) as rr:
                sources[os.path.relpath(path, base)] = list(rr)
    trials, runs_cmds, codes = (1000 if long_run else 25), 0, collections.Counter()
    for trial in range(trials):
        root = tmp_path / f"t{trial}"
        for rel, payloads in sources.items():
            os.makedirs(root / os.path.dirname(rel), exist_ok=True)
            with RecordWriter(str(root / rel)) as rw:
                for p in payloads:
                    b = bytearray(p)
                    if b and rng.random() < 0.3:
                        for _ in range(rng.randint(1, 4)):
                            b[rng.randrange(len(b))] = rng.randrange(256)
                    rw.write(bytes(b))
        for args in (["convert", root, f"{root}_tb", "--to", "tensorboard"],
                     ["convert", root, f"{root}_ms", "--to", "mindinsight"],
                     ["cat", root], ["inspect", root], ["inspect", "--json", root],
                     ["tail", root], ["verify", root], ["export", root, "-o", f"{root}.csv"]):
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                rc = main([str(a) for a in args])
            assert rc in (0, 1, 2), (args, rc)
            codes[rc] += 1
            runs_cmds += 1
    figure(f"{trials} mutated copies of a TensorBoard and a MindSpore run (lineage too), "
           f"{runs_cmds} commands in-process: no exception, exit codes "
           f"{dict(sorted(codes.items()))}")
