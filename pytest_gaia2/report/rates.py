"""A proportion with its 95% interval, and the one way a rate is printed.

Intervals: Wilson 95% when every scenario contributes one result. With repeats
(``--gaia2-repeat K``) the K results of a scenario are not independent (an easy scenario
passes every time), so a Wilson interval over K x N results would be too narrow; every
rate over (scenario, run) pairs then gets a scenario-clustered percentile bootstrap
instead (:func:`cluster_bootstrap`).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from operator import itemgetter
from typing import Any, Literal

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20250101
"""Fixed, so the same records always give the same interval."""


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` out of ``n``.

    Wilson rather than the normal approximation because it stays inside 0..1 and is
    honest at small n and at 0% / 100%, which is where probes and smokes live.
    By convention ``n == 0`` gives ``(0.0, 1.0)``: nothing is known.
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


def cluster_bootstrap(
    clusters: Sequence[Cluster], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval for a rate over clustered results.

    Scenarios, not results, are drawn with replacement (``resamples`` times, from a
    ``random.Random(seed)``), because a scenario's repeats are correlated: the interval then
    reflects how much the rate depends on which scenarios were drawn. The statistic of a
    resample is the mean over strata of sum(successes) / sum(trials); with a single stratum
    that is the pooled rate, with one stratum per run it is avg@k. A resample without trials
    (only unjudged scenarios, for the judged-only rate) is left out.

    Like every percentile bootstrap it is optimistic with few scenarios; below two it says
    nothing, ``(0.0, 1.0)``, as ``wilson`` does for no trials.
    """
    if len(clusters) < 2:
        return 0.0, 1.0
    strata = range(len(clusters[0]))
    successes = [[cluster[stratum][0] for cluster in clusters] for stratum in strata]
    trials = [[cluster[stratum][1] for cluster in clusters] for stratum in strata]
    rng = random.Random(seed)
    indices = range(len(clusters))
    estimates = []
    for _ in range(resamples):
        pick = itemgetter(*rng.choices(indices, k=len(clusters)))
        rates = [sum(pick(successes[stratum])) / drawn for stratum in strata if (drawn := sum(pick(trials[stratum])))]
        if rates:
            estimates.append(statistics.fmean(rates))
    if len(estimates) < 2:
        return 0.0, 1.0
    cuts = statistics.quantiles(estimates, n=40, method="inclusive")  # 2.5% steps
    return cuts[0], cuts[-1]


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


IntervalMethod = Literal["wilson", "cluster-bootstrap"]


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
        """Pooled counts with a :func:`cluster_bootstrap` interval; ``value`` defaults to their ratio."""
        low, high = cluster_bootstrap(clusters)
        if value is None and n:
            value = successes / n
        return cls(successes, n, value, low, high, "cluster-bootstrap")

    def to_dict(self) -> dict[str, Any]:
        return {
            "successes": self.successes,
            "n": self.n,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "interval": self.method,
        }
