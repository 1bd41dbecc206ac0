"""``pytest-gaia2 list [OUTPUT]``: the runs of an output folder, newest first, on the terminal
and in ``OUTPUT/index.html``.

That index.html is the command's own file: it carries a marker, a later ``list`` replaces it,
and a file there without the marker (someone else's) is left alone. Nothing is written into a
run folder, nor into an output folder that is itself a run folder (version 0.1's layout).
:mod:`pytest_gaia2.report.run_list` reads the runs and writes the page; this module prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_gaia2.report import run_list
from pytest_gaia2.report.run_list import INDEX_FILE, write_index
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "List the runs of an output folder, newest first: name, tags, start, sessions, done of "
        "planned, the strict rate with its 95% interval, the cost, and complete or why not; and "
        f"write {INDEX_FILE} of the runs at the output folder's top (replacing only an "
        f"{INDEX_FILE} an earlier list wrote)."
    )
    parser.add_argument(
        "output", nargs="?", default="gaia2-results", type=Path, metavar="OUTPUT",
        help="the folder of run folders (--gaia2-output; default gaia2-results)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    output: Path = args.output
    if not output.is_dir():
        raise CommandError(f"{output} is not a folder")
    folders, more = run_list.run_folders(output)
    if not folders and (output / store.RUN_CONFIG_FILE).is_file():
        raise CommandError(f"{output} is a run folder, not a folder of runs (try its parent, or pytest-gaia2 report)")
    found = run_list.rows(output, folders)
    if not found:
        print(f"pytest-gaia2 list: no run folder in {output}")
    else:
        for line in run_list.lines(found):
            print(line)
    if more:
        print(f"pytest-gaia2 list: only the first {run_list.MAX_RUNS} entries of {output} were looked at")
    print(f"pytest-gaia2 list: {write_index(output, found)}")
    return 0
