"""How many scenarios an answer needs, and what they cost, from a probe or an earlier run (``pytest-gaia2 plan``).

The plan as data and as Markdown: cost and wall time per scenario per split, the pass rate, the
discordance of two runs of the same scenarios; the scenarios (pairs) a gap or an interval needs,
what the pool allows, their cost and time, what a budget buys. The maths is in :mod:`power` and
:mod:`pytest_gaia2.cost.projection`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.projection import FEWEST, predict_total
from pytest_gaia2.report import power
from pytest_gaia2.report.markdown import plain
from pytest_gaia2.report.rates import percent, percent_number, wilson
from pytest_gaia2.report.rows import split_order
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.record import AttemptRecord


@dataclass(frozen=True)
class Asked:
    """What the plan is asked: a paired ``gap`` to detect or one rate's ``half_width``, at ``power`` and
    ``alpha``; the expected ``rate``, the ``pool`` of scenarios, the ``workers`` and the ``budget`` when given."""

    gap: float | None
    half_width: float | None
    power: float
    alpha: float
    rate: float | None
    pool: int | None
    workers: int
    budget: float | None


@dataclass(frozen=True)
class Source:
    """What one earlier run says per scenario: outcome, cost and wall time (latest attempt per key)."""

    path: Path
    records: dict[tuple[str, str, int], AttemptRecord]

    @classmethod
    def read(cls, path: str | Path) -> Source:
        folder = store.RunFolder.existing(path)
        records = {(r.split, r.scenario_id, r.repeat): r for r in folder.records(strict=True)}
        if not records:
            raise CommandError(f"{folder.path}: no result records to plan from")
        return cls(folder.path, records)

    def costs(self, split: str | None = None) -> list[float]:
        return [r.cost_usd for r in self._of(split) if r.cost_usd is not None]

    def seconds(self, split: str | None = None) -> list[float]:
        return [r.wall_time_s for r in self._of(split) if r.wall_time_s is not None]

    def _of(self, split: str | None) -> list[AttemptRecord]:
        return [r for r in self.records.values() if split is None or r.split == split]

    @property
    def judged(self) -> list[AttemptRecord]:
        return [r for r in self.records.values() if r.outcome in ("passed", "failed")]

    @property
    def rate(self) -> float | None:
        judged = self.judged
        return sum(r.outcome == "passed" for r in judged) / len(judged) if judged else None

    @property
    def planning_rate(self) -> float:
        """The rate to plan with: the point of the judged rate's Wilson interval nearest 1/2, so a
        small probe's 4/4 does not promise the tiny spread of a rate of 100%."""
        judged = self.judged
        low, high = wilson(sum(r.outcome == "passed" for r in judged), len(judged))
        return min(max(0.5, low), high)


def discordance(a: Source, b: Source) -> tuple[int, int]:
    """How many keys judged in both runs have verdicts that differ, and how many keys were judged in both."""
    both = [key for key in a.records.keys() & b.records.keys() if a.records[key].outcome in ("passed", "failed")]
    both = [key for key in both if b.records[key].outcome in ("passed", "failed")]
    if not both:
        raise CommandError(f"{a.path} and {b.path}: no scenario judged in both runs, so no discordance rate")
    return sum(a.records[key].outcome != b.records[key].outcome for key in both), len(both)


def measured_discordance(sources: Sequence[Source], given: float | None) -> tuple[float | None, tuple[int, int] | None]:
    """The discordance to plan with: ``given``, else measured from two runs (with the keys it is
    measured on); refused when two runs never disagree."""
    if given is not None or len(sources) != 2:
        return given, None
    seen = discordance(*sources)
    psi = seen[0] / seen[1]
    if psi == 0:
        raise CommandError("the two runs never disagree: no gap can be detected from them (give --discordance)")
    return psi, seen


FULL_SPLIT = 160
"""Scenarios in one split of the full Gaia2 (800 over 5 splits): the pool a plan assumes without --pool."""


def pool_of(source: Source, given: int | None) -> tuple[int, str]:
    """The scenarios a run can select, and where that number comes from."""
    if given is not None:
        return given, "--pool"
    splits = {record.split for record in source.records.values()}
    return FULL_SPLIT * len(splits), (
        f"the full Gaia2 has {FULL_SPLIT} per split, {len(splits)} split{'s' if len(splits) > 1 else ''} here; "
        "--pool N sets another"
    )


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _split_rows(source: Source) -> list[dict[str, Any]]:
    splits = sorted({r.split for r in source.records.values()}, key=split_order)
    rows = []
    for split in splits:
        costs, seconds = source.costs(split), source.seconds(split)
        rows.append(
            {
                "split": split,
                "scenarios": sum(1 for r in source.records.values() if r.split == split),
                "priced": len(costs),
                "cost_mean_usd": statistics.fmean(costs) if costs else None,
                "wall_time_mean_s": statistics.fmean(seconds) if seconds else None,
            }
        )
    return rows


