"""``pytest-gaia2 plan RUN [RUN_B]``: how many scenarios an answer needs, and what they cost, before paying.

Reads a probe (``--gaia2-probe-only``) or any earlier run: cost and wall time per scenario per
split, the pass rate, and, given a second run of the same scenarios, how often the two disagree
(the discordance rate that decides how many pairs a paired comparison needs). Then answers:
scenarios (pairs) to detect a gap of ``--gap`` points with ``--power`` at ``--alpha``, or for an
interval of half-width ``--half-width`` on one rate; what they cost, with an interval; how long
they take at ``-n N``; and what ``--budget`` buys. The maths is in :mod:`power`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.cli.main import CommandError, create_file
from pytest_gaia2.report import power
from pytest_gaia2.report.markdown import plain
from pytest_gaia2.report.paired import AnalysisExtraMissing
from pytest_gaia2.report.rates import percent, percent_number, wilson
from pytest_gaia2.report.rows import split_order
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord


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


def discordance(a: Source, b: Source) -> tuple[float, int]:
    """The share of keys judged in both runs whose verdicts differ, and how many keys that is over."""
    both = [key for key in a.records.keys() & b.records.keys() if a.records[key].outcome in ("passed", "failed")]
    both = [key for key in both if b.records[key].outcome in ("passed", "failed")]
    if not both:
        raise CommandError(f"{a.path} and {b.path}: no scenario judged in both runs, so no discordance rate")
    return sum(a.records[key].outcome != b.records[key].outcome for key in both) / len(both), len(both)


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


def answer(source: Source, args: argparse.Namespace, psi: float | None, pairs_seen: int | None) -> dict[str, Any]:
    """The plan as data: the question, the scenarios it needs, their cost and time, the budget's reach."""
    rate = source.rate
    result: dict[str, Any] = {
        "source": str(source.path),
        "results": len(source.records),
        "judged_rate": rate,
        "splits": _split_rows(source),
        "alpha": args.alpha,
        "power": args.power,
        "workers": args.workers,
    }
    notes: list[str] = []
    if args.gap is not None:
        if psi is None:
            assumed = source.planning_rate
            psi = 2 * assumed * (1 - assumed)
            notes.append(
                f"discordance assumed {percent(psi)} = 2p(1-p) at p = {percent(assumed)} (the judged rate's interval "
                "end nearest 50%): two runs that agree no more than chance would; give a second run or "
                "--discordance for a sharper answer"
            )
        if not args.gap <= psi:
            raise CommandError(f"--gap {args.gap:g} is larger than the discordance rate {psi:g}: no such pairs exist")
        paired = power.paired_pairs(args.gap, psi, args.power, args.alpha)
        result["question"] = {"kind": "paired-gap", "gap": args.gap, "discordance": psi, "pairs_seen": pairs_seen}
        result["paired"] = paired.to_dict()
        needed = paired.pairs
    else:
        expected = args.rate if args.rate is not None else source.planning_rate
        needed = power.rate_scenarios(args.half_width, expected)
        result["question"] = {"kind": "half-width", "half_width": args.half_width, "rate": expected}
    result["scenarios"] = needed
    costs, seconds = source.costs(), source.seconds()
    if needed is not None and costs:
        usd, low, high = power.total_interval(costs, needed)
        result["cost_usd"] = {"estimate": usd, "low": low, "high": high, "priced": len(costs)}
        if len(costs) < len(source.records):
            notes.append(f"cost from the {len(costs)} of {len(source.records)} results that were priced")
    if needed is not None and seconds:
        total, low, high = power.total_interval(seconds, needed)
        result["time_s"] = {"estimate": total / args.workers, "low": low / args.workers, "high": high / args.workers}
    if args.budget is not None:
        if not costs or statistics.fmean(costs) <= 0:
            notes.append("the budget's reach is unknown: no priced result to plan from")
        else:
            buys = math.floor(args.budget / statistics.fmean(costs))
            reach: dict[str, Any] = {"budget_usd": args.budget, "scenarios": buys}
            reach["half_width"] = power.half_width(buys, source.planning_rate)
            if psi is not None:
                reach["detectable_gap"] = power.detectable_gap(buys, psi, args.power, args.alpha)
            result["budget"] = reach
    result["notes"] = notes
    return result


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
    else:
        lines.append(
            f"For a 95% interval of ±{percent_number(q['half_width'])} points on a rate near {percent(q['rate'])}: "
            f"**{plan['scenarios']} scenarios**."
        )
    if "cost_usd" in plan:
        cost = plan["cost_usd"]
        lines.append(f"- cost ≈ {_money(cost['estimate'])} (95% interval {_money(cost['low'])}–{_money(cost['high'])})")
    if "time_s" in plan:
        time = plan["time_s"]
        lines.append(
            f"- time ≈ {_hours(time['estimate'])} at -n {plan['workers']} "
            f"(95% interval {_hours(time['low'])}–{_hours(time['high'])})"
        )
    if "budget" in plan:
        reach = plan["budget"]
        gap = reach.get("detectable_gap")
        lines.append(
            f"- the budget {_money(reach['budget_usd'])} buys ≈ {reach['scenarios']} scenarios: an interval of "
            f"±{percent_number(reach['half_width'] or 1.0)} points on one rate"
            + (
                f", or a paired gap of {percent_number(gap)} points detected {plan['power']:.0%} of the time"
                if gap is not None
                else ""
            )
        )
    lines += [f"- note: {plain(note)}" for note in plan["notes"]]
    return "\n".join(lines) + "\n"


