"""cffi build script of the native core (``summarylog._native_lib``), reached through
``setup.py``'s ``cffi_modules``; run alone it compiles in place.  Environment switches:
SUMMARYLOG_SANITIZE=1 (ASan + UBSan; tests load it with libasan),
SUMMARYLOG_DEBUG=1 (-O0 -g), SUMMARYLOG_WERROR=1 (-Werror)."""

from __future__ import annotations

import os
import pathlib
import re

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
SANITIZE = ["-fsanitize=address,undefined"] if os.environ.get("SUMMARYLOG_SANITIZE") else []
_VERSION = re.search(r'__version__ = "([^"]+)"', (ROOT / "summarylog" / "_version.py").read_text())
assert _VERSION, "summarylog/_version.py has no __version__"


def compile_flags() -> list[str]:
    """The compiler flags of the extension, from the environment switches."""
    flags = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-pthread"]
    flags += ["-O0", "-g"] if os.environ.get("SUMMARYLOG_DEBUG") else ["-O3"]
    if os.environ.get("SUMMARYLOG_WERROR"):
        flags.append("-Werror")
    if SANITIZE:
        flags += [*SANITIZE, "-fno-omit-frame-pointer", "-g"]
    return flags


ffibuilder = FFI()
ffibuilder.cdef((CSRC / "summarylog_api.h").read_text()
                .split("/* CDEF-BEGIN */", 1)[1].split("/* CDEF-END */", 1)[0])
ffibuilder.set_source(
    "summarylog._native_lib",
    '#include "summarylog_api.h"\n',
    # csrc/python/ holds the code that touches Python objects (the C tests build the rest alone)
    sources=sorted(str(p.relative_to(ROOT)) for p in [*CSRC.glob("*.c"), *CSRC.glob("python/*.c")]),
    include_dirs=[str(CSRC.relative_to(ROOT))],
    define_macros=[("SLG_VERSION", f'"{_VERSION.group(1)}"'), ("_GNU_SOURCE", "1")],
    extra_compile_args=compile_flags(),
    libraries=["m"],
    extra_link_args=["-pthread", *SANITIZE],
)

if __name__ == "__main__":
    os.chdir(ROOT)
    ffibuilder.compile(verbose=True)
