"""Build and run the native core's C test suite, and lint the C sources.

Each ``tests/c/test_*.c`` is one program.  It is compiled with gcc together
with every ``csrc/*.c`` in two builds, AddressSanitizer + UBSan at -O1 and a
plain -O2 build, and must exit 0 with no sanitizer report.  Binaries go to
pytest's ``tmp_path``.

The scanner fuzz loop reads ``SLG_FUZZ_ITERS``: 10^5 mutated streams by
default here (each checked against the reference scanner, in both builds),
5 * 10^6 with ``pytest --long``, or any number::

    SLG_FUZZ_ITERS=20000000 pytest tests/test_c_core.py

``SLG_FUZZ_SEED`` moves the fuzz to other seeds, and ``SLG_CRC_EXHAUSTIVE=1``
runs every (i, j) split of the CRC suite's 2048-byte buffer through each
implementation entry point (slow).  Without gcc the C tests skip here and
fail under ``CI=true``.

The lint tests are string-level (like msgspec's ``test_cpylint``): in each
function of ``csrc/*.c`` that takes a pthread mutex, every ``return`` inside
the locked region comes after the unlock; and no allocation's size comes
straight from ``slg_get_le64`` (a length read from the file must be bounded
first).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import require

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
CTEST_DIR = ROOT / "tests" / "c"
CTESTS = sorted(CTEST_DIR.glob("test_*.c"))

COMMON_FLAGS = [
    "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
    "-pthread", "-D_GNU_SOURCE", '-DSLG_VERSION="test"', f"-I{CSRC}", f"-I{CTEST_DIR}",
]
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                  "-fno-sanitize-recover=all"]
BUILDS = {
    "asan-ubsan": SANITIZE_FLAGS,
    "O2": ["-O2"],
}
RUN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
DEFAULT_FUZZ_ITERS = "100000"  # >= 10^5 scanner fuzz inputs in every run (~7 s under ASan)
LONG_FUZZ_ITERS = "5000000"  # pytest --long
SANITIZER_MARKERS = ("runtime error", "AddressSanitizer", "LeakSanitizer")


def _csources() -> list[str]:
    return [str(p) for p in sorted(CSRC.glob("*.c"))]


@pytest.fixture(scope="session")
def gcc() -> str:
    path = shutil.which("gcc")
    require(path is not None, "gcc (to build the C tests)")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def sanitizers(gcc: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """gcc can link ASan and UBSan here (libasan/libubsan installed)."""
    d = tmp_path_factory.mktemp("probe")
    src = d / "probe.c"
    src.write_text("int main(void) { return 0; }\n")
    r = subprocess.run([gcc, *SANITIZE_FLAGS, str(src), "-o", str(d / "probe")],
                       capture_output=True, text=True)
    require(r.returncode == 0,
            f"gcc with the AddressSanitizer/UBSan runtimes ({r.stderr.strip()[:200]})")


def _tail(text: str, n: int = 6000) -> str:
    return text if len(text) <= n else "...\n" + text[-n:]


def test_c_suite_present() -> None:
    names = {p.name for p in CTESTS}
    for want in ("test_crc32c.c", "test_record.c", "test_scanner.c", "test_writer.c",
                 "test_histograms.c"):
        assert want in names, f"tests/c/{want} is missing"
    assert _csources(), "no csrc/*.c found"


@pytest.mark.parametrize("build", list(BUILDS))
@pytest.mark.parametrize("ctest", CTESTS, ids=[p.stem for p in CTESTS])
def test_c_program(ctest: Path, build: str, gcc: str, request: pytest.FixtureRequest,
                   tmp_path: Path, figure) -> None:
    if build == "asan-ubsan":
        request.getfixturevalue("sanitizers")
    exe = tmp_path / f"{ctest.stem}-{build}"
    cmd = [gcc, *COMMON_FLAGS, *BUILDS[build], "-o", str(exe), str(ctest), *_csources()]
    cc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert cc.returncode == 0, f"compile failed:\n{' '.join(cmd)}\n{_tail(cc.stderr)}"

    env = dict(os.environ)
    env.update(RUN_ENV)
    user_iters = os.environ.get("SLG_FUZZ_ITERS")
    env["SLG_FUZZ_ITERS"] = user_iters or (
        LONG_FUZZ_ITERS if request.config.getoption("--long") else DEFAULT_FUZZ_ITERS)
    env["TMPDIR"] = str(tmp_path)
    # a long fuzz run may take as long as it needs
    timeout = None if (user_iters or os.environ.get("SLG_CRC_EXHAUSTIVE")
                       or request.config.getoption("--long")) else 300
    r = subprocess.run([str(exe)], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=timeout)
    out = r.stdout + r.stderr
    rc = r.returncode
    print(out)  # shown with -rA / on failure: per-test lines, SKIPs with reasons, summary
    assert rc == 0, f"{exe.name} exited {rc}:\n{_tail(out)}"
    for marker in SANITIZER_MARKERS:
        assert marker not in out, f"{exe.name}: sanitizer report ({marker}):\n{_tail(out)}"
    assert re.search(r": \d+ checks, 0 failed, \d+ skipped", r.stdout), _tail(out)
    fuzz = re.search(r"fuzz: (\d+) cases from seed (\d+): (\d+) bytes", out)
    if ctest.stem == "test_scanner":
        assert fuzz and int(fuzz.group(1)) >= int(env["SLG_FUZZ_ITERS"]), _tail(out)
        figure(f"{build}: {fuzz.group(1)} fuzzed streams ({int(fuzz.group(3)) >> 20} MiB) "
               f"through the scanner, each checked against the reference scanner: 0 failures"
               f"{', 0 sanitizer reports' if build == 'asan-ubsan' else ''}")
    hist = re.search(r"histogram fuzz: (\d+) cases from seed (\d+): (\d+) rows", out)
    if ctest.stem == "test_histograms":
        assert hist and int(hist.group(1)) >= int(env["SLG_FUZZ_ITERS"]) // 2, _tail(out)
        figure(f"{build}: {hist.group(1)} mutated histogram streams through "
               f"slg_decode_histograms into tiny growing outputs ({hist.group(3)} rows): "
               f"0 failures{', 0 sanitizer reports' if build == 'asan-ubsan' else ''}")


@pytest.mark.parametrize("ctest", CTESTS, ids=[p.stem for p in CTESTS])
def test_c_program_on_arm64_under_qemu(ctest: Path, tmp_path: Path) -> None:
    """The same C tests cross-built for aarch64 and run under qemu-user: the
    ARMv8 CRC path (csrc/crc32c_arm64.c) is built and checked only there.
    Needs Debian's gcc-aarch64-linux-gnu and qemu-user (``./dev test``
    installs them as root with apt): skipped where they are absent, a
    failure under CI."""
    cc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    require(bool(cc and qemu), "the aarch64 cross gcc + qemu-aarch64 (apt-get install "
            "gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)")
    assert cc and qemu
    exe = tmp_path / f"{ctest.stem}-arm64"
    flags = [f for f in COMMON_FLAGS if f not in ("-O1", "-g")]
    cmd = [cc, "-static", *flags, "-O2", "-o", str(exe), str(ctest), *_csources(), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, f"cross-compile failed:\n{_tail(r.stderr)}"
    env = dict(os.environ, SLG_FUZZ_ITERS=os.environ.get("SLG_FUZZ_ITERS", "1000"),
               TMPDIR=str(tmp_path))
    r = subprocess.run([qemu, "-cpu", "max", str(exe)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=600)
    out = r.stdout + r.stderr
    print(out)
    assert r.returncode == 0, _tail(out)
    assert re.search(r": \d+ checks, 0 failed, \d+ skipped", r.stdout), _tail(out)
    if ctest.stem == "test_crc32c":
        assert "conformance: arm64" in out, "the ARMv8 CRC path did not run"


# ---- lint ----------------------------------------------------------------------------

def strip_c(src: str) -> str:
    """Blank out comments and string/char literals, keeping every offset and
    line break, so positions in the result are positions in the source."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src[i] in "\"'":
            q = src[i]
            j = i + 1
            while j < n and src[j] != q and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(q + " " * max(0, j - i - 2) + (q if j - i >= 2 else ""))
            i = j
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


