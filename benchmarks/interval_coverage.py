"""Simulated coverage, false-positive rate and power of every interval and test the product reports.

Each figure is the share of seeded simulated runs in which the product's own function (not a copy
of its formula) covered the truth, or rejected: the same command prints the same table.

    .venv/bin/python benchmarks/interval_coverage.py [--runs 1000] [--no-save]

Regimes:

- **rates with 1 and 3 repeats, scenarios that differ**: 30 scenarios, each with its own pass
  chance (logit normal, SD 1.5, around 0 or 1.5); the strict rate, avg@3, pass@3 and pass^3. The
  truth is the rate over all scenarios (a large fixed-seed draw).
- **2, 5 and 10 universes**: 40 scenarios spread over them, each universe shifting the logit by
  N(0, 0.5) and each scenario by N(0, 1); the universe-clustered interval, with 1 and 3 repeats,
  beside the normal interval on CR0 it replaced.
- **probes of 5 and 10 skewed costs**: log-normal costs (log-scale SD 1: the dearest of ten
  about 10x the cheapest) and gamma costs (shape 0.5); the probe's projection of 40 and 800
  planned scenarios must cover their actual total, ``plan``'s of 100 and 400 new scenarios
  theirs.
- **plan's sizes**: compare's exact McNemar test simulated at the pairs ``plan`` asks for, and at
  the budget's detectable gap (both promise 80% power).

benchmarks/statistics_paired.py (compare's paired test and interval, the gate's lower bound with
repeats, the sequential stop) adds its rows when present. Targets: every 95% interval covers at
least 93% in every regime; every test at level 5% rejects at most 5.5% under no difference.
The table is printed and appended, dated, to benchmarks/RESULTS.md (not with ``--no-save``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This file has the standard library's name: its own folder, which Python puts first on the path,
# would shadow the real one for every module that imports it.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import binom  # noqa: E402

from pytest_gaia2.cost.projection import predict_total, project  # noqa: E402
from pytest_gaia2.report import power  # noqa: E402
from pytest_gaia2.report.rates import Rate  # noqa: E402
from pytest_gaia2.report.stats import cluster_robust  # noqa: E402
from pytest_gaia2.store.record import AttemptRecord  # noqa: E402

SEED = 20261206
RESULTS = HERE / "RESULTS.md"
PAIRED = HERE / "statistics_paired.py"
COVERS = ">= 93%"
LEVEL = "<= 5.5%"
Row = dict[str, Any]


def _expit(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def _row(statistic: str, regime: str, truth: str, measure: str, value: float, runs: int, target: str) -> Row:
    return {"statistic": statistic, "regime": regime, "truth": truth, "measure": measure, "value": value,
            "runs": runs, "target": target}  # fmt: skip


def rate_rows(runs: int, rng: np.random.Generator) -> Iterator[Row]:
    """A run's strict rate, avg@3, pass@3 and pass^3 over 30 scenarios that differ."""
    scenarios, sd = 30, 1.5
    for centre in (0.0, 1.5):
        population = _expit(np.random.default_rng(1).normal(centre, sd, 400_000))
        for repeats in (1, 3):
            truths = {"strict": population.mean(), "avg@3": population.mean(),
                      "pass@3": np.mean(1 - (1 - population) ** 3), "pass^3": np.mean(population**3)}  # fmt: skip
            hits = dict.fromkeys(truths if repeats > 1 else ("strict",), 0)
            for _ in range(runs):
                chances = _expit(rng.normal(centre, sd, scenarios))
                passes = rng.random((scenarios, repeats)) < chances[:, None]
                total = int(passes.sum())
                found = {
                    "strict": Rate.of(total, scenarios)
                    if repeats == 1
                    else Rate.clustered(total, passes.size, [[(int(row.sum()), repeats)] for row in passes])
                }
                if repeats > 1:
                    cells = [[(bool(cell), True) for cell in row] for row in passes]
                    found["avg@3"] = Rate.clustered(total, passes.size, cells)
                    found["pass@3"] = Rate.of(int(passes.any(axis=1).sum()), scenarios)
                    found["pass^3"] = Rate.of(int(passes.all(axis=1).sum()), scenarios)
                for name, rate in found.items():
                    hits[name] += rate.low <= truths[name] <= rate.high
            regime = f"{scenarios} scenarios x {repeats} repeat{'s' if repeats > 1 else ''}, scenario SD {sd:g}"
            for name, hit in hits.items():
                method = "Wilson" if repeats == 1 or name in ("pass@3", "pass^3") else "scenario-clustered"
                yield _row(f"rate: {name} 95% interval ({method})", regime, f"{name} {truths[name] * 100:.1f}%",
                           "coverage", hit / runs, runs, COVERS)  # fmt: skip


