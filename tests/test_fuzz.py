"""Property-based differential fuzzing: random programs (tests/fuzz_programs.py) run in rgrad and
checked step by step against NumPy (float64) and, when installed, torch: values, dtypes, shapes,
exception types, gradients of a final scalar. A panic or a hang fails. See docs/fuzzing.md;
tools/fuzz.py runs the same generator for 100,000+ cases.

Profiles: RGRAD_FUZZ_PROFILE=ci (default: bounded, derandomized) or dev (more, random)."""

import faulthandler
import os

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rgrad  # noqa: E402
from fuzz_programs import Source, run_program  # noqa: E402

try:
    import torch
except ImportError:  # the NumPy checks still run
    torch = None

_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)
PROFILES = {
    # no shrinking in CI: the failure's program is printed whole, and shrinking takes minutes
    "ci": settings(max_examples=300, derandomize=True, phases=[Phase.explicit, Phase.generate], **_COMMON),
    "dev": settings(max_examples=5000, **_COMMON),
}
PROFILE = PROFILES[os.environ.get("RGRAD_FUZZ_PROFILE", "ci")]
CASE_TIMEOUT_S = 60  # a hang (e.g. a deadlock in the core) kills the run with a traceback


class HypothesisSource(Source):
    """Every choice is one Hypothesis draw, so a failing program shrinks."""

    def __init__(self, data) -> None:
        self.data = data

    def integers(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))


def _check(data, torch_mod):
    faulthandler.dump_traceback_later(CASE_TIMEOUT_S, exit=True)
    try:
        failure = run_program(HypothesisSource(data), rgrad, torch_mod)
    finally:
        faulthandler.cancel_dump_traceback_later()
    # known issues (fuzz_programs.KNOWN_ISSUES) are tracked elsewhere; see docs/fuzzing.md
    if failure is not None and failure.category not in ("known", "torch_invalid"):
        pytest.fail(str(failure), pytrace=False)


@pytest.mark.timeout(600)
@PROFILE
@given(st.data())
def test_random_programs_match_numpy(data):
    _check(data, None)


@pytest.mark.timeout(600)
@PROFILE
@given(st.data())
def test_random_programs_match_torch(data):
    if torch is None:
        pytest.skip("torch is not installed")
    _check(data, torch)
