"""A proportion with its 95% interval, and the one way a rate is printed.

Intervals: Wilson 95% when every scenario contributes one result. With repeats
(``--gaia2-repeat K``) the K results of a scenario are not independent (an easy scenario
passes every time), so a Wilson interval over K x N results would be too narrow; every
rate over (scenario, run) pairs then gets a scenario-clustered Wilson interval instead
(:func:`clustered_wilson`), at the effective sample size.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from pytest_gaia2.report.t_table import T_975

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``n``.

    Wilson rather than the normal approximation because it stays inside 0..1 and is
    honest at small n and at 0% / 100%, which is where probes and smokes live.
    By convention ``n == 0`` gives ``(0.0, 1.0)``: nothing is known. The counts may be
    fractions: the effective counts of a clustered rate (:func:`clustered_wilson`).
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson: need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


Cluster = Sequence[tuple[int, int]]
"""One scenario's results: (successes, trials) per stratum (per run for avg@k, else one)."""


def t_quantile(probability: float, df: int) -> float:
    """Student's t quantile (scipy's), for the small-sample intervals over scenarios and universes.
    The 95% intervals' quantile comes from :data:`~pytest_gaia2.report.t_table.T_975` (scipy's
    values, written by ``scripts/gen_t_table.py``) up to its size: loading scipy at the end of a
    run cost the controller half a second of CPU and 50 MB, while the xdist workers still live.
    ``scipy.special.stdtrit`` (``scipy.stats.t.ppf`` without loading scipy.stats) answers the rest."""
    if df < 1 or not 0.5 <= probability < 1:
        raise ValueError(f"t_quantile: need df >= 1 and 0.5 <= probability < 1, got {df} and {probability}")
    if probability == 0.975 and df <= len(T_975):
        return T_975[df - 1]
    from scipy.special import stdtrit

    return float(stdtrit(df, probability))


def design_effect(sums: Sequence[float], trials: Sequence[int], per_trial_variance: float) -> float:
    """How many times the variance of a mean over clustered trials exceeds that of as many
    independent trials: the cluster-robust variance with the small-sample factor G / (G - 1)
    (CR1) over ``per_trial_variance`` / N, clipped to 1 (never narrower than independent) and to
    the trials-weighted mean cluster size (a scenario's repeats can at most all agree).
    ``sums`` are each cluster's residual sum (its values minus the estimate, summed over its
    trials). With no independent variance to compare with (0% or 100%, or no disagreement) it is
    that largest value: the scenarios alone count."""
    n, clusters = sum(trials), len(trials)
    largest = sum(count * count for count in trials) / n if n else 1.0
    if clusters < 2 or per_trial_variance <= 0:
        return largest
    robust = clusters / (clusters - 1) * sum(residual * residual for residual in sums) / (n * n)
    return min(largest, max(1.0, robust / (per_trial_variance / n)))


def clustered_wilson(clusters: Sequence[Cluster], confidence: float = 0.95) -> tuple[float, float, float]:
    """A 95% interval for a rate over results clustered by scenario, and its design effect.

    A scenario's repeats are correlated (an easy scenario passes every time), so K x N results
    carry less than K x N independent ones. The Wilson interval is taken at the effective sample
    size N / deff, with the design effect from the cluster-robust (CR1) variance, and Student's
    t with G - 1 degrees of freedom (G scenarios) in place of the normal quantile, as Korn and
    Graubard (1998, Survey Methodology 24:193) do for survey proportions; the Wilson form keeps
    it inside 0..1 and never of zero width at 0% or 100% (there the scenarios alone count, as if
    their repeats all agreed). With one result per scenario it is exactly Wilson's interval.
    Fewer than two scenarios say nothing about the others: ``(0.0, 1.0)``.
    """
    pooled = [(sum(s for s, _ in cluster), sum(t for _, t in cluster)) for cluster in clusters]
    pooled = [(s, t) for s, t in pooled if t]
    n = sum(t for _, t in pooled)
    if len(pooled) < 2:
        return 0.0, 1.0, 1.0
    p = sum(s for s, _ in pooled) / n
    deff = design_effect([s - p * t for s, t in pooled], [t for _, t in pooled], p * (1 - p))
    if all(t == 1 for _, t in pooled):
        low, high = wilson(sum(s for s, _ in pooled), n, z_of_confidence(confidence))
        return low, high, 1.0
    effective = n / deff
    low, high = wilson(p * effective, effective, t_quantile(1 - (1 - confidence) / 2, len(pooled) - 1))
    return low, high, deff


def z_of_confidence(confidence: float) -> float:
    """The two-sided normal quantile of a confidence level (Z95 at 0.95)."""
    return Z95 if confidence == 0.95 else statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def percent_number(fraction: float) -> str:
    """``0.8375`` as ``83.8``: one decimal, halves rounded up as people do by hand.

    Also used for differences in percentage points. The 9-decimal detour absorbs binary
    noise (3/80 is stored as 0.037499…) before rounding.
    """
    return str(Decimal(f"{fraction * 100:.9f}").quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def percent(fraction: float) -> str:
    """``0.8375`` as ``83.8%``, the one way every report shows a rate."""
    return f"{percent_number(fraction)}%"


def counted(number: int, noun: str) -> str:
    """``1 error``, ``3 errors``: a count with its noun, as every line of a report says it."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


IntervalMethod = Literal["wilson", "clustered-wilson"]


@dataclass(frozen=True)
class Rate:
    """A proportion with its 95% interval; ``value`` is None when ``n`` is 0.

    ``successes``/``n`` are the pooled counts; ``value`` is their ratio, except for avg@k
    (the mean of the per-run rates). ``method`` says how the interval was made.
    """

    successes: int
    n: int
    value: float | None
    low: float
    high: float
    method: IntervalMethod = "wilson"

    @classmethod
    def of(cls, successes: int, n: int) -> Rate:
        low, high = wilson(successes, n)
        return cls(successes, n, successes / n if n else None, low, high)

    @classmethod
    def clustered(cls, successes: int, n: int, clusters: Sequence[Cluster], value: float | None = None) -> Rate:
        """Pooled counts with a :func:`clustered_wilson` interval; ``value`` defaults to their ratio."""
        low, high, _ = clustered_wilson(clusters)
        if value is None and n:
            value = successes / n
        return cls(successes, n, value, low, high, "clustered-wilson")

    def to_dict(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "n": self.n,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "interval": self.method,
        }
