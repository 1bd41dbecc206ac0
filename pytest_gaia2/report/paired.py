"""Paired statistics for runs of the same scenarios: the 2x2 table with its ids, the exact
McNemar test, Newcombe's interval for the difference, their scenario-level forms for repeats,
one answer (which way, how sure) and N-way pattern strings.

Two runs of the same scenarios are matched pairs: an easy scenario tends to pass in both.
Comparing the two rates as if they came from independent samples ignores that and can make a
difference look real (or hide one); only the discordant pairs, passed in one run and not in
the other, carry information about the difference.

The scenario is the unit. With ``--gaia2-repeat K`` a scenario's K pairs are not K independent
pairs (a scenario one agent solves and the other does not tends to go that way every time), so
the test and the interval work on scenarios: the test is the exact sign-flip randomization test
of the per-scenario differences of pass fractions (with one repeat it is exactly McNemar's exact
test), the interval Newcombe's at the effective number of pairs (the design effect of the
scenarios, CR1) with Student's t on G - 1 degrees of freedom. Pure functions; scipy and numpy
are imported only when a p-value or a t interval is asked for.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_gaia2.report.rates import Rate, design_effect, t_quantile, wilson, z_of_confidence
from pytest_gaia2.report.repeats import LETTER, MISSING_RUN
from pytest_gaia2.report.rows import natural_key

if TYPE_CHECKING:
    from fractions import Fraction


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
    from scipy.stats import binomtest

    return float(binomtest(only_b, only_a + only_b, 0.5).pvalue)


SIGN_FLIP_EXACT_MAX = 2_000_000
"""The exact sign-flip distribution is worked out while (scenarios) x (the sum's range) stays
below this; past it (hundreds of scenarios with mixed repeat counts) it is simulated."""
SIGN_FLIP_DRAWS = 20_000
SIGN_FLIP_CHUNK = 1000
SIGN_FLIP_SEED = 20260105
"""Fixed, so the same verdicts always give the same p-value."""


def _numpy() -> Any:
    import numpy

    return numpy


def sign_flip_p(differences: Sequence[Fraction]) -> float:
    """Two-sided p-value of the exact sign-flip randomization test of per-scenario differences.

    Under "no difference" the two runs of a scenario are exchangeable, so each scenario's
    difference is as likely with either sign (Fisher 1935, The Design of Experiments, ch. 21; the
    paired permutation test of Good 2005, Permutation Tests, 3rd ed., sec. 3.6.2): the p-value is
    the share of the 2^G sign patterns whose sum is at least as far from 0 as the one observed.
    With differences of -1, 0 and +1 (one repeat) it is exactly McNemar's exact p-value. The
    distribution is counted exactly on the differences' common denominator; simulated with a
    fixed seed when that would be too large. 1.0 when every difference is 0.
    """
    nonzero = [value for value in differences if value != 0]
    if not nonzero:
        return 1.0
    np = _numpy()
    scale = math.lcm(*(value.denominator for value in nonzero))
    steps = [abs(int(value * scale)) for value in nonzero]
    observed = abs(sum(int(value * scale) for value in nonzero))
    reach = sum(steps)
    if len(steps) * (2 * reach + 1) <= SIGN_FLIP_EXACT_MAX:
        counts = np.zeros(2 * reach + 1)
        counts[reach] = 1.0
        for step in steps:
            counts = (np.roll(counts, step) + np.roll(counts, -step)) / 2  # the sum never wraps: reach bounds it
        sums = np.abs(np.arange(-reach, reach + 1))
        return float(min(1.0, counts[sums >= observed].sum()))
    rng = np.random.default_rng(SIGN_FLIP_SEED)
    weights, at_least = np.array(steps), 0
    for _ in range(SIGN_FLIP_DRAWS // SIGN_FLIP_CHUNK):  # in chunks: 800 scenarios x 20,000 draws at once is 128 MB
        signs = rng.choice((-1, 1), size=(SIGN_FLIP_CHUNK, len(steps)))
        at_least += int(np.count_nonzero(np.abs(signs @ weights) >= observed))
    return (1 + at_least) / (1 + SIGN_FLIP_DRAWS)


def newcombe_interval(
    both: float, only_a: float, only_b: float, neither: float, z: float = z_of_confidence(0.95)
) -> tuple[float, float]:
    """95% interval for p_B - p_A on matched pairs: Newcombe's square-and-add interval with
    Wilson limits for each margin and the phi correction for their correlation (Newcombe 1998,
    Stat Med 17:2635, method 10), one of the intervals Fagerland, Lydersen & Laake (2014, Stat Med
    33:2850) recommend for paired proportions. It stays inside -1..1 and behaves at small n and
    at 0% / 100%, like the Wilson intervals of the single rates. No pairs: ``(-1.0, 1.0)``. The
    counts may be fractions: the effective counts of :meth:`PairedTable.interval` with repeats.
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
    if margins <= 0 or 0 <= cross <= n / 2:
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
    else; judged-only: passed vs failed, on pairs judged in both arms). ``scenario`` names each
    key's scenario (the repeats of one scenario are one unit); a key without one is its own.
    """

    both: tuple[str, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    neither: tuple[str, ...]
    scenario: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Mapping[str, tuple[bool, bool]], scenario: Mapping[str, str] | None = None) -> PairedTable:
        """From ``key -> (passed in A, passed in B)``, and each key's scenario when it has repeats."""
        cells: dict[tuple[bool, bool], list[str]] = {(a, b): [] for a in (True, False) for b in (True, False)}
        for key in sorted(pairs, key=natural_key):
            cells[pairs[key]].append(key)
        grouped = {key: (scenario or {}).get(key, key) for key in pairs}
        both, only_a, only_b, neither = (
            tuple(cells[cell]) for cell in ((True, True), (True, False), (False, True), (False, False))
        )
        return cls(both, only_a, only_b, neither, grouped)

    def _clusters(self) -> dict[str, list[int]]:
        """Each scenario's pairs and its sum of (B passed - A passed), in scenario order."""
        sums: dict[str, list[int]] = {}
        for keys, move in ((self.both, 0), (self.only_a, -1), (self.only_b, 1), (self.neither, 0)):
            for key in keys:
                tally = sums.setdefault(self.scenario.get(key, key), [0, 0])
                tally[0] += 1
                tally[1] += move
        return {name: sums[name] for name in sorted(sums, key=natural_key)}

    @property
    def scenarios(self) -> int:
        return len(self._clusters())

    @property
    def clustered(self) -> bool:
        """Whether some scenario has more than one pair (repeats): then the scenario is the unit."""
        return self.scenarios < self.n

    def scenario_names(self) -> list[str]:
        """The scenarios in the order of :meth:`differences`."""
        return list(self._clusters())

    def differences(self) -> list[Fraction]:
        """Each scenario's B pass fraction minus A's over its pairs (scenario order)."""
        from fractions import Fraction

        return [Fraction(total, pairs) for pairs, total in self._clusters().values()]

    @property
    def design_effect(self) -> float:
        """How many times a scenario's repeats inflate the variance of the gap over independent
        pairs (1 without repeats): :func:`~pytest_gaia2.report.rates.design_effect` of the
        per-scenario sums, against the variance of one pair, discordance - gap^2."""
        if not self.clustered:
            return 1.0
        delta = self.delta or 0.0
        discordance = (len(self.only_a) + len(self.only_b)) / self.n
        clusters = list(self._clusters().values())
        return design_effect(
            [total - delta * pairs for pairs, total in clusters],
            [pairs for pairs, _ in clusters],
            discordance - delta**2,
        )

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

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Newcombe's paired interval; with repeats, at the effective number of pairs (n over the
        design effect) and Student's t on G - 1 degrees of freedom for G scenarios."""
        both, only_a, only_b, neither = len(self.both), len(self.only_a), len(self.only_b), len(self.neither)
        if not self.clustered:
            return newcombe_interval(both, only_a, only_b, neither, z_of_confidence(confidence))
        if self.scenarios < 2:
            return -1.0, 1.0
        shrink = 1 / self.design_effect
        quantile = t_quantile(1 - (1 - confidence) / 2, self.scenarios - 1)
        return newcombe_interval(both * shrink, only_a * shrink, only_b * shrink, neither * shrink, quantile)

    @property
    def test(self) -> str:
        return "sign-flip-scenarios" if self.clustered else "mcnemar-exact"

    def p_value(self) -> float:
        """Exact McNemar without repeats; with them, the sign-flip test over scenarios."""
        if not self.clustered:
            return mcnemar_exact(len(self.only_a), len(self.only_b))
        return sign_flip_p(self.differences())

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval()
        p = self.p_value()
        return {
            "n": self.n,
            "scenarios": self.scenarios,
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
            "interval": "newcombe-paired-scenario-clustered" if self.clustered else "newcombe-paired",
            "design_effect": self.design_effect,
            "test": self.test,
            "p_value": p,
            "mcnemar_exact_p": None if self.clustered else p,
        }


