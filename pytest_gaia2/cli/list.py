"""``pytest-gaia2 list [OUTPUT]``: the runs of an output folder, newest first, on the terminal
and in ``OUTPUT/index.html``.

That index.html is the command's own file: it carries a marker, a later ``list`` replaces it,
and a file there without the marker (someone else's) is left alone. Nothing is written into a
run folder, nor into an output folder that is itself a run folder (version 0.1's layout).
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from pytest_gaia2.report import run_list
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError, enclosing_run

INDEX_FILE = "index.html"
MARKER = "<!-- pytest-gaia2 list: written by `pytest-gaia2 list`; the next `list` replaces it -->"
MARKER_BYTES = 4096
"""How much of an existing index.html is read to find the marker (it is on the second line)."""


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


def ours(path: Path) -> bool | None:
    """Whether ``path`` is an index.html this command wrote (None: there is no file there). Only
    a regular file that is no link counts, and only its head is read."""
    if not os.path.lexists(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return stat.S_ISREG(os.fstat(fd).st_mode) and MARKER.encode() in handle.read(MARKER_BYTES)


def write_index(output: Path, found: list[run_list.RunRow]) -> str:
    """Write OUTPUT/index.html when it is the command's to write; the line that says what happened."""
    output = output.resolve()
    run = enclosing_run(output)
    if run is not None:
        return f"{INDEX_FILE} not written: {output} is inside run folder {run}; list never writes into a run folder"
    target = output / INDEX_FILE
    if ours(target) is False:
        return f"{INDEX_FILE} not written: {target} exists and was not written by pytest-gaia2 list"
    html = run_list.render_html(found, f"Gaia2 runs in {run_list.shown(output.name)}", MARKER)
    store.write_text(target, html)
    return f"runs page: {target}"


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
