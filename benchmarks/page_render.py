"""What a small run's pages cost a fresh process, side by side: this checkout against another
revision (the package of each, exported from git), alternating, in one run.

Every run end renders index.html (and trace.html per attempt, as each ends); with ``--gaia2-report``
also report.md and report.html (and their plots: matplotlib). A revision with the templates' cache
loads the compiled templates from the user's cache folder (warm here: the warm-up runs fill it)
instead of compiling them. Each figure is a whole child process, CPU (user + system), median.

    .venv/bin/python benchmarks/page_render.py [--against REV] [--runs 9]
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import side_by_side  # this folder's: the script's own folder is first on sys.path

REPO = side_by_side.REPO
sys.path.insert(0, str(REPO / "tests"))
from gaia2_testing import attempt_record  # noqa: E402 - the tests' record builder, found through the path above

PAGES = (
    "from pytest_gaia2.report.trace_page import write_index, write_trace; "
    "write_trace(folder / 'search' / 's_01' / 'attempt_1'); write_index(folder)"
)
WORK = {
    "trace + index": PAGES,
    "trace + index + report": PAGES + "; from pytest_gaia2.report.document import write_report; write_report(folder)",
}
"""What each child does, after ``folder`` is set to the run folder."""


def _run_folder(root: Path) -> Path:
    """A finished run of ten scenarios over two splits (passes, judge failures, errors), with one
    attempt folder for its trace page; written with this checkout's store."""
    from pytest_gaia2.report.stats import summarise
    from pytest_gaia2.report.summary import write_summary_json
    from pytest_gaia2.store import folder as store

    outcomes: list[bool | None] = [True] * 5 + [False] * 2 + [None] * 3
    records = [
        attempt_record(
            f"s_{i:02d}",
            success,
            num_agent_events=2,
            agent_response="done",
            failure_reasons=["wrong answer"] if success is False else [],
            error="it broke" if success is None else None,
            split="search" if i % 2 else "time",
            universe=f"universe_{i % 4}",
            repeat=1,
            repeats=1,
            run_id="r" * 32,
            wall_time_s=10.0 + i,
            error_category="timeout" if success is None else None,
            folder=f"{'search' if i % 2 else 'time'}/s_{i:02d}/attempt_1",
        )
        for i, success in enumerate(outcomes)
    ]
    run = store.RunFolder.create(root / "out", "0123456789abcdef", dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc))
    keys = [record.key for record in records]
    store.write_json(
        run.file(store.RUN_CONFIG_FILE),
        {
            "command": "pytest -n 2",
            "run_id": "0123456789abcdef",
            "started_at": "2026-12-06T00:00:00+00:00",
            "planned": keys,
            "settings": {"image": "example/agent:1", "model": "m1"},
        },
    )
    for record in records:
        store.append_jsonl(run.results, record.to_json())
    write_summary_json(run.file(store.SUMMARY_FILE), summarise([r.to_json() for r in records], keys), None)
    attempt = run.path / records[1].folder
    attempt.mkdir(parents=True)
    (attempt / "result.json").write_text(json.dumps(records[1].to_json()), encoding="utf-8")
    events = [
        {"event_type": "AGENT", "action": {"app": "Files", "function": "ls", "args": {"path": str(n)}}}
        for n in range(20)
    ]
    (attempt / "events.jsonl").write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return run.path


def _measured(package_root: Path, work: str, folder: Path, cache: Path) -> float:
    """CPU seconds of one fresh process doing ``work``."""
    code = f"from pathlib import Path; folder = Path({str(folder)!r}); {work}"
    process = subprocess.Popen(  # started in the package's root: ``-c`` puts the working folder first on sys.path
        [sys.executable, "-c", code],
        cwd=package_root,
        env={**os.environ, "PYTHONPATH": str(package_root), "XDG_CACHE_HOME": str(cache)},
    )
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"the pages failed under {package_root}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    args = side_by_side.parser(__doc__, against="HEAD~1").parse_args()
    with tempfile.TemporaryDirectory() as temp, tempfile.TemporaryDirectory() as scratch:
        other = side_by_side.exported(args.against, Path(temp))
        folder, cache = _run_folder(Path(scratch)), Path(scratch) / "cache"
        print(f"{'CPU s':<24}  {args.against:>10}  {'this':>10}  this / {args.against}")
        for name, work in WORK.items():
            theirs, ours = side_by_side.alternating(
                args.runs, partial(_measured, other, work, folder, cache), partial(_measured, REPO, work, folder, cache)
            )
            a, b = statistics.median(theirs), statistics.median(ours)
            print(f"{name:<24}  {a:>10.3f}  {b:>10.3f}  {b / a:.2f}x  ({b - a:+.3f} s)")


if __name__ == "__main__":
    main()
