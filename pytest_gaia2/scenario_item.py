"""The test pytest-gaia2 provides: one item per selected scenario (and repeat).

Collected by the plugin itself, so ``pytest --gaia2-scenarios DIR`` needs no test file.
"""

from __future__ import annotations

from .run import RunResult


def test_scenario(gaia2_result: RunResult) -> None:
    """Passes when the in-container judge accepted the run; fails with the judge's reason."""
    __tracebackhide__ = True
    if not gaia2_result.passed:
        raise AssertionError(gaia2_result.verdict.message)