def _cr0_normal(successes: list[int], trials: list[int]) -> tuple[float, float]:
    """The universe interval as it was (control): CR0 variance, normal quantile, clipped."""
    n = sum(trials)
    p = sum(successes) / n
    half = 1.959964 * math.sqrt(sum((s - t * p) ** 2 for s, t in zip(successes, trials, strict=True))) / n
    return max(0.0, p - half), min(1.0, p + half)


def universe_rows(runs: int, rng: np.random.Generator) -> Iterator[Row]:
    """The universe-clustered interval with 2, 5 and 10 universes (universe effect SD 0.5)."""
    scenarios, universe_sd, scenario_sd = 40, 0.5, 1.0
    for centre in (0.0, 1.5):
        draws = np.random.default_rng(2)
        truth = float(np.mean(_expit(centre + draws.normal(0, universe_sd, 400_000)
                                     + draws.normal(0, scenario_sd, 400_000))))  # fmt: skip
        for universes in (2, 5, 10):
            for repeats in (1, 3):
                each = scenarios // universes
                hits = old = zero = 0
                for _ in range(runs):
                    shift = np.repeat(rng.normal(0, universe_sd, universes), each)
                    chances = _expit(centre + shift + rng.normal(0, scenario_sd, scenarios))
                    passes = (rng.random((scenarios, repeats)) < chances[:, None]).sum(axis=1)
                    successes = [int(x) for x in passes.reshape(universes, each).sum(axis=1)]
                    trials = [each * repeats] * universes
                    _, low, high, _ = cluster_robust(successes, trials)
                    hits += low <= truth <= high
                    zero += high - low <= 0
                    before = _cr0_normal(successes, trials)
                    old += before[0] <= truth <= before[1]
                regime = f"{universes} universes x {each} scenarios x {repeats} repeat{'s' if repeats > 1 else ''}"
                label = f"rate {truth * 100:.1f}%"
                yield _row("universe-clustered 95% interval (CR1, t(G-1), >= Wilson)", regime, label, "coverage",
                           hits / runs, runs, COVERS)  # fmt: skip
                yield _row("control: the CR0 normal interval it replaced", regime, label, "coverage", old / runs, runs,
                           "(was below 93%)")  # fmt: skip
                if zero:
                    yield _row("universe-clustered: zero width", regime, label, "share", zero / runs, runs, "0%")


def _costs(rng: np.random.Generator, shape: str, size: int) -> Any:
    """Skewed costs in dollars: log-normal with log-scale SD 1, or gamma with shape 0.5."""
    return rng.lognormal(np.log(0.3), 1.0, size) if shape == "log-normal" else rng.gamma(0.5, 0.6, size)


def _record(cost: float) -> AttemptRecord:
    return AttemptRecord(scenario_id="s", success=True, reward=1.0, num_agent_events=1, agent_response="",
                         judged_in_container=True, timed_out=False, timeout_seconds=600.0, daemon_status=None,
                         scenario_file="", failure_reasons=[], error=None, split="search", outcome="passed",
                         wall_time_s=60.0, cost_usd=float(cost), cost_source="price file")  # fmt: skip


def cost_rows(runs: int, rng: np.random.Generator) -> Iterator[Row]:
    """The probe's projection of the whole run, and plan's prediction for new scenarios."""
    for shape in ("log-normal", "gamma"):
        for probed in (5, 10):
            for planned in (40, 800):
                hits = bounded = 0
                for _ in range(runs):
                    costs = _costs(rng, shape, planned)
                    found = project([_record(cost) for cost in costs[:probed]], planned, 1)
                    if found.low is not None and found.high is not None:
                        bounded += 1
                        hits += found.low <= costs.sum() <= found.high
                yield _row("probe: projection's 95% interval of the run's cost", f"probe of {probed} of {planned}",
                           f"{shape} costs", "coverage", hits / max(1, bounded), bounded, COVERS)  # fmt: skip
            for new in (100, 400):
                hits = bounded = 0
                for _ in range(runs):
                    seen, future = _costs(rng, shape, probed), _costs(rng, shape, new)
                    _, low, high = predict_total(seen.tolist(), new)
                    if low is not None and high is not None:
                        bounded += 1
                        hits += low <= future.sum() <= high
                yield _row("plan: 95% interval of the cost (and time) of N", f"{probed} seen, N = {new}",
                           f"{shape} costs", "coverage", hits / max(1, bounded), bounded, COVERS)  # fmt: skip


