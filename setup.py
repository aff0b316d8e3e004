"""Build glue: the native core is a cffi extension (API mode) described by
summarylog/_native_build.py; everything else is in pyproject.toml."""

from setuptools import setup

setup(cffi_modules=["summarylog/_native_build.py:ffibuilder"])
