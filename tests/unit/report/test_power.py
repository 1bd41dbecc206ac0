"""Sample sizes of report.power against published values, hand arithmetic and a seeded simulation."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binomtest

from pytest_gaia2.report import power


def test_connor_pairs_match_the_formula_worked_by_hand() -> None:
    # gap 10 points, 30% discordant, 80% power, two-sided 5%:
    # (1.959964 * sqrt(0.30) + 0.841621 * sqrt(0.30 - 0.01))^2 / 0.01
    # = (1.073516 + 0.453227)^2 / 0.01 = 233.09 -> 234
    assert power.connor_pairs(0.10, 0.30) == 234
    assert power.connor_pairs(-0.10, 0.30) == 234  # the sign of the gap does not matter
    # gap 5 points, 10% discordant, 90% power: (1.959964 * 0.316228 + 1.281552 * 0.312250)^2 / 0.0025
    # = (0.619795 + 0.400164)^2 / 0.0025 = 416.13 -> 417
    assert power.connor_pairs(0.05, 0.10, power=0.9) == 417


@pytest.mark.parametrize(
    ("half_width", "rate", "expected"),
    [
        (0.05, 0.5, 385),  # the textbook "385 for +/-5 points at 95%" (Cochran 1977, eq. 4.2)
        (0.10, 0.5, 97),  # 96.04 rounded up
        (0.03, 0.5, 1068),  # 1067.1 rounded up, the pollster's "+/-3 points"
        (0.05, 0.2, 246),  # 1.96^2 * 0.16 / 0.0025 = 245.9
    ],
)
def test_rate_scenarios_match_published_values(half_width: float, rate: float, expected: int) -> None:
    assert power.rate_scenarios(half_width, rate) == expected


@pytest.mark.main_lane
def test_exact_power_agrees_with_a_seeded_simulation_of_the_test_compare_runs() -> None:
    plan = power.paired_pairs(-0.15, 0.25)
    assert plan.pairs is not None and plan.achieved is not None
    assert plan.pairs >= plan.approximate and plan.achieved >= 0.8
    rng = random.Random(24)
    p_a_only, p_b_only = (0.25 + 0.15) / 2, (0.25 - 0.15) / 2
    trials, rejected = 3000, 0
    for _ in range(trials):
        only_a = only_b = 0
        for _ in range(plan.pairs):
            draw = rng.random()
            only_a += draw < p_a_only
            only_b += p_a_only <= draw < p_a_only + p_b_only
        rejected += only_a + only_b > 0 and binomtest(only_b, only_a + only_b, 0.5).pvalue <= 0.05
    simulated = rejected / trials
    spread = (plan.achieved * (1 - plan.achieved) / trials) ** 0.5
    assert abs(simulated - plan.achieved) < 4 * spread
    assert simulated > 0.77


def test_exact_test_keeps_its_level_when_there_is_no_gap() -> None:
    for pairs in (10, 40, 200):
        assert 0 < power.exact_power(pairs, 0.0, 0.3) <= 0.05


def test_connor_alone_overstates_the_exact_tests_power_at_small_counts() -> None:
    plan = power.paired_pairs(0.25, 0.35)
    assert power.exact_power(plan.approximate, 0.25, 0.35) < 0.8 <= power.exact_power(plan.pairs or 0, 0.25, 0.35)


def test_pairs_needed_for_an_observed_table() -> None:
    assert power.observed_pairs_needed(3, 3, 20) is None  # no gap
    assert power.observed_pairs_needed(6, 1, 20) == power.paired_pairs(-0.25, 0.35).pairs
    assert power.observed_pairs_needed(0, 10, 10) == 6  # p = 2 / 2**6 = 0.031 is the first below 0.05


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: power.connor_pairs(0.3, 0.2), "discordance must be between |gap|"),
        (lambda: power.connor_pairs(0.0, 0.2), "gap must be above 0"),
        (lambda: power.connor_pairs(0.1, 0.2, power=1.0), "power must be above 0 and below 1"),
        (lambda: power.rate_scenarios(float("nan")), "half-width must be"),
        (lambda: power.rate_scenarios(0.05, rate=1.5), "rate must be from 0 to 1"),
    ],
)
def test_bad_arguments_are_refused_by_name(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("|", r"\|")):
        call()  # type: ignore[operator]


def test_the_detectable_gap_has_the_exact_power_connors_promised_77_percent() -> None:
    # 181 pairs at 30% discordance: Connor's formula says a gap of 11.3 points is detected 80% of
    # the time; the exact test does that 77% of the time. The exact answer is 11.7 points.
    assert power.connor_pairs(0.1134, 0.30) <= 181 and power.exact_power(181, 0.1134, 0.30) == pytest.approx(0.77, abs=0.005)
    gap = power.detectable_gap(181, 0.30)
    assert gap is not None and round(gap, 3) == 0.117
    assert power.exact_power(181, gap, 0.30) == pytest.approx(0.8, abs=1e-6)
    assert power.detectable_gap(5, 0.30) is None  # even 30 points all one way are not detected 80% of the time
