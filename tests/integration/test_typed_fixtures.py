"""The fixtures a user's test asks for, typed with the names ``pytest_gaia2`` exports: a test
annotated as the docs show gets exactly those objects from a real run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_id_of

ONE = "scenario_universe_21_7kww6e"  # the quickest shipped scenario: one turn, one answer
USER_TEST = '''
from pytest_gaia2 import AttemptRecord, Scenario, ScenarioResult


def test_typed(gaia2_scenario: Scenario, gaia2_result: ScenarioResult) -> None:
    assert isinstance(gaia2_scenario, Scenario), type(gaia2_scenario)
    assert isinstance(gaia2_result, ScenarioResult), type(gaia2_result)
    assert isinstance(gaia2_result.record, AttemptRecord), type(gaia2_result.record)
    assert gaia2_result.record.scenario_id == gaia2_scenario.scenario_id
    assert gaia2_result.passed and not gaia2_result.errored
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_user_test_typed_with_the_public_names_gets_those_objects(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult], workers: list[str]
) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = run_gaia2("test_user.py", f"--gaia2-scenarios={SHIPPED}", "-k", f"test_typed and {ONE}", *workers)
    result.assert_outcomes(passed=1)
    (record,) = results_of(pytester.path / "out")
    assert (record["scenario_id"], record["success"]) == (ONE, True)
    assert gaia2_containers(run_id_of(pytester.path / "out")) == []
