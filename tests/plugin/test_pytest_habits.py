"""Ordinary pytest habits on a benchmark run: -x, --maxfail, --lf, --ff, -p no:xdist,
--strict-markers and pytest-rerunfailures' --reruns. Every count agrees in the terminal,
results.jsonl, summary.json and JUnit; a run that stopped early says it is incomplete.

Verdicts are stored by hand in a run folder that ``--gaia2-resume=run`` continues (no
container), except for --reruns, which runs a real judge failure.
"""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import DATA, engine_events, run_folder, stored_verdict

pytestmark = pytest.mark.docker  # every run resumes a run folder: its pre-flight asks the engine
MANY = DATA / "scenarios" / "many" / "search"
FAILING = 2  # the first two scenarios (in collection order) hold stored failures


@pytest.fixture
def stored(pytester: pytest.Pytester) -> list[str]:
    """Six scenarios with stored verdicts (two failures first) in the run folder ``run``."""
    split = pytester.path / "scenarios" / "search"
    split.mkdir(parents=True)
    ids = []
    for index, source in enumerate(sorted(MANY.glob("*.json"))[:6]):
        shutil.copy(source, split)
        folder = pytester.path / "run" / "search" / source.stem
        folder.mkdir(parents=True)
        success = index >= FAILING
        record = {"scenario_id": source.stem, "split": "search", "success": success,
                  "failure_reasons": [] if success else ["stored failure"]}
        stored_verdict(folder, record)
        ids.append(source.stem)
    (pytester.path / "run" / "run_config.json").write_text("{}", encoding="utf-8")
    return ids


def _run(pytester: pytest.Pytester, *args: str, cache: bool = False) -> pytest.RunResult:
    """In file order, so the stored failures come first and -x / --maxfail stop where the tests say."""
    return pytester.runpytest_subprocess(*(() if cache else ("-p", "no:cacheprovider")), "--gaia2-scenarios=scenarios",
                                         "--gaia2-resume=run", "--gaia2-order=file", "--junitxml=j.xml", *args)


def _counts(pytester: pytest.Pytester) -> dict[str, Any]:
    """The same numbers read from results.jsonl, summary.json and JUnit."""
    folder = run_folder(pytester.path) if (pytester.path / "latest").exists() else pytester.path / "run"
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    summary = json.loads((folder / "summary.json").read_text())
    cases = ET.parse(pytester.path / "j.xml").findall(".//testcase")
    failed = [case for case in cases if case.find("failure") is not None]
    props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "j.xml").findall(
        "./testsuite/properties/property")}
    return {"rows": (len(rows), sum(not r["success"] for r in rows)),
            "summary": (summary["done"], summary["failed"]),
            "junit": (len(cases), len(failed)),
            "planned": (summary["planned"], int(props["gaia2_planned"])),
            "complete": (summary["complete"], props["gaia2_complete"])}


@pytest.mark.parametrize("stop", [("-x",), ("--maxfail=1",)], ids=["-x", "--maxfail"])
def test_stopping_early_is_an_incomplete_run_everywhere(pytester: pytest.Pytester, stored: list[str],
                                                      stop: tuple[str, ...]) -> None:
    result = _run(pytester, *stop, "-p", "no:randomly")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["INCOMPLETE: 1 of 6 planned scenarios done (5 not run: *",
                                 "strict      0/6 =*(not-run counted as not passed)"])
    assert result.outlines[-1] == ("gaia2: INCOMPLETE: 5 of 6 planned scenarios did not run; stopped early: the run "
                                   "ended before they started (pytest stopped, or a worker was lost)")
    assert _counts(pytester) == {"rows": (1, 1), "summary": (1, 1), "junit": (1, 1), "planned": (6, 6),
                                 "complete": (False, "false")}


def test_an_incomplete_run_fails_the_gate_unless_allowed(pytester: pytest.Pytester, stored: list[str]) -> None:
    """Stopping after the failures but with a low bar: the gate fails for being incomplete."""
    gated = _run(pytester, "--maxfail=2", "--gaia2-min-pass-rate=0.0")
    assert gated.ret == 1
    gated.stdout.fnmatch_lines(["gate: incomplete: 4 of 6 planned scenarios did not run*not met*"])
    assert gated.outlines[-1] == (
        "gate: FAIL: 1 condition missed: incomplete: 4 of 6 planned scenarios did not run; stopped early: the run "
        "ended before they started (pytest stopped, or a worker was lost)")
    allowed = _run(pytester, "--maxfail=2", "--gaia2-min-pass-rate=0.0", "--gaia2-allow-incomplete")
    assert allowed.ret == 0
    allowed.stdout.fnmatch_lines(["gate: incomplete: *allowed (--gaia2-allow-incomplete)*"])


def test_last_failed_and_failed_first_reuse_the_verdicts(pytester: pytest.Pytester, stored: list[str]) -> None:
    first = _run(pytester, cache=True)
    first.assert_outcomes(passed=4, failed=2)
    again = _run(pytester, "--lf", cache=True)
    again.assert_outcomes(failed=2, deselected=4)
    assert _counts(pytester)["rows"] == (2, 2) and "2 reused" in again.stdout.str()
    ordered = _run(pytester, "--ff", "-v", cache=True)
    ordered.assert_outcomes(passed=4, failed=2)
    names = [line.split("::test_scenario[")[1].split("]")[0] for line in ordered.outlines if "::test_scenario[" in line
             and ("PASSED" in line or "FAILED" in line)]
    assert names[:2] == stored[:2]
    assert _counts(pytester) == {"rows": (6, 2), "summary": (6, 2), "junit": (6, 2), "planned": (6, 6),
                                 "complete": (True, "true")}


def test_without_xdist_and_with_strict_markers(pytester: pytest.Pytester, stored: list[str]) -> None:
    result = _run(pytester, "-p", "no:xdist", "--strict-markers", "-m", "search_split and universe_21")
    result.assert_outcomes(failed=2, passed=2)
    assert _counts(pytester)["rows"] == (4, 2)


def test_reruns_never_run_a_judged_scenario_again(pytester: pytest.Pytester, run_gaia2: Callable[..., Any]) -> None:
    """pytest-rerunfailures re-runs the failed test; its verdict is final in the run folder, so the
    rerun reports it again without a container, and every count still says one scenario."""
    pytest.importorskip("pytest_rerunfailures")
    since = time.time()
    result = run_gaia2(f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}", "-p", "rerunfailures", "--reruns=2", "--junitxml=j.xml")
    outcomes = result.parseoutcomes()
    assert (outcomes.get("failed"), outcomes.get("rerun")) == (1, 2), outcomes
    output = pytester.path / "out"
    folder = run_folder(output)
    session = json.loads((folder / "sessions.jsonl").read_text().splitlines()[-1])["session_id"]
    created = [e for e in engine_events(since, label=f"org.pytest-gaia2.run={session}", event="create")
               if e["Actor"]["Attributes"].get("org.pytest-gaia2.scenario") != "preflight"]
    assert len(created) == 1  # one container for one scenario, whatever pytest re-ran
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    summary = json.loads((folder / "summary.json").read_text())
    cases = ET.parse(pytester.path / "j.xml").findall(".//testcase")
    failures = [case for case in cases if case.find("failure") is not None]
    # pytest-rerunfailures writes each rerun as a testcase of its own without a failure child
    # (its way with JUnit for every test); one failure, one record, one summary count.
    assert (len(rows), summary["failed"], summary["total"], len(failures)) == (1, 1, 1, 1)
    assert rows[0]["attempt"] == 1 and not list(Path(folder).glob("search/*/attempt_*"))
