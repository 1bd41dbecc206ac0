"""``pytest-gaia2 rehearsal OUT``: write a Gaia2-shaped pool for the reference image, to rehearse
N=10/40/160, budgets, probes, compare and shards offline before paying for a model.

OUT must be a new folder or an empty one (never a link, never inside a run folder) whose parent
exists; every file is created new inside it, so nothing already written is touched. The pool is
:mod:`pytest_gaia2.plan.rehearsal`'s, which writes it; beside the scenarios go ``prices.toml`` (the
price of the reference image's simulated model calls) and a README.md with the commands to
rehearse with. This module checks OUT and prints.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pytest_gaia2.plan import rehearsal
from pytest_gaia2.store.console import CommandError, enclosing_run
from pytest_gaia2.store.names import SPLITS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder for the pool")
    parser.add_argument(
        "--count", type=int, default=rehearsal.DEFAULT_COUNT, metavar="N",
        help=f"scenarios, spread evenly over the {len(SPLITS)} splits and "
        f"{len(rehearsal.UNIVERSES)} universes (1 to {rehearsal.MAX_COUNT}; default {rehearsal.DEFAULT_COUNT})",
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S",
        help="seed of the pool's content (default 0): the same seed writes the same files",
    )  # fmt: skip


def checked(args: argparse.Namespace) -> Path:
    """OUT made absolute, after every check: one error naming the argument, before any file exists."""
    if not 1 <= args.count <= rehearsal.MAX_COUNT:
        raise CommandError(
            f"--count {args.count}: expected 1 to {rehearsal.MAX_COUNT} (Gaia2 holds {rehearsal.MAX_COUNT}: "
            f"{rehearsal.PER_SPLIT} per split)"
        )
    if args.seed < 0:
        raise CommandError(f"--seed {args.seed}: expected a whole number of 0 or more")
    out: Path = args.out
    target = out.parent.resolve() / out.name
    if not target.parent.is_dir():
        raise CommandError(f"{out}: its parent folder {target.parent} does not exist")
    if target.is_symlink():
        raise CommandError(f"{out}: is a link; give the folder itself")
    if os.path.lexists(target) and not target.is_dir():
        raise CommandError(f"{out}: exists and is not a folder")
    if target.is_dir() and any(target.iterdir()):
        raise CommandError(f"{out}: not empty; rehearsal never writes over files (give a new or empty folder)")
    run = enclosing_run(target.parent)
    if run is not None:
        raise CommandError(f"{out}: inside run folder {run}; give a folder outside it")
    return target


def run(args: argparse.Namespace) -> int:
    out = checked(args)
    written = rehearsal.write(out, args.out, args.count, args.seed)
    print(
        f"pytest-gaia2 rehearsal: wrote {written} scenarios to {out} "
        f"({', '.join(f'{split} {share}' for split, share in rehearsal.shares(args.count).items())}; "
        f"{len(rehearsal.UNIVERSES)} universes), {rehearsal.PRICE_FILE} and {rehearsal.README}"
    )
    print("rehearse (N=40 halted by the budget, then resumed to N=160):")
    for line in rehearsal.commands(out, args.count):
        print(f"  {line}")
    return 0
