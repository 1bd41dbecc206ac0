"""The gate decides a run's exit status: met, missed, lower bound, judged rate, error rate;
without gate options pytest's usual status, except that a budget halt is no pass; with nothing
selected pytest's "no tests" code. The run's last line is its verdict, serially and under -n 2.

Verdicts are set by hand as stored result.json files in a run folder that ``--gaia2-resume=run``
reports again, so no scenario container starts (the ``stored_run`` fixture, conftest.py). Errors come
from unreadable scenario files, which never reach a container (a stored error would be re-run instead).
A budget halt comes from spend recorded in the run folder's ledger before the resume.
"""

from __future__ import annotations

import json

import pytest

from pytest_gaia2.cost.budget import record_spend

MODES = {"serial": (), "xdist": ("-n", "2")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("options", "status", "lines"), [
    ((), 1, None),
    (("--gaia2-min-pass-rate=0.6",), 0, [
        "gate: strict pass rate 75.0% (95% CI lower bound 53.1%) >= 60.0% required: met by 15.0 points",
        "gate: PASS: 1 condition met"]),
    (("--gaia2-min-pass-rate=0.8",), 1, [
        "gate: strict pass rate 75.0% (95% CI lower bound 53.1%) is below the 80.0% required: missed by 5.0 points",
        "gate: FAIL: 1 condition missed: strict pass rate 75.0% below 80.0%"]),
    (("--gaia2-min-pass-rate=0.6", "--gaia2-gate-on=lower-bound"), 1, [
        "gate: strict pass rate 75.0%, 95% CI lower bound 53.1% is below the 60.0% required: missed by 6.9 points",
        "gate: FAIL: 1 condition missed: strict pass rate's 95% CI lower bound 53.1% below 60.0%"]),
], ids=["no-gate", "met", "missed", "lower-bound"])
def test_pass_rate_gate(pytester: pytest.Pytester, stored_run, options: tuple[str, ...], status: int,
                        lines: list[str] | None, mode: str) -> None:
    """15 of 20 passed: the gate alone decides, whatever the individual failures."""
    result = stored_run(passed=15, failed=5)(*options, *MODES[mode])
    result.assert_outcomes(passed=15, failed=5)
    result.stdout.fnmatch_lines(["20 scenarios: 15 passed, 5 failed, 0 errors, 20 reused",
                                 "strict      15/20 = 75.0% [[]53.1–88.8[]]"])
    assert result.ret == status
    if lines is None:
        assert "gate:" not in result.stdout.str()
        assert result.outlines[-1].startswith("=") and "5 failed, 15 passed" in result.outlines[-1]
    else:
        result.stdout.fnmatch_lines(["gaia2: results in *", "*= 5 failed, 15 passed in *", *lines])
        assert result.outlines[-2:] == lines  # the verdict is the last word, after pytest's own
        summary = json.loads((pytester.path / "run" / "summary.json").read_text(encoding="utf-8"))
        assert summary["gate"] == {"met": status == 0, "lines": lines[:1],
                                   "unmet": [] if status == 0 else [lines[1].split("missed: ", 1)[1]]}


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_gate_says_fail_last_even_when_its_last_bar_is_met(stored_run, mode: str) -> None:
    """4 of 4 passed: the lower bound (51.0%) misses 80%, the error rate is met; the last line says FAIL."""
    result = stored_run(passed=4, failed=0)(
        "--gaia2-min-pass-rate=0.8", "--gaia2-gate-on=lower-bound", "--gaia2-max-error-rate=0.1", *MODES[mode])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.outlines[-3:] == [
        "gate: strict pass rate 100.0%, 95% CI lower bound 51.0% is below the 80.0% required: missed by 29.0 points",
        "gate: error rate 0.0% (0/4) <= 10.0% allowed: met by 10.0 points",
        "gate: FAIL: 1 condition missed: strict pass rate's 95% CI lower bound 51.0% below 80.0%",
    ]


