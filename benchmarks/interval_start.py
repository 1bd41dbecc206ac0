"""What the 95% interval of a small run costs a fresh process, side by side: this checkout against
another revision (the package of each, exported from git), alternating, in one run.

The end of every run computes the summary's intervals in the controller while the xdist workers
still live; a run of up to 1,025 scenarios reads Student's t from ``report/t_table.py`` instead of
loading scipy. Each figure is a whole child process: CPU (user + system) and peak memory, medians.

    .venv/bin/python benchmarks/interval_start.py [--against REV] [--runs 9]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import side_by_side  # this folder's: the script's own folder is first on sys.path

REPO = side_by_side.REPO
WORK = "from pytest_gaia2.report.stats import cluster_robust; cluster_robust([2, 1, 2, 0], [2, 2, 2, 2])"
"""A run's cluster-robust interval over four universes of two scenarios, as the summary computes it."""


def _measured(package_root: Path) -> tuple[float, float]:
    """(CPU seconds, peak memory in MB) of one fresh process doing :data:`WORK`."""
    process = subprocess.Popen(  # started in the package's root: ``-c`` puts the working folder first on sys.path
        [sys.executable, "-c", WORK], cwd=package_root, env={**os.environ, "PYTHONPATH": str(package_root)}
    )
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"the interval failed under {package_root}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    args = side_by_side.parser(__doc__, against="HEAD~1").parse_args()
    with tempfile.TemporaryDirectory() as temp:
        other = side_by_side.exported(args.against, Path(temp))
        theirs, ours = side_by_side.alternating(args.runs, lambda: _measured(other), lambda: _measured(REPO))
    print(f"{'':<16}  {args.against:>10}  {'this':>10}  this / {args.against}")
    for index, figure in enumerate(("CPU s", "peak MB")):
        a = statistics.median(run[index] for run in theirs)
        b = statistics.median(run[index] for run in ours)
        print(f"{figure:<16}  {a:>10.3f}  {b:>10.3f}  {b / a:.2f}x")


if __name__ == "__main__":
    main()
