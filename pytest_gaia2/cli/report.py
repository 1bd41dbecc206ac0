"""``pytest-gaia2 report RUN...``: report.md and report.html (plots under report/) in each run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_gaia2.report.document import write_report
from pytest_gaia2.report.plots import MissingLibrary
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write report.md and report.html (plots embedded; PNGs under report/) into each "
        "run folder named. Several RUN arguments give several reports, one per run "
        "folder; to report on runs together, merge them first (pytest-gaia2 merge)."
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", type=Path, help="a run folder, or an output folder (its latest run is meant)"
    )
    parser.add_argument(
        "--alluredir", type=Path, metavar="DIR", help="also add the report and its plots to this Allure results folder"
    )


def run(args: argparse.Namespace) -> int:
    folders = [store.RunFolder.existing(path) for path in args.runs]  # every name checked before writing
    for folder in folders:
        try:
            written = write_report(folder.path, args.alluredir)
        except MissingLibrary as exc:
            raise CommandError(str(exc)) from None
        print(f"pytest-gaia2 report: {written[1]} ({written[0].name}; plots: {len(written) - 2})")
    return 0
