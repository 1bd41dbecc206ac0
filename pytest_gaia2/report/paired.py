"""Paired statistics for runs of the same scenarios: the 2x2 table with its ids, the exact
McNemar test, Newcombe's interval for the difference, and N-way pattern strings.

Two runs of the same scenarios are matched pairs: an easy scenario tends to pass in both.
Comparing the two rates as if they came from independent samples ignores that and can make a
difference look real (or hide one); only the discordant pairs, passed in one run and not in
the other, carry information about the difference. Pure functions; scipy is imported only
when the McNemar p-value is asked for.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.report.rates import Z95, Rate, wilson
from pytest_gaia2.report.repeats import LETTER, MISSING_RUN
from pytest_gaia2.report.rows import natural_key

ANALYSIS_EXTRA = "pip install 'pytest-gaia2[analysis]'"


class AnalysisExtraMissing(RuntimeError):
    """A statistic needs a library of the ``analysis`` extra that is not installed."""


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact (conditional) McNemar p-value of ``only_a`` vs ``only_b`` discordant pairs.

    Under "no difference" each discordant pair goes either way with probability 1/2, so the
    B-only count is Binomial(only_a + only_b, 1/2) (McNemar 1947, Psychometrika 12:153; the exact
    form as in Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91). Exact rather than
    the chi-square because benchmark comparisons have few discordant pairs. 1.0 when there are none.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"mcnemar_exact: counts must be >= 0, got {only_a} and {only_b}")
    if only_a + only_b == 0:
        return 1.0
    try:
        from scipy.stats import binomtest
    except ImportError:
        raise AnalysisExtraMissing(f"the exact McNemar test needs scipy: {ANALYSIS_EXTRA}") from None
    return float(binomtest(only_b, only_a + only_b, 0.5).pvalue)


def newcombe_interval(both: int, only_a: int, only_b: int, neither: int, z: float = Z95) -> tuple[float, float]:
    """95% interval for p_B - p_A on matched pairs: Newcombe's square-and-add interval with
    Wilson limits for each margin and the phi correction for their correlation (Newcombe 1998,
    Stat Med 17:2635, method 10), one of the intervals Fagerland, Lydersen & Laake (2014, Stat Med
    33:2850) recommend for paired proportions. It stays inside -1..1 and behaves at small n and
    at 0% / 100%, like the Wilson intervals of the single rates. No pairs: ``(-1.0, 1.0)``.
    """
    n = both + only_a + only_b + neither
    if n == 0:
        return -1.0, 1.0
    passed_b, passed_a = both + only_b, both + only_a
    p_b, p_a = passed_b / n, passed_a / n
    low_b, high_b = wilson(passed_b, n, z)
    low_a, high_a = wilson(passed_a, n, z)
    margins = passed_b * (n - passed_b) * passed_a * (n - passed_a)
    cross = both * neither - only_b * only_a
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > n / 2 else cross) / math.sqrt(margins)
    below_b, above_a = p_b - low_b, high_a - p_a
    below_a, above_b = p_a - low_a, high_b - p_b
    delta = p_b - p_a
    low = delta - math.sqrt(max(0.0, below_b**2 - 2 * phi * below_b * above_a + above_a**2))
    high = delta + math.sqrt(max(0.0, below_a**2 - 2 * phi * below_a * above_b + above_b**2))
    return max(-1.0, low), min(1.0, high)


@dataclass(frozen=True)
class PairedTable:
    """The 2x2 table of matched pairs of arms A and B, each cell with its keys (naturally sorted).

    A pair is "passed" in an arm by whatever rule built the table (strict: passed vs anything
    else; judged-only: passed vs failed, on pairs judged in both arms).
    """

    both: tuple[str, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    neither: tuple[str, ...]

    @classmethod
    def of(cls, pairs: Mapping[str, tuple[bool, bool]]) -> PairedTable:
        """From ``key -> (passed in A, passed in B)``."""
        cells: dict[tuple[bool, bool], list[str]] = {(a, b): [] for a in (True, False) for b in (True, False)}
        for key in sorted(pairs, key=natural_key):
            cells[pairs[key]].append(key)
        return cls(*(tuple(cells[cell]) for cell in ((True, True), (True, False), (False, True), (False, False))))

    @property
    def n(self) -> int:
        return len(self.both) + len(self.only_a) + len(self.only_b) + len(self.neither)

    @property
    def rate_a(self) -> Rate:
        return Rate.of(len(self.both) + len(self.only_a), self.n)

    @property
    def rate_b(self) -> Rate:
        return Rate.of(len(self.both) + len(self.only_b), self.n)

    @property
    def delta(self) -> float | None:
        """p_B - p_A over the pairs (B better: positive); None without pairs."""
        return (len(self.only_b) - len(self.only_a)) / self.n if self.n else None

    def interval(self) -> tuple[float, float]:
        return newcombe_interval(len(self.both), len(self.only_a), len(self.only_b), len(self.neither))

    def p_value(self) -> float:
        return mcnemar_exact(len(self.only_a), len(self.only_b))

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval()
        return {
            "n": self.n,
            "cells": {
                "both_passed": list(self.both),
                "only_a_passed": list(self.only_a),
                "only_b_passed": list(self.only_b),
                "neither_passed": list(self.neither),
            },
            "rate_a": self.rate_a.to_dict(),
            "rate_b": self.rate_b.to_dict(),
            "delta": self.delta,
            "delta_low": low,
            "delta_high": high,
            "interval": "newcombe-paired",
            "mcnemar_exact_p": self.p_value(),
        }


def pattern(outcomes: Sequence[str | None]) -> str:
    """One letter per run, in the runs' order: ``P`` passed, ``F`` failed, ``E`` error, ``.`` no
    result (not run, or not in that run): ``PPF``, the form teams quote N-way comparisons in."""
    return "".join(LETTER.get(outcome or "", MISSING_RUN) for outcome in outcomes)


def pattern_counts(patterns: Mapping[str, str]) -> list[tuple[str, int, tuple[str, ...]]]:
    """(pattern, how many keys, which keys), the most common first, then by pattern."""
    counts = Counter(patterns.values())
    return [
        (shape, count, tuple(sorted((key for key, value in patterns.items() if value == shape), key=natural_key)))
        for shape, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