_FUNC_HEAD = re.compile(r"(\w+)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*$")
_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof"}


def functions(code: str):
    """(name, body_start, body_end) for each top-level function definition."""
    depth = 0
    top_end = 0
    name = None
    start = 0
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            if depth == 0:
                head = code[top_end:m.start()]
                fm = _FUNC_HEAD.search(head)
                name = fm.group(1) if fm and fm.group(1) not in _KEYWORDS else None
                start = m.start()
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                if name:
                    yield name, start, m.end()
                top_end = m.end()
                name = None
            depth = max(depth, 0)


_LOCK_TOKENS = re.compile(
    r"\{|\}|\bpthread_mutex_lock\s*\(|\bpthread_mutex_unlock\s*\(|\breturn\b")
ALLOW_LOCKED_RETURN = "lint: returns locked"

# Functions that return holding one lock by design (their success path), with
# where that contract is written down.  A `return` in them may hold one lock;
# holding two, unlocking twice, etc. are still issues.
RETURNS_LOCKED = {
    "slg_writer_begin": "csrc/writer.h: the lock is held until slg_writer_commit",
}


def lock_issues(src: str, filename: str = "<src>",
                returns_locked: dict[str, str] | None = None) -> list[str]:
    """Heuristic: walk each function that calls pthread_mutex_lock in text
    order, counting locks held.  A `return` while a lock is held is an issue,
    as is an unlock with nothing held, or reaching the function's closing
    brace with a lock held.  A `{ ... }` block that returns restores the
    count it was entered with (the early-exit branch); any other block keeps
    its net effect.  A function may return holding one lock if it is listed
    in `returns_locked`, or if "lint: returns locked" appears on the return's
    line or in the comment just above the function."""
    code = strip_c(src)
    lines = src.splitlines()
    issues = []
    returns_locked = returns_locked or {}

    def where(off: int) -> tuple[int, str]:
        ln = code.count("\n", 0, off) + 1
        return ln, lines[ln - 1] if ln - 1 < len(lines) else ""

    prev_end = 0
    for name, start, end in functions(code):
        body = code[start:end]
        head = src[prev_end:start]  # the raw text since the previous definition
        prev_end = end
        if "pthread_mutex_lock" not in body:
            continue
        may_hold = 1 if (name in returns_locked or ALLOW_LOCKED_RETURN in head) else 0
        held = 0
        stack: list[list] = []  # [held at entry, returned in this block]
        prev_block_returned = False
        last_return = False
        for m in _LOCK_TOKENS.finditer(body):
            tok = m.group()
            off = start + m.start()
            if tok == "{":
                stack.append([held, False])
                last_return = prev_block_returned = False
            elif tok == "}":
                entry, returned = stack.pop()
                if not stack:  # the function's closing brace
                    if held > 0 and not last_return and not prev_block_returned:
                        ln, _ = where(off)
                        issues.append(f"{filename}:{ln}: {name}() ends with {held} lock(s) held")
                    break
                if returned:
                    held = entry
                prev_block_returned = returned
                last_return = False
            elif tok.startswith("pthread_mutex_lock"):
                held += 1
                last_return = prev_block_returned = False
            elif tok.startswith("pthread_mutex_unlock"):
                held -= 1
                last_return = prev_block_returned = False
                if held < 0:
                    ln, _ = where(off)
                    issues.append(f"{filename}:{ln}: {name}() unlocks a mutex it does not hold")
                    held = 0
            else:  # return
                ln, text = where(off)
                allowed = may_hold if ALLOW_LOCKED_RETURN not in text else 1
                if held > allowed:
                    issues.append(f"{filename}:{ln}: {name}() returns with {held} lock(s) held:"
                                  f" {text.strip()}")
                stack[-1][1] = True
                last_return = True
                prev_block_returned = False
    return issues


