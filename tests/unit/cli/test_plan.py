"""``pytest-gaia2 plan`` on run folders written with the real store: sizes, cost, time and budget."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cost.projection import predict_total
from pytest_gaia2.report import power
from pytest_gaia2.report.rates import percent, percent_number


def plan(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main(["plan", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(capsys: pytest.CaptureFixture[str], *args: object) -> dict[str, Any]:
    code, out, err = plan(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


COSTS = [0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 1.00]


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """Ten priced scenarios, 6 passed of 10, 60 s to 150 s each."""
    letters = {f"s{i}": "P" if i < 6 else "F" for i in range(10)}
    fields = {f"s{i}": {"cost_usd": COSTS[i], "wall_time_s": 60.0 + 10 * i} for i in range(10)}
    return write_run(tmp_path / "probe", letters, fields=fields)


def test_two_runs_give_the_discordance_and_the_exact_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe: Path
) -> None:
    # Run B disagrees with the probe on s0, s1 (passed in A only) and s9 (passed in B only): 3 of 10.
    other = write_run(tmp_path / "b", {f"s{i}": "P" if 2 <= i < 6 or i == 9 else "F" for i in range(10)})
    args = (probe, other, "--gap", "0.1", "-n", "4", "--budget", "100", "--pool", "800")
    data = as_json(capsys, *args)
    expected = power.paired_pairs(0.1, 0.3)
    low, high = data["question"].pop("discordance_interval")
    assert data["question"] == {"kind": "paired-gap", "gap": 0.1, "discordance": 0.3, "pairs_seen": 10}
    assert data["scenarios"] == expected.pairs == 249
    assert expected.approximate == 234  # Connor's, worked by hand
    assert power.exact_power(expected.pairs, 0.1, 0.3) >= 0.8 > power.exact_power(expected.pairs - 1, 0.1, 0.3)
    # 3 of 10 is only known to Wilson's 10.8% to 60.3%: at its ends 84 and 490 pairs, not 249.
    assert (round(low, 3), round(high, 3)) == (0.108, 0.603) and data["paired"]["range"] == [84, 490]
    assert data["pool"] == {"scenarios": 800, "from": "--pool", "runnable": 249, "capped": False}
    # Both arms run the 249: B has no cost, so it is assumed to cost what A does.
    rest, one_low, one_high = predict_total(COSTS, 249)
    assert data["cost_usd"]["estimate"] == pytest.approx(2 * 249 * statistics.fmean(COSTS)) == pytest.approx(2 * rest)
    assert (data["cost_usd"]["low"], data["cost_usd"]["high"]) == pytest.approx((2 * one_low, 2 * one_high))
    assert data["cost_usd"]["arms"] == 2
    # Time: 249 at A's mean 105 s and 249 at B's 30 s (write_run's), over 4 workers.
    assert data["time_s"]["estimate"] == pytest.approx(249 * (105.0 + 30.0) / 4)
    # $100 buys 181 scenarios of one run, or 90 pairs at $0.55 + $0.55; the gap 90 pairs detect
    # has an exact power of 80%.
    budget = data["budget"]
    assert (budget["scenarios"], budget["pairs"]) == (181, 90)
    gap = budget["detectable_gap"]
    assert power.exact_power(90, gap, 0.3) == pytest.approx(0.8, abs=1e-6)
    assert power.exact_power(90, gap - 0.002, 0.3) < 0.8
    assert [(row["split"], row["scenarios"], row["priced"]) for row in data["splits"]] == [("search", 10, 10)]

    code, text, _ = plan(capsys, *args)
    assert code == 0
    assert (
        "To detect a gap of 10.0 points 80% of the time at alpha 0.05, with 30.0% of pairs disagreeing "
        "(seen over 10 pairs): **249 paired scenarios** (exact McNemar power 80.1%; Connor's approximation says 234)."
    ) in text
    assert "- the discordance is an estimate: its 95% interval is 10.8% to 60.3%, over which the pairs needed " \
        "run from 84 to 490\n" in text
    assert f"- cost for both arms (each agent runs them) ≈ ${2 * rest:,.2f} (95% interval ${2 * one_low:,.2f}–" in text
    assert "- time for both arms (each agent runs them) ≈ 2.33 h at -n 4 (95% interval " in text
    assert (
        f"- the budget $100.00 buys ≈ 181 scenarios of one run: an interval of ±7.3 points on one rate; or 90 pairs "
        f"(both arms): a paired gap of {percent_number(gap)} points detected 80% of the time (exact McNemar power)"
    ) in text
    assert "- note: the second arm's cost is assumed to be the first's (no priced second run)" in text
    assert "| search | 10 | 10 | $0.55 | 105 s |" in text


def test_a_priced_second_run_is_the_second_arms_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], probe: Path
) -> None:
    dearer = {f"s{i}": {"cost_usd": 2 * COSTS[i]} for i in range(10)}
    other = write_run(tmp_path / "b", {f"s{i}": "P" if i % 3 else "F" for i in range(10)}, fields=dearer)
    data = as_json(capsys, probe, other, "--gap", "0.2", "--budget", "33", "--pool", "800")
    pairs = data["scenarios"]
    assert data["cost_usd"]["estimate"] == pytest.approx(pairs * 0.55 + pairs * 1.10)
    assert data["budget"]["pairs"] == 20  # floor(33 / (0.55 + 1.10))
    assert not any("assumed to be the first's" in note for note in data["notes"])


def test_a_size_past_the_pool_is_capped_with_a_note(capsys: pytest.CaptureFixture[str], probe: Path) -> None:
    # One split of the full Gaia2 is 160 scenarios; 1068 are needed for +-3 points.
    data = as_json(capsys, probe, "--half-width", "0.03", "--rate", "0.5")
    assert data["scenarios"] == 1068
    assert data["pool"]["runnable"] == 160 and data["pool"]["capped"] is True
    assert data["pool"]["at_pool"] == pytest.approx(power.half_width(160, 0.5))
    assert data["cost_usd"]["estimate"] == pytest.approx(160 * 0.55)
    code, text, _ = plan(capsys, probe, "--half-width", "0.03", "--rate", "0.5")
    assert code == 0
    assert (
        "- the pool holds 160 scenarios (the full Gaia2 has 160 per split, 1 split here; --pool N sets another), "
        "fewer than the 1068 needed: all 160 give an interval of ±7.7 points; the cost and time below are for the "
        "pool\n"
    ) in text
    code, text, _ = plan(capsys, probe, "--gap", "0.1", "--pool", "12")
    assert code == 0 and "- the pool holds 12 scenarios (--pool), fewer than the " in text
    assert f"all 12 give an exact power of {percent(power.exact_power(12, 0.1, 0.5))} for this gap" in text
    assert "the pool holds" not in plan(capsys, probe, "--half-width", "0.1", "--pool", "800")[1]


def test_one_run_assumes_chance_agreement_and_says_so(capsys: pytest.CaptureFixture[str], probe: Path) -> None:
    data = as_json(capsys, probe, "--gap", "0.1")
    # 6/10 judged: the Wilson interval holds 1/2, so p = 1/2 and the assumed discordance 2 p (1 - p) = 1/2.
    assert data["question"]["discordance"] == 0.5
    assert data["scenarios"] == power.paired_pairs(0.1, 0.5).pairs
    assert "discordance assumed 50.0%" in data["notes"][0]


def test_half_width_uses_the_published_size(capsys: pytest.CaptureFixture[str], probe: Path) -> None:
    data = as_json(capsys, probe, "--half-width", "0.05", "--rate", "0.5")
    assert data["scenarios"] == 385
    assert as_json(capsys, probe, "--half-width", "0.05")["scenarios"] == 385  # 6/10: plan at 1/2


def test_all_passed_probe_does_not_promise_a_tiny_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    four = write_run(tmp_path / "four", {f"s{i}": "P" for i in range(4)})
    data = as_json(capsys, four, "--half-width", "0.05")
    # Wilson 4/4 is [51.0%, 100%]: plan at 51%, not at 100% (which would say 1 scenario).
    assert data["question"]["rate"] == pytest.approx(0.5101, abs=1e-3)
    assert data["scenarios"] == power.rate_scenarios(0.05, data["question"]["rate"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gap", "0"], "--gap: expected a fraction above 0"),
        (["--gap", "nan"], "--gap: expected a fraction"),
        (["--half-width", "0.7"], "--half-width: expected a fraction above 0 and at most 0.5"),
        (["--gap", "0.1", "--power", "1"], "--power: expected"),
        (["--gap", "0.1", "-n", "0"], "-n: expected 1 to 4096 workers"),
        (["--gap", "0.1", "--budget", "inf"], "--budget: expected dollars above 0"),
        (["--gap", "0.6", "--discordance", "0.3"], "--gap 0.6 is larger than the discordance rate 0.3"),
        (["--gap", "0.1", "--pool", "0"], "--pool: expected 1 to 100000 scenarios"),
    ],
)
def test_bad_input_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], probe: Path, args: list[str], message: str
) -> None:
    code, _, err = plan(capsys, probe, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_runs_that_never_disagree_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], probe: Path) -> None:
    same = write_run(tmp_path / "same", {f"s{i}": "P" if i < 6 else "F" for i in range(10)})
    code, _, err = plan(capsys, probe, same, "--gap", "0.1")
    assert code == 2 and "the two runs never disagree" in err
