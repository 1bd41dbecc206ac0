"""What a part of the test suite costs in CPU, side by side: this checkout's tests and package
against another revision's (both exported from git), alternating, in one run.

The suite's speed is its CPU: `.ci/run` keeps both cores busy from start to end, so a test that
uses less CPU shortens the whole. Each figure is the user + system CPU of one whole
``pytest ARGS`` run and of every process it waited for (the pytests a test starts, xdist workers,
console commands); the containers and the engine are not counted, as they are not the process's
children. ``CI=true`` (the fixed Hypothesis examples of CI) for both.

    .venv/bin/python benchmarks/suite_cpu.py [--against REV] [--runs N] -- PYTEST ARGS
    .venv/bin/python benchmarks/suite_cpu.py --against f83ca8b --runs 2 -- tests/plugin -m "not docker"
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import side_by_side  # this folder's: the script's own folder is first on sys.path

TREE = (".",)
"""A revision's whole tree: its tests read the package, the shipped scenarios, the examples, the
scripts and the docs."""


def _measured(root: Path, args: list[str]) -> float:
    """CPU seconds of ``pytest ARGS`` run in ``root``, importing the package found there."""
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(root)}
    with open(Path(tempfile.gettempdir()) / "suite_cpu-output.txt", "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
            cwd=root,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed in {root}: see {output.name}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    made = side_by_side.parser(__doc__, runs=2)
    made.add_argument("pytest_args", nargs="+", help="what pytest runs, after --")
    options = made.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        theirs = side_by_side.exported(options.against, Path(folder), TREE)
        (theirs / ".venv").symlink_to(side_by_side.REPO / ".venv")  # the tests that run its pytest-gaia2
        base, this = side_by_side.alternating(
            options.runs,
            lambda: _measured(theirs, options.pytest_args),
            lambda: _measured(side_by_side.REPO, options.pytest_args),
        )
    print(f"pytest {shlex.join(options.pytest_args)}")
    print(f"CPU s       {options.against:>12}  {'this':>12}  this / {options.against}")
    print(
        f"each run    {', '.join(f'{value:.1f}' for value in base):>12}  "
        f"{', '.join(f'{value:.1f}' for value in this):>12}"
    )
    print(
        f"median      {statistics.median(base):12.1f}  {statistics.median(this):12.1f}  "
        f"{statistics.median(this) / statistics.median(base):.2f}x"
    )


if __name__ == "__main__":
    main()
