"""The run's numbers agree everywhere: terminal summary, results.jsonl, summary.json,
run_config.json and JUnit, and with this test's own recount.

The first shipped scenario of each split, a judge failure and an unreadable file run on two
workers (every split, at less than half the containers of all twelve shipped ones); then the
run is resumed with one more scenario whose daemon errors, so the final session holds
passes, a failure and errors of two categories, most of them reused.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import (
    DATA,
    FIRST_OF_EACH_SPLIT,
    SHIPPED,
    gaia2_containers,
    results_of,
    run_folder,
    run_id_of,
    run_pytest,
)

from pytest_gaia2 import __version__

Z95 = 1.959963984540054
JUDGE_FAIL = "scenario_universe_22_ygzpjz"
DAEMON_ERROR = "scenario_universe_23_wuprci"
INVALID = "not_json"
SHIPPED_IDS = {path.stem: path.parent.name for path in FIRST_OF_EACH_SPLIT}
EXPECTED: dict[str, tuple[str, str, str | None]] = {  # id -> split, outcome, error category
    **{sid: (split, "passed", None) for sid, split in SHIPPED_IDS.items()},
    JUDGE_FAIL: ("search", "failed", None),
    DAEMON_ERROR: ("search", "error", "daemon_error"),
    INVALID: ("malformed", "error", "invalid_scenario"),
}


class Run:
    """The resumed session's terminal output and files."""

    def __init__(self, folder: Path, stdout: str, started: dt.datetime) -> None:
        self.folder = folder
        self.output = folder / "out"
        self.stdout = stdout
        self.started = started
        self.summary = json.loads((run_folder(self.output) / "summary.json").read_text(encoding="utf-8"))
        self.run_config = json.loads((run_folder(self.output) / "run_config.json").read_text(encoding="utf-8"))


def _resumed_run(folder: Path) -> Run:
    started = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    scenarios = [*(f"--gaia2-scenarios={path}" for path in FIRST_OF_EACH_SPLIT),
                 f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}",
                 f"--gaia2-scenarios={DATA / 'scenarios' / 'malformed' / 'not_json.json'}"]
    first = run_pytest(folder, "-n", "2", *scenarios)
    first.assert_outcomes(passed=len(SHIPPED_IDS), failed=1, errors=1)
    first_id = run_id_of(folder / "out")
    second = run_pytest(folder, "-n", "2", *scenarios, f"--gaia2-scenarios={DATA / 'scenarios' / 'no_events'}",
                        "--gaia2-resume", "--gaia2-resume-mismatch=warn", "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1",
                        "--gaia2-judge-grace=1",
                        "--junitxml=junit.xml")
    second.assert_outcomes(passed=len(SHIPPED_IDS), failed=1, errors=2)
    for run_id in (first_id, run_id_of(folder / "out")):
        assert gaia2_containers(run_id) == []
    return Run(folder, second.stdout.str(), started)


def _wilson(successes: int, n: int) -> tuple[float, float]:
    """Written out again here, so the plugin's figures are checked against an independent sum."""
    p = successes / n
    denominator = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _shown(fraction: float) -> str:
    return f"{fraction * 100:.1f}"