Rule = Literal["interval", "p-value"]
"""What says "better" or "worse": the interval leaving out 0 (the default), or the p-value."""


@dataclass(frozen=True)
class Answer:
    """One comparison's answer: the gap (B - A), its interval, the p-value and which way it goes.

    The sentence, the table's line and ``--fail-if-worse`` all read this one object, so they
    cannot disagree. ``direction`` is None when the evidence does not say (it could be chance).
    """

    delta: float | None
    low: float
    high: float
    p: float
    confidence: float
    direction: str | None
    method: str
    test: str
    decision: Any = None
    """The sequential test's :class:`~pytest_gaia2.report.sequential.Decision`, when it decided."""

    @property
    def sequential(self) -> bool:
        return self.method == "confidence-sequence"

    def to_dict(self) -> dict[str, Any]:
        return {
            "delta": self.delta,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "p_value": self.p,
            "direction": self.direction,
            "interval": self.method,
            "test": self.test,
            "decision": None if self.decision is None else self.decision.to_dict(),
        }


def answer(table: PairedTable, alpha: float, rule: Rule = "interval") -> Answer:
    """The fixed-sample answer of a table: its interval at confidence 1 - ``alpha`` and its
    p-value; the direction by ``rule`` (the interval leaving out 0, or p below ``alpha``)."""
    low, high = table.interval(1 - alpha)
    p = table.p_value()
    delta = table.delta
    if delta is None or delta == 0:
        direction = None
    elif rule == "interval":
        direction = "better" if low > 0 else "worse" if high < 0 else None
    else:
        direction = ("better" if delta > 0 else "worse") if p < alpha else None
    method = "newcombe-paired-scenario-clustered" if table.clustered else "newcombe-paired"
    return Answer(delta, low, high, p, 1 - alpha, direction, method, table.test)


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
