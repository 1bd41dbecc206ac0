"""Paired statistics against published values and hand-worked examples."""

from __future__ import annotations

import math
import sys

import pytest

from pytest_gaia2.report.paired import (
    AnalysisExtraMissing,
    PairedTable,
    mcnemar_exact,
    newcombe_interval,
    pattern,
    pattern_counts,
)


def table_of(both: int, only_a: int, only_b: int, neither: int) -> PairedTable:
    """A table with that many keys in each cell."""
    cells = [("both", (True, True), both), ("a", (True, False), only_a), ("b", (False, True), only_b),
             ("none", (False, False), neither)]
    return PairedTable.of({f"{name}{i}": cell for name, cell, count in cells for i in range(count)})


def binomial_two_sided(smaller: int, discordant: int) -> float:
    """Twice the lower binomial(discordant, 1/2) tail, worked by hand from binomial coefficients."""
    return min(1.0, 2 * sum(math.comb(discordant, k) for k in range(smaller + 1)) / 2 ** discordant)


def test_newcombe_interval_matches_the_published_cavo_example() -> None:
    """Fagerland, Lydersen & Laake, Statistical Analysis of Contingency Tables (2017), chapter 8 (and
    Stat Med 2014;33:2850): complete response before/after consolidation therapy (Cavo et al. 2012),
    59 both, 6 first only, 16 second only, 80 neither: Newcombe square-and-add -0.0621 (-0.1186 to -0.0046)."""
    low, high = newcombe_interval(both=59, only_a=16, only_b=6, neither=80)
    table = table_of(both=59, only_a=16, only_b=6, neither=80)
    assert table.delta == pytest.approx(-0.0621, abs=5e-5)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)
    assert table.interval() == (low, high)


def test_mcnemar_exact_matches_published_and_hand_worked_values() -> None:
    # Cavo example: the exact conditional McNemar p is 0.052
    # (Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91).
    assert mcnemar_exact(16, 6) == pytest.approx(0.0525, abs=5e-5)
    # The values worked for the team's published comparisons (users.md): 39 vs 10, and 16 vs 21.
    assert mcnemar_exact(10, 39) == pytest.approx(3.85e-5, rel=0.01)
    assert mcnemar_exact(21, 16) == pytest.approx(0.511, abs=5e-4)
    for only_a, only_b in [(0, 5), (1, 9), (3, 4), (7, 2), (0, 1), (12, 30)]:
        assert mcnemar_exact(only_a, only_b) == pytest.approx(binomial_two_sided(min(only_a, only_b), only_a + only_b))
    assert mcnemar_exact(0, 5) == 2 / 32  # all five discordant pairs one way: 2 x (1/2)^5
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_swapping_the_arms_mirrors_the_interval() -> None:
    low, high = newcombe_interval(10, 3, 9, 8)
    mirrored = newcombe_interval(10, 9, 3, 8)
    assert mirrored == pytest.approx((-high, -low))
    assert low < (9 - 3) / 30 < high


def test_concordant_tables_give_a_zero_difference_inside_bounds() -> None:
    low, high = newcombe_interval(5, 0, 0, 0)
    assert low == pytest.approx(-high) and 0 < high < 1
    assert newcombe_interval(0, 0, 0, 0) == (-1.0, 1.0)
    low, high = newcombe_interval(0, 0, 40, 0)  # B passed everything A failed: the difference is near +1
    assert 0.85 < low < high == 1.0


def test_arm_rates_carry_wilson_intervals() -> None:
    """103 of 157 has the Wilson 95% interval 57.9-72.6 the team published (users.md)."""
    table = table_of(both=103, only_a=0, only_b=0, neither=54)
    rate = table.rate_a
    assert (rate.successes, rate.n) == (103, 157)
    assert (round(rate.low * 100, 1), round(rate.high * 100, 1)) == (57.9, 72.6)
    assert table.p_value() == 1.0 and table.delta == 0