HALTED = "budget: the run has spent $1.00, its halt is $0.50"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("options", "status", "tail"), [
    ((), 1, [f"gaia2: INCOMPLETE: 2 of 5 planned scenarios did not run; stopped early: {HALTED}; "
             "exit status 1 (--gaia2-allow-incomplete accepts it)"]),
    (("--gaia2-allow-incomplete",), 0, [f"gaia2: INCOMPLETE: 2 of 5 planned scenarios did not run; stopped early: "
                                        f"{HALTED}; accepted (--gaia2-allow-incomplete)"]),
    (("--gaia2-max-error-rate=0.1",), 1, [
        "gate: incomplete: 2 of 5 planned scenarios did not run: not met",
        "gate: error rate 0.0% (0/3) <= 10.0% allowed: met by 10.0 points",
        f"gate: FAIL: 1 condition missed: incomplete: 2 of 5 planned scenarios did not run; stopped early: {HALTED}"]),
], ids=["no-gate", "allow-incomplete", "gate"])
def test_a_budget_halt_is_said_last_and_is_no_pass(pytester: pytest.Pytester, stored_run, options: tuple[str, ...],
                                                   status: int, tail: list[str], mode: str) -> None:
    """3 stored passes, 2 scenarios the halt keeps from starting: all that ran passed, yet the
    run is not the one planned, so it exits 1 unless --gaia2-allow-incomplete accepts that."""
    run = stored_run(passed=3, failed=0, unstored=2)
    record_spend(pytester.path / "run", "search/elsewhere", 1, 1.0)
    result = run("--gaia2-budget-halt=0.5", *options, *MODES[mode])
    result.assert_outcomes(passed=3, skipped=2)
    assert result.ret == status
    assert result.outlines[-len(tail):] == tail
    counts = result.outlines[-len(tail) - 1]
    assert counts.startswith("=") and "3 passed, 2 skipped" in counts  # after pytest's own last line


@pytest.mark.parametrize("mode", MODES)
def test_a_complete_run_past_its_halt_says_why_that_is_no_stop(pytester: pytest.Pytester, stored_run,
                                                               mode: str) -> None:
    """Every verdict stored, $1.00 spent before a $0.50 halt: nothing had to start, the run is
    complete and exits 0; the budget line and the report say why the spend is past the halt."""
    run = stored_run(passed=3, failed=0)
    record_spend(pytester.path / "run", "search/elsewhere", 1, 1.0)
    result = run("--gaia2-budget-halt=0.5", "--gaia2-report", *MODES[mode])
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    over = ("the spend passed the $0.50 halt only in scenarios already running: a halt stops new starts, "
            "and every planned scenario had started")
    result.stdout.fnmatch_lines([f"gaia2: budget: spent $1.00, halt $0.50 ({over})"])
    assert "INCOMPLETE" not in result.stdout.str() and "stopped" not in result.stdout.str()
    markdown = (pytester.path / "run" / "report.md").read_text(encoding="utf-8")
    assert f"- stopped: `no: every planned scenario ran; {over}`" in markdown


@pytest.mark.parametrize(("options", "status", "lines"), [
    (("--gaia2-min-pass-rate=0.7", "--gaia2-rate=judged", "--gaia2-max-error-rate=0.1"), 0, [
        "gate: judged-only pass rate 75.0% (95% CI lower bound 53.1%) >= 70.0% required: met by 5.0 points",
        "gate: error rate 9.1% (2/22) <= 10.0% allowed: met by 0.9 points",
        "gate: PASS: 2 conditions met"]),
    (("--gaia2-min-pass-rate=0.7", "--gaia2-max-error-rate=0.05"), 1, [
        "gate: strict pass rate 68.2% (95% CI lower bound 47.3%) is below the 70.0% required: missed by 1.8 points",
        "gate: error rate 9.1% (2/22) is above the 5.0% allowed: missed by 4.1 points",
        "gate: FAIL: 2 conditions missed: strict pass rate 68.2% below 70.0%; error rate 9.1% above 5.0%"]),
], ids=["judged-and-error-rate-met", "strict-and-error-rate-missed"])
def test_error_rate_gate(stored_run, options: tuple[str, ...], status: int, lines: list[str]) -> None:
    """15 passed, 5 failed, 2 unreadable files: errors count against strict, not judged."""
    result = stored_run(passed=15, failed=5, errors=2)(*options)
    result.assert_outcomes(passed=15, failed=5, errors=2)
    result.stdout.fnmatch_lines(["22 scenarios: 15 passed, 5 failed, 2 errors, 20 reused",
                                 "errors by category:", "  invalid_scenario  2  *", *lines])
    assert result.outlines[-3:] == lines
    assert result.ret == status


