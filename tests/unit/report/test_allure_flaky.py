"""Allure's flaky mark: the repeats of a scenario that got both a pass and a failure, set in this
run's result files only, in the shape allure-pytest writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.plan.items import ITEM_PARAMETER
from pytest_gaia2.report.allure_flaky import RUN_PARAMETER, disagreeing, mark_flaky
from pytest_gaia2.store.record import AttemptRecord

RUN = "a" * 32


def record(scenario: str, repeat: int, outcome: str) -> AttemptRecord:
    return AttemptRecord(
        scenario_id=scenario, success={"passed": True, "failed": False}.get(outcome), reward=None,
        num_agent_events=1, agent_response="", judged_in_container=outcome != "error", timed_out=False,
        timeout_seconds=600.0, daemon_status=None, scenario_file=f"{scenario}.json", failure_reasons=[],
        error=None, split="search", outcome=outcome, repeat=repeat, repeats=3,  # type: ignore[arg-type]
    )


def test_only_scenarios_with_a_pass_and_a_failure_disagree() -> None:
    records = [
        record("mixed", 1, "passed"), record("mixed", 2, "failed"), record("mixed", 3, "error"),
        record("steady", 1, "passed"), record("steady", 2, "passed"), record("steady", 3, "error"),
        record("down", 1, "failed"), record("down", 2, "error"), record("down", 3, "failed"),
    ]
    assert disagreeing(records) == {"search/mixed/run_1", "search/mixed/run_2", "search/mixed/run_3"}


def result_file(folder: Path, name: str, key: str, run: str | None, **extra: Any) -> Path:
    """A result file as allure-pytest writes one: parameter values are their repr."""
    parameters = [{"name": ITEM_PARAMETER, "value": repr(key), "mode": "hidden"}]
    if run is not None:
        parameters.append({"name": RUN_PARAMETER, "value": repr(run), "excluded": True, "mode": "hidden"})
    path = folder / f"{name}-result.json"
    path.write_text(json.dumps({"uuid": name, "status": "passed", "parameters": parameters, **extra}), encoding="utf-8")
    return path


def test_this_runs_results_of_those_scenarios_are_marked_and_no_other(tmp_path: Path) -> None:
    mine = result_file(tmp_path, "1", "search/mixed/run_1", RUN, statusDetails={"message": "kept"})
    steady = result_file(tmp_path, "2", "search/steady/run_1", RUN)
    other_run = result_file(tmp_path, "3", "search/mixed/run_1", "b" * 32)
    no_run = result_file(tmp_path, "4", "search/mixed/run_2", None)
    (tmp_path / "5-result.json").write_text("{not json", encoding="utf-8")
    before = {path: path.read_bytes() for path in (steady, other_run, no_run)}
    assert mark_flaky(tmp_path, RUN, {"search/mixed/run_1", "search/mixed/run_2"}, ITEM_PARAMETER) == 1
    assert json.loads(mine.read_text(encoding="utf-8"))["statusDetails"] == {"message": "kept", "flaky": True}
    assert {path: path.read_bytes() for path in before} == before
    assert mark_flaky(tmp_path, RUN, {"search/mixed/run_1"}, ITEM_PARAMETER) == 0  # already marked


@pytest.mark.parametrize("content", [b"[]", b'{"parameters": "x"}', b'{"parameters": [1, null]}'])
def test_odd_result_files_are_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x-result.json"
    path.write_bytes(content)
    assert mark_flaky(tmp_path, RUN, {"search/mixed/run_1"}, ITEM_PARAMETER) == 0
    assert path.read_bytes() == content
