"""Pass rates, Wilson intervals, pass@k and the CI gate, computed from result records.

Pure functions over the per-scenario result records (``result.json`` / ``results.jsonl``
rows), so the numbers a team publishes can be re-derived from saved results alone and
tested without pytest, Docker or files.

Two denominators are always reported, because teams publish both: **strict** counts an
infrastructure error as not passed (passes / all), **judged-only** leaves errors out
(passes / (passed + failed)). Given the run's plan, strict divides by what was *planned*:
a scenario that never ran counts as not passed, so an interrupted run cannot look better
than a finished one.

Intervals: Wilson 95% when every scenario contributes one result. With repeats
(``--gaia2-repeat K``) the K results of a scenario are not independent (an easy scenario
passes every time), so a Wilson interval over K x N results would be too narrow; every
rate over (scenario, run) pairs then gets a scenario-clustered percentile bootstrap
instead (:func:`cluster_bootstrap`).
"""

from __future__ import annotations

import math
import random
import re
import statistics
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from operator import itemgetter
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from .scenarios import SPLITS

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""

OUTCOMES = ("passed", "failed", "error")
NOT_RUN = "not_run"
"""The outcome of a planned (scenario, run) without a record; never read from a record."""
UNCATEGORISED = "uncategorised"
UNKNOWN_UNIVERSE = "unknown"
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


