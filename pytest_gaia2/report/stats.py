"""Pass rates per run, split and universe, errors and timing, computed from result records.

Pure functions over the per-scenario result records (``result.json`` / ``results.jsonl``
rows), so the numbers a team publishes can be re-derived from saved results alone and
tested without pytest, Docker or files. Intervals come from :mod:`rates`, the pass@k view
of repeated runs from :mod:`repeats`, the CI gate's verdict on a summary from :mod:`gate`.

Two denominators are always reported, because teams publish both: **strict** counts an
infrastructure error as not passed (passes / all), **judged-only** leaves errors out
(passes / (passed + failed)). Given the run's plan, strict divides by what was *planned*:
a scenario that never ran counts as not passed, so an interrupted run cannot look better
than a finished one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.report.rates import Cluster, Rate, t_quantile, wilson
from pytest_gaia2.report.repeats import RepeatStats, repeat_stats
from pytest_gaia2.report.rows import (
    NOT_RUN,
    ResultRow,
    latest_rows,
    natural_key,
    not_run_rows,
    planned_keys,
    split_order,
)


@dataclass(frozen=True)
class GroupStats:
    """Counts and both rates for one slice of the run (everything, one split, one universe).

    ``total`` counts results; ``not_run`` the planned ones without a result, which the
    strict rate counts as not passed (its ``n`` is ``total + not_run``).
    """

    name: str
    total: int
    passed: int
    failed: int
    errors: int
    not_run: int
    reused: int
    strict: Rate
    judged: Rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "not_run_count": self.not_run,
            "reused": self.reused,
            "strict": self.strict.to_dict(),
            "judged": self.judged.to_dict(),
        }


def _clusters(rows: Sequence[ResultRow], judged: bool) -> list[Cluster]:
    """One single-stratum cluster per scenario: (passes, results counted by the rate)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        tally = counts.setdefault((row.split, row.scenario_id), [0, 0])
        tally[0] += row.outcome == "passed"
        tally[1] += (row.outcome in ("passed", "failed")) if judged else 1
    return [[(passes, trials)] for (passes, trials) in (counts[key] for key in sorted(counts))]


def _tally(name: str, rows: Sequence[ResultRow], clustered: bool) -> GroupStats:
    """Counts and rates; ``clustered`` (repeats) swaps Wilson for the scenario-clustered Wilson."""
    passed = sum(row.outcome == "passed" for row in rows)
    failed = sum(row.outcome == "failed" for row in rows)
    not_run = sum(row.outcome == NOT_RUN for row in rows)
    if clustered:
        strict = Rate.clustered(passed, len(rows), _clusters(rows, judged=False))
        judged = Rate.clustered(passed, passed + failed, _clusters(rows, judged=True))
    else:
        strict, judged = Rate.of(passed, len(rows)), Rate.of(passed, passed + failed)
    return GroupStats(
        name=name,
        total=len(rows) - not_run,
        passed=passed,
        failed=failed,
        errors=len(rows) - not_run - passed - failed,
        not_run=not_run,
        reused=sum(row.reused for row in rows),
        strict=strict,
        judged=judged,
    )