def test_all_passed_without_gate_exits_zero(stored_run) -> None:
    result = stored_run(passed=4, failed=0)()
    result.assert_outcomes(passed=4)
    assert result.ret == 0


@pytest.mark.parametrize("options", [(), ("--gaia2-min-pass-rate=0.5",)], ids=["no-gate", "gate"])
def test_no_scenario_selected(stored_run, options: tuple[str, ...]) -> None:
    """A -k that selects nothing is a usage error before anything runs, naming what exists."""
    result = stored_run(passed=2, failed=0)("-k", "serch", *options)
    result.stderr.fnmatch_lines(["ERROR: -k 'serch' selects no scenario. Markers: search_split, universe_*; "
                                 "nearest: 'serch' -> search*"])
    assert "gate:" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_gate_that_cannot_pass_at_this_n_is_said_before_the_run(stored_run) -> None:
    """6 of 6 passed: Wilson's lower bound is 61.0%, so a lower-bound gate of 80% can never be met."""
    result = stored_run(passed=6, failed=0)("--gaia2-min-pass-rate=0.8", "--gaia2-gate-on=lower-bound")
    result.stdout.fnmatch_lines([
        "gaia2: warning: the gate cannot pass at N=6: the 95% lower bound of 6/6 is 61.0%, below the 80.0% "
        "required; the smallest N that could pass is 16",
        "gaia2: 6 planned, *",
        "*= 6 passed in *",
        "gate: strict pass rate 100.0%, 95% CI lower bound 61.0% is below the 80.0% required: missed by 19.0 points",
        "gate: FAIL: 1 condition missed: strict pass rate's 95% CI lower bound 61.0% below 80.0%",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.outlines[-1].startswith("gate: FAIL: ")


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_with_repeats_the_lower_bound_gate_counts_scenarios_not_runs(
        pytester: pytest.Pytester, stored_run, workers: tuple[str, ...]) -> None:
    """3 scenarios x 3 repeats, all passed: 9 of 9 results, but 3 scenarios' worth of evidence. A
    bootstrap over the 3 scenarios gives a lower bound of 100% (a 95% lower-bound gate met), and
    Wilson's 9 of 9 gives 70.1%: the gate and the warning before the run both use the
    scenario-clustered bound, 13.9% (Wilson's 3 of 3 with t on 2 df), serially and under xdist."""
    result = stored_run(passed=3, failed=0, repeats=3)(
        *workers, "--gaia2-repeat=3", "--gaia2-min-pass-rate=0.95", "--gaia2-gate-on=lower-bound")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines([
        "gaia2: warning: the gate cannot pass at 3 scenarios x 3 repeats: the 95% lower bound of 9/9 is 13.9%, "
        "below the 95.0% required; the smallest number of scenarios that could pass is 76",
        "*= 9 passed in *",
        "*strict pass rate 100.0%*95% CI lower bound 13.9%*95.0% required*",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = json.loads((pytester.path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["strict"]["interval"] == "clustered-wilson"
    assert round(summary["strict"]["low"], 4) == 0.1395 and summary["gate"]["met"] is False


def test_with_repeats_a_gate_the_scenarios_clear_is_met(stored_run) -> None:
    """12 scenarios x 2 repeats, 11 passed both runs and 1 failed both: 22 of 24, the lower bound
    that of 12 scenarios (clustered), which still clears a 50% bar."""
    result = stored_run(passed=11, failed=1, repeats=2)(
        "-n", "2", "--gaia2-repeat=2", "--gaia2-min-pass-rate=0.5", "--gaia2-gate-on=lower-bound")
    result.assert_outcomes(passed=22, failed=2)
    assert "warning: the gate cannot pass" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*strict pass rate 91.7%*95% CI lower bound*50.0% required*met*"])
    assert result.ret == pytest.ExitCode.OK