_ALLOC = re.compile(r"\b(?:malloc|realloc|calloc|aligned_alloc|posix_memalign)\s*\(")


def unbounded_alloc_issues(src: str, filename: str = "<src>") -> list[str]:
    """Heuristic: an allocation whose statement also reads slg_get_le64 sizes
    memory by a length from the file before anything bounds it."""
    code = strip_c(src)
    issues = []
    pos = 0
    for stmt in re.split(r"([;{}])", code):
        if _ALLOC.search(stmt) and "get_le64" in stmt:
            ln = code.count("\n", 0, pos + len(stmt) - len(stmt.lstrip())) + 1
            issues.append(f"{filename}:{ln}: allocation sized straight from slg_get_le64: "
                          f"{' '.join(stmt.split())[:120]}")
        pos += len(stmt)
    return issues


def _c_files(*patterns: str) -> list[Path]:
    return sorted(p for pat in patterns for p in CSRC.glob(pat))


def test_lint_mutex_unlocked_before_return() -> None:
    files = _c_files("*.c")
    assert files
    checked = 0
    issues = []
    for p in files:
        src = p.read_text()
        issues += lock_issues(src, str(p.relative_to(ROOT)), RETURNS_LOCKED)
        checked += sum(1 for _, s, e in functions(strip_c(src))
                       if "pthread_mutex_lock" in strip_c(src)[s:e])
    assert not issues, "\n".join(issues)
    if "pthread_mutex_lock" in "".join(p.read_text() for p in files):
        assert checked > 0, "found pthread_mutex_lock but no function around it"