def _by(
    rows: Sequence[ResultRow], key: Callable[[ResultRow], str], order: Callable[[str], Any], clustered: bool
) -> tuple[GroupStats, ...]:
    groups: dict[str, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return tuple(_tally(name, groups[name], clustered) for name in sorted(groups, key=order))


def cluster_robust(successes: Sequence[int], trials: Sequence[int]) -> tuple[float, float, float, float | None]:
    """A rate over clustered results with a cluster-robust 95% interval: (rate, low, high, design effect).

    The pooled rate p = sum(successes) / n with the CR1 variance G / (G - 1) x sum over the G
    clusters of (successes - trials x p)^2 / n^2 (the cluster-robust "sandwich" of Liang and Zeger
    1986 with Stata's small-sample factor) and Student's t with G - 1 degrees of freedom, as
    Cameron and Miller (2015, J. Human Resources 50:317, section VI) advise for few clusters: the
    normal quantile with CR0 covers 60% at 2 clusters and 83% at 5. The interval is never narrower
    than Wilson's over the n results, because a cluster cannot make its results more informative
    than independent ones; that also keeps it open at 0% and 100%, where every residual is 0.

    The design effect is the CR1 variance over the unbiased independent one, p (1 - p) / (n - 1),
    so it averages 1 when clusters do not matter; None when p is 0 or 1 (no spread to compare).
    Needs at least 2 clusters and 2 results.
    """
    clusters, n = len(trials), sum(trials)
    if clusters < 2 or n < 2 or len(successes) != clusters:
        raise ValueError(f"cluster_robust: need 2 or more clusters and results, got {clusters} and {n}")
    p = sum(successes) / n
    residuals = sum((passed - count * p) ** 2 for passed, count in zip(successes, trials, strict=True))
    variance = clusters / (clusters - 1) * residuals / (n * n)
    half = t_quantile(0.975, clusters - 1) * math.sqrt(variance)
    low, high = wilson(sum(successes), n)
    independent = p * (1 - p) / (n - 1)
    return (
        p,
        max(0.0, min(low, p - half)),
        min(1.0, max(high, p + half)),
        variance / independent if independent else None,
    )


@dataclass(frozen=True)
class UniverseClustered:
    """A rate's 95% interval with universes as clusters, beside the Wilson (or scenario) interval.

    Scenarios of one universe share apps and data, so they pass or fail together more than
    independent draws would; treating them as independent makes the interval too narrow. The
    interval is :func:`cluster_robust`'s (CR1 with t on universes - 1 degrees of freedom,
    never narrower than Wilson's). The design effect is how many times clustering inflates the
    variance (1: the universes do not matter; 2: half the scenarios' information).
    """

    clusters: int
    n: int
    value: float
    low: float
    high: float
    design_effect: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusters": self.clusters,
            "n": self.n,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "design_effect": self.design_effect,
            "interval": "universe-clustered",
        }


def universe_clustered(rows: Sequence[ResultRow], judged: bool) -> UniverseClustered | None:
    """The universe-clustered interval of the strict (or judged-only) rate; None with fewer than
    two universes or two counted results."""
    counted = [row for row in rows if not judged or row.outcome in ("passed", "failed")]
    tallies: dict[str, list[int]] = {}
    for row in counted:
        tally = tallies.setdefault(row.universe, [0, 0])
        tally[0] += row.outcome == "passed"
        tally[1] += 1
    if len(tallies) < 2 or len(counted) < 2:
        return None
    value, low, high, design = cluster_robust(*zip(*tallies.values(), strict=True))
    return UniverseClustered(len(tallies), len(counted), value, low, high, design)


@dataclass(frozen=True)
class ErrorGroup:
    """Infrastructure errors of one category; ``count`` counts (scenario, run) pairs."""

    category: str
    count: int
    ids: tuple[str, ...]


def _error_groups(rows: Sequence[ResultRow]) -> tuple[ErrorGroup, ...]:
    ids: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        if row.outcome == "error":
            ids.setdefault(row.error_category, set()).add(row.scenario_id)
            counts[row.error_category] = counts.get(row.error_category, 0) + 1
    ordered = sorted(counts, key=lambda category: (-counts[category], category))
    return tuple(
        ErrorGroup(category, counts[category], tuple(sorted(ids[category], key=natural_key))) for category in ordered
    )


@dataclass(frozen=True)
class Timing:
    """Where the hours went: median and slowest wall time, agent events per scenario."""

    wall_median_s: float | None
    slowest_id: str | None
    slowest_s: float | None
    events_mean: float | None
    events_median: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_time_median_s": self.wall_median_s,
            "slowest": None if self.slowest_id is None else {"scenario_id": self.slowest_id, "seconds": self.slowest_s},
            "events_mean": self.events_mean,
            "events_median": self.events_median,
        }


def _timing(rows: Sequence[ResultRow]) -> Timing:
    """Over every counted verdict that recorded the figure (reused ones keep their old time)."""
    timed = [row for row in rows if row.wall_time_s is not None]
    seconds = [row.wall_time_s for row in rows if row.wall_time_s is not None]
    events = [row.events for row in rows if row.events is not None]
    slowest = max(timed, key=lambda row: row.wall_time_s or 0.0) if timed else None
    return Timing(
        wall_median_s=statistics.median(seconds) if seconds else None,
        slowest_id=slowest.scenario_id if slowest else None,
        slowest_s=slowest.wall_time_s if slowest else None,
        events_mean=statistics.fmean(events) if events else None,
        events_median=statistics.median(events) if events else None,
    )


