"""``pytest-gaia2 plan`` on run folders written with the real store: sizes, cost, time and budget."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.report import power


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
    data = as_json(capsys, probe, other, "--gap", "0.1", "-n", "4", "--budget", "100")
    expected = power.paired_pairs(0.1, 0.3)
    assert data["question"] == {"kind": "paired-gap", "gap": 0.1, "discordance": 0.3, "pairs_seen": 10}
    assert data["scenarios"] == expected.pairs
    assert expected.pairs is not None and expected.pairs >= expected.approximate == 234  # Connor's, worked by hand
    assert power.exact_power(expected.pairs, 0.1, 0.3) >= 0.8 > power.exact_power(expected.pairs - 1, 0.1, 0.3)
    n = data["scenarios"]
    mean, sd = statistics.fmean(COSTS), statistics.stdev(COSTS)
    spread = 1.959964 * sd * (n + n * n / 10) ** 0.5
    assert data["cost_usd"]["estimate"] == pytest.approx(n * mean)
    assert (data["cost_usd"]["low"], data["cost_usd"]["high"]) == pytest.approx((n * mean - spread, n * mean + spread))
    assert data["time_s"]["estimate"] == pytest.approx(n * 105.0 / 4)  # mean wall time 105 s over 4 workers
    assert data["budget"]["scenarios"] == 181  # floor(100 / 0.55)
    gap = data["budget"]["detectable_gap"]
    assert power.connor_pairs(gap, 0.3) <= 181 < power.connor_pairs(gap - 0.001, 0.3)
    assert [(row["split"], row["scenarios"], row["priced"]) for row in data["splits"]] == [("search", 10, 10)]

    code, text, _ = plan(capsys, probe, other, "--gap", "0.1", "-n", "4", "--budget", "100")
    assert code == 0
    assert (
        "To detect a gap of 10.0 points 80% of the time at alpha 0.05, with 30.0% of pairs disagreeing "
        f"(seen over 10 pairs): **{n} paired scenarios**"
    ) in text
    assert f"- cost ≈ ${n * mean:,.2f}" in text and "at -n 4" in text
    assert "| search | 10 | 10 | $0.55 | 105 s |" in text


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


def test_missing_scipy_is_one_line_naming_the_extra(
    capsys: pytest.CaptureFixture[str], probe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    code, _, err = plan(capsys, probe, "--gap", "0.1")
    assert code == 2 and "pytest-gaia2[analysis]" in err and err.count("\n") == 1
    assert plan(capsys, probe, "--half-width", "0.05")[0] == 0  # the normal size needs no scipy
