"""The CI gate held against summaries: each bar's line, met or missed, and incomplete runs."""

from __future__ import annotations

from typing import Any

import pytest
from gaia2_records import headline_records, record, repeated

from pytest_gaia2.config import options
from pytest_gaia2.report.gate import Gate, best_lower_bound, smallest_passing
from pytest_gaia2.report.stats import Summary, summarise


@pytest.fixture(scope="module")
def headline() -> Summary:
    return summarise(headline_records())


def test_gate_met_on_the_point_estimate(headline: Summary) -> None:
    decision = Gate(min_pass_rate=0.8).decide(headline)
    assert decision.met
    assert decision.lines == ["gate: strict pass rate 83.8% (95% CI lower bound 77.3%) >= 80.0% "
                              "required: met by 3.8 points"]


def test_gate_missed_on_the_lower_bound(headline: Summary) -> None:
    decision = Gate(min_pass_rate=0.8, gate_on="lower-bound").decide(headline)
    assert not decision.met
    assert decision.lines == ["gate: strict pass rate 83.8%, 95% CI lower bound 77.3% is below the 80.0% "
                              "required: missed by 2.7 points"]
    assert decision.verdict() == ("gate: FAIL: 1 condition missed: strict pass rate's 95% CI lower bound 77.3% "
                                  "below 80.0%")


def test_gate_on_judged_only_rate(headline: Summary) -> None:
    decision = Gate(min_pass_rate=0.9, rate="judged").decide(headline)
    assert not decision.met
    assert decision.lines == ["gate: judged-only pass rate 86.5% (95% CI lower bound 80.2%) is below the 90.0% "
                              "required: missed by 3.5 points"]
    assert decision.verdict() == "gate: FAIL: 1 condition missed: judged-only pass rate 86.5% below 90.0%"


def test_gate_reached_exactly_is_met() -> None:
    summary = summarise([record(str(i), "passed" if i < 4 else "failed") for i in range(5)])
    decision = Gate(min_pass_rate=0.8).decide(summary)
    assert decision.met
    assert decision.lines[0].endswith("met by 0.0 points")


@pytest.mark.parametrize(("allowed", "met", "tail"), [
    (0.1, True, "<= 10.0% allowed: met by 6.9 points"),
    (0.02, False, "is above the 2.0% allowed: missed by 1.1 points"),
])
def test_gate_on_error_rate(headline: Summary, allowed: float, met: bool, tail: str) -> None:
    decision = Gate(max_error_rate=allowed).decide(headline)
    assert decision.met is met
    assert decision.lines == [f"gate: error rate 3.1% (5/160) {tail}"]


def test_every_bar_must_be_met_and_each_gets_a_line(headline: Summary) -> None:
    decision = Gate(min_pass_rate=0.8, max_error_rate=0.02).decide(headline)
    assert not decision.met
    assert [line.rsplit(":", 1)[1].split()[0] for line in decision.lines] == ["met", "missed"]
    assert decision.unmet == ("error rate 3.1% above 2.0%",)


def test_the_verdict_line_names_pass_or_fail_each_missed_bar_and_the_stop(headline: Summary,
                                                                         incomplete: Summary) -> None:
    """The last line of a run: a missed bar is named in words that cannot read as met."""
    assert Gate(min_pass_rate=0.8, max_error_rate=0.1).decide(headline).verdict() == "gate: PASS: 2 conditions met"
    decision = Gate(min_pass_rate=0.9, gate_on="lower-bound", max_error_rate=0.02).decide(incomplete)
    assert decision.verdict("budget: the run has spent $1.00, its halt is $0.50") == (
        "gate: FAIL: 2 conditions missed: incomplete: 3 of 12 planned scenarios did not run; strict pass rate's "
        "95% CI lower bound 46.8% below 90.0%; stopped early: budget: the run has spent $1.00, its halt is $0.50")
    assert decision.to_dict()["unmet"] == list(decision.unmet)
    assert Gate(max_errors=0).decide(summarise([record("a", "error")])).verdict() == (
        "gate: FAIL: 1 condition missed: smoke: 1 error, at most 0 allowed")
    assert Gate(max_error_rate=0.1).decide(summarise([])).verdict() == (
        "gate: FAIL: 1 condition missed: no scenario results to measure")


