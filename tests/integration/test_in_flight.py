"""Several scenarios in flight per pytest process (``--gaia2-in-flight K``), on the real engine and
reference image: the same outcomes and one record each as one at a time, several containers of
one process alive at once, and no container left however the run ends (Ctrl-C, a budget halt)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from gaia2_testing import (
    SEARCH,
    SEARCH_IDS,
    SHIPPED,
    BackgroundRun,
    engine_events,
    gaia2_containers,
    record_engine_events,
    results_of,
    run_folder,
    run_id_of,
    scenario_variant,
)

from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL, WORKER_LABEL
from pytest_gaia2.store.phases import running

SLOW_JUDGE = "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=3"  # each scenario lasts long enough to overlap
HANG = "--gaia2-env=GAIA2_FAULT_HANG=1"  # containers stay up until the run is interrupted


@pytest.fixture(autouse=True)
def _recording() -> None:
    record_engine_events()


def most_alive_per_process(since: float, run_id: str) -> dict[str, int]:
    """From the engine's own events: the most scenario containers of the run alive at once, per
    worker (pre-flight's probe containers left out)."""
    changes: dict[str, list[tuple[int, int]]] = {}
    for action, step in (("start", 1), ("die", -1)):
        for event in engine_events(since, label=f"{RUN_LABEL}={run_id}", event=action):
            labels = event["Actor"]["Attributes"]
            if labels.get(SCENARIO_LABEL) not in SEARCH_IDS:
                continue
            worker = labels[WORKER_LABEL]
            changes.setdefault(worker, []).append((int(event["timeNano"]), step))
    most: dict[str, int] = {}
    for worker, steps in changes.items():
        alive = 0
        for _, step in sorted(steps, key=lambda change: (change[0], change[1])):  # a death first at a tie
            alive += step
            most[worker] = max(most.get(worker, 0), alive)
    return most


@pytest.mark.parametrize(("layout", "processes"), [((), {"main"}), (("-n", "2"), {"gw0", "gw1"})],
                         ids=["serial", "n2"])
def test_the_search_split_in_flight_has_the_same_outcomes_one_record_each_and_overlaps(
    pytester: pytest.Pytester, run_gaia2: Any, layout: tuple[str, ...], processes: set[str]
) -> None:
    since = time.time()
    result = run_gaia2(*layout, *SEARCH, "--gaia2-in-flight=3", SLOW_JUDGE)
    result.assert_outcomes(passed=len(SEARCH_IDS))
    assert result.ret == pytest.ExitCode.OK
    output = pytester.path / "out"
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == SEARCH_IDS, "one record per scenario"
    assert all(r["outcome"] == "passed" and r["attempt"] == 1 for r in records), records
    assert {r["worker"] for r in records} == processes
    run_id = run_id_of(output)
    assert gaia2_containers(run_id) == []
    most = most_alive_per_process(since, run_id)
    assert set(most) == processes and max(most.values()) >= 2, most
    assert max(most.values()) <= 3, f"never more than --gaia2-in-flight per process: {most}"


@pytest.mark.parametrize(("layout", "alive"), [(("--gaia2-in-flight=3",), 3),
                                               (("-n", "2", "--gaia2-in-flight=2"), 4)], ids=["serial", "n2"])
def test_ctrl_c_with_scenarios_in_flight_leaves_no_container_and_one_record_each(
    start_gaia2: Callable[..., BackgroundRun], layout: tuple[str, ...], alive: int
) -> None:
    run = start_gaia2(*layout, *SEARCH, HANG)
    containers = run.wait_for_containers(alive)
    in_flight = {c.labels[SCENARIO_LABEL] for c in containers}
    assert len(in_flight) == alive
    # The live status's view: each process's board lists every scenario it has in flight.
    folder = run_folder(run.output)
    code = run.interrupt_when("the boards list every scenario in flight",
                              lambda: {e["key"].rpartition("/")[2] for e in running(folder)} == in_flight)
    assert code == pytest.ExitCode.INTERRUPTED, run.text()
    assert gaia2_containers(run.run_id()) == []
    records = run.results()
    ids = [record["scenario_id"] for record in records]
    assert all(ids.count(scenario) == 1 for scenario in in_flight), (in_flight, ids)
    assert len(ids) == len(set(ids)), "one record per started scenario"
    assert {r["error_category"] for r in records if r["scenario_id"] in in_flight} == {"interrupted"}, records
    assert "INTERNALERROR" not in run.text()


@pytest.mark.parametrize(("layout", "most"), [(("--gaia2-in-flight=3",), 4),
                                              (("-n", "2", "--gaia2-in-flight=2"), 5)], ids=["serial", "n2"])
def test_a_token_halt_with_scenarios_in_flight_starts_nothing_beyond_it(
    pytester: pytest.Pytester, run_gaia2: Any, layout: tuple[str, ...], most: int
) -> None:
    """1,100 tokens a scenario, a halt at 2,000: two finished scenarios reach it. With K in flight
    in all, at most the K - 1 more already started when it was reached also run (and are
    recorded), and nothing after: the rest are not started, with the halt's reason."""
    source = next((SHIPPED / "search").glob("*.json"))
    ids = [f"scenario_universe_{21 + n}_halt{n:02d}" for n in range(8)]
    for sid in ids:
        scenario_variant(pytester.path / "variants", source, scenario_id=sid)
    halted = run_gaia2("--gaia2-scenarios=variants", "--gaia2-env=GAIA2_REF_USAGE=1000,100,0",
                       "--gaia2-env=MODEL=local-qwen", "--gaia2-token-halt=2000", *layout)
    outcomes = halted.parseoutcomes()
    ran = outcomes.get("passed", 0)
    assert 2 <= ran <= most and ran + outcomes["skipped"] == 8, outcomes
    output = pytester.path / "out"
    records = results_of(output)
    assert len(records) == ran and len({r["scenario_id"] for r in records}) == ran
    assert all(r["outcome"] == "passed" for r in records)
    stop = json.loads((run_folder(output) / "summary.json").read_text())["stop"]
    assert stop["stopped"] is True and stop["tokens_used"] == 1_100 * ran
    assert len(stop["not_started"]) == 8 - ran
    assert all(item["why"].startswith("budget: the run has used ") for item in stop["not_started"])
    # Nothing started after the halt: the attempt folders are exactly the records'.
    split = run_folder(output) / "search"
    attempted = sorted(path.relative_to(split).parts[0] for path in split.rglob("result.json"))
    assert attempted == sorted(r["scenario_id"] for r in records), attempted
    assert gaia2_containers(run_id_of(output)) == []
    assert halted.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("layout", [(), ("-n", "2")], ids=["serial", "n2"])
def test_stopping_at_the_first_failure_lets_the_scenarios_already_started_finish_and_records_them(
    pytester: pytest.Pytester, run_gaia2: Any, layout: tuple[str, ...]
) -> None:
    """-x: pytest runs nothing after the first error, but the scenarios in flight beside it were
    paid for: each ends with its record (never started again by a resume). Serially, the two
    beside the first; the fourth, not started then, never starts."""
    result = run_gaia2(*layout, *SEARCH, "-x", "--gaia2-in-flight=3", "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1")
    # pytest-xdist ends a -x run as interrupted, in flight or not.
    assert result.ret == (pytest.ExitCode.INTERRUPTED if layout else pytest.ExitCode.TESTS_FAILED)
    assert result.parseoutcomes()["errors"] >= 1
    output = pytester.path / "out"
    records = results_of(output)
    ids = [r["scenario_id"] for r in records]
    assert len(ids) == len(set(ids)) and set(ids) <= set(SEARCH_IDS), ids
    assert len(ids) == 3 if not layout else len(ids) >= 2, ids
    assert {r["error_category"] for r in records} == {"daemon_error"}
    split = run_folder(output) / "search"
    assert sorted(path.relative_to(split).parts[0] for path in split.rglob("result.json")) == sorted(ids)
    assert gaia2_containers(run_id_of(output)) == []


def test_the_pacer_paces_every_start_of_the_scenarios_in_flight(pytester: pytest.Pytester, run_gaia2: Any) -> None:
    """30 starts a minute: one container start every 2 s, however many are in flight."""
    since = time.time()
    result = run_gaia2(*SEARCH, "--gaia2-in-flight=4", "--gaia2-max-starts-per-minute=30", SLOW_JUDGE)
    result.assert_outcomes(passed=len(SEARCH_IDS))
    run_id = run_id_of(pytester.path / "out")
    created = sorted(
        int(event["timeNano"]) / 1e9
        for event in engine_events(since, label=f"{RUN_LABEL}={run_id}", event="create")
        if event["Actor"]["Attributes"].get(SCENARIO_LABEL) in SEARCH_IDS
    )
    assert len(created) == len(SEARCH_IDS)
    gaps = [later - earlier for earlier, later in pairwise(created)]
    assert min(gaps) >= 1.8, gaps  # the pacer's 2 s, less the engine's own jitter
    assert most_alive_per_process(since, run_id)["main"] >= 2, "still in flight together"


def test_repeats_and_retries_in_flight_are_as_one_at_a_time(pytester: pytest.Pytester, run_gaia2: Any) -> None:
    """Each repeat is its own item with its own record; an infrastructure error is retried in a
    folder of its own, in the same item's work: two scenarios x two repeats, each errored twice."""
    two = " or ".join(SEARCH_IDS[:2])
    result = run_gaia2(*SEARCH, "-k", two, "--gaia2-repeat=2", "--gaia2-retries=1", "--gaia2-in-flight=3",
                       "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1")
    result.assert_outcomes(errors=4)
    records = results_of(pytester.path / "out")
    assert sorted((r["scenario_id"], r["repeat"]) for r in records) == [
        (sid, repeat) for sid in SEARCH_IDS[:2] for repeat in (1, 2)]
    assert all(r["error_category"] == "daemon_error" and r["attempt"] == 2 for r in records), records
    assert len(list(run_folder(pytester.path / "out").glob("run_*/search/*/**/result.json"))) == 8, (
        "two attempts for each of the four items")
    assert gaia2_containers(run_id_of(pytester.path / "out")) == []
