"""The test pytest-gaia2 provides: one item per planned scenario (and repeat).

Collected by the plugin itself (as ``gaia2/<split>``), so ``pytest --gaia2-scenarios DIR``
needs no test file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_gaia2.plan.items import ITEM_PARAMETER, PlannedItem
from pytest_gaia2.run.evidence import ScenarioResult

if TYPE_CHECKING:
    import pytest


def planned_item(item: pytest.Item) -> PlannedItem | None:
    """The planned scenario a collected test runs, if it is one (here, not with the Allure code,
    so an xdist worker's collection does not load that and jinja2)."""
    callspec = getattr(item, "callspec", None)
    planned = callspec.params.get(ITEM_PARAMETER) if callspec is not None else None
    return planned if isinstance(planned, PlannedItem) else None


def test_scenario(gaia2_result: ScenarioResult) -> None:
    """Passes when the in-container judge accepted the run; fails with the judge's reason."""
    __tracebackhide__ = True
    if not gaia2_result.passed:
        raise AssertionError(gaia2_result.message)