def cluster_bootstrap(clusters: Sequence[Cluster], resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
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
        rates = [sum(pick(successes[stratum])) / drawn for stratum in strata
                 if (drawn := sum(pick(trials[stratum])))]
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


def natural_key(text: str) -> list[Any]:
    """Sort ``universe_3`` before ``universe_21``; re.split alternates text and digits."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


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
    def clustered(cls, successes: int, n: int, clusters: Sequence[Cluster],
                  value: float | None = None) -> Rate:
        """Pooled counts with a :func:`cluster_bootstrap` interval; ``value`` defaults to their ratio."""
        low, high = cluster_bootstrap(clusters)
        if value is None and n:
            value = successes / n
        return cls(successes, n, value, low, high, "cluster-bootstrap")

    def to_dict(self) -> dict[str, Any]:
        return {"successes": self.successes, "n": self.n, "value": self.value,
                "low": self.low, "high": self.high, "interval": self.method}


@dataclass(frozen=True)
class _Row:
    """One counted verdict, the last record for a (split, scenario, run), or a planned one
    that has none (outcome ``not_run``)."""

    split: str
    scenario_id: str
    universe: str
    run: int
    outcome: str
    reused: bool
    error_category: str
    wall_time_s: float | None
    events: float | None

    @property
    def key(self) -> tuple[str, str, int]:
        return self.split, self.scenario_id, self.run


def _outcome(record: Mapping[str, Any]) -> str:
    """``outcome`` when present, else upstream's ``success`` (True / False / None = error)."""
    outcome = record.get("outcome")
    if outcome is None:
        success = record.get("success")
        outcome = "error" if success is None else ("passed" if success else "failed")
    if outcome not in OUTCOMES:
        raise ValueError(
            f"result for {record.get('scenario_id')!r}: outcome {outcome!r} is not one of "
            f"{', '.join(OUTCOMES)}"
        )
    return outcome


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _row(record: Mapping[str, Any]) -> _Row:
    return _Row(
        split=str(record.get("split") or "scenarios"),
        scenario_id=str(record["scenario_id"]),
        universe=str(record.get("universe") or UNKNOWN_UNIVERSE),
        run=int(record.get("repeat") or record.get("run") or 1),  # "run" in files of version 0.1
        outcome=_outcome(record),
        reused=bool(record.get("reused")),
        error_category=str(record.get("error_category") or UNCATEGORISED),
        wall_time_s=_number(record.get("wall_time_s")),
        events=_number(record.get("num_agent_events")),
    )


def _latest(records: Iterable[Mapping[str, Any]]) -> list[_Row]:
    """Keep one verdict per (split, scenario, run): the record written last.

    Records arrive in the order they were written (retries after the attempt they retry,
    a resumed session after the one it resumes), so "last written" is "last attempt" even
    when a resumed session numbers its attempts from 1 again.
    """
    rows: dict[tuple[str, str, int], _Row] = {}
    for record in records:
        row = _row(record)
        rows[row.key] = row
    return list(rows.values())


_PLANNED_KEY = re.compile(r"([^/]+)/(.+?)(?:/run_(\d+))?")


def _planned(keys: Sequence[str]) -> dict[tuple[str, str, int], str]:
    """``<split>/<scenario_id>[/run_<k>]`` keys (as test ids and records spell them) by
    (split, scenario, run), the identity ``_latest`` keeps records by."""
    planned = {}
    for key in keys:
        match = _PLANNED_KEY.fullmatch(key)
        if not match:
            raise ValueError(f"planned key {key!r} is not <split>/<scenario_id>[/run_<k>]")
        planned[(match[1], match[2], int(match[3] or 1))] = key
    return planned


def _not_run_rows(rows: Sequence[_Row], planned: Mapping[tuple[str, str, int], str]) -> list[_Row]:
    """A ``not_run`` row per planned key without a record; its universe is a sibling run's, if any."""
    done = {row.key for row in rows}
    universes = {(row.split, row.scenario_id): row.universe for row in rows}
    return [_Row(split=split, scenario_id=scenario_id, run=run, outcome=NOT_RUN, reused=False,
                 universe=universes.get((split, scenario_id), UNKNOWN_UNIVERSE),
                 error_category=UNCATEGORISED, wall_time_s=None, events=None)
            for split, scenario_id, run in planned if (split, scenario_id, run) not in done]


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
        return {"total": self.total, "passed": self.passed, "failed": self.failed,
                "errors": self.errors, "not_run_count": self.not_run, "reused": self.reused,
                "strict": self.strict.to_dict(), "judged": self.judged.to_dict()}


def _clusters(rows: Sequence[_Row], judged: bool) -> list[Cluster]:
    """One single-stratum cluster per scenario: (passes, results counted by the rate)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        tally = counts.setdefault((row.split, row.scenario_id), [0, 0])
        tally[0] += row.outcome == "passed"
        tally[1] += (row.outcome in ("passed", "failed")) if judged else 1
    return [[(passes, trials)] for (passes, trials) in (counts[key] for key in sorted(counts))]


def _tally(name: str, rows: Sequence[_Row], clustered: bool) -> GroupStats:
    """Counts and rates; ``clustered`` (repeats) swaps Wilson for the scenario bootstrap."""
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


def _by(rows: Sequence[_Row], key: Callable[[_Row], str], order: Callable[[str], Any],
        clustered: bool) -> tuple[GroupStats, ...]:
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return tuple(_tally(name, groups[name], clustered) for name in sorted(groups, key=order))


def _split_order(name: str) -> tuple[int, list[Any]]:
    """Gaia2's own split order first, any other folder name after, alphabetically."""
    return (SPLITS.index(name) if name in SPLITS else len(SPLITS), natural_key(name))


@dataclass(frozen=True)
class ErrorGroup:
    """Infrastructure errors of one category; ``count`` counts (scenario, run) pairs."""

    category: str
    count: int
    ids: tuple[str, ...]


def _error_groups(rows: Sequence[_Row]) -> tuple[ErrorGroup, ...]:
    ids: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        if row.outcome == "error":
            ids.setdefault(row.error_category, set()).add(row.scenario_id)
            counts[row.error_category] = counts.get(row.error_category, 0) + 1
    ordered = sorted(counts, key=lambda category: (-counts[category], category))
    return tuple(ErrorGroup(category, counts[category], tuple(sorted(ids[category], key=natural_key)))
                 for category in ordered)


@dataclass(frozen=True)
class Timing:
    """Where the hours went: median and slowest wall time, agent events per scenario."""

    wall_median_s: float | None
    slowest_id: str | None
    slowest_s: float | None
    events_mean: float | None
    events_median: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"wall_time_median_s": self.wall_median_s,
                "slowest": None if self.slowest_id is None
                else {"scenario_id": self.slowest_id, "seconds": self.slowest_s},
                "events_mean": self.events_mean, "events_median": self.events_median}


def _timing(rows: Sequence[_Row]) -> Timing:
    """Over every counted verdict that recorded the figure (reused ones keep their old time)."""
    timed = [row for row in rows if row.wall_time_s is not None]
    events = [row.events for row in rows if row.events is not None]
    slowest = max(timed, key=lambda row: row.wall_time_s or 0.0) if timed else None
    return Timing(
        wall_median_s=statistics.median(row.wall_time_s for row in timed) if timed else None,
        slowest_id=slowest.scenario_id if slowest else None,
        slowest_s=slowest.wall_time_s if slowest else None,
        events_mean=statistics.fmean(events) if events else None,
        events_median=statistics.median(events) if events else None,
    )


_LETTER = {"passed": "P", "failed": "F", "error": "E"}
MISSING_RUN = "."


