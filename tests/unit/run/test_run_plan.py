"""The run's plan without an engine or a run folder: where the scenarios are, what a worker takes
from its controller, the probe, and the baseline's refusals and decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED

from pytest_gaia2.config import options
from pytest_gaia2.config.settings import RunSettings
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan.scenarios import shipped
from pytest_gaia2.run.run_plan import RunPlan
from pytest_gaia2.store.folder import RunFolder

SEARCH = SHIPPED / "search"


def plan_of(base: Path, *, active: bool = True, handed_over: dict[str, Any] | None = None, **cli: Any) -> RunPlan:
    values = options.resolve(cli, {}, {})
    settings = RunSettings.from_options(values, rootdir=base, environ={}, reference_image="gaia2-ref:test")
    return RunPlan(values, active=active, base=base, path=lambda raw: base / raw, handed_over=handed_over or {},
                   settings=lambda: settings, notes=[])


def test_without_scenario_options_the_scenarios_folder_is_the_root(tmp_path: Path) -> None:
    assert plan_of(tmp_path).roots() == [tmp_path / "scenarios"]


@pytest.mark.parametrize(("cli", "message"), [
    ({"scenarios": ["missing", "gone.json"]}, "--gaia2-scenarios: no such file or folder: .*missing, .*gone.json$"),
    ({"language": "spa_Latn"}, "--gaia2-language applies to --gaia2-dataset only"),
])
def test_roots_that_cannot_be_read_are_refused_naming_the_option(tmp_path: Path, cli: dict[str, Any],
                                                                 message: str) -> None:
    with pytest.raises(OptionError, match=message):
        plan_of(tmp_path, **cli).roots()


def test_every_option_that_breaks_a_chain_apart_is_named_at_once(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, scenarios=[str(SEARCH)], sequence="chains.jsonl", repeat="2", first_n="1",
                   in_flight="3")
    with pytest.raises(OptionError, match="combined with --gaia2-repeat, --gaia2-first-n, --gaia2-in-flight 3$"):
        plan.items()


def test_an_inactive_run_plans_nothing_and_reads_no_scenario(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, active=False, scenarios=["missing"])
    assert plan.items() == [] and plan.hashes() == {}
    assert "discovered" not in plan.__dict__


def test_a_worker_plans_what_its_controller_discovered_without_reading_the_roots(tmp_path: Path) -> None:
    controller = plan_of(tmp_path, scenarios=[str(SEARCH)])
    worker = plan_of(tmp_path, handed_over={"gaia2_discovered": shipped(*controller.discovered)},
                     scenarios=["missing"])  # a root the worker would refuse, were it read
    assert [item.key for item in worker.items()] == [item.key for item in controller.items()]
    assert worker.hashes() == controller.hashes() and set(worker.hashes()) == {item.key for item in worker.items()}


def test_the_probe_is_the_same_on_every_process_and_none_without_the_option(tmp_path: Path) -> None:
    plans = [plan_of(tmp_path, scenarios=[str(SEARCH)], probe="3", seed="7") for _ in range(2)]
    chosen = [plan.choose_probe(plan.items()) for plan in plans]
    assert len(chosen[0]) == 3 and chosen[0] == chosen[1] == plans[0].probe_keys
    assert plan_of(tmp_path, scenarios=[str(SEARCH)]).choose_probe(plans[0].items()) == set()


def test_without_a_baseline_there_is_no_decision_and_nothing_to_refuse(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, scenarios=[str(SEARCH)])
    folder = RunFolder(tmp_path / "run")
    assert plan.baseline is None and plan.decision(folder) is None
    plan.check_baseline(folder, [item.key for item in plan.items()])  # nothing to refuse


def test_the_planned_scenarios_files_and_the_first_readable_one(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios" / "search"
    scenarios.mkdir(parents=True)
    for path in sorted(SEARCH.glob("*.json"))[:3]:
        (scenarios / path.name).write_bytes(path.read_bytes())
    plan = plan_of(tmp_path, scenarios=[str(scenarios)])
    keys = [item.key for item in plan.items()]
    files = plan.scenario_files([keys[2], keys[0], "search/not_planned"])
    assert list(files) == [keys[0], keys[2]]  # in plan order, only what is planned
    path, sha256, _apps = files[keys[2]]
    assert sha256 == plan.hashes()[keys[2]] and Path(path).parent == scenarios
    Path(files[keys[2]][0]).unlink()  # gone since discovery: the next planned one is read
    assert plan.first_scenario([keys[2], keys[0]]) == Path(files[keys[0]][0]).read_bytes()
    assert plan.first_scenario(["search/not_planned"]) is None
