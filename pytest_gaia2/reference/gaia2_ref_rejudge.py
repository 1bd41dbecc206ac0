"""Offline re-judge of the reference image: saved events judged again, no agent, no daemon.

``pytest-gaia2 rejudge`` copies each scenario and its saved events.jsonl into one container,
then runs this once per pass. Turns are judged as the daemon judges them (each turn at its
boundary, fail fast, the final turn last), with the judge settings of the environment:
``GAIA2_JUDGE_MODEL`` and friends (``gaia2_ref_llm``) and ``GAIA2_REF_JUDGE_EXACT=1``.

Usage: python3 gaia2_ref_rejudge.py --jobs JOBS.json --out DIR [FOLDER ...]

JOBS.json is ``[{"folder": "search/x", "scenario": PATH, "events": PATH}, ...]``; only the
FOLDERs named are judged (all when none). Each writes ``DIR/<folder>/judgments.jsonl`` and
``DIR/<folder>/status.json`` (daemon_status.json's shape; ``error`` and ``retryable`` when
no verdict could be made). Exit status 0 unless the jobs file itself is unusable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gaia2_ref_llm
from gaia2_ref_judge import Judge, Judgment, LoggedEvent, split_turns
from gaia2_ref_runtime import env_flag, write_atomic
from gaia2_ref_scenario import Scenario


def read_events(path: Path) -> list[LoggedEvent]:
    """The action lines of an events.jsonl, numbered as the daemon numbers them."""
    lines: list[dict[str, Any]] = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and "app" in line and "fn" in line:
            lines.append(line)
    return [LoggedEvent.from_line(line, seq) for seq, line in enumerate(lines)]


def judge_saved(judge: Judge, events: list[LoggedEvent]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(status, judgment records) of a finished run's events."""
    scenario = judge.scenario
    turns = split_turns(events)
    boundaries = len(turns) - 1
    status: dict[str, Any] = {"status": "complete", "turn": boundaries, "nb_turns": scenario.nb_turns,
                              "num_events": sum(1 for e in events if e.kind != "ENV")}
    if not judge.enabled:
        return status, []
    records: list[dict[str, Any]] = []
    result: Judgment | None = None
    for turn in range(scenario.nb_turns):
        if turn >= boundaries:
            status.update(status="error", error=f"the events end before turn {turn} ended (no boundary)")
            return status, records
        for earlier in turns[:turn]:
            for event in earlier:
                judge.observe(event)
        result = judge.judge_turn(turn, turns[turn])
        records.append(result.record)
        if not result.success:
            break
    assert result is not None  # nb_turns >= 1
    status["status"] = "complete" if result.success else "stopped"
    status["judgment"] = {"success": result.success, "failure_reason": result.failure_reason}
    return status, records


def rejudge_one(job: dict[str, Any], out: Path, exact: bool, model: gaia2_ref_llm.ChatJudge | None) -> None:
    folder = out / str(job["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    try:
        scenario = Scenario.load(str(job["scenario"]))
        events = read_events(Path(job["events"]))
        start = scenario.start_time or (events[0].time if events else None)
        judge = Judge(scenario, start_time=start, exact=exact, soft_check=model)
        status, records = judge_saved(judge, events)
    except gaia2_ref_llm.JudgeUnavailable as exc:
        status = {"status": "error", "error": str(exc), "retryable": True}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        status = {"status": "error", "error": f"cannot judge: {type(exc).__name__}: {exc}", "retryable": False}
    write_atomic(folder / "judgments.jsonl", "".join(json.dumps(r, default=str) + "\n" for r in records))
    write_atomic(folder / "status.json", json.dumps(status) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("folders", nargs="*")
    args = parser.parse_args(argv)
    jobs = json.loads(Path(args.jobs).read_text(encoding="utf-8"))
    wanted = set(args.folders)
    exact = env_flag("GAIA2_REF_JUDGE_EXACT")
    model = gaia2_ref_llm.from_env()
    for job in jobs:
        if not wanted or job["folder"] in wanted:
            rejudge_one(job, Path(args.out), exact, model)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
