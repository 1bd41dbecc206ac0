"""The universe-clustered interval and design effect: worked by hand, and its coverage simulated."""

from __future__ import annotations

import math
import random

import pytest
from gaia2_records import record
from scipy.stats import t

from pytest_gaia2.report.rates import wilson
from pytest_gaia2.report.stats import cluster_robust, summarise


def _records(letters: dict[str, str]) -> list[dict[str, object]]:
    names = {"P": "passed", "F": "failed", "E": "error"}
    return [
        record(
            f"{universe}_{i}",
            names[letter],
            universe=universe,
            error_category="daemon_error" if letter == "E" else None,
        )
        for universe, pattern in letters.items()
        for i, letter in enumerate(pattern)
    ]


def test_four_universes_get_the_small_sample_correction() -> None:
    # Universes passing 9/10, 3/10, 6/10, 8/10: p = 26/40, residual sums 2.5, -3.5, -0.5, 1.5
    # (squares 21). The normal interval on CR0, 0.65 +- 1.96 sqrt(21 / 1600), was 42.5-87.5;
    # CR1 (x 4/3) with t(3) = 3.182 gives 0.65 +- 0.421: 22.9 to 107.1, clipped to 100.
    letters = {f"u{i}": "P" * passed + "F" * (10 - passed) for i, passed in enumerate((9, 3, 6, 8))}
    clustered = summarise(_records(letters)).clustered_strict
    assert clustered is not None and (clustered.clusters, clustered.n, clustered.value) == (4, 40, 0.65)
    assert 0.65 - 1.959964 * math.sqrt(21 / 1600) == pytest.approx(0.425, abs=5e-4)
    assert clustered.low == pytest.approx(0.65 - t.ppf(0.975, 3) * math.sqrt(4 / 3 * 21 / 1600))
    assert (round(clustered.low, 3), clustered.high) == (0.229, 1.0)
    # CR1 variance over the unbiased independent one, 0.65 x 0.35 / 39.
    assert clustered.design_effect == pytest.approx((4 / 3 * 21 / 1600) / (0.65 * 0.35 / 39))


def test_strict_and_judged_only_by_hand() -> None:
    # u1: P P P, u2: F F F, u3: P F and an error. Strict: n = 9, p = 4/9.
    summary = summarise(_records({"u1": "PPP", "u2": "FFF", "u3": "PFE"}))
    strict = summary.clustered_strict
    assert strict is not None and (strict.clusters, strict.n) == (3, 9)
    p = 4 / 9
    variance = 3 / 2 * ((3 * (1 - p)) ** 2 + (3 * p) ** 2 + (1 - 3 * p) ** 2) / 81
    half = t.ppf(0.975, 2) * math.sqrt(variance)
    assert strict.value == pytest.approx(p) and half > 1  # t(2) = 4.30: the whole range
    assert (strict.low, strict.high) == (0.0, 1.0)
    assert strict.design_effect == pytest.approx(variance / (p * (1 - p) / 8))
    # Judged-only leaves the error out: n = 8, p = 1/2, sums 1.5, -1.5, 0: CR1 variance 1.5 x 4.5 / 64.
    judged = summary.clustered_judged
    assert judged is not None and judged.n == 8
    assert judged.design_effect == pytest.approx((1.5 * 4.5 / 64) / (0.25 / 7))
    data = summary.to_dict()["universe_clustered"]
    assert data["judged"]["design_effect"] == pytest.approx(judged.design_effect)
    assert data["strict"]["interval"] == "universe-clustered"


@pytest.mark.parametrize(
    ("letters", "passed"),
    [
        ({"u1": "PPPP", "u2": "PPPP", "u3": "PP"}, 10),  # 100%: every residual is 0
        ({"u1": "FFFF", "u2": "FFF"}, 0),  # 0%
        ({"u1": "PF", "u2": "PF", "u3": "FP"}, 3),  # every universe at the rate itself
    ],
)
def test_never_zero_width_and_never_narrower_than_wilson(letters: dict[str, str], passed: int) -> None:
    clustered = summarise(_records(letters)).clustered_strict
    assert clustered is not None
    low, high = wilson(passed, clustered.n)
    assert clustered.low <= low < high <= clustered.high and clustered.high - clustered.low > 0.2
    if passed in (0, clustered.n):
        assert clustered.design_effect is None  # no spread to compare with


def test_independent_universes_have_a_design_effect_of_one() -> None:
    # One scenario per universe: CR1 is n/(n-1) sum((x - p)^2) / n^2 = p (1 - p) / (n - 1) exactly.
    records = [record(f"s{i}", "passed" if i % 3 else "failed", universe=f"universe_{i}") for i in range(30)]
    clustered = summarise(records).clustered_strict
    assert clustered is not None and clustered.design_effect == pytest.approx(1.0)


def test_one_universe_gives_no_clustered_interval() -> None:
    summary = summarise([record("a", "passed", universe="u1"), record("b", "failed", universe="u1")])
    assert summary.clustered_strict is None and summary.to_dict()["universe_clustered"] is None


def _draw(rng: random.Random, universes: int, each: int, rate: float, sd: float) -> tuple[list[int], list[int]]:
    """Passes per universe when each universe shifts the logit of ``rate`` by a N(0, sd) effect."""
    passes = []
    for _ in range(universes):
        p = 1 / (1 + math.exp(-(math.log(rate / (1 - rate)) + rng.gauss(0, sd))))
        passes.append(sum(rng.random() < p for _ in range(each)))
    return passes, [each] * universes


def _population_rate(rate: float, sd: float) -> float:
    """The rate over all universes, E[expit(logit(rate) + u)], by a fine quadrature."""
    points = [(-6 + 12 * i / 2000) for i in range(2001)]
    weights = [math.exp(-z * z / 2) for z in points]
    values = [1 / (1 + math.exp(-(math.log(rate / (1 - rate)) + sd * z))) for z in points]
    return sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)


@pytest.mark.parametrize("universes", [2, 5, 10])
def test_coverage_with_few_universes_is_at_least_93_percent(universes: int) -> None:
    # A run of 40 scenarios over 2, 5 or 10 universes, each universe's logit shifted by N(0, 0.5):
    # the old normal interval on CR0 covered 60%, 83% and 90% here.
    rng = random.Random(universes)
    truth = _population_rate(0.7, 0.5)
    trials = 1500
    covered = 0
    for _ in range(trials):
        _, low, high, _ = cluster_robust(*_draw(rng, universes, 40 // universes, 0.7, 0.5))
        covered += low <= truth <= high
    assert covered / trials >= 0.93


def test_the_design_effect_averages_one_without_clustering() -> None:
    # Four universes of ten that do not matter: the old CR0 ratio averaged (G - 1)/G = 0.75.
    rng = random.Random(3)
    effects = [cluster_robust(*_draw(rng, 4, 10, 0.6, 0.0))[3] for _ in range(3000)]
    found = [effect for effect in effects if effect is not None]
    assert 0.95 < sum(found) / len(found) < 1.05
    clustered = [cluster_robust(*_draw(rng, 4, 10, 0.6, 1.0))[3] for _ in range(1000)]
    assert sum(effect or 0 for effect in clustered) / len(clustered) > 1.5
