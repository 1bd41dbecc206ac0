"""Allure from real runs: statuses, titles, labels, parameters, capped attachments on every
outcome, categories and environment; with the Allure command line, the generated report too.

Two runs write into one results folder, as a CI job with a retry step would: two passes, a
judge failure and an unreadable scenario file on two workers, then a run whose daemon errors.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import (
    DATA,
    SHIPPED,
    WITH_ALLURE,
    gaia2_containers,
    run_folder,
    run_id_of,
    run_pytest,
)

from pytest_gaia2 import __version__
from pytest_gaia2.plugin.allure import ATTACHMENT_CAP
from pytest_gaia2.report.allure_categories import (
    INFRA_PREFIX,
    JUDGE_PREFIX,
    categories,
    category_of,
)
from pytest_gaia2.report.allure_flaky import RUN_PARAMETER
from pytest_gaia2.store.record import CATEGORIES

SECRET = "allure-test-token-5f3a9c"
PASSING = ("scenario_universe_21_7kww6e", "scenario_universe_24_zqzvsf")
JUDGE_FAIL = "scenario_universe_22_ygzpjz"
JUDGE_KIND = f"{JUDGE_PREFIX}tool count mismatch"  # the kind of judge failure it is
DAEMON_ERROR = "scenario_universe_23_wuprci"  # tests/data/scenarios/no_events
INVALID = "not_json"  # tests/data/scenarios/malformed/not_json.json: never reaches a container
STATUS = {**{sid: "passed" for sid in PASSING}, JUDGE_FAIL: "failed", DAEMON_ERROR: "broken", INVALID: "broken"}
RAN_IN_CONTAINER = (*PASSING, JUDGE_FAIL, DAEMON_ERROR)
CONTAINER_FILES = {"result.json", "events.jsonl", "daemon_status.json", "entrypoint.log", "eventd.log",
                   "container.log"}
NOTE_SLACK = 1024  # the line that states the cap


def _allure_runs(folder: Path) -> None:
    line = json.dumps({"event": "x" * 200}) + "\n"
    trace = folder / "trace.jsonl"  # copied in as the agent's trace: bigger than the cap
    trace.write_text(line * (ATTACHMENT_CAP // len(line) + 200), encoding="utf-8")
    scenarios = DATA / "scenarios"
    first = run_pytest(
        folder, "-n", "2", f"--gaia2-scenarios={SHIPPED / 'search'}",
        f"--gaia2-scenarios={scenarios / 'judge_fail'}",
        f"--gaia2-scenarios={scenarios / 'malformed' / 'not_json.json'}",
        "-k", " or ".join((*PASSING, JUDGE_FAIL, INVALID)), f"--gaia2-copy-in={trace}:/tmp/trace.jsonl",
        f"--gaia2-env=GAIA2_TEST_TOKEN={SECRET}", *WITH_ALLURE, "--alluredir=allure", "--clean-alluredir",
    )
    first.assert_outcomes(passed=2, failed=1, errors=1)
    second = run_pytest(
        folder, f"--gaia2-scenarios={scenarios / 'no_events'}", "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1",
        "--gaia2-judge-grace=1", *WITH_ALLURE, "--alluredir=allure", output="out-fault",
    )
    second.assert_outcomes(errors=1)
    for output in ("out", "out-fault"):
        assert gaia2_containers(run_id_of(folder / output)) == []


def _results(folder: Path) -> dict[str, dict[str, Any]]:
    """Allure test results by name, which is the title: the scenario id."""
    results = [json.loads(path.read_text(encoding="utf-8")) for path in (folder / "allure").glob("*-result.json")]
    return {result["name"]: result for result in results}


def _labels(result: dict[str, Any], name: str) -> list[str]:
    return [label["value"] for label in result["labels"] if label["name"] == name]


def _attachments(folder: Path, result: dict[str, Any]) -> dict[str, bytes]:
    return {item["name"]: (folder / "allure" / item["source"]).read_bytes() for item in result["attachments"]}


def _check_statuses_titles_and_labels(folder: Path) -> None:
    results = _results(folder)
    assert {name: result["status"] for name, result in results.items()} == STATUS
    assert "[daemon_error]" in results[DAEMON_ERROR]["statusDetails"]["message"]
    assert "[invalid_scenario]" in results[INVALID]["statusDetails"]["message"]
    assert "Tool count mismatch" in results[JUDGE_FAIL]["statusDetails"]["message"]
    for name, result in results.items():
        assert _labels(result, "parentSuite") == ["Gaia2"]
        assert _labels(result, "suite") == ["malformed" if name == INVALID else "search"]
        universe = re.search(r"universe_\d+", name)
        assert _labels(result, "subSuite") == [universe.group(0) if universe else "no universe"]
        assert _labels(result, "feature") == _labels(result, "suite")
        assert _labels(result, "story") == _labels(result, "subSuite")
    assert "contacts" in _labels(results[PASSING[0]], "tag")  # the scenario's own tags
    description = results[PASSING[0]]["description"]
    assert "**Task**" in description and "213" in description  # the task and the oracle's expected answer


def _check_parameters_masked_and_no_secret_written(folder: Path) -> None:
    run_config = json.loads((run_folder(folder / "out") / "run_config.json").read_text(encoding="utf-8"))
    for name, result in _results(folder).items():
        params = {param["name"]: param for param in result["parameters"]}
        assert params["gaia2_item"]["mode"] == "hidden"
        run = run_config if name != DAEMON_ERROR else json.loads(
            (run_folder(folder / "out-fault") / "run_config.json").read_text(encoding="utf-8"))
        assert params[RUN_PARAMETER] == {"name": RUN_PARAMETER, "value": repr(run["run_id"]), "excluded": True,
                                         "mode": "hidden"}
        assert not (result.get("statusDetails") or {}).get("flaky")  # no scenario repeated: nothing flaky
        assert params["image"]["value"] == repr(run_config["settings"]["image"])
        assert params["image id"]["value"] == repr(run_config["provenance"]["image_id"])
        assert {"model", "provider", "judge"} <= params.keys()
        if name != DAEMON_ERROR:  # the first run's tests carry the secret-looking variable
            assert params["env GAIA2_TEST_TOKEN"]["mode"] == "masked"
            assert params["env GAIA2_TEST_TOKEN"]["value"] == repr("***")
    leaks = [path for path in folder.rglob("*") if path.is_file() and SECRET.encode() in path.read_bytes()]
    assert leaks == []


def _check_attachments_on_every_outcome_and_capped(folder: Path) -> None:
    results = _results(folder)
    for name in RAN_IN_CONTAINER:
        attachments = _attachments(folder, results[name])
        assert CONTAINER_FILES <= attachments.keys(), f"{name} ({STATUS[name]}): {sorted(attachments)}"
        assert all(len(body) <= ATTACHMENT_CAP + NOTE_SLACK for body in attachments.values())
        assert json.loads(attachments["result.json"])["scenario_id"] == name
        # The span is the scenario's (set-up fixtures included), not the empty call phase.
        wall_ms = json.loads(attachments["result.json"])["wall_time_s"] * 1000
        assert results[name]["stop"] - results[name]["start"] >= wall_ms - 50
    for name in (*PASSING, JUDGE_FAIL):
        trace = _attachments(folder, results[name])["trace.jsonl"].decode("utf-8")
        assert len(trace.encode("utf-8")) > ATTACHMENT_CAP
        note = trace.splitlines()[0]
        assert f"cut to the first {ATTACHMENT_CAP // 1024} KiB" in note
        assert str(run_folder(folder / "out") / "search" / name / "trace.jsonl") in note
    assert "trace.jsonl" not in _attachments(folder, results[DAEMON_ERROR])  # only when present
    invalid = _attachments(folder, results[INVALID])
    assert json.loads(invalid["result.json"])["error_category"] == "invalid_scenario"


def _check_categories_and_environment(folder: Path) -> None:
    written = json.loads((folder / "allure" / "categories.json").read_text(encoding="utf-8"))
    assert {group["name"] for group in written} == {group["name"] for group in categories()}
    assert {f"{INFRA_PREFIX}{name}" for name in CATEGORIES} <= {group["name"] for group in written}
    results = _results(folder)
    expected = {JUDGE_FAIL: JUDGE_KIND, DAEMON_ERROR: f"{INFRA_PREFIX}daemon_error",
                INVALID: f"{INFRA_PREFIX}invalid_scenario"}
    for name, category in expected.items():
        details = results[name]["statusDetails"]
        assert category_of(results[name]["status"], details.get("message"), details.get("trace")) == category

    lines = (folder / "allure" / "environment.properties").read_text(encoding="utf-8").splitlines()
    environment = dict(line.split("=", 1) for line in lines)
    first = json.loads((run_folder(folder / "out") / "run_config.json").read_text(encoding="utf-8"))
    last = json.loads((run_folder(folder / "out-fault") / "run_config.json").read_text(encoding="utf-8"))
    client = docker.from_env()
    try:
        engine_version = client.version()["Version"]
    finally:
        client.close()
    assert environment["run.id"] == f"{first['run_id']}, {last['run_id']}"  # both runs, merged
    assert environment["image"] == last["settings"]["image"]
    assert environment["image.id"] == last["provenance"]["image_id"]
    assert environment["engine.version"] == engine_version
    assert environment["plugin.version"] == __version__
    assert {"model", "provider", "judge"} <= environment.keys()


def _tree_leaves(node: dict[str, Any], path: tuple[str, ...] = ()) -> dict[str, tuple[tuple[str, ...], str]]:
    """Leaf name -> (the groups above it, status), from a report's tree JSON."""
    if "children" not in node:
        return {node["name"]: (path, node["status"])}
    leaves: dict[str, tuple[tuple[str, ...], str]] = {}
    for child in node["children"]:
        leaves.update(_tree_leaves(child, (*path, node["name"])))
    return leaves


