"""The sequential stop: the mixture ratio against hand-worked values, where it first decides,
the plan-order prefix, the baseline reader, and simulations of its error rate under repeated
looks (at no difference it claims one at most ``level`` of the time) and of its power."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import execnet
import pytest
from gaia2_records import record
from gaia2_testing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.report.sequential import (
    Baseline,
    always_valid,
    first_decision,
    log_mixture_ratio,
    plan_pairs,
    scenario_pair,
)
from pytest_gaia2.store.folder import StoreError
from pytest_gaia2.store.record import AttemptRecord

RUNS = 4000
"""Simulated runs per level: the observed rate's standard error at 5% is about 0.35 points."""
PAIRS = 300
"""Scenarios per simulated run: more looks than most benchmark comparisons make."""


@pytest.mark.parametrize(
    ("worse", "better", "ratio"),
    [
        (0, 0, 1.0),  # no discordant pair: no evidence
        (1, 1, 2 / 3),  # 2^2 * 1! * 1! / 3!
        (0, 7, 16.0),  # 2^7 / 8
        (0, 8, 256 / 9),  # 2^8 / 9: the first all-one-way count past 1 / 0.05
        (8, 0, 256 / 9),  # symmetric: the mixture covers both directions
        (3, 10, 2**13 * math.factorial(10) * math.factorial(3) / math.factorial(14)),
    ],
)
def test_the_mixture_ratio_is_two_to_the_n_times_the_beta_function(worse: int, better: int, ratio: float) -> None:
    assert math.exp(log_mixture_ratio(worse, better)) == pytest.approx(ratio, rel=1e-12)


def test_the_mixture_ratio_stays_finite_for_large_counts_and_refuses_negative_ones() -> None:
    assert math.isfinite(log_mixture_ratio(10**6, 10**6 + 5000))
    with pytest.raises(ValueError, match="counts must be >= 0"):
        log_mixture_ratio(-1, 3)


def test_eight_one_way_pairs_decide_at_five_percent_and_seven_do_not() -> None:
    better = [(False, True)] * 8
    assert first_decision(better[:7], 0.05) is None
    decision = first_decision([None, (True, True), *better], 0.05, "base")
    assert decision is not None
    assert (decision.direction, decision.worse, decision.better, decision.pairs, decision.looked) == (
        "better",
        0,
        8,
        9,
        10,
    )
    assert decision.ratio == pytest.approx(256 / 9)
    assert decision.reason.startswith("decided: better than baseline base: 8 better, 0 worse of 9 judged pairs")
    assert "level 5.0%" in decision.reason
    worse = first_decision([(True, False)] * 8, 0.05)
    assert worse is not None and worse.direction == "worse"


def test_the_first_crossing_stands_however_the_rest_goes() -> None:
    """Ville's bound is for the first crossing: later pairs that pull the ratio back under the
    threshold do not undo a decision (every worker and every resume sees the same one)."""
    crossing = [(False, True)] * 8
    decision = first_decision([*crossing, *[(True, False)] * 8], 0.05)
    assert decision is not None and (decision.better, decision.worse, decision.looked) == (8, 0, 8)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.5])
def test_a_level_outside_zero_to_one_is_refused(level: float) -> None:
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        first_decision([], level)


def simulated_runs(rng: random.Random, chance_better: float, discordant: float, level: float) -> float:
    """The share of RUNS simulated runs of PAIRS scenarios that ever decide: each scenario is
    discordant with chance ``discordant`` and then better with chance ``chance_better``; a tenth
    of the scenarios make no pair (an error)."""
    decided = 0
    for _ in range(RUNS):
        pairs: list[tuple[bool, bool] | None] = []
        for _ in range(PAIRS):
            draw = rng.random()
            if draw < 0.1:
                pairs.append(None)
            elif draw < 0.1 + discordant:
                better = rng.random() < chance_better
                pairs.append((not better, better))
            else:
                passed = rng.random() < 0.5
                pairs.append((passed, passed))
        decided += first_decision(pairs, level) is not None
    return decided / RUNS


