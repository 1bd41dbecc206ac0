"""``pytest-gaia2`` (also ``python -m pytest_gaia2.cli``): work on run folders after the run.

Each subcommand lives in a module of its own that offers ``configure(parser)`` and
``run(args) -> int``; this module only dispatches, so ``pytest-gaia2 --help`` imports none
of their (sometimes heavy) libraries.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pytest_gaia2.store import redact
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.folder import StoreError

#: subcommand -> (module that implements it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": ("pytest_gaia2.cli.report", "write report.md and report.html (with plots) into run folders"),
    "compare": ("pytest_gaia2.cli.compare", "paired comparison of two or more runs on the same scenarios"),
    "merge": ("pytest_gaia2.cli.merge", "one run folder from several (shards, resumed pieces, machines)"),
    "rejudge": ("pytest_gaia2.cli.rejudge", "re-run the image's judge on a saved run, without the agent"),
    "plan": ("pytest_gaia2.cli.plan", "scenarios, cost and time an answer needs, from a probe or an earlier run"),
    "list": ("pytest_gaia2.cli.list", "the runs of an output folder, newest first, and an index.html of them"),
    "export": ("pytest_gaia2.cli.export", "a run as Meta's Gaia2 leaderboard takes it (--check validates an export)"),
    "rehearsal": ("pytest_gaia2.cli.rehearsal", "write a Gaia2-shaped pool of up to 800 scenarios to rehearse offline"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="pytest-gaia2", description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = parser()
    if not argv or argv[0] not in COMMANDS:
        top.parse_args(argv)  # prints usage or the error, and exits
        return 2
    name = argv[0]
    module_name, help_text = COMMANDS[name]
    module = importlib.import_module(module_name)
    command = argparse.ArgumentParser(prog=f"pytest-gaia2 {name}", description=help_text)
    module.configure(command)
    args = command.parse_args(argv[1:])
    try:
        return int(module.run(args))
    except (CommandError, StoreError) as exc:
        # the message names files and values of folders from anywhere: no escape reaches the terminal
        print(f"pytest-gaia2 {name}: {redact.printable(str(exc))}", file=sys.stderr)
        return 2