def test_table_cells_hold_naturally_sorted_keys() -> None:
    table = PairedTable.of({"search/s10": (True, False), "search/s2": (True, False), "search/s1": (False, True),
                            "search/s3": (True, True), "search/s4": (False, False)})
    assert table.only_a == ("search/s2", "search/s10")
    assert (table.both, table.only_b, table.neither) == (("search/s3",), ("search/s1",), ("search/s4",))
    data = table.to_dict()
    assert data["cells"]["only_a_passed"] == ["search/s2", "search/s10"]
    assert data["delta"] == pytest.approx(-1 / 5) and data["mcnemar_exact_p"] == pytest.approx(1.0)


def test_pattern_strings_and_counts() -> None:
    assert pattern(["passed", "passed", "failed"]) == "PPF"
    assert pattern(["passed", "failed", "error", None, "not_run"]) == "PFE.."
    counts = pattern_counts({"s1": "PPF", "s2": "PPP", "s3": "PPF", "s4": "PFE"})
    assert counts == [("PPF", 2, ("s1", "s3")), ("PFE", 1, ("s4",)), ("PPP", 1, ("s2",))]


def test_missing_scipy_names_the_analysis_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # makes "from scipy.stats import ..." fail
    with pytest.raises(AnalysisExtraMissing, match=r"pytest-gaia2\[analysis\]"):
        mcnemar_exact(1, 2)
    assert mcnemar_exact(0, 0) == 1.0  # nothing to test: no import needed


def test_the_sign_flip_test_is_mcnemars_with_one_repeat_and_counts_scenarios_with_more() -> None:
    from fractions import Fraction

    from pytest_gaia2.report.paired import SIGN_FLIP_EXACT_MAX, sign_flip_p

    for only_a, only_b in [(0, 5), (1, 9), (3, 4), (7, 2), (16, 6), (12, 30)]:
        signs = [Fraction(-1)] * only_a + [Fraction(1)] * only_b + [Fraction(0)] * 20
        assert sign_flip_p(signs) == pytest.approx(mcnemar_exact(only_a, only_b))
    # Two scenarios of +1/3 and one of -2/3: sums over the 8 sign patterns are 0, +-2/3, +-4/3 and
    # 0; |sum| >= 0 always, so p = 1; and +2/3, +2/3, +1/3: only the two all-same patterns reach 5/3.
    assert sign_flip_p([Fraction(1, 3), Fraction(1, 3), Fraction(-2, 3)]) == 1.0
    assert sign_flip_p([Fraction(2, 3), Fraction(2, 3), Fraction(1, 3)]) == pytest.approx(2 / 8)
    assert sign_flip_p([Fraction(0)] * 4) == 1.0
    # Past the exact limit the distribution is simulated with a fixed seed: the same answer each
    # time, and near the exact one (here both are the normal tail of a large symmetric sum).
    many = [Fraction(1, 32)] * 400 + [Fraction(-31, 32)] * 300 + [Fraction(17, 32)] * 100
    assert len(many) * (2 * sum(abs(int(v * 32)) for v in many) + 1) > SIGN_FLIP_EXACT_MAX
    assert sign_flip_p(many) == sign_flip_p(many)
    assert 0 < sign_flip_p(many) <= 1


def test_a_table_with_repeats_makes_the_scenario_the_unit() -> None:
    """3 repeats of 4 scenarios: B passed all of s1 and s2 where A failed, all agree elsewhere.
    Every repeat agrees, so the design effect is the full 3 and the interval is Newcombe's on the
    4 scenarios' effective counts with t on 3 df."""
    pairs = {f"s{i}/run_{run}": cell for i, cell in enumerate([(False, True), (False, True), (True, True),
                                                                (False, False)]) for run in (1, 2, 3)}
    table = PairedTable.of(pairs, {key: key.split("/")[0] for key in pairs})
    assert (table.n, table.scenarios, table.clustered, table.test) == (12, 4, True, "sign-flip-scenarios")
    assert table.design_effect == pytest.approx(3.0)
    assert table.p_value() == pytest.approx(mcnemar_exact(0, 2))  # 2 of 4 scenarios, both one way
    from pytest_gaia2.report.rates import t_quantile
    assert table.interval() == pytest.approx(newcombe_interval(1, 0, 2, 1, t_quantile(0.975, 3)))
    flat = PairedTable.of(pairs)  # no scenarios named: every key its own, as without repeats
    assert not flat.clustered and flat.interval() == newcombe_interval(3, 0, 6, 3)