@pytest.mark.parametrize("level", [0.01, 0.05, 0.10])
def test_at_no_difference_it_claims_one_at_most_level_of_the_time_however_often_it_looks(level: float) -> None:
    """The claim made for the test, by simulation: at no true difference, over RUNS simulated runs each looked
    at after every scenario, the share that ever stop claiming a difference is at most the level
    (measured, seeded: 0.01 -> 0.43%, 0.05 -> 2.75%, 0.10 -> 5.50%). An exact McNemar test at
    p < 0.05 after every scenario of such runs claims one in 21.9% of them (exactly; the control below)."""
    rate = simulated_runs(random.Random(20240), chance_better=0.5, discordant=0.3, level=level)
    assert rate <= level


def test_the_control_a_naive_test_at_every_look_claims_too_often() -> None:
    """The same null runs, stopping at the first look where a fixed-sample exact test has
    p < 0.05: the error rate the sequential test exists to avoid (the test above could not fail
    if no looking strategy could break 5%)."""
    rng = random.Random(20240)
    wrong = 0
    for _ in range(1000):
        worse = better = 0
        for _ in range(PAIRS):
            if rng.random() < 0.3:
                if rng.random() < 0.5:
                    better += 1
                else:
                    worse += 1
                n, low = worse + better, min(worse, better)
                if 2 * sum(math.comb(n, k) for k in range(low + 1)) / 2**n < 0.05:
                    wrong += 1
                    break
    assert wrong / 1000 > 0.15


@pytest.mark.parametrize(("chance_better", "at_least"), [(0.8, 0.99), (0.2, 0.99), (0.7, 0.8)])
def test_under_a_real_difference_it_decides_often_and_the_right_way(chance_better: float, at_least: float) -> None:
    """Power sanity: with 90 discordant pairs on average, a 4:1 split decides in nearly every run,
    a 7:3 split in most (measured: 99.9%, 99.95%, 82.7%)."""
    rng = random.Random(7)
    assert simulated_runs(rng, chance_better=chance_better, discordant=0.3, level=0.05) >= at_least
    pairs = [(False, True) if rng.random() < chance_better else (True, False) for _ in range(200)]
    decision = first_decision(pairs, 0.05)
    assert decision is not None
    assert decision.direction == ("better" if chance_better > 0.5 else "worse")


def records(*rows: tuple[str, str]) -> list[AttemptRecord]:
    return [AttemptRecord.from_json(record(sid, outcome)) for sid, outcome in rows]


def test_the_pairs_follow_the_plan_up_to_the_first_scenario_without_a_verdict() -> None:
    """Plan order, not arrival order: ``c`` already ended, but ``b`` is still running, so the
    prefix stops at ``b``; errors and scenarios the baseline did not judge make no pair."""
    baseline = {
        ("search", "a", 1): "passed",
        ("search", "b", 1): "failed",
        ("search", "c", 1): "passed",
        ("search", "e", 1): "error",
    }
    current = {r.key: r for r in records(("a", "failed"), ("c", "passed"), ("e", "passed"), ("x", "error"))}
    assert plan_pairs(["search/a", "search/b", "search/c"], baseline, current) == [(True, False)]
    current.update({r.key: r for r in records(("b", "failed"))})
    assert plan_pairs(["search/a", "search/b", "search/c", "search/e", "search/x"], baseline, current) == [
        (True, False),
        (False, False),
        (True, True),
        None,
        None,
    ]


def test_a_verdict_made_from_another_scenario_file_is_none_yet() -> None:
    """A record whose scenario hash differs from the plan's is re-run by a resume
    (store.record.reusable), so the prefix ends there as at a scenario not yet run; a record
    without a hash, or a plan without one, stands."""
    baseline = {("search", sid, 1): "passed" for sid in "abc"}
    current = {r.key: r for r in records(("a", "failed"), ("b", "failed"), ("c", "failed"))}
    current["search/b"] = replace(current["search/b"], scenario_sha256="0" * 64)
    order = ["search/a", "search/b", "search/c"]
    assert plan_pairs(order, baseline, current, {key: "1" * 64 for key in order}) == [(True, False)]
    assert len(plan_pairs(order, baseline, current, {"search/b": "0" * 64})) == 3
    assert len(plan_pairs(order, baseline, current)) == 3