def test_lint_no_alloc_from_le64() -> None:
    files = _c_files("*.c", "*.h")
    assert files
    issues = []
    for p in files:
        issues += unbounded_alloc_issues(p.read_text(), str(p.relative_to(ROOT)))
    assert not issues, "\n".join(issues)


# The lint heuristics themselves, on known-good and known-bad code.

GOOD_LOCKING = r'''
static int f(struct s *w) {
    pthread_mutex_lock(&w->mu);
    if (w->closed) {
        pthread_mutex_unlock(&w->mu);   /* "return" in a comment */
        return -EBADF;
    }
    while (w->busy) {
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_lock(&w->mu);
        if (w->x) break;
    }
    const char *s = "return {";
    pthread_mutex_unlock(&w->mu);
    return 0;
}
static int g(struct s *w) { return w->x; }
static int h(struct s *w) {
    pthread_mutex_lock(&w->mu);
    if (w->x) { pthread_mutex_unlock(&w->mu); return 1; }
    else { pthread_mutex_unlock(&w->mu); return 2; }
}
static void *k(void *arg) {
    pthread_mutex_lock(&mu);
    for (;;) {
        if (done) break;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}
static int held_on_purpose(void) {
    pthread_mutex_lock(&mu);
    return 0; /* lint: returns locked */
}
/* Lock and reserve; the lock stays held until commit (lint: returns locked). */
static int begin(struct s *w) {
    pthread_mutex_lock(&w->mu);
    if (w->closed) {
        pthread_mutex_unlock(&w->mu);
        return -EBADF;
    }
    return 0;
}
'''

BAD_LOCKING = {
    "early return": r'''
static int f(struct s *w) {
    pthread_mutex_lock(&w->mu);
    if (w->closed) return -EBADF;
    pthread_mutex_unlock(&w->mu);
    return 0;
}''',
    "return in a block": r'''
int f(struct s *w) {
    pthread_mutex_lock(&w->mu);
    if (w->closed) {
        w->errors++;
        return -EBADF;
    }
    pthread_mutex_unlock(&w->mu);
    return 0;
}''',
    "never unlocked": r'''
void f(struct s *w) {
    pthread_mutex_lock(&w->mu);
    w->x = 1;
}''',
    "double unlock": r'''
void f(struct s *w) {
    pthread_mutex_lock(&w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&w->mu);
}''',
}


def test_lint_lock_heuristic_self_test() -> None:
    assert lock_issues(GOOD_LOCKING) == []
    for what, src in BAD_LOCKING.items():
        assert lock_issues(src), f"lint missed: {what}"
    # and it reports the function and line
    issue = lock_issues(BAD_LOCKING["early return"])[0]
    assert issue.startswith("<src>:4: f() returns with 1 lock(s) held")
    # a function listed as returning locked may hold one lock, not two
    assert lock_issues(BAD_LOCKING["early return"], returns_locked={"f": "test"}) == []
    two = "int f(void) {\n pthread_mutex_lock(&a);\n pthread_mutex_lock(&b);\n return 0;\n}"
    assert lock_issues(two, returns_locked={"f": "test"})
    # the real exception list names functions that exist
    code = "".join(strip_c(p.read_text()) for p in _c_files("*.c"))
    for name in RETURNS_LOCKED:
        assert re.search(rf"\b{name}\s*\(", code), f"RETURNS_LOCKED names a missing {name}()"


def test_lint_alloc_heuristic_self_test() -> None:
    bad = [
        "char *p = malloc(slg_get_le64(h));",
        "p = realloc(p,\n    (size_t)slg_get_le64(buf + 8) + 16);",
        "q = calloc(1, slg_get_le64(h) * 2);",
    ]
    for src in bad:
        assert unbounded_alloc_issues(src), src
    good = [
        "uint64_t L = slg_get_le64(h);\nif (L > rem) return -EINVAL;\np = malloc(L);",
        "/* malloc(slg_get_le64(h)) would be wrong */ p = malloc(n);",
        'puts("malloc(slg_get_le64)");',
    ]
    for src in good:
        assert not unbounded_alloc_issues(src), src
