"""Projection before paying: run a stratified, seeded few first and project the whole run's cost
and time from them (``--gaia2-probe K``, ``--gaia2-probe-only``).

The probe is chosen from what will run (after -k, -m and the sample), the same way on every
xdist worker and on the controller, and put first in the run's order.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pytest_gaia2.plan import selection
from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.store.record import AttemptRecord

RESAMPLES = 2000
SEED = 20261201
Item = TypeVar("Item")


def choose(items: Sequence[PlannedItem], k: int, seed: int) -> set[str]:
    """The keys of a stratified, seeded sample of ``k`` scenarios (all their repeats)."""
    scenarios = list({item.scenario.scenario_id: item.scenario for item in items if item.scenario}.values())
    chosen = {scenario.scenario_id for scenario in selection.sample(scenarios, k, seed)}
    return {item.key for item in items if item.scenario and item.name in chosen}


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
        cost = (
            "cost unknown (the probe's cost could not be priced)"
            if self.usd is None
            else f"≈ ${self.usd:.2f} (95% interval ${self.low:.2f}–${self.high:.2f})"
        )
        line = (
            f"gaia2: probe of {self.probed}: the {self.planned} selected scenarios {cost} "
            f"and ≈ {wall_text(self.hours * 3600)} at -n {self.workers}"
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
    records: Iterable[AttemptRecord], planned: int, workers: int, halt: float | None = None, cap: float | None = None
) -> Projection:
    """N times the probe's mean cost, with a seeded bootstrap interval of that mean; time from
    the mean wall time spread over the workers."""
    records = list(records)
    costs = [record.cost_usd for record in records if record.cost_usd is not None]
    times = [record.wall_time_s for record in records if record.wall_time_s is not None]
    hours = statistics.fmean(times) * planned / max(1, workers) / 3600 if times else 0.0
    if not costs or len(costs) < len(records):
        return Projection(planned, len(records), None, None, None, hours, workers, halt, cap)
    rng = random.Random(SEED)
    means = sorted(statistics.fmean(rng.choices(costs, k=len(costs))) for _ in range(RESAMPLES))
    low, high = means[int(0.025 * RESAMPLES)], means[int(0.975 * RESAMPLES) - 1]
    usd = statistics.fmean(costs) * planned
    return Projection(planned, len(records), usd, low * planned, high * planned, hours, workers, halt, cap)
