"""Build glue: the native core is a cffi extension (API mode) described by
summarylog/_native_build.py; summarylog._speedups is a small plain CPython
extension for the Writer's hot calls (csrc/pyext/speedups.c).  Everything
else is in pyproject.toml."""

import os

from setuptools import Extension, setup

_cflags = ["-O3", "-std=c11", "-Wall", "-Wextra"]
if os.environ.get("SUMMARYLOG_WERROR"):
    _cflags.append("-Werror")

setup(
    cffi_modules=["summarylog/_native_build.py:ffibuilder"],
    ext_modules=[Extension("summarylog._speedups", ["csrc/pyext/speedups.c"],
                           extra_compile_args=_cflags)],
)
