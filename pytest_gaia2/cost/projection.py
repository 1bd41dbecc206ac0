"""Projection before paying: run a stratified, seeded few first and project the whole run's cost
and time from them (``--gaia2-probe K``, ``--gaia2-probe-only``).

The probe is chosen from what will run (after -k, -m and the sample) by the plan
(:func:`pytest_gaia2.plan.items.probe_keys`), the same way on every xdist worker and on the
controller, and put first in the run's order.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_gaia2.store.record import AttemptRecord

DRAWS = 100_000
SEED = 20261201
FEWEST = 3
"""Positive values an interval needs: from 2, the log-scale spread has one degree of freedom and
the upper bound runs to 10^19 times the mean (true, and of no use)."""
Item = TypeVar("Item")


def predict_total(values: Sequence[float], count: int, seed: int = SEED) -> tuple[float, float | None, float | None]:
    """The total of ``count`` new scenarios like the observed ``values`` (costs or seconds, skewed
    and never negative): the estimate count x their mean, and a 95% prediction interval, None from
    fewer than :data:`FEWEST` positive values.

    The interval is a generalized pivotal (fiducial) one for a log-normal (Krishnamoorthy and
    Mathew 2003, J. Stat. Plan. Inference 115:103), which keeps its coverage with 5 to 10 skewed
    values where a bootstrap of the mean covers 60-85%: each of :data:`DRAWS` seeded draws takes
    the log-scale spread from its chi-square pivot and the log-scale mean from its t-like one,
    then the total of ``count`` costs from that log-normal, so both the unknown mean and the spread
    of single scenarios are in it. Values of exactly 0 (a scenario that made no model call) are a
    share of their own, drawn from its Jeffreys Beta.
    """
    import numpy as np

    observed = np.asarray(values, dtype=float)
    if count < 0 or not observed.size or not np.all(np.isfinite(observed) & (observed >= 0)):
        raise ValueError("predict_total needs observed values >= 0 and a count >= 0")
    estimate = count * float(observed.mean())
    logs = np.log(observed[observed > 0])
    if count == 0:
        return 0.0, 0.0, 0.0
    if logs.size < FEWEST:
        return estimate, None, None
    rng = np.random.default_rng(seed)
    zeros, positive = observed.size - logs.size, logs.size
    variance = (positive - 1) * logs.var(ddof=1) / rng.chisquare(positive - 1, DRAWS)
    centre = logs.mean() - rng.standard_normal(DRAWS) * np.sqrt(variance / positive)
    share = rng.beta(zeros + 0.5, positive + 0.5, DRAWS) if zeros else np.zeros(DRAWS)
    paid = rng.binomial(count, 1 - share)
    with np.errstate(divide="ignore", over="ignore"):  # log(0) for one cost; e^huge is no bound: said below
        logs = _log_totals(rng, centre, variance, paid)
        low, high = np.exp(np.quantile(logs, [0.025, 0.975], method="inverted_cdf"))
    return (estimate, float(low), float(high)) if math.isfinite(high) else (estimate, None, None)


def _log_totals(rng: Any, centre: Any, variance: Any, paid: Any) -> Any:
    """Each draw's total of ``paid`` costs from its log-normal, on the log scale (-inf for none):
    a sum of log-normals taken as the log-normal of the same mean and variance (Fenton and
    Wilkinson 1960), so each total is one draw and the quantiles come from many at any count.
    The sum's log-scale variance log(1 + (e^v - 1)/m) is computed as log(m - 1 + e^v) - log(m),
    which holds for a drawn v past what e^v can hold."""
    import numpy as np

    many = np.maximum(paid, 1)
    spread = np.maximum(0.0, np.logaddexp(np.log(many - 1.0), variance) - np.log(many))  # never -1e-16
    logs = np.log(many) + centre + variance / 2 - spread / 2 + np.sqrt(spread) * rng.standard_normal(DRAWS)
    return np.where(paid > 0, logs, -np.inf)


def probe_first(items: list[Item], keys: set[str], key_of: dict[int, str]) -> list[Item]:
    """The same items, the probe's first, each group in its own order."""
    return sorted(items, key=lambda item: key_of.get(id(item)) not in keys)