def _totals(arms: list[list[float]], scenarios: int) -> dict[str, Any] | None:
    """What ``scenarios`` scenarios of each arm add up to (cost or seconds): the estimates added,
    and each arm's 95% prediction interval added end to end (at least 95% for the sum); None
    without values."""
    if not arms[0]:
        return None
    predicted = [predict_total(values or arms[0], scenarios) for values in arms]
    lows, highs = [low for _, low, _ in predicted], [high for _, _, high in predicted]
    return {
        "estimate": sum(estimate for estimate, _, _ in predicted),
        "low": None if None in lows else sum(low for low in lows if low is not None),
        "high": None if None in highs else sum(high for high in highs if high is not None),
        "arms": len(arms),
    }


def _paired(
    source: Source, gap: float, asked: Asked, psi: float | None, seen: tuple[int, int] | None, notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The paired question and its answer: pairs at the discordance, and over its interval when measured."""
    if psi is None:
        assumed = source.planning_rate
        psi = 2 * assumed * (1 - assumed)
        notes.append(
            f"discordance assumed {percent(psi)} = 2p(1-p) at p = {percent(assumed)} (the judged rate's interval "
            "end nearest 50%): two runs that agree no more than chance would; give a second run or "
            "--discordance for a sharper answer"
        )
    if not gap <= psi:
        raise CommandError(f"--gap {gap:g} is larger than the discordance rate {psi:g}: no such pairs exist")
    question: dict[str, Any] = {
        "kind": "paired-gap",
        "gap": gap,
        "discordance": psi,
        "pairs_seen": seen[1] if seen else None,
    }
    paired = power.paired_pairs(gap, psi, asked.power, asked.alpha).to_dict()
    if seen is not None:
        low, high = wilson(*seen)
        ends = [power.paired_pairs(gap, max(end, gap), asked.power, asked.alpha).pairs for end in (low, high)]
        question["discordance_interval"] = [low, high]
        paired["range"] = ends
    return question, paired


def answer(
    source: Source, asked: Asked, psi: float | None, seen: tuple[int, int] | None, other: Source | None
) -> dict[str, Any]:
    """The plan as data: the question, the scenarios it needs, what the pool allows, their cost and
    time (both arms of a paired comparison), the budget's reach."""
    rate = source.rate
    result: dict[str, Any] = {
        "source": str(source.path),
        "results": len(source.records),
        "judged_rate": rate,
        "splits": _split_rows(source),
        "alpha": asked.alpha,
        "power": asked.power,
        "workers": asked.workers,
    }
    notes: list[str] = []
    pool, pool_from = pool_of(source, asked.pool)
    arms = [source] if asked.gap is None else [source, other or source]
    if asked.gap is not None:
        result["question"], result["paired"] = _paired(source, asked.gap, asked, psi, seen, notes)
        psi = result["question"]["discordance"]
        needed = result["paired"]["pairs"]
    else:
        expected = asked.rate if asked.rate is not None else source.planning_rate
        assert asked.half_width is not None  # the command asks for a gap or a half-width, one of them
        needed = power.rate_scenarios(asked.half_width, expected)
        result["question"] = {"kind": "half-width", "half_width": asked.half_width, "rate": expected}
    result["scenarios"] = needed
    runnable = pool if needed is None else min(needed, pool)
    result["pool"] = {"scenarios": pool, "from": pool_from, "runnable": runnable, "capped": runnable != needed}
    if runnable != needed:
        result["pool"]["at_pool"] = (
            power.exact_power(pool, asked.gap, result["question"]["discordance"], asked.alpha)
            if asked.gap is not None
            else power.half_width(pool, result["question"]["rate"])
        )
    cost = _totals([arm.costs() for arm in arms], runnable)
    if cost is not None:
        result["cost_usd"] = {**cost, "priced": len(source.costs())}
        if len(source.costs()) < len(source.records):
            notes.append(f"cost from the {len(source.costs())} of {len(source.records)} results that were priced")
        if len(arms) == 2 and not (other and other.costs()):
            notes.append("the second arm's cost is assumed to be the first's (no priced second run)")
    time = _totals([arm.seconds() for arm in arms], runnable)
    if time is not None:
        result["time_s"] = {
            name: None if time[name] is None else time[name] / asked.workers for name in ("estimate", "low", "high")
        }
    if asked.budget is not None:
        result["budget"] = _reach(asked.budget, asked, source, arms, psi)
        if result["budget"] is None:
            del result["budget"]
            notes.append("the budget's reach is unknown: no priced result to plan from")
    result["notes"] = notes
    return result


def _reach(budget: float, asked: Asked, source: Source, arms: list[Source], psi: float | None) -> dict[str, Any] | None:
    """What the budget buys: scenarios of one run (one rate's interval) and, for a paired gap,
    pairs of both arms (the smallest gap they detect with the exact test's power)."""
    if not source.costs() or statistics.fmean(source.costs()) <= 0:
        return None
    means = [statistics.fmean(arm.costs() or source.costs()) for arm in arms]
    buys = math.floor(budget / means[0])
    reach: dict[str, Any] = {"budget_usd": budget, "scenarios": buys}
    reach["half_width"] = power.half_width(buys, source.planning_rate)
    if psi is not None:
        pairs = math.floor(budget / sum(means)) if len(arms) == 2 else buys // 2
        reach["pairs"] = pairs
        reach["detectable_gap"] = power.detectable_gap(pairs, psi, asked.power, asked.alpha)
    return reach


def markdown(plan: dict[str, Any]) -> str:
    q = plan["question"]
    lines = [
        "# pytest-gaia2 plan",
        "",
        f"From {plain(plan['source'])}: {plan['results']} results, judged-only pass rate "
        f"{'n/a' if plan['judged_rate'] is None else percent(plan['judged_rate'])}.",
        "",
        "| split | results | priced | cost per scenario | wall time per scenario |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {plain(row['split'])} | {row['scenarios']} | {row['priced']} | "
            f"{'-' if row['cost_mean_usd'] is None else _money(row['cost_mean_usd'])} | "
            f"{'-' if row['wall_time_mean_s'] is None else _seconds(row['wall_time_mean_s'])} |"
            for row in plan["splits"]
        ),
        "",
    ]
    if q["kind"] == "paired-gap":
        seen = f" (seen over {q['pairs_seen']} pairs)" if q["pairs_seen"] else ""
        paired = plan["paired"]
        head = (
            f"To detect a gap of {percent_number(q['gap'])} points {plan['power']:.0%} of the time at alpha "
            f"{plan['alpha']:g}, with {percent(q['discordance'])} of pairs disagreeing{seen}: "
        )
        lines.append(
            head
            + (
                f"**{plan['scenarios']} paired scenarios** (exact McNemar power {percent(paired['achieved'])}; "
                f"Connor's approximation says {paired['approximate']})."
                if plan["scenarios"] is not None
                else f"more than {power.MAX_PAIRS} pairs: not feasible."
            )
        )
        if "range" in paired:
            low, high = q["discordance_interval"]
            ends = [
                f"{pairs:,}" if pairs is not None else f"more than {power.MAX_PAIRS:,}" for pairs in paired["range"]
            ]
            lines.append(
                f"- the discordance is an estimate: its 95% interval is {percent(low)} to {percent(high)}, "
                f"over which the pairs needed run from {ends[0]} to {ends[1]}"
            )
    else:
        lines.append(
            f"For a 95% interval of ±{percent_number(q['half_width'])} points on a rate near {percent(q['rate'])}: "
            f"**{plan['scenarios']} scenarios**."
        )
    pool = plan["pool"]
    if pool["capped"]:
        needed = "more pairs than are feasible" if plan["scenarios"] is None else str(plan["scenarios"])
        lines.append(
            f"- the pool holds {pool['scenarios']} scenarios ({plain(pool['from'])}), fewer than the {needed} "
            f"needed: all {pool['scenarios']} give "
            + (
                f"an exact power of {percent(pool['at_pool'])} for this gap"
                if q["kind"] == "paired-gap"
                else f"an interval of ±{percent_number(pool['at_pool'])} points"
            )
            + "; the cost and time below are for the pool"
        )
    arms = " for both arms (each agent runs them)" if q["kind"] == "paired-gap" else ""
    if "cost_usd" in plan:
        cost = plan["cost_usd"]
        lines.append(f"- cost{arms} ≈ {_money(cost['estimate'])} ({_interval(cost, _money)})")
    if "time_s" in plan:
        time = plan["time_s"]
        lines.append(f"- time{arms} ≈ {_hours(time['estimate'])} at -n {plan['workers']} ({_interval(time, _hours)})")
    if "budget" in plan:
        reach = plan["budget"]
        gap = reach.get("detectable_gap")
        lines.append(
            f"- the budget {_money(reach['budget_usd'])} buys ≈ {reach['scenarios']} scenarios of one run: an "
            f"interval of ±{percent_number(reach['half_width'] or 1.0)} points on one rate"
            + (
                f"; or {reach['pairs']} pairs (both arms): a paired gap of {percent_number(gap)} points detected "
                f"{plan['power']:.0%} of the time (exact McNemar power)"
                if gap is not None
                else ""
            )
        )
    lines += [f"- note: {plain(note)}" for note in plan["notes"]]
    return "\n".join(lines) + "\n"


def _interval(block: dict[str, Any], shown: Any) -> str:
    if block["low"] is None or block["high"] is None:
        return f"no interval from fewer than {FEWEST} values"
    return f"95% interval {shown(block['low'])}–{shown(block['high'])}"
