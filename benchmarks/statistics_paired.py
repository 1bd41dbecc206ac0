"""Simulated error rates of compare's paired test and interval, the gate's lower bound with
repeats, and the sequential stop, under the regimes a team meets: one and three repeats, with
scenarios that differ (each agent better on some), and runs stopped by the sequential test.

Every figure is a share of seeded simulated runs; the same command prints the same table.

    .venv/bin/python benchmarks/statistics_paired.py [--runs 2000]

Targets: every 95% interval covers the truth in at least 93% of runs in every regime; every
test at level 5% rejects in at most 5.5% of runs when there is no difference.
``rows()`` returns the table (one dict per regime and statistic) for benchmarks/interval_coverage.py.

A scenario has a difficulty (logit, normal with SD 1.5 around 0) and, with heterogeneity H,
an agent-by-scenario effect (normal, SD H, split half to each arm with opposite signs), so
under "no difference" each agent is better on some scenarios and the mean gap is 0. A repeat
draws the scenario's pass again with the same probabilities. The truth an interval must cover
is the population gap (the mean over scenarios of p_B - p_A), worked out on 200,000 scenarios.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_gaia2.report.paired import PairedTable, answer  # noqa: E402
from pytest_gaia2.report.rates import clustered_wilson  # noqa: E402
from pytest_gaia2.report.sequential import always_valid, first_decision  # noqa: E402

SEED = 20261205
LEVEL = 0.05
DIFFICULTY_SD = 1.5


def _probabilities(rng: np.random.Generator, scenarios: int, heterogeneity: float, shift: float) -> tuple[Any, Any]:
    """Each scenario's pass probability in A and in B (B's logit ``shift`` higher on average)."""
    difficulty = rng.normal(0.0, DIFFICULTY_SD, scenarios)
    effect = rng.normal(0.0, heterogeneity, scenarios) if heterogeneity else np.zeros(scenarios)
    return 1 / (1 + np.exp(-(difficulty - effect / 2))), 1 / (1 + np.exp(-(difficulty + effect / 2 + shift)))


def true_gap(heterogeneity: float, shift: float) -> float:
    """The population gap p_B - p_A for these settings (a large fixed-seed draw)."""
    p_a, p_b = _probabilities(np.random.default_rng(1), 200_000, heterogeneity, shift)
    return float(np.mean(p_b - p_a))


def draw_pairs(
    rng: np.random.Generator, scenarios: int, repeats: int, heterogeneity: float, shift: float = 0.0
) -> tuple[Any, Any]:
    """Passes (scenarios x repeats, 0/1) of arm A and arm B."""
    p_a, p_b = _probabilities(rng, scenarios, heterogeneity, shift)
    shape = (scenarios, repeats)
    return (rng.random(shape) < p_a[:, None]).astype(int), (rng.random(shape) < p_b[:, None]).astype(int)


def table_of(a: Any, b: Any) -> PairedTable:
    """The paired table compare builds, each key grouped by its scenario."""
    pairs, scenario = {}, {}
    for i, (row_a, row_b) in enumerate(zip(a, b, strict=True)):
        for run, (passed_a, passed_b) in enumerate(zip(row_a, row_b, strict=True), start=1):
            key = f"search/s{i}/run_{run}" if len(row_a) > 1 else f"search/s{i}"
            pairs[key], scenario[key] = (bool(passed_a), bool(passed_b)), f"search/s{i}"
    return PairedTable.of(pairs, scenario)


def _share(hits: int, runs: int) -> float:
    return hits / runs if runs else math.nan


def compare_rows(runs: int, rng: np.random.Generator) -> Iterator[dict[str, Any]]:
    """compare's fixed-sample answer (interval rule) and its p-value, at no gap and at a gap."""
    for scenarios, repeats, heterogeneity in [(30, 1, 1.5), (30, 3, 0.0), (30, 3, 1.5), (100, 3, 1.5), (30, 5, 2.0)]:
        for shift in (0.0, 0.8):
            truth = true_gap(heterogeneity, shift)
            claimed = rejected = covered = 0
            for _ in range(runs):
                a, b = draw_pairs(rng, scenarios, repeats, heterogeneity, shift)
                found = answer(table_of(a, b), LEVEL)
                claimed += found.direction is not None
                rejected += found.p < LEVEL
                covered += found.low <= truth <= found.high
            regime = f"{scenarios} scenarios x {repeats} repeats, heterogeneity {heterogeneity:g}"
            gap = "no gap" if shift == 0 else f"gap {truth * 100:+.1f} points"
            what = "false positives" if shift == 0 else "power"
            yield {"statistic": "compare: interval leaves out 0 (the verdict and the gate)", "regime": regime,
                   "truth": gap, "measure": what, "value": _share(claimed, runs), "runs": runs,
                   "target": "<= 5.5%" if shift == 0 else ""}
            yield {"statistic": "compare: paired p < 5% (McNemar / sign-flip over scenarios)", "regime": regime,
                   "truth": gap, "measure": what, "value": _share(rejected, runs), "runs": runs,
                   "target": "<= 5.5%" if shift == 0 else ""}
            yield {"statistic": "compare: 95% paired interval", "regime": regime, "truth": gap,
                   "measure": "coverage", "value": _share(covered, runs), "runs": runs, "target": ">= 93%"}