def _check_generated_report(folder: Path, allure: str) -> None:
    subprocess.run([allure, "generate", "allure", "-o", "report", "--clean"], cwd=folder, check=True,
                   capture_output=True, timeout=300)
    data = folder / "report" / "data"
    suites = _tree_leaves(json.loads((data / "suites.json").read_text(encoding="utf-8")))
    assert {name: status for name, (_, status) in suites.items()} == STATUS
    assert suites[JUDGE_FAIL][0] == ("suites", "Gaia2", "search", "universe_22")
    categories = _tree_leaves(json.loads((data / "categories.json").read_text(encoding="utf-8")))
    assert categories[JUDGE_FAIL][0][:2] == ("categories", JUDGE_KIND)
    assert categories[DAEMON_ERROR][0][:2] == ("categories", f"{INFRA_PREFIX}daemon_error")
    assert categories[INVALID][0][:2] == ("categories", f"{INFRA_PREFIX}invalid_scenario")
    assert PASSING[0] not in categories
    summary = json.loads((folder / "report" / "widgets" / "summary.json").read_text(encoding="utf-8"))
    assert {key: summary["statistic"][key] for key in ("passed", "failed", "broken", "total")} == {
        "passed": 2, "failed": 1, "broken": 2, "total": 5}
    cases = [json.loads(path.read_text(encoding="utf-8")) for path in (data / "test-cases").glob("*.json")]
    case = next(case for case in cases if case["name"] == DAEMON_ERROR)
    assert CONTAINER_FILES <= {item["name"] for item in case["testStage"]["attachments"]}


def test_allure_results_and_report(tmp_path: Path) -> None:
    """One pair of real runs, checked as result files and, with the command line, as a report
    (one test, so parallel workers never repeat the runs)."""
    _allure_runs(tmp_path)
    _check_statuses_titles_and_labels(tmp_path)
    _check_parameters_masked_and_no_secret_written(tmp_path)
    _check_attachments_on_every_outcome_and_capped(tmp_path)
    _check_categories_and_environment(tmp_path)
    allure = shutil.which("allure")
    if allure is None:
        pytest.skip("result files checked; the report was not generated: the Allure command line is not "
                    "on PATH (npm install allure-commandline; it needs Java)")
    _check_generated_report(tmp_path, allure)