def test_zero_scenarios_never_meets_the_gate() -> None:
    decision = Gate(max_error_rate=0.1).decide(summarise([]))
    assert not decision.met
    assert decision.lines == ["gate: not met: no scenario results to measure (0 scenarios ran)"]


def test_judged_rate_with_only_errors_is_missed() -> None:
    decision = Gate(min_pass_rate=0.5, rate="judged").decide(summarise([record("a", "error")]))
    assert not decision.met
    assert "n/a (no judged scenarios)" in decision.lines[0]


def test_inactive_gate_is_met_silently(headline: Summary) -> None:
    gate = Gate()
    assert not gate.active
    assert gate.decide(headline).met
    assert gate.decide(summarise([])).lines == []


@pytest.mark.parametrize("kwargs", [{"min_pass_rate": 80.0}, {"max_error_rate": -0.1},
                                    {"rate": "loose"}, {"gate_on": "upper-bound"}])
def test_gate_rejects_impossible_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Gate(**kwargs)


@pytest.fixture(scope="module")
def incomplete() -> Summary:
    """9 of 12 planned ran, all passed."""
    return summarise([record(f"s{i}", "passed") for i in range(9)], planned=[f"search/s{i}" for i in range(12)])


def test_incomplete_run_fails_the_gate(incomplete: Summary) -> None:
    decision = Gate(min_pass_rate=0.5).decide(incomplete)
    assert not decision.met
    assert decision.lines == ["gate: incomplete: 3 of 12 planned scenarios did not run: not met",
                              "gate: strict pass rate 75.0% (95% CI lower bound 46.8%) >= 50.0% required: "
                              "met by 25.0 points"]


def test_incomplete_run_allowed(incomplete: Summary) -> None:
    decision = Gate(max_error_rate=0.1).decide(incomplete, allow_incomplete=True)
    assert decision.met
    assert decision.lines[0] == ("gate: incomplete: 3 of 12 planned scenarios did not run: "
                                 "allowed (--gaia2-allow-incomplete)")


def test_allowing_incomplete_runs_lowers_no_bar(incomplete: Summary) -> None:
    assert not Gate(min_pass_rate=0.8).decide(incomplete, allow_incomplete=True).met  # 9/12 = 75%


def test_complete_run_gets_no_completeness_line(headline: Summary) -> None:
    assert not any("incomplete" in line for line in Gate(min_pass_rate=0.8).decide(headline).lines)


def test_incomplete_repeats_are_counted_in_runs() -> None:
    summary = summarise(repeated({"a": "PP"}), planned=["search/a/run_1", "search/a/run_2", "search/a/run_3"])
    assert Gate(max_error_rate=0.5).decide(summary).lines[0] == (
        "gate: incomplete: 1 of 3 planned scenario runs did not run: not met")


def test_gate_from_resolved_options() -> None:
    values = {"min_pass_rate": 0.8, "rate": "judged", "gate_on": "lower-bound", "max_error_rate": None}
    gate = Gate.from_options(options.resolve(values, {}, {}))
    assert gate == Gate(min_pass_rate=0.8, rate="judged", gate_on="lower-bound")
    assert gate.active


def test_with_repeats_the_lower_bound_is_the_scenarios_not_the_runs() -> None:
    """3 scenarios x 3 repeats all passed: the bound of 3 scenarios (Wilson's 3 of 3 with t on 2
    df, 13.9%), never 100% (the bootstrap's) nor 70.1% (Wilson's 9 of 9)."""
    summary = summarise(repeated({"a": "PPP", "b": "PPP", "c": "PPP"}))
    decision = Gate(min_pass_rate=0.95, gate_on="lower-bound").decide(summary)
    assert not decision.met
    assert round(summary.overall.strict.low, 4) == 0.1395
    assert "95% CI lower bound 13.9%" in decision.lines[0]
    assert best_lower_bound(3, 3) == pytest.approx(summary.overall.strict.low)
    assert best_lower_bound(9) == pytest.approx(0.7008, abs=1e-4)  # Wilson's 9 of 9, one run each
    assert (smallest_passing(0.95), smallest_passing(0.95, 3), smallest_passing(1.0)) == (73, 76, None)
    assert best_lower_bound(75, 3) < 0.95 <= best_lower_bound(76, 3)