def gate_rows(runs: int, rng: np.random.Generator) -> Iterator[dict[str, Any]]:
    """The gate's lower bound (the strict rate's 95% interval) with repeats."""
    for scenarios, repeats, heterogeneity in [(3, 3, 1.5), (5, 3, 3.0), (10, 3, 1.5), (30, 3, 1.5), (30, 1, 1.5)]:
        for centre in (0.0, 2.0):
            rates = 1 / (1 + np.exp(-(np.random.default_rng(2).normal(centre, heterogeneity, 200_000))))
            truth = float(np.mean(rates))
            covered = above = 0
            for _ in range(runs):
                p = 1 / (1 + np.exp(-rng.normal(centre, heterogeneity, scenarios)))
                passes = (rng.random((scenarios, repeats)) < p[:, None]).sum(axis=1)
                low, high, _ = clustered_wilson([[(int(x), repeats)] for x in passes])
                covered += low <= truth <= high
                above += low > truth
            regime = f"{scenarios} scenarios x {repeats} repeats, scenario SD {heterogeneity:g} (logit)"
            label = f"pass rate {truth * 100:.1f}%"
            yield {"statistic": "gate: strict rate's 95% interval (scenario-clustered Wilson)", "regime": regime,
                   "truth": label, "measure": "coverage", "value": _share(covered, runs), "runs": runs,
                   "target": ">= 93%"}
            yield {"statistic": "gate: 95% lower bound above the true rate (a gate met by luck)", "regime": regime,
                   "truth": label, "measure": "false passes", "value": _share(above, runs), "runs": runs,
                   "target": "<= 2.5% nominal, <= 5% at most"}


def stopped_run(
    rng: np.random.Generator, planned: int, repeats: int, heterogeneity: float, shift: float
) -> tuple[Any, Any, bool]:
    """One run stopped by the sequential test (scenario-level, as the plugin runs it): the pairs it
    has when it stops (or ran out of plan), and whether it decided."""
    a, b = draw_pairs(rng, planned, repeats, heterogeneity, shift)
    signs = np.sign(b.sum(axis=1) - a.sum(axis=1))
    pairs = [(True, True) if sign == 0 else (bool(sign < 0), bool(sign > 0)) for sign in signs]
    decision = first_decision(pairs, LEVEL)
    stop = planned if decision is None else decision.looked
    return a[:stop], b[:stop], decision is not None


def sequential_rows(runs: int, rng: np.random.Generator) -> Iterator[dict[str, Any]]:
    """The stop's false decisions, and what compare says about a run that stopped on a decision:
    its always-valid range against a fixed-sample interval on the same pairs (the runs that
    stopped are those whose gap looked large, so a fixed-sample interval on them misses)."""
    for planned, repeats, heterogeneity in [(100, 1, 1.5), (100, 3, 1.5), (100, 5, 2.0)]:
        for shift in (0.0, 0.8, 1.5):
            truth = true_gap(heterogeneity, shift)
            decided = sequential_covered = fixed_covered = naive_decided = 0
            for _ in range(runs):
                a, b, stopped = stopped_run(rng, planned, repeats, heterogeneity, shift)
                decided += stopped
                if stopped:
                    found = always_valid((b.mean(axis=1) - a.mean(axis=1)).tolist(), LEVEL)
                    sequential_covered += found.low <= truth <= found.high
                    fixed = answer(table_of(a, b), LEVEL)
                    fixed_covered += fixed.low <= truth <= fixed.high
                if repeats > 1 and shift == 0:  # the stop as it was: every repeat a pair of its own
                    full_a, full_b = draw_pairs(rng, planned, repeats, heterogeneity, shift)
                    pairs = [(bool(x), bool(y)) for x, y in zip(full_a.ravel(), full_b.ravel(), strict=True)]
                    naive_decided += first_decision(pairs, LEVEL) is not None
            regime = f"{planned} planned scenarios x {repeats} repeats, heterogeneity {heterogeneity:g}"
            gap = "no gap" if shift == 0 else f"gap {truth * 100:+.1f} points"
            yield {"statistic": "stop when decided: decides (scenario as the unit)", "regime": regime, "truth": gap,
                   "measure": "false positives" if shift == 0 else "power", "value": _share(decided, runs),
                   "runs": runs, "target": "<= 5.5%" if shift == 0 else ""}
            if repeats > 1 and shift == 0:
                yield {"statistic": "control: the stop with each repeat a pair (before)", "regime": regime,
                       "truth": gap, "measure": "false positives", "value": _share(naive_decided, runs),
                       "runs": runs, "target": "(exceeds 5%)"}
            if shift:
                yield {"statistic": "compare after a decided stop: always-valid 95% range", "regime": regime,
                       "truth": gap, "measure": "coverage", "value": _share(sequential_covered, decided),
                       "runs": decided, "target": ">= 93%"}
                yield {"statistic": "control: fixed-sample 95% interval after a decided stop", "regime": regime,
                       "truth": gap, "measure": "coverage", "value": _share(fixed_covered, decided),
                       "runs": decided, "target": "(not used)"}


SECTIONS: list[Callable[[int, np.random.Generator], Iterator[dict[str, Any]]]] = [
    compare_rows,
    gate_rows,
    sequential_rows,
]


def rows(runs: int = 2000, seed: int = SEED) -> list[dict[str, Any]]:
    """Every row of the table: statistic, regime, truth, measure, value (a fraction), runs, target."""
    rng = np.random.default_rng(seed)
    return [row for section in SECTIONS for row in section(runs, rng)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated runs per regime (default 2000)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    table = rows(args.runs)
    width = max(len(row["statistic"]) for row in table)
    regime_width = max(len(row["regime"]) for row in table)
    for row in table:
        print(
            f"{row['statistic']:<{width}}  {row['regime']:<{regime_width}}  {row['truth']:<22} "
            f"{row['measure']:<15} {row['value'] * 100:6.2f}%  {row['target']}"
        )
    print(f"# {args.runs} runs per regime, seed {SEED}, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