def write_run(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.mkdir(parents=True)
    (path / "run_config.json").write_text(json.dumps({"planned": [f"search/{sid}" for sid, _ in rows]}))
    (path / "results.jsonl").write_text("".join(json.dumps(record(sid, out)) + "\n" for sid, out in rows))
    return path


def test_the_baseline_decides_on_the_current_runs_records(tmp_path: Path) -> None:
    ids = [f"s{i}" for i in range(10)]
    baseline = Baseline.load(write_run(tmp_path / "base", [(sid, "passed") for sid in ids]))
    assert baseline.shared([f"search/{sid}" for sid in ids] + ["search/other", "bad key"]) == 10
    order = [f"search/{sid}" for sid in ids]
    assert baseline.decide(order, records(*((sid, "failed") for sid in ids[:7])), 0.05) is None
    decision = baseline.decide(order, records(*((sid, "failed") for sid in ids[:8])), 0.05)
    assert decision is not None and (decision.direction, decision.worse, decision.pairs) == ("worse", 8, 8)
    assert decision.baseline == str(tmp_path / "base")


def test_the_baseline_a_worker_gets_through_workerinput_is_the_one_the_controller_read(tmp_path: Path) -> None:
    """Workers read no baseline file: the controller's crosses xdist's channel (execnet's serializer)."""
    baseline = Baseline.load(write_run(tmp_path / "base", [("a", "passed"), ("b", "failed"), ("c", "error")]))
    assert Baseline.unshipped(execnet.loads(execnet.dumps(baseline.shipped()))) == baseline


def test_a_baseline_that_is_no_run_folder_or_has_damaged_results_is_one_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is not a run folder"):
        Baseline.load(tmp_path)
    broken = write_run(tmp_path / "broken", [("a", "passed")])
    (broken / "results.jsonl").write_text('{"scenario_id": "a"\n')
    with pytest.raises(StoreError, match=r"results\.jsonl: line 1"):
        Baseline.load(broken)
    empty = write_run(tmp_path / "empty", [])
    with pytest.raises(StoreError, match="no results to compare with"):
        Baseline.load(empty)


def test_a_baseline_of_errors_only_or_of_verdicts_rewritten_by_later_lines_shares_what_its_last_lines_judged(
    tmp_path: Path,
) -> None:
    """A baseline whose verdicts are all errors makes no pair (the run refuses it before anything
    starts); a key written twice counts its last line only, as a resume's retry would have left it:
    a forged earlier 'passed' under a later 'error' makes no pair either."""
    errors = Baseline.load(write_run(tmp_path / "errors", [("a", "error"), ("b", "error")]))
    assert errors.shared(["search/a", "search/b"]) == 0
    twice = write_run(tmp_path / "twice", [("a", "passed"), ("b", "failed")])
    with (twice / "results.jsonl").open("a") as results:
        results.write(json.dumps(record("a", "error")) + "\n" + json.dumps(record("b", "passed")) + "\n")
    baseline = Baseline.load(twice)
    assert baseline.outcomes == {("search", "a", 1): "error", ("search", "b", 1): "passed"}
    assert baseline.shared(["search/a", "search/b"]) == 1


@settings(max_examples=examples(60), deadline=None)
@given(
    data=st.one_of(
        st.binary(max_size=2000),
        st.lists(
            st.dictionaries(
                st.sampled_from(["scenario_id", "split", "run", "repeat", "attempt", "outcome", "repeats"]),
                st.one_of(st.text(max_size=20), st.integers(-5, 5), st.none(), st.booleans(), st.floats()),
            ),
            max_size=5,
        ).map(lambda rows: "\n".join(json.dumps(row) for row in rows).encode()),
    )
)
def test_any_baseline_results_file_is_a_baseline_or_one_store_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    """results.jsonl of a baseline comes from anywhere: whatever its bytes, the reader gives
    verdicts it checked (judged ones among them) or one StoreError naming the file."""
    folder = write_run(tmp_path_factory.mktemp("base") / "run", [])
    (folder / "results.jsonl").write_bytes(data)
    try:
        baseline = Baseline.load(folder)
    except StoreError as exc:
        assert str(folder) in str(exc)
        return
    assert baseline.outcomes and all(outcome in ("passed", "failed", "error") for outcome in baseline.outcomes.values())


def test_with_repeats_a_scenario_is_one_pair_once_its_last_run_is_in() -> None:
    """Three repeats: a scenario counts once, by the sign of B's passes minus the baseline's over
    its runs judged in both, when the last of its planned runs is in the prefix."""
    order = [f"search/{sid}/run_{run}" for run in (1, 2, 3) for sid in "ab"]
    baseline = {("search", "a", run): "failed" for run in (1, 2, 3)} | {
        ("search", "b", 1): "passed", ("search", "b", 2): "failed", ("search", "b", 3): "error"}
    rows = [AttemptRecord.from_json(record(sid, outcome, run=run, repeats=3)) for sid, run, outcome in [
        ("a", 1, "passed"), ("b", 1, "failed"), ("a", 2, "failed"), ("b", 2, "passed"), ("a", 3, "failed")]]
    current = {r.key: r for r in rows}
    assert plan_pairs(order, baseline, current) == [(False, True)]  # a: 1 pass against 0; b still runs
    current |= {r.key: r for r in [AttemptRecord.from_json(record("b", "passed", run=3, repeats=3))]}
    assert plan_pairs(order, baseline, current) == [(False, True), (True, True)]  # b: 1 vs 1 judged, run 3 not
    assert scenario_pair([None, None]) is None
    assert scenario_pair([(True, False)]) == (True, False)  # one run: the pair itself


def test_with_repeats_the_decision_counts_scenarios(tmp_path: Path) -> None:
    """Eight scenarios each failed 3 of 3 here and passed 3 of 3 in the baseline decide "worse"
    as 8 scenarios, never as 24 pairs (which would decide after 8 pairs, three scenarios)."""
    ids = [f"s{i}" for i in range(10)]
    path = tmp_path / "base"
    path.mkdir()
    planned = [f"search/{sid}/run_{run}" for sid in ids for run in (1, 2, 3)]
    (path / "run_config.json").write_text(json.dumps({"planned": planned}))
    (path / "results.jsonl").write_text("".join(
        json.dumps(record(sid, "passed", run=run, repeats=3)) + "\n" for sid in ids for run in (1, 2, 3)))
    baseline = Baseline.load(path)
    seven = [AttemptRecord.from_json(record(sid, "failed", run=run, repeats=3)) for sid in ids[:7] for run in (1, 2, 3)]
    assert baseline.decide(planned, seven, 0.05) is None
    eight = seven + [AttemptRecord.from_json(record(ids[7], "failed", run=run, repeats=3)) for run in (1, 2, 3)]
    decision = baseline.decide(planned, eight, 0.05)
    assert decision is not None and (decision.direction, decision.worse, decision.pairs) == ("worse", 8, 8)
    assert decision.unit == "scenarios" and "of 8 judged scenarios" in decision.reason
    assert decision.to_dict()["test"] == "mixture-sprt-beta11-discordant-scenarios"


def test_the_always_valid_answer_keeps_the_stops_decision_and_its_range_covers_only_that_side() -> None:
    """8 of 8 one way decide "better" (ratio 28.4); two later "worse" scenarios do not undo it,
    and the always-valid p is 1 / the largest ratio reached."""
    found = always_valid([1.0] * 8 + [-1.0, -1.0], 0.05)
    assert found.direction == "better" and found.decision is not None and found.decision.looked == 8
    assert found.p == pytest.approx(1 / (2**8 / 9))
    assert found.delta == pytest.approx(0.6) and 0.0 <= found.low <= 0.6 <= found.high <= 1.0
    none = always_valid([0.0] * 5 + [1.0, -1.0], 0.05)
    assert none.direction is None and none.low < 0 < none.high and none.p == pytest.approx(1.0)
    assert always_valid([], 0.05).delta is None
