"""The ``summarylog`` command line, run as a user runs it: ``python -m
summarylog`` in a subprocess, from ``/`` so that the source tree does not
shadow the installed package (``pip install .`` first; ``./dev test`` does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import summarylog
from summarylog.records import RecordWriter

from conftest import require

CMDS = ("inspect", "verify", "cat", "export", "tail", "plot")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_cli(*args: str, env: dict | None = None, timeout: float = 60,
            prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-P", "-m", "summarylog", *map(str, args)],
                          cwd="/", capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy())


def no_traceback(p: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in p.stderr, p.stderr


def one_line_error(p: subprocess.CompletedProcess, code: int, *words: str) -> str:
    """Exit ``code`` with exactly one stderr line, prefixed ``summarylog: ``."""
    no_traceback(p)
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("summarylog: "), p.stderr
    for w in words:
        assert w in lines[0], (w, p.stderr)
    return lines[0]


def only_file(d) -> str:
    (name,) = os.listdir(d)
    return os.path.join(d, name)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def record_spans(data: bytes) -> list[tuple[int, int]]:
    """(offset, payload length) of every TFRecord in ``data``."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        n = int.from_bytes(data[pos:pos + 8], "little")
        out.append((pos, n))
        pos += n + 16
    return out


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    p = subprocess.run([sys.executable, "-P", "-c", "import summarylog.cli, summarylog.__main__"],
                       cwd="/", capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail("the installed summarylog has no CLI: run `pip install .` (./dev test does)\n"
                    + p.stderr)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("cli")
    root = base / "root"
    rng = np.random.default_rng(0)
    with summarylog.Writer(str(root / "train")) as w:
        for step in range(30):
            w.log({"loss": 1.0 / (step + 1), "acc": step / 30}, step)
            if step % 10 == 0:
                w.add_histogram("weights", rng.standard_normal(200), step)
        w.add_scalar("weird", float("nan"), 0)
        w.add_scalar("weird", float("inf"), 1)
        w.add_scalar("weird", float("-inf"), 2)
        w.add_image("sample", rng.random((3, 8, 6)), 5)
        w.add_text("notes", "hello *world*", 7)
        w.add_tensor("t", np.arange(6, dtype=np.int32).reshape(2, 3), 9)
    with summarylog.Writer(str(root / "eval")) as w:
        for step in range(10):
            w.add_scalar("loss", 0.5 + step, step)
    with summarylog.Writer(str(root / "zrun"), compression="zstd") as w:
        for step in range(20):
            w.add_scalar("loss", float(step), step)
            if step % 5 == 4:
                w.flush()  # one zstd frame per flush: several frames
    eval_file = only_file(root / "eval")
    raw = _read(eval_file)
    spans = record_spans(raw)
    # a flipped byte in the payload of the 4th record: bad_data_crc
    flip = base / "flip"
    flip.mkdir()
    off, n = spans[3]
    bad = bytearray(raw)
    bad[off + 12 + n // 2] ^= 0xFF
    (flip / os.path.basename(eval_file)).write_bytes(bytes(bad))
    # the last record cut short: a torn tail, not damage
    torn = base / "torn"
    torn.mkdir()
    (torn / os.path.basename(eval_file)).write_bytes(raw[:-5])
    # a zstd file with a corrupt frame header (the 2nd frame): bad_zstd_frame
    zraw = _read(only_file(root / "zrun"))
    magic = b"\x28\xb5\x2f\xfd"
    second = zraw.index(magic, 1)
    zbad = bytearray(zraw)
    zbad[second + 5] ^= 0xFF
    zdir = base / "zbad"
    zdir.mkdir()
    (zdir / os.path.basename(only_file(root / "zrun"))).write_bytes(bytes(zbad))
    # valid records that are not Events: malformed events
    mal = base / "malformed"
    mal.mkdir()
    with RecordWriter(str(mal / "events.out.tfevents.1.test")) as rw:
        rw.write(b"\xff\xff\xff\xff")
    # enough output to outlast a pipe's buffer
    with summarylog.Writer(str(base / "big")) as w:
        for step in range(3000):
            w.log({"a": float(step), "b": -float(step)}, step)
    return {"root": str(root), "eval": str(root / "eval"), "train": str(root / "train"),
            "zrun": str(root / "zrun"), "flip": str(flip), "torn": str(torn),
            "torn_at": str(spans[-1][0]), "flip_at": str(off), "zbad": str(zdir),
            "malformed": str(mal), "big": str(base / "big"), "base": str(base)}


# -- help and errors ---------------------------------------------------------------------

def test_help_lists_every_subcommand() -> None:
    p = run_cli("--help")
    assert p.returncode == 0, p.stderr
    for cmd in CMDS:
        assert cmd in p.stdout
    for cmd in CMDS:
        p = run_cli(cmd, "--help")
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"usage: summarylog {cmd}"), p.stdout


@pytest.mark.parametrize("cmd", CMDS)
def test_missing_path_exits_2_with_one_line(tmp_path, cmd: str) -> None:
    missing = tmp_path / "nope"
    extra = {"export": ["-o", tmp_path / "x.csv"],
             "plot": ["--tag", "loss", "-o", tmp_path / "x.png"]}
    p = run_cli(cmd, missing, *extra.get(cmd, []))
    one_line_error(p, 2, str(missing), "no such file")


def test_bad_arguments_exit_2_with_one_line(data) -> None:
    one_line_error(run_cli("frobnicate", data["root"]), 2, "frobnicate")
    one_line_error(run_cli("cat", data["root"], "--kind", "bogus"), 2, "bogus")
    one_line_error(run_cli("cat", data["root"], "--run", "nope"), 2, "nope", "eval")
    one_line_error(run_cli("tail", data["root"], "-n", "x"), 2)
    one_line_error(run_cli("export", data["root"], "-o", "/tmp/out.unknown"), 2, "--format")
    one_line_error(run_cli("plot", data["root"], "--tag", "nope", "-o", "/tmp/x.png"), 2,
                   "nope", "loss")
    one_line_error(run_cli(), 2)


def test_empty_directory_is_an_error(tmp_path) -> None:
    one_line_error(run_cli("inspect", tmp_path), 2, "no event files")


def test_unreadable_file_exits_1(data, tmp_path) -> None:
    root = tmp_path / "root"
    shutil.copytree(data["root"], root)
    locked = only_file(root / "eval")
    os.chmod(locked, 0)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root reads anything: drop the capabilities that let it
        setpriv = shutil.which("setpriv")
        require(setpriv is not None, "setpriv (to run as root without CAP_DAC_OVERRIDE)")
        prefix = (setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search")
    try:
        p = run_cli("verify", root, prefix=prefix)
        no_traceback(p)
        assert p.returncode == 1, (p.stdout, p.stderr)
        assert f"UNREADABLE {locked}: Permission denied" in p.stdout
        assert p.stdout.count("OK ") == 2  # the other files were still checked
        assert p.stderr.splitlines() == [f"summarylog: cannot read {locked}: Permission denied"]
        one_line_error(run_cli("inspect", root, prefix=prefix), 1, "cannot read", locked)
        one_line_error(run_cli("cat", root, prefix=prefix), 1, "cannot read", locked)
        # a run directory that cannot be listed is not skipped silently either
        os.chmod(locked, 0o644)
        os.chmod(root / "zrun", 0)
        p = run_cli("verify", root, prefix=prefix)
        assert p.returncode == 1, (p.stdout, p.stderr)
        assert f"UNREADABLE {root / 'zrun'}: Permission denied" in p.stdout
        assert p.stderr.splitlines() == [
            f"summarylog: cannot read {root / 'zrun'}: Permission denied"]
    finally:
        os.chmod(locked, 0o644)
        os.chmod(root / "zrun", 0o755)


def test_output_that_is_a_directory_exits_1(data, tmp_path) -> None:
    one_line_error(run_cli("export", data["root"], "-o", tmp_path), 1, "is a directory")
    one_line_error(run_cli("export", data["root"], "--format", "csv", "-o", tmp_path), 1,
                   "is a directory")
    one_line_error(run_cli("plot", data["root"], "--tag", "loss", "-o", tmp_path), 1,
                   "is a directory")
    one_line_error(run_cli("export", data["root"], "-o", tmp_path / "no" / "x.csv"), 1,
                   "cannot write")


# -- inspect -------------------------------------------------------------------------------

def test_inspect_text(data) -> None:
    p = run_cli("inspect", data["root"])
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # no progress bar when stderr is not a terminal
    out = p.stdout
    for run in ("run eval:", "run train:", "run zrun:"):
        assert run in out
    kinds = ("scalar", "histogram", "image", "text", "tensor")
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines()
             if ln.startswith("  ") and len(ln.split()) >= 4 and ln.split()[1] in kinds}
    assert lines["acc"][1:4] == ["scalar", "30", "0..29"]
    assert float(lines["acc"][4]) == pytest.approx(29 / 30, rel=1e-6)
    assert lines["weights"][1:4] == ["histogram", "3", "0..20"]
    assert lines["sample"][1:4] == ["image", "1", "5..5"]
    assert lines["notes"][1:4] == ["text", "1", "7..7"]
    assert lines["t"][1:4] == ["tensor", "1", "9..9"]
    assert lines["weird"][1:5] == ["scalar", "3", "0..2", "-inf"]
    assert ".zst" in out and "OK" in out


def test_inspect_json(data) -> None:
    p = run_cli("inspect", "--json", data["root"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    runs = doc["runs"]
    assert sorted(runs) == ["eval", "train", "zrun"]
    train = runs["train"]["tags"]
    assert {t: v["kind"] for t, v in train.items()} == summarylog.Reader(data["train"]).tags(".")
    assert train["loss"] == {"kind": "scalar", "count": 30, "first_step": 0, "last_step": 29,
                             "last_value": pytest.approx(1 / 30, rel=1e-6)}
    assert train["weird"]["last_value"] == "-Infinity"
    assert train["weights"]["count"] == 3 and train["weights"]["last_value"] is None
    (zf,) = runs["zrun"]["files"]
    assert zf["path"].endswith(".zst") and zf["ok"] and zf["records"] == 21
    assert zf["damage"] == [] and zf["tail"] is None
    assert runs["zrun"]["tags"]["loss"]["count"] == 20


def test_inspect_reports_damage_and_tails(data) -> None:
    doc = json.loads(run_cli("inspect", "--json", data["flip"]).stdout)
    (f,) = doc["runs"]["."]["files"]
    assert not f["ok"]
    assert [(d["kind"], d["offset"]) for d in f["damage"]] == [
        ("bad_data_crc", int(data["flip_at"]))]
    doc = json.loads(run_cli("inspect", "--json", data["torn"]).stdout)
    (f,) = doc["runs"]["."]["files"]
    assert f["ok"] and f["tail"]["kind"] == "torn" and f["tail"]["offset"] == int(data["torn_at"])
    p = run_cli("inspect", data["flip"])
    assert "DAMAGED: bad_data_crc at " + data["flip_at"] in p.stdout
    assert "unfinished: torn tail at " + data["torn_at"] in run_cli("inspect", data["torn"]).stdout


# -- verify ---------------------------------------------------------------------------------

def test_verify_clean(data) -> None:
    p = run_cli("verify", data["root"])
    assert p.returncode == 0, (p.stdout, p.stderr)
    lines = p.stdout.splitlines()
    files = [ln for ln in lines if ln.startswith("OK ")]
    assert len(files) == 3 and any(".zst" in ln for ln in files)
    assert lines[-1] == "3 files: 3 OK, 0 damaged, 0 with an unfinished tail"


def test_verify_flipped_byte_exits_1(data) -> None:
    p = run_cli("verify", data["flip"])
    assert p.returncode == 1, (p.stdout, p.stderr)
    (line,) = p.stdout.splitlines()
    assert line.startswith("DAMAGED ")
    assert f"bad_data_crc at {data['flip_at']}" in line


def test_verify_torn_tail_exits_0_unless_strict(data) -> None:
    p = run_cli("verify", data["torn"])
    assert p.returncode == 0, (p.stdout, p.stderr)
    (line,) = p.stdout.splitlines()
    assert line.startswith("TORN ") and f"torn tail at {data['torn_at']}" in line
    p = run_cli("verify", "--strict", data["torn"])
    assert p.returncode == 1 and p.stdout.startswith("TORN ")


def test_verify_bad_zstd_frame_and_malformed_events(data) -> None:
    p = run_cli("verify", data["zbad"])
    assert p.returncode == 1 and "DAMAGED" in p.stdout and "bad_zstd_frame" in p.stdout, p.stdout
    p = run_cli("verify", data["malformed"])
    assert p.returncode == 1 and "1 malformed event" in p.stdout, p.stdout


def test_verify_single_file(data) -> None:
    path = only_file(data["flip"])
    p = run_cli("verify", path)
    assert p.returncode == 1 and p.stdout.startswith(f"DAMAGED  {path}")


def test_progress_bar_only_on_a_terminal(data) -> None:
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-P", "-m", "summarylog", "verify", data["root"]],
                                cwd="/", stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        slave = -1
        out, _ = proc.communicate(timeout=60)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child's side is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    err = b"".join(chunks).decode()
    assert proc.returncode == 0
    assert "verify [" in err and "3/3" in err and "\x1b[K" in err  # drawn, then cleared
    assert "verify [" not in out.decode()


# -- cat -------------------------------------------------------------------------------------

def strict_json(line: str):
    return json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in {line}"))


def test_cat_every_event_as_json_lines(data) -> None:
    p = run_cli("cat", data["root"])
    assert p.returncode == 0, p.stderr
    rows = [strict_json(ln) for ln in p.stdout.splitlines()]
    reader = summarylog.Reader(data["root"])
    expected = [(run, ev) for run in reader.runs() for ev in reader.events(run)]
    assert len(rows) == len(expected)
    for row, (run, ev) in zip(rows, expected):
        assert set(row) == {"run", "tag", "kind", "step", "wall_time", "value"}
        assert (row["run"], row["tag"], row["kind"], row["step"]) == (run, ev.tag, ev.kind, ev.step)
        assert row["wall_time"] == ev.wall_time
    by = {(r["run"], r["tag"], r["step"]): r for r in rows}
    assert by[("train", "loss", 3)]["value"] == pytest.approx(0.25)
    weird = [by[("train", "weird", s)]["value"] for s in range(3)]
    assert weird == ["NaN", "Infinity", "-Infinity"]
    hist = by[("train", "weights", 10)]
    assert hist["kind"] == "histogram" and sum(hist["value"]["counts"]) == 200
    assert hist["value"]["num"] == 200
    assert by[("train", "sample", 5)]["value"] == {"width": 6, "height": 8, "pngs": 1}
    assert by[("train", "notes", 7)]["value"] == "hello *world*"
    assert by[("train", "t", 9)]["value"] == [[0, 1, 2], [3, 4, 5]]
    assert by[("zrun", "loss", 19)]["value"] == 19.0


def cat_rows(*args: str) -> list[dict]:
    p = run_cli("cat", *args)
    assert p.returncode == 0, p.stderr
    return [strict_json(ln) for ln in p.stdout.splitlines()]


def test_cat_filters(data) -> None:
    rows = cat_rows(data["root"], "--run", "train", "--kind", "histogram")
    assert [(r["tag"], r["step"]) for r in rows] == [("weights", 0), ("weights", 10),
                                                     ("weights", 20)]
    rows = cat_rows(data["root"], "--tag", "loss")
    assert {r["run"] for r in rows} == {"train", "eval", "zrun"}
    assert {r["tag"] for r in rows} == {"loss"} and len(rows) == 30 + 10 + 20
    rows = cat_rows(data["train"], "--tag", "w*", "--tag", "acc")  # globs, and a run directory
    assert {r["tag"] for r in rows} == {"weights", "weird", "acc"}
    assert {r["run"] for r in rows} == {"."}


def test_cat_into_a_closed_pipe(data) -> None:
    with subprocess.Popen([sys.executable, "-P", "-m", "summarylog", "cat", data["big"]], cwd="/",
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        first = proc.stdout.readline()
        proc.stdout.close()  # like `| head -n 1`
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
    assert strict_json(first.decode())["kind"] == "file_version"
    assert err == "", err
    assert proc.returncode == 141
    # and through a shell pipeline into head
    p = subprocess.run(f"'{sys.executable}' -P -m summarylog cat '{data['big']}' | head -n 2",
                       shell=True, cwd="/", capture_output=True, text=True, timeout=60)
    assert len(p.stdout.splitlines()) == 2 and p.stderr == "", p.stderr


def test_cat_non_ascii_tags_on_any_stdout(tmp_path) -> None:
    with summarylog.Writer(str(tmp_path / "ünï")) as w:
        w.add_scalar("λoss", 1.5, 0)
        w.add_text("заметка", "日本語", 1)
    for encoding, escaped in (("utf-8", False), ("ascii", True)):
        p = run_cli("cat", tmp_path, env=dict(os.environ, PYTHONIOENCODING=encoding))
        assert p.returncode == 0, p.stderr
        assert ("\\u03bb" in p.stdout) == escaped
        rows = [strict_json(ln) for ln in p.stdout.splitlines()]
        assert [(r["run"], r["tag"], r["value"]) for r in rows[1:]] == [
            ("ünï", "λoss", 1.5), ("ünï", "заметка", "日本語")]
        p = run_cli("tail", tmp_path, env=dict(os.environ, PYTHONIOENCODING=encoding))
        assert p.returncode == 0 and len(p.stdout.splitlines()) == 3, p.stderr


# -- export ----------------------------------------------------------------------------------

def normalized(df):
    df = df.reset_index(drop=True)
    for c in ("run", "tag"):
        df[c] = df[c].astype(str)
    df["step"] = df["step"].astype("int64")
    for c in ("wall_time", "value"):
        df[c] = df[c].astype("float64")
    return df[["run", "tag", "step", "wall_time", "value"]]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_reads_back_as_to_pandas(data, tmp_path, fmt: str) -> None:
    pd = pytest.importorskip("pandas")
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"scalars.{fmt}"
    p = run_cli("export", data["root"], "-o", out)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    if fmt == "csv":
        # exact floats: pandas >= 3 parses them round-trip by default (and deprecates the flag)
        exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
        got = pd.read_csv(out, **exact)
    elif fmt == "jsonl":
        got = pd.read_json(out, lines=True, precise_float=True, dtype=False)
        got["value"] = got["value"].map(float)  # "NaN", "Infinity", "-Infinity" are strings
    else:
        got = pd.read_parquet(out)
    want = summarylog.Reader(data["root"]).to_pandas()
    assert len(want) == 30 * 2 + 3 + 10 + 20
    pd.testing.assert_frame_equal(normalized(got), normalized(want), check_exact=True)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_export_format_flag_and_stdout(data, tmp_path) -> None:
    p = run_cli("export", data["eval"], "--format", "jsonl", "-o", "-")
    rows = [strict_json(ln) for ln in p.stdout.splitlines()]
    assert [(r["run"], r["tag"], r["step"], r["value"]) for r in rows] == [
        (".", "loss", s, 0.5 + s) for s in range(10)]
    out = tmp_path / "data.txt"
    assert run_cli("export", data["eval"], "--format", "csv", "-o", out).returncode == 0
    assert out.read_text().splitlines()[0] == "run,tag,step,wall_time,value"
    one_line_error(run_cli("export", data["eval"], "-o", "-"), 2, "--format")


def test_export_parquet_without_pyarrow(data, tmp_path) -> None:
    fake = tmp_path / "fake"
    (fake / "pyarrow").mkdir(parents=True)
    (fake / "pyarrow" / "__init__.py").write_text("raise ImportError('no pyarrow here')\n")
    env = dict(os.environ, PYTHONPATH=str(fake))
    out = tmp_path / "x.parquet"
    one_line_error(run_cli("export", data["root"], "-o", out, env=env), 2, "pyarrow")
    assert not out.exists()


# -- tail -------------------------------------------------------------------------------------

def test_tail_n(data) -> None:
    p = run_cli("tail", "-n", "3", data["eval"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 3
    for line, step in zip(lines, (7, 8, 9)):
        assert f"step {step}  scalar  loss  {0.5 + step:g}" in line
    lines = run_cli("tail", data["root"]).stdout.splitlines()  # 10 per run by default
    assert len(lines) == 30 and {ln.split()[0] for ln in lines} == {"train", "eval", "zrun"}
    assert run_cli("tail", "-n", "0", data["eval"]).stdout == ""


def test_tail_follow_prints_new_events(tmp_path) -> None:
    logdir = tmp_path / "live"
    w = summarylog.Writer(str(logdir), flush_secs=0.05)
    try:
        for step in range(5):
            w.add_scalar("loss", float(step), step)
        w.flush()
        with subprocess.Popen([sys.executable, "-P", "-m", "summarylog", "tail", "-f", "-n", "2",
                               "--idle-timeout", "1", "--poll-secs", "0.1", str(logdir)],
                              cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as proc:
            watchdog = threading.Timer(30, proc.kill)  # never hang the suite
            watchdog.start()
            head = [proc.stdout.readline() for _ in range(2)]  # the last 2 events first
            assert "step 3  scalar  loss" in head[0] and "step 4  scalar  loss" in head[1], head

            def append() -> None:
                for step in range(100, 110):
                    w.add_scalar("live", float(step), step)
                    w.flush()
                    time.sleep(0.05)

            t = threading.Thread(target=append)
            t.start()
            t.join()
            rest, err = proc.communicate(timeout=30)  # ends after 1 s without new events
            watchdog.cancel()
        assert proc.returncode == 0 and err == "", err
        lines = rest.splitlines()
        assert [ln.split("  ")[2:4] for ln in lines] == [
            [f"step {s}", "scalar"] for s in range(100, 110)]
        assert all("  live  " in ln for ln in lines)
    finally:
        w.close()


# -- plot -------------------------------------------------------------------------------------

def test_plot_writes_a_png(data, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "plot.png"
    p = run_cli("plot", data["root"], "--tag", "loss", "--tag", "acc", "-o", out)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    png = out.read_bytes()
    assert png[:8] == PNG_SIGNATURE and png[12:16] == b"IHDR"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (800, 600)  # 8 in x (3 in per tag) at 100 dpi
    assert len(png) > 10_000  # lines, axes and text, not an empty canvas
    out2 = tmp_path / "one.png"
    p = run_cli("plot", data["root"], "--run", "eval", "--tag", "loss", "-o", out2)
    assert p.returncode == 0 and out2.read_bytes()[:8] == PNG_SIGNATURE


def test_plot_without_matplotlib(data, tmp_path) -> None:
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = dict(os.environ, PYTHONPATH=str(fake))
    out = tmp_path / "x.png"
    p = run_cli("plot", data["root"], "--tag", "loss", "-o", out, env=env)
    one_line_error(p, 2, "matplotlib")
    assert not out.exists()


def test_main_is_importable() -> None:
    from summarylog import cli

    assert cli.main(["verify", "/definitely/not/here"]) == 2
