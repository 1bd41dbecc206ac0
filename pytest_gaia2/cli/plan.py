"""``pytest-gaia2 plan RUN [RUN_B]``: how many scenarios an answer needs, and what they cost, before paying.

Reads a probe (``--gaia2-probe-only``) or any earlier run: cost and wall time per scenario per
split, the pass rate, and, given a second run of the same scenarios, how often the two disagree
(the discordance rate that decides how many pairs a paired comparison needs). Then answers:
scenarios (pairs) to detect a gap of ``--gap`` points with ``--power`` at ``--alpha``, or for an
interval of half-width ``--half-width`` on one rate, and over the discordance's interval when it
was measured; whether the pool (``--pool``, else the full Gaia2's 160 per split) holds that many;
what they cost, with an interval (both arms of a paired comparison); how long they take at
``-n N``; and what ``--budget`` buys. The maths is in :mod:`power` and :mod:`projection`;
:mod:`pytest_gaia2.report.planning` plans, this module parses and prints.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from pytest_gaia2.report import power
from pytest_gaia2.report.planning import FULL_SPLIT, Asked, Source, answer, markdown, measured_discordance
from pytest_gaia2.store.console import CommandError, create_file

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
    parser.add_argument(
        "--pool",
        type=int,
        metavar="N",
        help=f"scenarios the run can select (default: the full Gaia2's {FULL_SPLIT} per split of the RUN)",
    )
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
    if args.pool is not None and not 1 <= args.pool <= power.MAX_PAIRS:
        raise CommandError(f"--pool: expected 1 to {power.MAX_PAIRS} scenarios, got {args.pool}")
    if not 1 <= args.workers <= 4096:
        raise CommandError(f"-n: expected 1 to 4096 workers, got {args.workers}")
    if args.budget is not None and not (math.isfinite(args.budget) and 0 < args.budget < 1e9):
        raise CommandError(f"--budget: expected dollars above 0, got {args.budget!r}")
    sources = [Source.read(path) for path in args.runs]
    psi, seen = measured_discordance(sources, args.discordance)
    asked = Asked(args.gap, args.half_width, args.power, args.alpha, args.rate, args.pool, args.workers, args.budget)
    plan = answer(sources[0], asked, psi, seen, sources[1] if len(sources) == 2 else None)
    text = markdown(plan) if args.format == "markdown" else json.dumps(plan, indent=2) + "\n"
    if args.output:
        create_file("--output", Path(args.output), text.encode("utf-8"), [source.path for source in sources])
    else:
        print(text, end="")
    return 0