@dataclass(frozen=True)
class RepeatStats:
    """pass@k figures for a run with ``--gaia2-repeat K`` (k > 1).

    ``avg_at_k`` is the mean of the per-run strict rates (each with its Wilson interval in
    ``per_run``), its own interval a scenario-clustered bootstrap (:func:`cluster_bootstrap`,
    one stratum per run): a Wilson interval over the k x n results would treat a
    scenario's repeats as independent and come out too narrow. ``pass_at_k`` (at least one
    pass) and ``pass_hat_k`` (all k runs passed; a missing, errored or not-run run is not a
    pass) are over scenarios, one result each, with Wilson intervals. ``patterns`` holds one
    letter per run for each scenario, e.g. ``PFP`` (P passed, F failed, E error, ``.`` no
    result), the form teams quote flaky scenarios in.
    """

    k: int
    scenarios: int
    avg_at_k: Rate
    pass_at_k: Rate
    pass_hat_k: Rate
    per_run: tuple[Rate, ...]
    flipped: tuple[str, ...]
    errored_runs: tuple[tuple[str, int], ...]
    patterns: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "scenarios": self.scenarios,
            "avg_at_k": self.avg_at_k.to_dict(),
            "pass_at_k": self.pass_at_k.to_dict(),
            "pass_hat_k": self.pass_hat_k.to_dict(),
            "per_run": [rate.to_dict() for rate in self.per_run],
            "flipped": {scenario_id: self.patterns[scenario_id] for scenario_id in self.flipped},
            "errored_runs": [{"scenario_id": scenario_id, "run": run}
                             for scenario_id, run in self.errored_runs],
            "patterns": dict(self.patterns),
        }


def _repeats(rows: Sequence[_Row]) -> RepeatStats | None:
    k = max((row.run for row in rows), default=1)
    if k <= 1:
        return None
    by_scenario: dict[tuple[str, str], dict[int, str]] = {}
    for row in rows:
        by_scenario.setdefault((row.split, row.scenario_id), {})[row.run] = row.outcome
    runs = range(1, k + 1)
    per_run = tuple(_tally(f"run_{run}", [row for row in rows if row.run == run], clustered=False).strict
                    for run in runs)
    order = sorted(by_scenario, key=lambda key: (natural_key(key[1]), _split_order(key[0])))
    scenarios = [(key[1], by_scenario[key]) for key in order]
    cells = [[(outcomes.get(run) == "passed", run in outcomes) for run in runs] for _, outcomes in scenarios]
    avg = statistics.fmean(rate.value for rate in per_run if rate.value is not None)
    return RepeatStats(
        k=k,
        scenarios=len(scenarios),
        avg_at_k=Rate.clustered(sum(row.outcome == "passed" for row in rows), len(rows), cells, value=avg),
        pass_at_k=Rate.of(sum("passed" in outcomes.values() for _, outcomes in scenarios),
                          len(scenarios)),
        pass_hat_k=Rate.of(sum(all(outcomes.get(run) == "passed" for run in runs)
                               for _, outcomes in scenarios), len(scenarios)),
        per_run=per_run,
        flipped=tuple(scenario_id for scenario_id, outcomes in scenarios
                      if {"passed", "failed"} <= set(outcomes.values())),
        errored_runs=tuple((scenario_id, run) for scenario_id, outcomes in scenarios
                           for run in sorted(outcomes) if outcomes[run] == "error"),
        patterns={scenario_id: "".join(_LETTER.get(outcomes.get(run, ""), MISSING_RUN)
                                       for run in runs)
                  for scenario_id, outcomes in scenarios},
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
            "errors_by_category": {group.category: {"count": group.count, "ids": list(group.ids)}
                                   for group in self.error_groups},
            "splits": {group.name: group.to_dict() for group in self.splits},
            "universes": {group.name: group.to_dict() for group in self.universes},
            "timing": self.timing.to_dict(),
            "repeats": self.repeats.to_dict() if self.repeats else None,
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
    plan = _planned(planned or ())
    results = _latest(records)
    missing = _not_run_rows(results, plan)
    rows = results + missing
    clustered = max((row.run for row in rows), default=1) > 1
    universes = _by(rows, lambda row: row.universe, natural_key, clustered)
    not_run = tuple(sorted((plan[row.key] for row in missing), key=natural_key))
    return Summary(
        overall=_tally("all", rows, clustered),
        splits=_by(rows, lambda row: row.split, _split_order, clustered),
        universes=universes if len(universes) > 1 else (),
        error_groups=_error_groups(rows),
        timing=_timing(rows),
        repeats=_repeats(rows),
        planned=len(plan) if planned is not None else len(results),
        done=len(plan) - len(missing) if planned is not None else len(results),
        not_run=not_run,
    )


RateName = Literal["strict", "judged"]
GateOn = Literal["point", "lower-bound"]
_RATE_LABEL = {"strict": "strict", "judged": "judged-only"}


@dataclass(frozen=True)
class GateDecision:
    """Whether the run clears its bars, and one human line per bar."""

    met: bool
    lines: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"met": self.met, "lines": list(self.lines)}