def _mcnemar_power(rng: np.random.Generator, pairs: int, gap: float, discordance: float, runs: int) -> float:
    """Share of simulated paired runs in which compare's exact McNemar test rejects at 5%: the
    two-sided binomial test at 1/2 on the discordant pairs, p = min(1, 2 x the smaller tail)."""
    discordant = rng.binomial(pairs, discordance, runs)
    b_wins = rng.binomial(discordant, (1 + gap / discordance) / 2)
    p = np.minimum(1.0, 2 * binom.cdf(np.minimum(b_wins, discordant - b_wins), discordant, 0.5))
    return float(np.mean((discordant > 0) & (p <= 0.05)))


def plan_rows(runs: int, rng: np.random.Generator) -> Iterator[Row]:
    """plan's promised power, checked by simulating the test compare runs (20 x the runs: a
    vectorised test, and a power is read to a point)."""
    runs *= 20
    promised = "80% (exact power)"
    for gap, discordance in ((0.10, 0.30), (0.05, 0.20), (0.20, 0.40)):
        pairs = power.paired_pairs(gap, discordance).pairs or 0
        regime = f"{pairs} pairs, discordance {discordance:.0%}"
        yield _row("plan: pairs for a gap (exact McNemar power >= 80%)", regime, f"gap {gap * 100:.0f} points",
                   "power", _mcnemar_power(rng, pairs, gap, discordance, runs), runs, promised)  # fmt: skip
        yield _row("plan: the same pairs with no gap", regime, "no gap", "false positives",
                   _mcnemar_power(rng, pairs, 0.0, discordance, runs), runs, LEVEL)  # fmt: skip
    for pairs, discordance in ((90, 0.30), (181, 0.30)):
        gap = power.detectable_gap(pairs, discordance) or 0.0
        yield _row("plan: the budget's detectable gap (exact power 80%)", f"{pairs} pairs, discordance "
                   f"{discordance:.0%}", f"gap {gap * 100:.1f} points", "power",
                   _mcnemar_power(rng, pairs, gap, discordance, runs), runs, promised)  # fmt: skip
        connor = _connor_gap(pairs, discordance)
        yield _row("control: Connor's gap the budget line gave before", f"{pairs} pairs, discordance "
                   f"{discordance:.0%}", f"gap {connor * 100:.1f} points", "power",
                   _mcnemar_power(rng, pairs, connor, discordance, runs), runs, "(below 80%)")  # fmt: skip


def _connor_gap(pairs: int, discordance: float) -> float:
    """The smallest gap Connor's formula says ``pairs`` detect 80% of the time (bisection)."""
    low, high = 0.0, discordance
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (low, middle) if middle and power.connor_pairs(middle, discordance) <= pairs else (middle, high)
    return high


SECTIONS: list[Callable[[int, np.random.Generator], Iterator[Row]]] = [rate_rows, universe_rows, cost_rows, plan_rows]


def rows(runs: int = 1000, seed: int = SEED) -> list[Row]:
    """Every row: statistic, regime, truth, measure, value (a fraction), runs, target."""
    rng = np.random.default_rng(seed)
    return [row for section in SECTIONS for row in section(runs, rng)]


def paired_rows(runs: int) -> tuple[list[Row], str]:
    """benchmarks/statistics_paired.py's rows, when it is there (loaded by path: this folder is
    not on the module path)."""
    spec = importlib.util.spec_from_file_location("statistics_paired", PAIRED)
    if not PAIRED.is_file() or spec is None or spec.loader is None:
        return [], "benchmarks/statistics_paired.py is not here: compare, the gate with repeats and the stop not run"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rows(runs), ""


def table(found: list[Row]) -> list[str]:
    widths = [max(len(str(row[key])) for row in found) for key in ("statistic", "regime", "truth", "measure")]
    return [
        f"{row['statistic']:<{widths[0]}}  {row['regime']:<{widths[1]}}  {row['truth']:<{widths[2]}}  "
        f"{row['measure']:<{widths[3]}}  {row['value'] * 100:6.1f}%  {row['target']}"
        for row in found
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per regime (default 1000)")
    parser.add_argument("--no-save", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = rows(args.runs)
    paired, note = paired_rows(args.runs)
    lines = table(found + paired) + ([f"# {note}"] if note else [])
    lines.append(f"# {args.runs} runs per regime, seed {SEED}, {time.monotonic() - started:.0f} s")
    print("\n".join(lines))
    if not args.no_save:
        stamp = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
        machine = f"{platform.platform()}, {sys.version.split()[0]}"
        with RESULTS.open("a", encoding="utf-8") as results:
            results.write(f"\n## {stamp} — statistics: {machine}\n\n```\n" + "\n".join(lines) + "\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