@dataclass(frozen=True)
class Projection:
    """The whole run's cost and time, projected from the probe."""

    planned: int
    probed: int
    usd: float | None
    low: float | None
    high: float | None
    hours: float
    workers: int
    halt: float | None = None
    cap: float | None = None
    chosen: int | None = None
    """The probe's size as chosen; more than ``probed`` when the run stopped before the probe ended."""
    in_flight: int = 1
    """``--gaia2-in-flight``: each worker's scenarios at a time."""

    def reach(self) -> tuple[str, int, int, int] | None:
        """How many of the planned scenarios the budget is expected to complete: (the limit that
        binds, the number, and its 95% interval from the mean cost's), None without a budget or
        a price. Under a halt the scenario that crosses it still finishes (ceil); under a cap it
        is stopped (floor)."""
        if self.usd is None or self.low is None or self.high is None or not self.planned:
            return None
        found = [
            (name, _fits(self.usd, self.planned, limit, up), _fits(self.high, self.planned, limit, up),
             _fits(self.low, self.planned, limit, up))
            for name, limit, up in (("halt", self.halt, True), ("cap", self.cap, False))
            if limit is not None
        ]  # fmt: skip
        return min(found, key=lambda item: item[1]) if found else None

    def line(self) -> str:
        if self.usd is None:
            cost = "cost unknown (the probe's cost could not be priced)"
        elif self.low is None or self.high is None:
            cost = f"≈ ${self.usd:.2f} (no interval from fewer than {FEWEST} scenarios with a cost)"
        else:
            cost = f"≈ ${self.usd:.2f} (95% interval ${self.low:.2f}–${self.high:.2f})"
        probe = (
            f"{self.probed} of {self.chosen} (cut short: the run stopped before the rest)"
            if self.chosen is not None and self.probed < self.chosen
            else str(self.probed)
        )
        line = (
            f"gaia2: probe of {probe}: the {self.planned} selected scenarios {cost} "
            f"and ≈ {wall_text(self.hours * 3600)} at -n {self.workers}"
            f"{f' x {self.in_flight} in flight' if self.in_flight > 1 else ''}"
        )
        reach = self.reach()
        if reach is None:
            return line
        name, fits, low, high = reach
        limit = self.halt if name == "halt" else self.cap
        return (
            f"{line}; the {name} (${limit:.2f}) is expected to complete {fits} of the {self.planned} "
            f"(95% interval {low}–{high})"
        )

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def wall_text(seconds: float) -> str:
    """An estimated wall time in the unit a person plans with: ``40 s``, ``12 min``, ``6.5 h``
    (never ``0.01 h``)."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _fits(total: float, planned: int, limit: float, up: bool) -> int:
    """Scenarios of mean cost ``total / planned`` that ``limit`` pays for, at most ``planned``."""
    per = total / planned
    if per <= 0 or limit / per >= planned:  # also a tiny cost from a summary.json: no infinite ceil
        return planned
    return min(planned, math.ceil(limit / per) if up else math.floor(limit / per))


def project(
    records: Iterable[AttemptRecord],
    planned: int,
    workers: int,
    halt: float | None = None,
    cap: float | None = None,
    chosen: int | None = None,
    in_flight: int = 1,
) -> Projection:
    """The probe's own cost plus :func:`predict_total` of the planned scenarios it did not run;
    time from the mean wall time spread over the scenarios at a time (workers x in flight).
    ``chosen`` is the probe's size when fewer of it ran (the run stopped first): the projection
    is then from what was measured."""
    records = list(records)
    costs = [record.cost_usd for record in records if record.cost_usd is not None]
    times = [record.wall_time_s for record in records if record.wall_time_s is not None]
    hours = statistics.fmean(times) * planned / max(1, workers * in_flight) / 3600 if times else 0.0
    chosen = chosen if chosen is not None and chosen > len(records) else None
    if not costs or len(costs) < len(records):
        return Projection(planned, len(records), None, None, None, hours, workers, halt, cap, chosen, in_flight)
    rest, low, high = predict_total(costs, max(0, planned - len(costs)))
    known = math.fsum(costs)
    return Projection(
        planned,
        len(records),
        known + rest,
        None if low is None else known + low,
        None if high is None else known + high,
        hours,
        workers,
        halt,
        cap,
        chosen,
        in_flight,
    )
