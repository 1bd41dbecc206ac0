"""What pytest-gaia2 costs every pytest process to start and end, side by side: this checkout against
another revision (the package of each, exported from git), alternating, in one run.

Each figure is the CPU (user + system, the process and the xdist workers it waited for) of a whole
``pytest`` run, median of the runs, with bytecode cached (in a cache of the benchmark's own, warmed
by a first run of each that is not counted, whatever ``PYTHONDONTWRITEBYTECODE`` says):

- ``idle``: ``pytest --co -q`` in an empty folder (the plugin installed, never used);
- ``collect``: ``pytest --co -q`` of the shipped search split (4 scenarios);
- ``resumed``: a resumed run of those 4 whose verdicts are all stored (2 passed, 2 failed: no
  container starts; pre-flight asks the Docker engine, and the reference image must be built),
  serially and at ``-n 2``.

Every resumed run starts from a fresh copy of the stored run (a run rewrites its folder); the
per-user cache (scenario index, image checks) is the benchmark's own, so this machine's is not read.

    .venv/bin/python benchmarks/startup.py [--against main] [--runs 9]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import side_by_side  # this folder's: the script's own folder is first on sys.path

REPO = side_by_side.REPO
sys.path.insert(0, str(REPO / "tests"))

from gaia2_testing import stored_record, stored_verdict  # noqa: E402 - the tests' helpers, found through the path above

SPLIT = REPO / "scenarios" / "search"
RESUMED = ("-p", "no:cacheprovider", "-q", "--gaia2-scenarios=scenarios", "--gaia2-output=out", "--gaia2-resume=run")
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "idle": ("empty", ("-p", "no:cacheprovider", "--co", "-q")),
    "collect": ("project", ("-p", "no:cacheprovider", "--co", "-q", "--gaia2-scenarios=scenarios")),
    "resumed": ("stored", RESUMED),
    "resumed -n 2": ("stored", (*RESUMED, "-n", "2")),
}
"""Each case: the folder it runs in (``stored`` is copied afresh for every run) and pytest's arguments."""
EXPECTED = {"idle": 5, "collect": 0, "resumed": 1, "resumed -n 2": 1}
"""Each case's exit status: nothing collected in the empty folder; two failed verdicts in the stored run."""


def _stored_run(folder: Path) -> None:
    """The search split and a finished run of it, as tests/plugin/conftest.py's ``stored_run`` makes one."""
    shutil.copytree(SPLIT, folder / "scenarios" / "search")
    for index, source in enumerate(sorted(SPLIT.glob("*.json"))):
        success = index % 2 == 0
        record = stored_record(source, success)
        verdict = folder / "run" / "search" / source.stem
        verdict.mkdir(parents=True)
        stored_verdict(verdict, record)
    (folder / "run" / "run_config.json").write_text('{"run_id": "stored"}', encoding="utf-8")


def _measured(package_root: Path, case: str, folders: Path, env: dict[str, str]) -> float:
    """CPU seconds of one fresh pytest run of ``case`` importing the package under ``package_root``."""
    place, args = CASES[case]
    cwd = folders / place
    if place == "stored":
        cwd = folders / "run-here"
        shutil.rmtree(cwd, ignore_errors=True)
        shutil.copytree(folders / "stored", cwd)
    with open(folders / "output.txt", "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(package_root)},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != EXPECTED[case]:
        text = (folders / "output.txt").read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"{case} under {package_root} ended with {os.waitstatus_to_exitcode(status)}:\n{text}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    args = side_by_side.parser(__doc__).parse_args()
    with tempfile.TemporaryDirectory() as temp:
        other, folders = side_by_side.exported(args.against, Path(temp) / "other"), Path(temp) / "folders"
        (folders / "empty").mkdir(parents=True)
        shutil.copytree(SPLIT, folders / "project" / "scenarios" / "search")
        _stored_run(folders / "stored")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(temp) / "pycache")
        env["XDG_CACHE_HOME"] = str(Path(temp) / "cache")  # the scenario index and image checks of this run only
        print(f"{'CPU s, median':<16}  {args.against:>10}  {'this':>10}  this / {args.against}")
        for case in CASES:
            theirs, ours = side_by_side.alternating(
                args.runs, partial(_measured, other, case, folders, env), partial(_measured, REPO, case, folders, env)
            )
            a, b = statistics.median(theirs), statistics.median(ours)
            print(f"{case:<16}  {a:>10.3f}  {b:>10.3f}  {b / a:.2f}x", flush=True)


if __name__ == "__main__":
    main()