@dataclass(frozen=True)
class Summary:
    """Everything the end-of-run report and summary.json say about a run.

    With k > 1 repeats every count and rate in ``overall``, ``splits`` and ``universes``
    is over (scenario, run) pairs, with scenario-clustered intervals; ``repeats`` then holds
    the per-scenario pass@k view. ``planned``, ``done`` and ``not_run`` count planned
    (scenario, run) keys; without a plan, every result is planned and done.
    """

    overall: GroupStats
    splits: tuple[GroupStats, ...]
    universes: tuple[GroupStats, ...]
    error_groups: tuple[ErrorGroup, ...]
    timing: Timing
    repeats: RepeatStats | None
    planned: int
    done: int
    not_run: tuple[str, ...]
    clustered_strict: UniverseClustered | None = None
    clustered_judged: UniverseClustered | None = None

    @property
    def complete(self) -> bool:
        """Every planned scenario (and run) has a result."""
        return not self.not_run

    @property
    def planned_unit(self) -> str:
        """What one planned key is, for the lines that count them."""
        return "scenario runs" if self.repeats else "scenarios"

    @property
    def error_rate(self) -> float | None:
        """Errors / results, the figure the ``max_error_rate`` bar is held against."""
        return self.overall.errors / self.overall.total if self.overall.total else None

    @property
    def error_ids(self) -> tuple[str, ...]:
        """Every scenario with at least one counted infrastructure error."""
        ids = {scenario_id for group in self.error_groups for scenario_id in group.ids}
        return tuple(sorted(ids, key=natural_key))

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable summary.json content: fractions 0..1, counts and ids."""
        return {
            "planned": self.planned,
            "done": self.done,
            "not_run": list(self.not_run),
            "complete": self.complete,
            **self.overall.to_dict(),
            "error_rate": self.error_rate,
            "error_ids": list(self.error_ids),
            "errors_by_category": {
                group.category: {"count": group.count, "ids": list(group.ids)} for group in self.error_groups
            },
            "splits": {group.name: group.to_dict() for group in self.splits},
            "universes": {group.name: group.to_dict() for group in self.universes},
            "timing": self.timing.to_dict(),
            "repeats": self.repeats.to_dict() if self.repeats else None,
            "universe_clustered": None
            if self.clustered_strict is None
            else {
                "strict": self.clustered_strict.to_dict(),
                "judged": None if self.clustered_judged is None else self.clustered_judged.to_dict(),
            },
        }


def summarise(records: Sequence[Mapping[str, Any]], planned: Sequence[str] | None = None) -> Summary:
    """Reduce result records (in the order written) to the run's summary.

    ``planned`` lists the run's planned keys, ``<split>/<scenario_id>`` with ``/run_<k>`` when
    repeated (as records and test ids spell them). A planned key without a record is not
    run: listed, and counted as not passed in the strict rate of the run, of its split and
    of its universe (a sibling run's, else ``unknown``); the judged-only rate is unchanged.

    Per-universe figures are only kept when the run spans more than one universe: a
    single-row table would only repeat the totals.
    """
    plan = planned_keys(planned or ())
    results = latest_rows(records)
    missing = not_run_rows(results, plan)
    rows = results + missing
    clustered = max((row.run for row in rows), default=1) > 1
    universes = _by(rows, lambda row: row.universe, natural_key, clustered)
    not_run = tuple(sorted((plan[row.key] for row in missing), key=natural_key))
    return Summary(
        overall=_tally("all", rows, clustered),
        splits=_by(rows, lambda row: row.split, split_order, clustered),
        universes=universes if len(universes) > 1 else (),
        error_groups=_error_groups(rows),
        timing=_timing(rows),
        repeats=repeat_stats(rows),
        planned=len(plan) if planned is not None else len(results),
        done=len(plan) - len(missing) if planned is not None else len(results),
        not_run=not_run,
        clustered_strict=universe_clustered(rows, judged=False),
        clustered_judged=universe_clustered(rows, judged=True),
    )
