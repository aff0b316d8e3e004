"""Shared test fixtures: hypothesis profiles, a seeded RNG that prints its
seed, and `require()` — a missing tool skips locally but fails under CI."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from hypothesis import HealthCheck, settings

# gcsfs reads this once, when first imported, and its experimental mode (on by default)
# speaks gRPC over TLS to the endpoint, which the GCS emulator cannot answer.  The code
# sets it before it first opens a gs:// URL, but a worker that imported gcsfs any other
# way first would fail every GCS test after (seen once in CI): set it before any test.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

settings.register_profile("default", max_examples=200, deadline=None)
settings.register_profile("ci", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(ok: bool, what: str) -> None:
    """Skip when `what` is missing here; under CI=true a missing part fails."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI but missing")
    pytest.skip(f"{what} not available")


def require_module(name: str):
    """Import a module the test needs: skip locally, fail under CI when missing."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        require(False, f"python module {name!r} ({exc})")


def require_tool(name: str) -> str:
    path = shutil.which(name)
    require(path is not None, f"the {name!r} command")
    assert path is not None
    return path


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A seeded random.Random; the seed is printed so a failure can be replayed
    (SLG_SEED=<seed>)."""
    seed = int(os.environ.get("SLG_SEED", random.randrange(1 << 30)))
    print(f"[{request.node.name}] SLG_SEED={seed}")
    return random.Random(seed)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="run the long fuzz, crash and soak versions (opt-in; minutes to hours)")


_FIGURES: list[str] = []


@pytest.fixture
def figure(request: pytest.FixtureRequest):
    """figure(text): print one measured figure of this test; all figures are
    repeated in a "figures" section at the end of the run."""

    def report(text: str) -> None:
        line = f"{request.node.name}: {text}"
        # user_properties travel with the test's reports, so figures measured in
        # pytest-xdist workers reach the controller's summary too
        request.node.user_properties.append(("figure", line))
        print(line)

    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":  # its user_properties hold every figure of the test
        _FIGURES.extend(v for k, v in report.user_properties if k == "figure")


@pytest.fixture
def long_run(request: pytest.FixtureRequest) -> bool:
    """True under ``pytest --long``."""
    return bool(request.config.getoption("--long"))


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if _FIGURES:
        terminalreporter.section("figures")
        for line in _FIGURES:
            terminalreporter.write_line(line)