def _latest(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last record per scenario: a resumed session's records come after the first session's."""
    return {record["scenario_id"]: record for record in records}


def test_hand_checked_interval() -> None:
    """A hand-checked example, so the recount below is trusted."""
    low, high = _wilson(103, 157)
    assert (_shown(low), _shown(high)) == ("57.9", "72.6")


def _check_terminal_results_and_summary_agree_with_recount(run: Run) -> None:
    counts = Counter(outcome for _, outcome, _ in EXPECTED.values())
    total, passed, failed, errors = len(EXPECTED), counts["passed"], counts["failed"], counts["error"]

    latest = _latest(results_of(run.output))
    assert {sid: (r["split"], r["outcome"], r["error_category"]) for sid, r in latest.items()} == EXPECTED
    for record in latest.values():
        assert record["success"] == {"passed": True, "failed": False, "error": None}[record["outcome"]]
    on_disk = {sid: json.loads((run_folder(run.output) / split / sid / "result.json").read_text(encoding="utf-8"))
               for sid, (split, _, _) in EXPECTED.items()}  # a bad file gets its record too
    assert {sid: record["success"] for sid, record in on_disk.items()} == {
        sid: record["success"] for sid, record in latest.items()}
    assert sum(record["reused"] for record in latest.values()) == len(SHIPPED_IDS) + 1

    summary = run.summary
    assert [summary[key] for key in ("total", "passed", "failed", "errors")] == [total, passed, failed, errors]
    assert summary["reused"] == len(SHIPPED_IDS) + 1
    assert summary["run_id"] == run.run_config["run_id"]
    for rate, n in (("strict", total), ("judged", passed + failed)):
        low, high = _wilson(passed, n)
        assert summary[rate]["successes"] == passed and summary[rate]["n"] == n
        assert summary[rate]["value"] == pytest.approx(passed / n)
        assert (summary[rate]["low"], summary[rate]["high"]) == (pytest.approx(low), pytest.approx(high))
    assert summary["errors_by_category"] == {"daemon_error": {"count": 1, "ids": [DAEMON_ERROR]},
                                             "invalid_scenario": {"count": 1, "ids": [INVALID]}}
    assert sorted(summary["error_ids"]) == sorted([DAEMON_ERROR, INVALID])
    assert summary["error_rate"] == pytest.approx(errors / total)
    times = {sid: r["wall_time_s"] for sid, r in latest.items() if r["wall_time_s"] is not None}
    assert INVALID not in times  # it never ran, so it does not pull the median down
    assert summary["timing"]["wall_time_median_s"] == pytest.approx(statistics.median(times.values()))
    assert summary["timing"]["slowest"]["scenario_id"] == max(times, key=lambda sid: times[sid])
    splits = Counter((split, outcome) for split, outcome, _ in EXPECTED.values())
    for split, group in summary["splits"].items():
        assert (group["passed"], group["failed"], group["errors"]) == (
            splits[split, "passed"], splits[split, "failed"], splits[split, "error"])
    assert sum(group["total"] for group in summary["splits"].values()) == total

    stdout = run.stdout
    assert f"{total} scenarios: {passed} passed, {failed} failed, {errors} errors, {summary['reused']} reused" in stdout
    for label, n in (("strict", total), ("judged-only", passed + failed)):
        low, high = _wilson(passed, n)
        line = next(line for line in stdout.splitlines() if line.startswith(f"{label} "))
        assert line.split()[1:] == [f"{passed}/{n}", "=", f"{_shown(passed / n)}%", f"[{_shown(low)}–{_shown(high)}]"]
    rows = {line.split()[0]: line.split()[1:5] for line in stdout.splitlines()
            if line.split() and line.split()[0] in summary["splits"]}
    assert rows == {split: [str(group[key]) for key in ("total", "passed", "failed", "errors")]
                    for split, group in summary["splits"].items()}
    errors_block = stdout.split("errors by category:")[1].splitlines()[1:3]
    assert sorted(line.split() for line in errors_block) == [["daemon_error", "1", DAEMON_ERROR],
                                                              ["invalid_scenario", "1", INVALID]]


def _check_run_config(run: Run) -> None:
    """run_config.json is the first session's, never rewritten; each session adds a line to sessions.jsonl."""
    config = run.run_config
    client = docker.from_env()
    try:
        image_id = client.images.get(config["image"]).id
    finally:
        client.close()
    # gaia2-runner's keys, with its names and meanings (contract 5.4)
    for key in ("command", "started_at", "user", "image", "runtime", "provider", "model", "base_url",
                "judge_model", "judge_provider", "judge_base_url", "timeout", "health_timeout", "concurrency",
                "limit", "dataset", "num_scenarios", "total_runs"):
        assert key in config, key
    assert (config["image"], config["provenance"]["image_id"]) == (config["settings"]["image"], image_id)
    assert (config["concurrency"], config["num_scenarios"], config["total_runs"]) == (2, len(EXPECTED) - 1, 1)
    assert config["plugin_version"] == __version__
    assert run.started <= dt.datetime.fromisoformat(config["started_at"]) <= dt.datetime.now(dt.timezone.utc)
    settings = config["settings"]
    assert (settings["timeout"], settings["health_timeout"], settings["judge_grace"]) == (600.0, 120.0, 15.0)
    assert settings["network"] == "bridge" and settings["extra_env"] == {}
    assert config["selection"]["repeat"] == 1
    assert sorted(config["planned"]) == sorted(f"{split}/{sid}" for sid, (split, _, _) in EXPECTED.items()
                                               if sid != DAEMON_ERROR)
    sessions = [json.loads(line) for line in (run_folder(run.output) / "sessions.jsonl").read_text().splitlines()]
    assert [s["session_id"] for s in sessions][0] == config["session_id"] and len(sessions) == 2
    assert "--gaia2-resume" in sessions[1]["command"] and sessions[1]["provenance"]["env_digest"]
    assert sessions[1]["provenance"]["run_id"] == config["run_id"] == sessions[0]["provenance"]["run_id"]


def _check_junit_properties(run: Run) -> None:
    tree = ET.parse(run.folder / "junit.xml")
    found = {}
    for case in tree.iter("testcase"):
        properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
        found[properties["gaia2_scenario_id"]] = (properties["gaia2_verdict"], properties["gaia2_error_category"])
    assert found == {sid: (outcome, category or "") for sid, (_, outcome, category) in EXPECTED.items()}


@pytest.mark.slow
def test_resumed_run_files_agree(tmp_path: Path) -> None:
    """One pair of real runs, every file checked (one test, so parallel workers never repeat the runs)."""
    run = _resumed_run(tmp_path)
    _check_terminal_results_and_summary_agree_with_recount(run)
    _check_run_config(run)
    _check_junit_properties(run)


@pytest.mark.slow
def test_repeat_shows_pass_at_k_and_flips(tmp_path: Path, run_gaia2_inprocess: Any) -> None:
    """--gaia2-repeat 2 for real, then a resumed session after one stored verdict was changed,
    as a flaky agent would have produced it: the flip is named."""
    passing = "scenario_universe_21_7kww6e"
    args = ("-n", "2", f"--gaia2-scenarios={SHIPPED / 'search'}",
            f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}",
            "-k", f"{passing} or {JUDGE_FAIL}", "--gaia2-repeat=2")
    result = run_pytest(tmp_path, *args)
    result.assert_outcomes(passed=2, failed=2)
    output = tmp_path / "out"
    assert gaia2_containers(run_id_of(output)) == []
    result.stdout.fnmatch_lines([
        "4 results (2 scenarios x 2 runs): 2 passed, 2 failed, 0 errors",
        "pass@2 (2 scenarios x 2 runs;*",
        "  avg@2*2/4 = 50.0% [[]0.3–99.7[]]",  # two scenarios (t on 1 df): they say almost nothing more
        "  pass@2*1/2 = 50.0% [[]9.5–90.5[]]",
        "  pass^2*1/2 = 50.0% [[]9.5–90.5[]]",
        "  per run: run_1 50.0%, run_2 50.0%",
    ])
    repeats = json.loads((run_folder(output) / "summary.json").read_text(encoding="utf-8"))["repeats"]
    assert repeats["patterns"] == {passing: "PP", JUDGE_FAIL: "FF"} and repeats["flipped"] == {}
    assert sorted((r["scenario_id"], r["repeat"]) for r in results_of(output)) == sorted(
        (sid, run) for sid in (passing, JUDGE_FAIL) for run in (1, 2))

    stored = run_folder(output) / "run_2" / "search" / passing / "result.json"
    record = json.loads(stored.read_text(encoding="utf-8"))
    stored.write_text(json.dumps({**record, "success": False, "outcome": "failed",
                                  "failure_reasons": ["changed by the test"]}), encoding="utf-8")
    # the judge's files beside it say the same, or resume would not reuse the changed verdict
    judgment = {"success": False, "failure_reason": "changed by the test"}
    (stored.parent / "daemon_status.json").write_text(json.dumps({"status": "stopped", "judgment": judgment}),
                                                      encoding="utf-8")
    (stored.parent / "daemon_judgments.jsonl").write_text(json.dumps(judgment) + "\n", encoding="utf-8")
    resumed = run_gaia2_inprocess(*args, "--gaia2-resume", cwd=tmp_path)  # every verdict stored: no container
    resumed.assert_outcomes(passed=1, failed=3)
    resumed.stdout.fnmatch_lines(["  pass@2*1/2 = 50.0%*", "  pass^2*0/2 =*0.0%*",
                                  f"  flipped (1): {passing} PF"])
