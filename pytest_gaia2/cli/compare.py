"""``pytest-gaia2 compare A B [C ...]``: a paired comparison of runs of the same scenarios.

:mod:`pytest_gaia2.report.comparison` matches, compares and words the runs; this module reads the
command line, prints the comparison (or writes it to a new ``--output`` file) and picks the exit
status: 1 when ``--fail-if-worse`` finds a later run worse, 2 when it refuses to gate.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from pytest_gaia2.report.comparison import GATES, REFUSED, build, load_arm, markdown, to_json
from pytest_gaia2.store.console import CommandError, create_file

# -- the command ---------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run folders (or --gaia2-output folders: their latest run); the first is the baseline A",
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the comparison to FILE instead of stdout: a new file outside every run "
        "folder (an existing file or a place in a run folder is refused)",
    )
    parser.add_argument(
        "--fail-if-worse",
        metavar="D",
        type=float,
        dest="drop",
        help="exit 1 when a later run's paired strict rate is more than D below the first "
        "run's by the --gate rule; a fraction from 0 to 1, like every rate (0.05 is 5 points)",
    )
    parser.add_argument(
        "--gate",
        choices=tuple(GATES),
        default="interval",
        help="what --fail-if-worse holds against -D: "
        + "; ".join(f"{name}: {rule}" for name, rule in GATES.items()).replace("%", "%%"),  # argparse formats help
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="let --fail-if-worse gate on a run that stopped before its plan was done for another reason than a "
        "decision (a budget halt, Ctrl-C, a probe): on the pairs both runs have a verdict for. Without it such a "
        "run is refused (exit 2); a run stopped by --gaia2-stop-when-decided is always gated, on its sequential test",
    )
    parser.add_argument(
        "--judge",
        metavar="NAME",
        help="compare under a re-judge's verdicts: each run's newest re-judge with a judge of this name "
        "replaces the verdicts of its own judge (a scenario it gave no verdict counts as an error)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the sentences, the p-value gate and the pairs-needed figure (default 0.05)",
    )


def run(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise CommandError("compare needs at least two run folders")
    if args.drop is not None and not (math.isfinite(args.drop) and 0 <= args.drop <= 1):
        raise CommandError(f"--fail-if-worse: expected a fraction from 0 to 1 (0.05 is 5 points), got {args.drop!r}")
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 1):
        raise CommandError(f"--alpha: expected a level between 0 and 1 (0.05), got {args.alpha!r}")
    labels = [chr(ord("A") + index) if index < 26 else f"R{index + 1}" for index in range(len(args.runs))]
    arms = [load_arm(label, path, args.judge) for label, path in zip(labels, args.runs, strict=False)]
    result = build(arms, None if args.drop is None else args.drop * 100, args.gate, args.alpha, args.allow_incomplete)
    text = (
        markdown(result)
        if args.format == "markdown"
        else json.dumps(to_json(result), indent=2, ensure_ascii=False) + "\n"
    )
    if args.output:
        create_file("--output", Path(args.output), text.encode("utf-8"), [arm.path.resolve() for arm in arms])
    else:
        print(text, end="")
    if result.refused:
        print(
            "pytest-gaia2 compare: --fail-if-worse refused: "
            + "; ".join(result.refused)
            + " (--allow-incomplete gates on the pairs both runs have a verdict for)",
            file=sys.stderr,
        )
        return REFUSED
    return 1 if result.worse else 0