# -- the command ---------------------------------------------------------------------------------


SMALLEST = 1e-6
"""The smallest gap, half-width or alpha planned for: a smaller one vanishes in the formulas'
doubles (a gap squared of 0, ``1 - alpha/2`` of 1) and no run could resolve it anyway."""


def _fraction(name: str, value: float | None, *, low: float = 0.0, high: float = 1.0, smallest: float = 0.0) -> None:
    if value is not None and not (math.isfinite(value) and low < value <= high):
        raise CommandError(f"{name}: expected a fraction above {low:g} and at most {high:g}, got {value!r}")
    if value is not None and value < smallest:
        raise CommandError(f"{name}: {value!r} is below {smallest:g}, the smallest planned for")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a probe or earlier run; a second run of the same scenarios (another agent) gives the discordance rate",
    )
    ask = parser.add_mutually_exclusive_group(required=True)
    ask.add_argument("--gap", type=float, metavar="X", help="paired gap to detect, a fraction (0.05 is 5 points)")
    ask.add_argument("--half-width", type=float, metavar="W", help="half-width of one rate's 95%% interval")
    parser.add_argument("--power", type=float, default=0.8, help="chance of detecting the gap (default 0.8)")
    parser.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    parser.add_argument("--discordance", type=float, help="share of pairs whose verdicts differ (else from two runs)")
    parser.add_argument("--rate", type=float, help="expected rate for --half-width (default: the run's judged rate)")
    parser.add_argument("-n", "--workers", type=int, default=1, help="parallel workers the run will use (-n N)")
    parser.add_argument("--budget", type=float, metavar="USD", help="what this much money buys")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    parser.add_argument("--output", metavar="FILE", help="write to a new FILE outside every run folder")


def run(args: argparse.Namespace) -> int:
    if len(args.runs) > 2:
        raise CommandError("plan reads one run, or two runs of the same scenarios")
    _fraction("--gap", args.gap, smallest=SMALLEST)
    _fraction("--half-width", args.half_width, high=0.5, smallest=SMALLEST)
    _fraction("--power", args.power, high=0.999)
    _fraction("--alpha", args.alpha, high=0.5, smallest=SMALLEST)
    _fraction("--discordance", args.discordance)
    if args.rate is not None and not (math.isfinite(args.rate) and 0 <= args.rate <= 1):
        raise CommandError(f"--rate: expected a fraction from 0 to 1, got {args.rate!r}")
    if not 1 <= args.workers <= 4096:
        raise CommandError(f"-n: expected 1 to 4096 workers, got {args.workers}")
    if args.budget is not None and not (math.isfinite(args.budget) and 0 < args.budget < 1e9):
        raise CommandError(f"--budget: expected dollars above 0, got {args.budget!r}")
    sources = [Source.read(path) for path in args.runs]
    psi, seen = args.discordance, None
    if psi is None and len(sources) == 2:
        psi, seen = discordance(*sources)
        if psi == 0:
            raise CommandError("the two runs never disagree: no gap can be detected from them (give --discordance)")
    try:
        plan = answer(sources[0], args, psi, seen)
    except AnalysisExtraMissing as exc:
        raise CommandError(str(exc)) from None
    text = markdown(plan) if args.format == "markdown" else json.dumps(plan, indent=2) + "\n"
    if args.output:
        create_file("--output", Path(args.output), text.encode("utf-8"), [source.path for source in sources])
    else:
        print(text, end="")
    return 0
