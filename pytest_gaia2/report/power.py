"""How many scenarios an answer needs: sample sizes for a paired gap and for one rate's interval.

Pure maths. The paired size starts from Connor's normal approximation for McNemar's test
(Connor 1987, Biometrics 43:207) and then steps to the smallest number of pairs at which the
*exact* conditional McNemar test, the one ``compare`` reports, reaches the asked power: the
exact test is conservative at small counts, so the approximation alone would promise power the
comparison does not have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

MAX_PAIRS = 100_000
"""Beyond this the answer is "not feasible": no benchmark has that many scenarios."""


def z_of(probability: float) -> float:
    """The standard normal quantile."""
    return NormalDist().inv_cdf(probability)


def _check(name: str, value: float, low: float, high: float, *, up_to: bool = False) -> None:
    if not (math.isfinite(value) and low < value and (value <= high if up_to else value < high)):
        raise ValueError(f"{name} must be above {low:g} and {'at most' if up_to else 'below'} {high:g}, got {value!r}")


def connor_pairs(gap: float, discordance: float, power: float = 0.8, alpha: float = 0.05) -> int:
    """Pairs for a two-sided McNemar test at ``alpha`` to detect ``gap`` = p_B - p_A with
    ``power``, when a fraction ``discordance`` of the pairs are discordant (Connor 1987):
    n = (z_{1-a/2} sqrt(psi) + z_{power} sqrt(psi - gap^2))^2 / gap^2, rounded up."""
    _check("gap", abs(gap), 0, 1, up_to=True)
    _check("power", power, 0, 1)
    _check("alpha", alpha, 0, 1)
    if not abs(gap) <= discordance <= 1:
        raise ValueError(f"discordance must be between |gap| ({abs(gap):g}) and 1, got {discordance!r}")
    root = z_of(1 - alpha / 2) * math.sqrt(discordance) + z_of(power) * math.sqrt(discordance - gap * gap)
    return math.ceil(root * root / (gap * gap) - 1e-9)


def exact_power(pairs: int, gap: float, discordance: float, alpha: float = 0.05) -> float:
    """Power of the two-sided exact McNemar test with ``pairs`` pairs: the discordant count D is
    Binomial(pairs, discordance); given D = d, B's wins are Binomial(d, (1 + gap/discordance)/2)
    and the test rejects when 2 x (the smaller tail at 1/2) <= alpha, as scipy's binomtest does
    for p = 1/2."""
    import numpy as np
    from scipy.stats import binom

    if pairs <= 0:
        return 0.0
    share = (1 + gap / discordance) / 2
    d = np.arange(pairs + 1)
    # the largest k with P(X <= k | d, 1/2) <= alpha/2 (-1 when none): the lower rejection edge
    k = binom.ppf(alpha / 2, d, 0.5).astype(int)
    k = np.where(binom.cdf(k, d, 0.5) <= alpha / 2, k, k - 1)
    reject = np.where(k >= 0, binom.cdf(k, d, share) + binom.sf(d - k - 1, d, share), 0.0)
    return float(np.sum(binom.pmf(d, pairs, discordance) * reject))


@dataclass(frozen=True)
class PairedPlan:
    """Pairs needed to detect a gap: the exact-test answer, and Connor's approximation beside it."""

    gap: float
    discordance: float
    power: float
    alpha: float
    pairs: int | None
    approximate: int
    achieved: float | None

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def paired_pairs(gap: float, discordance: float, power: float = 0.8, alpha: float = 0.05) -> PairedPlan:
    """The first number of pairs from Connor's estimate up at which the exact McNemar test has at
    least ``power`` (found in 2% steps, then one by one within the last step; the exact power
    saw-tooths, so a smaller n below Connor's may also reach it); ``pairs`` None past :data:`MAX_PAIRS`."""
    start = connor_pairs(gap, discordance, power, alpha)
    below, pairs = 0, max(1, start)
    while pairs <= MAX_PAIRS:
        if exact_power(pairs, gap, discordance, alpha) >= power:
            first = next(n for n in range(below + 1, pairs + 1) if exact_power(n, gap, discordance, alpha) >= power)
            return PairedPlan(gap, discordance, power, alpha, first, start, exact_power(first, gap, discordance, alpha))
        below, pairs = pairs, pairs + max(1, pairs // 50)
    return PairedPlan(gap, discordance, power, alpha, None, start, None)


def observed_pairs_needed(only_a: int, only_b: int, n: int, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """Pairs needed to detect the gap a comparison observed, with its observed discordance;
    None when there is no gap (or more than :data:`MAX_PAIRS` would be needed)."""
    if n <= 0 or only_a == only_b:
        return None
    return paired_pairs((only_b - only_a) / n, (only_a + only_b) / n, power, alpha).pairs


def rate_scenarios(half_width: float, rate: float = 0.5, confidence: float = 0.95) -> int:
    """Scenarios for a 95% interval of half-width at most ``half_width`` on one rate near ``rate``:
    n = z^2 p (1 - p) / W^2 rounded up (Cochran 1977, Sampling Techniques, eq. 4.2), with p = 1/2
    the worst case. (Wilson's interval is never wider than that normal one at p = 1/2.)"""
    _check("half-width", half_width, 0, 1)
    _check("confidence", confidence, 0, 1)
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be from 0 to 1, got {rate!r}")
    z = z_of(1 - (1 - confidence) / 2)
    spread = max(rate * (1 - rate), 1e-6)
    return max(1, math.ceil(z * z * spread / (half_width * half_width) - 1e-9))


def detectable_gap(pairs: int, discordance: float, power: float = 0.8, alpha: float = 0.05) -> float | None:
    """The smallest gap ``pairs`` pairs detect with at least ``power`` by the exact McNemar test at
    this discordance (bisection: the exact power rises with the gap); None when even a gap as
    large as the discordance is detected less often. Connor's approximation here said a gap at
    which the exact power is 77%, not 80%."""
    if pairs <= 0 or not 0 < discordance <= 1:
        return None
    if exact_power(pairs, discordance, discordance, alpha) < power:
        return None
    low, high = 0.0, discordance
    for _ in range(40):
        middle = (low + high) / 2
        if exact_power(pairs, middle, discordance, alpha) >= power:
            high = middle
        else:
            low = middle
    return high


def half_width(scenarios: int, rate: float = 0.5, confidence: float = 0.95) -> float | None:
    """The normal half-width of a rate's interval with ``scenarios`` (the inverse of :func:`rate_scenarios`)."""
    if scenarios <= 0:
        return None
    z = z_of(1 - (1 - confidence) / 2)
    return z * math.sqrt(max(rate * (1 - rate), 1e-6) / scenarios)
