"""``pytest-gaia2 rehearsal OUT``: write a Gaia2-shaped pool for the reference image, to rehearse
N=10/40/160, budgets, probes, compare and shards offline before paying for a model.

OUT must be a new folder or an empty one (never a link, never inside a run folder) whose parent
exists; every file is created new inside it, so nothing already written is touched. The pool is
:mod:`pytest_gaia2.plan.rehearsal`'s; beside the scenarios go ``prices.toml`` (the price of the
reference image's simulated model calls) and a README.md with the commands to rehearse with.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from pytest_gaia2.plan import rehearsal
from pytest_gaia2.plan.builder import dumps
from pytest_gaia2.store.console import CommandError, enclosing_run
from pytest_gaia2.store.names import SPLITS

PRICE_FILE = "prices.toml"
README = "README.md"


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


def commands(out: Path, count: int) -> list[str]:
    """The rehearsal the README and the docs describe, for this pool."""
    base = (
        f"pytest -n 2 --gaia2-scenarios {shlex.quote(str(out))} --gaia2-env GAIA2_REF_USAGE={rehearsal.USAGE} "
        f"--gaia2-price-file {shlex.quote(str(out / PRICE_FILE))} --gaia2-output rehearsal-results"
    )
    first, larger = min(40, count), min(160, count)
    return [
        f"{base} --gaia2-sample {first} --gaia2-budget-halt 3",
        f"{base} --gaia2-sample {larger} --gaia2-budget-halt 30 --gaia2-resume",
    ]


def readme(out: Path, count: int, seed: int) -> str:
    shares = ", ".join(f"{split} {share}" for split, share in rehearsal.shares(count).items())
    lines = [
        "# A rehearsal pool",
        "",
        f"Written by `pytest-gaia2 rehearsal --count {count} --seed {seed}`: {count} scenarios ({shares}) over "
        f"the {len(rehearsal.UNIVERSES)} universes, for the reference image (no model is called).",
        "",
        f"Each oracle action is one simulated model call of `GAIA2_REF_USAGE={rehearsal.USAGE}` tokens "
        f"(prompt, completion, cached), priced by `{PRICE_FILE}`, so budgets, probes and `plan` have money to "
        "count. Rehearse N=40, halted by the budget, then resume to N=160 (no verdict is paid twice):",
        "",
        "```bash",
        *commands(out, count),
        "```",
        "",
    ]
    return "\n".join(lines)


def _create(path: Path, data: bytes) -> None:
    """A new file, created exclusively and never through a link."""
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
    except OSError as exc:
        raise CommandError(f"{path}: cannot create it: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    out = checked(args)
    files = {
        out / split / f"{built.scenario_id}.json": dumps(built.to_dict()).encode("utf-8")
        for split, built in rehearsal.pool(args.count, args.seed)
    }
    try:
        out.mkdir()
    except FileExistsError:
        pass  # the empty folder checked above
    except OSError as exc:
        raise CommandError(f"{args.out}: cannot create it: {exc.strerror or exc}") from None
    for path, data in files.items():
        _create(path, data)
    prices = "".join(f"{key} = {value}\n" for key, value in rehearsal.PRICES.items())
    _create(out / PRICE_FILE, f'["{rehearsal.MODEL}"]  # USD per million tokens\n{prices}'.encode())
    _create(out / README, readme(out, args.count, args.seed).encode("utf-8"))
    print(
        f"pytest-gaia2 rehearsal: wrote {len(files)} scenarios to {out} "
        f"({', '.join(f'{split} {share}' for split, share in rehearsal.shares(args.count).items())}; "
        f"{len(rehearsal.UNIVERSES)} universes), {PRICE_FILE} and {README}"
    )
    print("rehearse (N=40 halted by the budget, then resumed to N=160):")
    for line in commands(out, args.count):
        print(f"  {line}")
    return 0
