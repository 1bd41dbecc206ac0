"""The test pytest-gaia2 provides: one item per planned scenario (and repeat).

Collected by the plugin itself (as ``gaia2/<split>``), so ``pytest --gaia2-scenarios DIR``
needs no test file.
"""

from __future__ import annotations

from pytest_gaia2.run.evidence import ScenarioResult


def test_scenario(gaia2_result: ScenarioResult) -> None:
    """Passes when the in-container judge accepted the run; fails with the judge's reason."""
    __tracebackhide__ = True
    if not gaia2_result.passed:
        raise AssertionError(gaia2_result.message)
