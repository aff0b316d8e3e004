"""The side venvs (MindSpore, MindInsight) for the tests: made by
tools/sidevenvs.py, the same maker ``./dev bench`` uses, plus
:func:`require_venv`, which skips locally and fails under CI."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))

from sidevenvs import (SPECS, VENVS, ensure_venv, venv_bin, venv_env,  # noqa: E402,F401
                       venv_python)


def require_venv(name: str, requirements: list[str] | None = None,
                 **kwargs: object) -> pathlib.Path:
    """ensure_venv for tests: a failure skips locally and fails under CI
    (CI=true), like conftest's ``require*`` helpers."""
    import pytest

    from conftest import IN_CI

    try:
        return ensure_venv(name, requirements, **kwargs)  # type: ignore[arg-type]
    except Exception as exc:
        if IN_CI:
            pytest.fail(f"the {name} venv is required under CI but could not be built: {exc}")
        pytest.skip(f"the {name} venv is not available: {exc}")
        raise  # unreachable
