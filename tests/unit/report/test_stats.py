"""Rates, Wilson intervals and pass@k, checked against hand-computed figures."""

from __future__ import annotations

import json
import random

import pytest
from gaia2_records import headline_records, pass_at_k_records, record, repeated

from pytest_gaia2.report.rates import Rate, clustered_wilson, percent, t_quantile, wilson
from pytest_gaia2.report.stats import summarise


def pct(value: float) -> float:
    return round(value * 100, 1)


# --- Wilson -----------------------------------------------------------------------------

@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (103, 157, 57.9, 72.6),
    (33, 37, 75.3, 95.7),
    (134, 160, 77.3, 88.7),
    (134, 155, 80.2, 91.0),
])
def test_wilson_matches_published_intervals(successes: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson(successes, n)
    assert (pct(lo), pct(hi)) == (low, high)


def test_wilson_edges_stay_inside_zero_and_one() -> None:
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0
    assert pct(wilson(0, 10)[1]) == 27.8
    assert pct(wilson(10, 10)[0]) == 72.2


def test_wilson_with_no_trials_knows_nothing() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("successes", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_wilson_rejects_impossible_counts(successes: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson(successes, n)


def test_wilson_narrows_as_n_grows() -> None:
    small, large = wilson(8, 10), wilson(80, 100)
    assert small[0] < large[0] < 0.8 < large[1] < small[1]


def test_rate_of_zero_has_no_value() -> None:
    assert Rate.of(0, 0) == Rate(0, 0, None, 0.0, 1.0)
    assert Rate.of(1, 4).value == 0.25


@pytest.mark.parametrize(("fraction", "text"), [
    (0.8375, "83.8%"), (3 / 80, "3.8%"), (1 / 16, "6.3%"), (2 / 3, "66.7%"), (0.0, "0.0%"), (1.0, "100.0%"),
])
def test_percent_rounds_halves_up(fraction: float, text: str) -> None:
    assert percent(fraction) == text


# --- headline, splits, universes, errors ------------------------------------------------

def test_headline_strict_and_judged_only() -> None:
    summary = summarise(headline_records())
    overall = summary.overall
    assert (overall.total, overall.passed, overall.failed, overall.errors) == (160, 134, 21, 5)
    assert (overall.strict.successes, overall.strict.n) == (134, 160)
    assert (overall.judged.successes, overall.judged.n) == (134, 155)
    assert pct(overall.strict.value) == 83.8
    assert pct(overall.judged.value) == 86.5
    assert summary.error_rate == 5 / 160
    assert summary.error_ids == ("s155", "s156", "s157", "s158", "s159")
    assert summary.repeats is None


def test_outcome_falls_back_to_upstream_success() -> None:
    records = [{"scenario_id": "a", "success": True}, {"scenario_id": "b", "success": False},
               {"scenario_id": "c", "success": None}]
    overall = summarise(records).overall
    assert (overall.passed, overall.failed, overall.errors) == (1, 1, 1)


def test_unknown_outcome_is_refused_with_the_scenario_named() -> None:
    with pytest.raises(ValueError, match="'a'.*'skipped'"):
        summarise([record("a", "skipped")])


def test_counts_per_split_and_universe() -> None:
    records = [
        record("u21_a", "passed", split="search", universe="universe_21"),
        record("u21_b", "failed", split="search", universe="universe_21"),
        record("u3_a", "error", split="search", universe="universe_3"),
        record("u3_b", "passed", split="execution", universe="universe_3"),
        record("u3_c", "passed", split="mine", universe="universe_3"),
        record("x", "failed", split="execution"),
    ]
    summary = summarise(records)
    splits = {group.name: (group.total, group.passed, group.failed, group.errors) for group in summary.splits}
    assert splits == {"execution": (2, 1, 1, 0), "search": (3, 1, 1, 1), "mine": (1, 1, 0, 0)}
    assert [group.name for group in summary.splits] == ["execution", "search", "mine"]
    assert [group.name for group in summary.universes] == ["universe_3", "universe_21", "unknown"]
    universe_3 = summary.universes[0]
    assert (universe_3.total, universe_3.passed, universe_3.errors) == (3, 2, 1)
    assert (universe_3.strict.successes, universe_3.strict.n) == (2, 3)
    assert (universe_3.judged.successes, universe_3.judged.n) == (2, 2)


def test_single_universe_is_not_broken_down() -> None:
    records = [record("a", "passed", universe="universe_21"), record("b", "failed", universe="universe_21")]
    assert summarise(records).universes == ()


def test_errors_grouped_by_category_with_ids() -> None:
    records = [
        record("s10", "error", error_category="health_timeout"),
        record("s9", "error", error_category="no_judgment"),
        record("s2", "error", error_category="no_judgment"),
        record("s3", "error"),
        record("s4", "failed", error_category="timeout"),  # a failure is not an error
    ]
    groups = [(group.category, group.count, group.ids) for group in summarise(records).error_groups]
    assert groups == [("no_judgment", 2, ("s2", "s9")), ("health_timeout", 1, ("s10",)),
                      ("uncategorised", 1, ("s3",))]


def test_timing_median_slowest_and_events() -> None:
    records = [
        record("a", "passed", wall_time_s=10.0, num_agent_events=20),
        record("b", "failed", wall_time_s=30.0, num_agent_events=2),
        record("c", "passed", wall_time_s=20.0, num_agent_events=41),
        record("d", "error"),  # nothing recorded: left out, not counted as zero
    ]
    timing = summarise(records).timing
    assert timing.wall_median_s == 20.0
    assert (timing.slowest_id, timing.slowest_s) == ("b", 30.0)
    assert timing.events_mean == pytest.approx(21.0)
    assert timing.events_median == 20.0


def test_timing_without_figures_is_empty() -> None:
    timing = summarise([record("a", "passed")]).timing
    assert (timing.wall_median_s, timing.slowest_id, timing.events_mean) == (None, None, None)


def test_only_the_last_attempt_counts() -> None:
    records = [
        record("a", "error", attempt=1, error_category="health_timeout"),
        record("b", "passed"),
        record("a", "error", attempt=2, error_category="health_timeout"),
        record("a", "passed", attempt=3),
    ]
    summary = summarise(records)
    assert (summary.overall.total, summary.overall.passed, summary.overall.errors) == (2, 2, 0)
    assert summary.error_groups == ()


def test_resumed_session_restarting_attempts_still_wins() -> None:
    records = [record("a", "error", attempt=2), record("a", "failed", attempt=1, reused=False)]
    overall = summarise(records).overall
    assert (overall.total, overall.failed, overall.errors) == (1, 1, 0)


def test_reused_verdicts_are_counted() -> None:
    records = [record("a", "passed", reused=True), record("b", "passed")]
    assert summarise(records).overall.reused == 1


# --- pass@k -----------------------------------------------------------------------------

def test_pass_at_k_headline_is_over_all_pairs() -> None:
    overall = summarise(pass_at_k_records()).overall
    assert (overall.total, overall.passed, overall.failed, overall.errors) == (12, 7, 4, 1)
    assert (overall.judged.successes, overall.judged.n) == (7, 11)


def test_pass_at_k_table() -> None:
    repeats = summarise(pass_at_k_records()).repeats
    assert repeats is not None
    assert (repeats.k, repeats.scenarios) == (3, 4)
    assert [rate.value for rate in repeats.per_run] == [0.75, 0.25, 0.75]
    assert repeats.avg_at_k.value == pytest.approx(7 / 12)
    assert (repeats.avg_at_k.successes, repeats.avg_at_k.n) == (7, 12)
    assert repeats.avg_at_k.method == "clustered-wilson"
    assert repeats.avg_at_k.low < 7 / 12 < repeats.avg_at_k.high
    assert [rate.method for rate in (*repeats.per_run, repeats.pass_at_k, repeats.pass_hat_k)] == ["wilson"] * 5
    assert (repeats.pass_at_k.successes, repeats.pass_at_k.n) == (3, 4)
    assert (repeats.pass_hat_k.successes, repeats.pass_hat_k.n) == (2, 4)  # a and d: d's errored run left out
    assert (repeats.pass_hat_k.low, repeats.pass_hat_k.high) == wilson(2, 4)
    assert repeats.flipped == ("b",)
    assert repeats.errored_runs == (("d", 2),)
    assert dict(repeats.patterns) == {"a": "PPP", "b": "PFP", "c": "FFF", "d": "PEP"}


def test_avg_at_k_is_the_mean_of_run_rates_when_a_run_is_incomplete() -> None:
    records = [record("a", "passed", run=1), record("b", "failed", run=1), record("a", "passed", run=2)]
    repeats = summarise(records).repeats
    assert repeats is not None
    assert repeats.avg_at_k.value == pytest.approx((0.5 + 1.0) / 2)
    assert (repeats.avg_at_k.successes, repeats.avg_at_k.n) == (2, 3)
    assert (repeats.pass_hat_k.successes, repeats.pass_hat_k.n) == (1, 2)  # b's missing run is no pass
    assert repeats.patterns["b"] == "F."
    assert repeats.flipped == ()


def test_records_keyed_by_repeat_are_read() -> None:
    repeats = summarise(repeated({"a": "PF", "b": "PP"})).repeats
    assert repeats is not None
    assert (repeats.k, dict(repeats.patterns)) == (2, {"a": "PF", "b": "PP"})


# --- intervals for repeats: scenarios resampled, not results ----------------------------

def test_same_records_give_the_same_interval_in_any_order() -> None:
    table = {f"s{i}": pattern for i, pattern in enumerate(["PPP", "PFP", "FFF", "PEP", "FFP", "PPF"] * 3)}
    records = repeated(table)
    first = summarise(records)
    shuffled = records[:]
    random.Random(7).shuffle(shuffled)
    again = summarise(shuffled)
    assert first.repeats is not None and again.repeats is not None
    assert first.repeats.avg_at_k == again.repeats.avg_at_k
    assert first.overall.strict == again.overall.strict
    assert first.overall.judged == again.overall.judged


def test_clustered_interval_is_wider_when_repeats_agree() -> None:
    """Five scenarios always pass, five always fail: 50 results, but only 10 independent ones."""
    summary = summarise(repeated({f"s{i}": ("P" if i < 5 else "F") * 5 for i in range(10)}))
    assert summary.repeats is not None
    naive = wilson(25, 50)
    overall = summary.overall
    for rate in (summary.repeats.avg_at_k, overall.strict, overall.judged, summary.splits[0].strict):
        assert rate.method == "clustered-wilson"
        assert (rate.successes, rate.value) == (25, 0.5)
        assert rate.low < naive[0] - 0.05 and rate.high > naive[1] + 0.05
    assert summary.repeats.avg_at_k.low == pytest.approx(summary.overall.strict.low)  # a full grid: the same rate


def test_single_runs_keep_wilson_intervals() -> None:
    strict = summarise(headline_records()).overall.strict
    assert strict.method == "wilson" and (strict.low, strict.high) == wilson(134, 160)


def test_clustered_wilson_edges() -> None:
    assert clustered_wilson([]) == (0.0, 1.0, 1.0)
    assert clustered_wilson([[(3, 3)]]) == (0.0, 1.0, 1.0)  # one scenario says nothing about the others
    assert clustered_wilson([[(0, 0)], [(0, 0)]]) == (0.0, 1.0, 1.0)  # never judged
    assert clustered_wilson([[(1, 1)], [(0, 1)], [(1, 1)]])[:2] == wilson(2, 3)  # one result each: Wilson's


def test_all_passed_with_repeats_is_never_a_lower_bound_of_100() -> None:
    """3 scenarios x 3 repeats, all passed. A bootstrap over 3 identical scenarios gives 100% to
    100%; the scenarios alone count: Wilson's 3 of 3 with t on 2 df."""
    low, high, deff = clustered_wilson([[(3, 3)]] * 3)
    assert deff == 3.0 and high == 1.0
    t = t_quantile(0.975, 2)
    assert low == pytest.approx(3 / (3 + t * t))  # Wilson's N / (N + z^2) at N of N
    assert round(low, 4) == 0.1395
    assert clustered_wilson([[(0, 3)]] * 3)[:2] == pytest.approx((0.0, 1 - low))  # and 0% is never [0, 0]


@pytest.mark.parametrize(
    ("probability", "df", "table"),
    [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 10, 2.2281), (0.995, 29, 2.7564), (0.9, 120, 1.2886)],
)
def test_t_quantile_is_the_tables(probability: float, df: int, table: float) -> None:
    assert t_quantile(probability, df) == pytest.approx(table, abs=5e-5)


@pytest.mark.parametrize(("probability", "df"), [(0.975, 0), (0.4, 5), (1.0, 5)])
def test_t_quantile_refuses_what_has_none(probability: float, df: int) -> None:
    with pytest.raises(ValueError):
        t_quantile(probability, df)


# --- planned vs done ---------------------------------------------------------------------

def test_without_a_plan_everything_is_planned_and_done() -> None:
    summary = summarise([record("a", "passed"), record("b", "error")])
    assert (summary.planned, summary.done, summary.not_run, summary.complete) == (2, 2, (), True)


def test_not_run_scenarios_count_as_not_passed_in_the_strict_rate() -> None:
    records = [record("s1", "passed"), record("s2", "failed"), record("t1", "passed", split="time")]
    planned = [f"search/s{i}" for i in (1, 2, 3, 9, 10)] + ["time/t1", "time/t2", "ambiguity/m1"]
    summary = summarise(records, planned=planned)
    assert (summary.planned, summary.done, summary.complete) == (8, 3, False)
    assert summary.not_run == ("ambiguity/m1", "search/s3", "search/s9", "search/s10", "time/t2")
    overall = summary.overall
    assert (overall.total, overall.passed, overall.not_run) == (3, 2, 5)
    assert (overall.strict.successes, overall.strict.n) == (2, 8)
    assert (overall.judged.successes, overall.judged.n) == (2, 3)  # judged-only: results only
    splits = {group.name: (group.total, group.not_run, group.strict.successes, group.strict.n)
              for group in summary.splits}
    assert splits == {"search": (2, 3, 1, 5), "time": (1, 1, 1, 2), "ambiguity": (0, 1, 0, 1)}
    assert summary.error_rate == 0.0  # not-run is not an error


def test_not_run_runs_of_repeated_scenarios() -> None:
    records = repeated({"a": "PP", "b": "P"})
    summary = summarise(records, planned=["search/a/run_1", "search/a/run_2", "search/b/run_1",
                                          "search/b/run_2", "search/c/run_1", "search/c/run_2"])
    assert summary.not_run == ("search/b/run_2", "search/c/run_1", "search/c/run_2")
    assert (summary.overall.strict.successes, summary.overall.strict.n) == (3, 6)
    repeats = summary.repeats
    assert repeats is not None
    assert dict(repeats.patterns) == {"a": "PP", "b": "P.", "c": ".."}
    assert [(rate.successes, rate.n) for rate in repeats.per_run] == [(2, 3), (1, 3)]
    assert (repeats.pass_at_k.successes, repeats.pass_at_k.n) == (2, 3)
    assert (repeats.pass_hat_k.successes, repeats.pass_hat_k.n) == (1, 3)


def test_a_record_outside_the_plan_still_counts() -> None:
    summary = summarise([record("a", "passed"), record("x", "failed")], planned=["search/a"])
    assert (summary.planned, summary.done, summary.overall.total) == (1, 1, 2)


@pytest.mark.parametrize("key", ["search", "/a", "search/", ""])
def test_malformed_planned_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match="planned key"):
        summarise([], planned=[key])


# --- summary.json content ---------------------------------------------------------------

def test_to_dict_is_json_with_fractions_counts_and_ids() -> None:
    summary = summarise(headline_records() + [record("s000", "passed", run=2)])
    data = json.loads(json.dumps(summary.to_dict()))
    assert (data["total"], data["passed"], data["failed"], data["errors"]) == (161, 135, 21, 5)
    assert data["strict"]["value"] == pytest.approx(135 / 161)
    assert 0 < data["strict"]["low"] < data["strict"]["value"] < data["strict"]["high"] < 1
    assert data["error_ids"] == ["s155", "s156", "s157", "s158", "s159"]
    assert data["errors_by_category"] == {"no_turn_boundary": {"count": 5, "ids": data["error_ids"]}}
    assert data["splits"]["search"]["judged"]["n"] == 156
    assert data["universes"] == {}
    assert data["repeats"]["k"] == 2
    assert data["repeats"]["errored_runs"] == [{"scenario_id": sid, "run": 1} for sid in data["error_ids"]]
    assert data["strict"]["interval"] == "clustered-wilson"
    assert data["repeats"]["pass_at_k"]["interval"] == "wilson"
    assert (data["planned"], data["done"], data["not_run"], data["complete"]) == (161, 161, [], True)


def test_to_dict_of_an_incomplete_run() -> None:
    data = summarise([record("a", "passed")], planned=["search/a", "search/b"]).to_dict()
    assert (data["planned"], data["done"], data["not_run"], data["complete"]) == (2, 1, ["search/b"], False)
    assert (data["total"], data["strict"]["n"]) == (1, 2)
    assert (data["not_run_count"], data["splits"]["search"]["not_run_count"]) == (1, 1)
