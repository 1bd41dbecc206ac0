"""A record crosses xdist whole, through the public report hooks: the worker's report carries it
under the plugin's own key (``pytest_report_to_serializable``), the controller puts it back
(``pytest_report_from_serializable``), whatever pytest does with a report's other attributes.

The records are those of an old run folder (written before records kept ``apps`` and ``task``)
that ``--gaia2-resume`` continues, serially and under ``-n 2`` (no container): a record of the
very file the plan holds gains its apps and task, non-ASCII ones included; one that names no
file hash keeps none and still renders, under ``apps unknown``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from gaia2_testing import DATA, stored_verdict

from pytest_gaia2.plugin.reports import CARRIED_KEY, carry, unpack

MANY = DATA / "scenarios" / "many" / "search"
APP = "Kalender ✓ 東京"
TASK = "Réservez une table à 東京 — 🍣, s'il vous plaît"

CONFTEST = '''
import json

import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_report_to_serializable(config, report):
    data = yield
    if getattr(report, "when", None) == "call":
        with open("crossed.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps({"carried": sorted(data.get("gaia2", {})), "raw": "gaia2_record" in data}) + "\\n")
    return data


def pytest_gaia2_record(record, folder):
    with open("seen.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps({"key": record.key, "apps": record.apps, "task": record.task}, ensure_ascii=False) + "\\n")
'''


def _old_run(pytester: pytest.Pytester) -> dict[str, bool]:
    """Four scenario files whose apps and task are not ASCII, and their stored verdicts as an earlier
    version wrote them (no apps, no task); the first names no file hash. Each key: whether its record
    vouches for its file."""
    split = pytester.path / "scenarios" / "search"
    split.mkdir(parents=True)
    vouched = {}
    for index, source in enumerate(sorted(MANY.glob("*.json"))[:4]):
        data = json.loads(source.read_text(encoding="utf-8"))
        data["apps"].append({"name": APP, "class_name": "CalendarApp", "app_state": {}})
        for event in data["events"]:
            if event["action"]["function"] == "send_message_to_agent":
                event["action"]["args"][0]["value"] = TASK
        file = split / source.name
        file.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        record: dict[str, Any] = {"scenario_id": source.stem, "split": "search", "success": index != 1,
                                  "failure_reasons": [] if index != 1 else ["stored failure"]}
        if index:
            record["scenario_sha256"] = hashlib.sha256(file.read_bytes()).hexdigest()
        stored_verdict(pytester.path / "run" / "search" / source.stem, record)
        vouched[f"search/{source.stem}"] = bool(index)
    (pytester.path / "run" / "run_config.json").write_text("{}", encoding="utf-8")
    return vouched


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_records_of_an_old_run_arrive_whole_with_apps_and_task(pytester: pytest.Pytester, workers: list[str]) -> None:
    vouched = _old_run(pytester)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gaia2-scenarios=scenarios",
                                           "--gaia2-resume=run", "--gaia2-report", *workers)
    result.assert_outcomes(passed=3, failed=1)
    seen = {line["key"]: line for line in map(json.loads, (pytester.path / "seen.jsonl").read_text("utf-8").splitlines())}
    rows = {line["scenario_id"]: line
            for line in map(json.loads, (pytester.path / "run" / "results.jsonl").read_text("utf-8").splitlines())}
    assert sorted(seen) == sorted(vouched) and len(rows) == 4
    for key, known in vouched.items():
        row = rows[key.split("/")[1]]
        if known:
            assert APP in seen[key]["apps"] and "Contacts" in seen[key]["apps"] and seen[key]["task"] == TASK
            assert (row["apps"], row["task"]) == (seen[key]["apps"], TASK)
        else:  # no hash vouches for the file: the record stays as it was written
            assert seen[key]["apps"] is None and seen[key]["task"] is None and row["apps"] is None
    crossed = [json.loads(line) for line in (pytester.path / "crossed.jsonl").read_text().splitlines()] \
        if workers else []
    assert crossed == [{"carried": ["gaia2_record"], "raw": False}] * (4 if workers else 0)
    report = (pytester.path / "run" / "report.md").read_text(encoding="utf-8")
    assert f"`{APP}`" in report and "`apps unknown`" in report


def test_a_serialised_report_carries_the_record_under_the_plugins_key_alone() -> None:
    """What the two hooks do to pytest's own serialised form of a report, and back."""
    report = pytest.TestReport("t.py::x", ("t.py", 1, "x"), {}, "passed", None, "call")
    record = {"scenario_id": "s", "apps": [APP], "task": TASK}
    report.gaia2_record = record  # type: ignore[attr-defined]
    data = carry(report, {"nodeid": "t.py::x", "gaia2_record": {"stale": True}})
    assert data == {"nodeid": "t.py::x", CARRIED_KEY: {"gaia2_record": record}}
    data = json.loads(json.dumps(data))  # as execnet hands it over: a copy
    restore = unpack(data)
    assert CARRIED_KEY not in data  # pytest rebuilds the report without it
    rebuilt = pytest.TestReport("t.py::x", ("t.py", 1, "x"), {}, "passed", None, "call")
    restore(rebuilt)
    assert rebuilt.gaia2_record == record and not hasattr(rebuilt, "gaia2_not_started")
    report.gaia2_not_started = {"key": "search/s", "why": "budget"}  # type: ignore[attr-defined]
    data = carry(report, {"nodeid": "t.py::x"})
    assert sorted(data[CARRIED_KEY]) == ["gaia2_not_started", "gaia2_record"]
    assert carry(report, None) is None