@dataclass(frozen=True)
class Gate:
    """The CI bars a run must clear; rates are fractions 0..1 as on the command line."""

    min_pass_rate: float | None = None
    rate: RateName = "strict"
    gate_on: GateOn = "point"
    max_error_rate: float | None = None

    def __post_init__(self) -> None:
        if self.rate not in _RATE_LABEL:
            raise ValueError(f"gate rate must be strict or judged, got {self.rate!r}")
        if self.gate_on not in ("point", "lower-bound"):
            raise ValueError(f"gate_on must be point or lower-bound, got {self.gate_on!r}")
        for name in ("min_pass_rate", "max_error_rate"):
            bar = getattr(self, name)
            if bar is not None and not 0.0 <= bar <= 1.0:
                raise ValueError(f"{name} must be a fraction from 0 to 1, got {bar!r}")

    @classmethod
    def from_options(cls, values: Mapping[str, Any]) -> Gate:
        """From ``options.resolve`` output (keys min_pass_rate, rate, gate_on, max_error_rate)."""
        return cls(min_pass_rate=values.get("min_pass_rate"), rate=values.get("rate") or "strict",
                   gate_on=values.get("gate_on") or "point",
                   max_error_rate=values.get("max_error_rate"))

    @property
    def active(self) -> bool:
        return self.min_pass_rate is not None or self.max_error_rate is not None

    def decide(self, summary: Summary, *, allow_incomplete: bool = False) -> GateDecision:
        """Hold the summary against every bar; an inactive gate is met and says nothing.

        A run that left planned scenarios unrun fails the gate unless ``allow_incomplete``
        (``--gaia2-allow-incomplete``); either way it gets a line saying how many.
        """
        if not self.active:
            return GateDecision(True, [])
        if summary.overall.total == 0:
            return GateDecision(False, ["gate: not met: no scenario results to measure "
                                        "(0 scenarios ran)"])
        checks = []
        if not summary.complete:
            checks.append(_completeness(summary, allow_incomplete))
        if self.min_pass_rate is not None:
            checks.append(self._pass_rate(summary, self.min_pass_rate))
        if self.max_error_rate is not None:
            checks.append(self._error_rate(summary, self.max_error_rate))
        return GateDecision(all(met for met, _ in checks), [line for _, line in checks])

    def _pass_rate(self, summary: Summary, required: float) -> tuple[bool, str]:
        rate: Rate = getattr(summary.overall, self.rate)
        label = f"gate: {_RATE_LABEL[self.rate]} pass rate"
        if rate.value is None:
            return False, (f"{label} n/a (no judged scenarios) >= {percent(required)} required: "
                           "missed, nothing to measure")
        if self.gate_on == "point":
            measured = rate.value
            shown = f"{label} {percent(rate.value)} (95% CI lower bound {percent(rate.low)})"
        else:
            measured = rate.low
            shown = f"{label} {percent(rate.value)}, 95% CI lower bound {percent(rate.low)}"
        return _verdict(measured >= required, f"{shown} >= {percent(required)} required",
                        measured - required)

    @staticmethod
    def _error_rate(summary: Summary, allowed: float) -> tuple[bool, str]:
        measured = summary.error_rate or 0.0
        shown = (f"gate: error rate {percent(measured)} "
                 f"({summary.overall.errors}/{summary.overall.total}) <= {percent(allowed)} allowed")
        return _verdict(measured <= allowed, shown, allowed - measured)


def _completeness(summary: Summary, allowed: bool) -> tuple[bool, str]:
    line = (f"gate: incomplete: {len(summary.not_run)} of {summary.planned} planned "
            f"{summary.planned_unit} did not run")
    return allowed, f"{line}: {'allowed (--gaia2-allow-incomplete)' if allowed else 'not met'}"


def _verdict(met: bool, shown: str, margin: float) -> tuple[bool, str]:
    return met, f"{shown}: {'met' if met else 'missed'} by {percent_number(abs(margin))} points"
