"""The probe's choice and projection, and the spend summary: pure functions over items and records."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_gaia2.cost import projection as probe
from pytest_gaia2.cost import spend
from pytest_gaia2.plan.items import PlannedItem, probe_keys
from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.store.record import AttemptRecord


def _items(count: int, repeats: int = 1) -> list[PlannedItem]:
    return [PlannedItem(split, sid, repeat, repeats, scenario=Scenario(sid, split, Path(f"{sid}.json")))
            for n in range(count) for split, sid in [(("search", "time")[n % 2], f"scenario_universe_{21 + n % 5}_p{n:02d}")]
            for repeat in range(1, repeats + 1)]


def _record(key: int, usd: float | None, wall: float = 60.0, split: str = "search") -> AttemptRecord:
    return AttemptRecord(scenario_id=f"s{key}", success=True, reward=1.0, num_agent_events=1, agent_response="",
                         judged_in_container=True, timed_out=False, timeout_seconds=600.0, daemon_status=None,
                         scenario_file="", failure_reasons=[], error=None, split=split, outcome="passed",
                         wall_time_s=wall, usage={"calls": 2, "input_tokens": 10, "output_tokens": 5},
                         cost_usd=usd, cost_source="price file" if usd is not None else "unknown", model="m")


def test_the_probe_is_stratified_seeded_and_keeps_repeats_together() -> None:
    items = _items(20, repeats=2)
    keys = probe_keys(items, 4, seed=7)
    assert keys == probe_keys(list(reversed(items)), 4, seed=7)  # order does not matter
    scenarios = {key.rsplit("/run_", 1)[0] for key in keys}
    assert len(scenarios) == 4 and len(keys) == 8
    assert {key.split("/")[0] for key in keys} == {"search", "time"}
    ids = {id(item): item.key for item in items}
    ordered = probe.probe_first(items, keys, ids)
    assert {item.key for item in ordered[:8]} == keys and ordered[8:] == [i for i in items if i.key not in keys]


def test_the_projection_adds_the_probes_cost_to_a_prediction_of_the_rest() -> None:
    projection = probe.project([_record(n, usd) for n, usd in enumerate((1.0, 2.0, 3.0))], planned=30, workers=2)
    # $6 measured plus 27 more at the mean $2; the interval is the log-normal prediction's.
    assert projection.usd == pytest.approx(60.0)
    rest, low, high = probe.predict_total([1.0, 2.0, 3.0], 27)
    assert rest == pytest.approx(54.0) and low is not None and high is not None
    assert (projection.low, projection.high) == pytest.approx((6.0 + low, 6.0 + high))
    assert 6.0 < projection.low < 60.0 < projection.high  # never below what the probe itself cost
    assert projection.hours == pytest.approx(60.0 * 30 / 2 / 3600)
    assert projection.line().startswith("gaia2: probe of 3: the 30 selected scenarios ≈ $60.00 (95% interval $")
    unknown = probe.project([_record(0, 1.0), _record(1, None)], planned=10, workers=1)
    assert unknown.usd is None and "cost unknown" in unknown.line()


def test_a_probe_cut_short_projects_from_what_it_measured_and_says_on_how_many() -> None:
    measured = [_record(n, usd) for n, usd in enumerate((0.5, 0.8, 1.1))]
    projection = probe.project(measured, planned=12, workers=2, chosen=4)
    assert (projection.probed, projection.chosen, projection.usd) == (3, 4, pytest.approx(2.4 + 9 * 0.8))
    assert projection.line().startswith(
        "gaia2: probe of 3 of 4 (cut short: the run stopped before the rest): the 12 selected scenarios ≈ $9.60 "
        "(95% interval $"
    )
    assert probe.project(measured, planned=12, workers=2, chosen=3).chosen is None  # the whole probe ran


def test_two_priced_scenarios_give_an_estimate_without_an_interval() -> None:
    projection = probe.project([_record(0, 1.0), _record(1, 3.0)], planned=10, workers=1, halt=5.0)
    assert (projection.usd, projection.low, projection.high) == (pytest.approx(20.0), None, None)
    assert "≈ $20.00 (no interval from fewer than 3 scenarios with a cost) and" in projection.line()
    assert projection.reach() is None


def test_identical_costs_predict_exactly_and_zero_costs_are_a_share_of_their_own() -> None:
    for count in range(1, 8):  # the sum's log-scale variance rounds to -1e-16 at some counts: never NaN
        assert probe.predict_total([1.2, 1.2, 1.2], count) == pytest.approx((1.2 * count,) * 3)
    assert probe.predict_total([1.0, 2.0, 3.0], 0) == (0.0, 0.0, 0.0)
    estimate, low, high = probe.predict_total([0.0, 0.0, 1.0, 2.0, 3.0], 100)
    assert estimate == pytest.approx(120.0) and low is not None and high is not None and 0 < low < estimate < high
    with pytest.raises(ValueError, match="observed values >= 0"):
        probe.predict_total([1.0, float("nan")], 3)


@pytest.mark.main_lane
@pytest.mark.parametrize("probed", [5, 10])
def test_the_projection_covers_the_true_total_of_skewed_costs(probed: int) -> None:
    """Log-normal costs (log-scale SD 1: the dearest of ten scenarios costs about 10x the
    cheapest); the total of 40 planned scenarios, the probe's included. The bootstrap of the
    mean this replaced covered 73-79% with 5 and 79-87% with 10."""
    rng = random.Random(probed)
    trials, covered = 400, 0
    for _ in range(trials):
        costs = [math.exp(rng.gauss(-1.0, 1.0)) for _ in range(40)]
        records = [_record(n, cost) for n, cost in enumerate(costs[:probed])]
        projection = probe.project(records, planned=40, workers=1)
        assert projection.low is not None and projection.high is not None
        covered += projection.low <= sum(costs) <= projection.high
    assert covered / trials >= 0.93


def test_the_spend_summary_sums_priced_scenarios_and_names_unknown_models() -> None:
    block = spend.summary([_record(0, 1.5), _record(1, None, split="time"), _record(2, 0.5)])
    assert block is not None
    assert (block["usd"], block["priced"], block["unpriced"], block["unknown_models"]) == (2.0, 2, 1, ["m"])
    assert block["by_split"]["time"]["unpriced"] == 1 and block["tokens"]["calls"] == 6
    lines = spend.summary_lines(block, "run spend $2.00 (halt $5.00)")
    assert lines[0] == ("cost: $2.00 over 2 priced scenario(s), 1 with cost unknown (no price for: m); "
                        "run spend $2.00 (halt $5.00)")
    assert spend.summary([]) is None and spend.summary_lines(None, None) == []


def test_a_refused_cost_is_counted_apart_and_warned_once_never_as_a_missing_price() -> None:
    refused = replace(_record(3, None), cost_source="refused: trace.jsonl, llm_call 1: usage.cost is 1e+308, not ...",
                      usage={"calls": 1, "models": ["m-refused"]}, model=None)
    records = [_record(1, 1.0), _record(2, None), refused]
    block = spend.summary(records)
    assert block is not None and (block["priced"], block["unpriced"], block["refused"]) == (1, 2, 1)
    assert block["unknown_models"] == ["m"]
    assert spend.summary_lines(block, None)[0] == (
        "cost: $1.00 over 1 priced scenario(s), 2 with cost unknown (no price for: m; 1 refused as out of range)")
    assert spend.refusal_notice(refused) == [
        "gaia2: warning: search/s3: cost refused: trace.jsonl, llm_call 1: usage.cost is 1e+308, not ...; "
        "its cost is unknown (not counted in the run's spend)"]
    assert spend.refusal_notice(records[0]) == []


def test_the_unknown_models_line_names_a_few_and_counts_the_rest() -> None:
    records = [replace(_record(n, None), model=f"model-{n:04d}") for n in range(1000)]
    line = spend.summary_lines(spend.summary(records), None)[0]
    assert line.endswith("(no price for: model-0000, model-0001, model-0002, model-0003, model-0004 and 995 more)")
