"""The hooks pytest-gaia2 declares, implemented in a project's conftest.py as a user would.

The record and summary hooks see verdicts stored by hand in a run folder that
``--gaia2-resume=run`` continues (no container). The container-environment hook gets one
real container of the reference image, and one run whose hook breaks before any container.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from gaia2_testing import DATA, SHIPPED, run_folder, stored_verdict

MANY = DATA / "scenarios" / "many" / "search"
SCENARIO = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
SECRET = "summary-secret-" + "0a1b2c3d"  # a --gaia2-env value under a secret-looking name
HOOK_SECRET = "hook-token-" + "9f8e7d6c"  # set by the container-environment hook only

RECORDING = '''
import dataclasses
import json
from pathlib import Path

import pytest_gaia2


def pytest_gaia2_record(record, folder):
    lines = (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
    try:
        record.outcome = "passed"
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    seen = {"key": record.key, "outcome": record.outcome, "typed": isinstance(record, pytest_gaia2.AttemptRecord),
            "frozen": frozen, "folder": str(folder), "written": json.loads(lines[-1])["scenario_id"]}
    with open("seen.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(seen) + "\\n")


def pytest_gaia2_summary(summary, lines):
    lines.append(f"team: {summary['done']} done, {summary['failed']} failed, complete {summary['complete']}")
    lines.append("team: key SECRET \\x1b[31mred")
'''.replace("SECRET", SECRET)

FAILING = '''
def pytest_gaia2_record(record, folder):
    raise RuntimeError(f"record hook broke on {record.scenario_id}")


def pytest_gaia2_summary(summary, lines):
    lines.append("team: before the failure")
    raise KeyError("summary hook broke")
'''


@pytest.fixture
def stored(pytester: pytest.Pytester) -> list[str]:
    """Four scenarios with stored verdicts (the first one failed) in the run folder ``run``."""
    split = pytester.path / "scenarios" / "search"
    split.mkdir(parents=True)
    ids = []
    for index, source in enumerate(sorted(MANY.glob("*.json"))[:4]):
        shutil.copy(source, split)
        folder = pytester.path / "run" / "search" / source.stem
        folder.mkdir(parents=True)
        record = {"scenario_id": source.stem, "split": "search", "success": index > 0,
                  "failure_reasons": [] if index > 0 else ["stored failure"]}
        stored_verdict(folder, record)
        ids.append(source.stem)
    (pytester.path / "run" / "run_config.json").write_text("{}", encoding="utf-8")
    return ids


def _resume(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gaia2-scenarios=scenarios",
                                         "--gaia2-resume=run", *args)


def test_record_hook_sees_each_typed_record_after_its_line(pytester: pytest.Pytester, stored: list[str]) -> None:
    pytester.makeconftest(RECORDING)
    result = _resume(pytester, f"--gaia2-env=TEAM_API_KEY={SECRET}")
    result.assert_outcomes(passed=3, failed=1)
    seen = [json.loads(line) for line in (pytester.path / "seen.jsonl").read_text().splitlines()]
    rows = [json.loads(line) for line in (pytester.path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(entry["key"] for entry in seen) == sorted(f"search/{name}" for name in stored)
    assert len(rows) == len(seen) == 4  # once per scenario, whatever the outcome
    assert all(entry["typed"] and entry["frozen"] for entry in seen)
    assert all(entry["folder"] == str(pytester.path / "run") for entry in seen)
    assert [entry["written"] for entry in seen] == [entry["key"].split("/")[1] for entry in seen]
    assert sorted(entry["outcome"] for entry in seen) == ["failed", "passed", "passed", "passed"]


def test_summary_hook_adds_masked_printable_lines(pytester: pytest.Pytester, stored: list[str]) -> None:
    pytester.makeconftest(RECORDING)
    result = _resume(pytester, f"--gaia2-env=TEAM_API_KEY={SECRET}")
    text = result.stdout.str()
    assert "team: 4 done, 1 failed, complete True" in result.outlines
    assert "team: key *** \\x1b[31mred" in result.outlines  # masked, the escape shown, not sent
    assert SECRET not in text and "\x1b[31mred" not in text
    assert text.index("gaia2: results in") < text.index("team: 4 done")  # below the plugin's own summary


def test_failing_record_and_summary_hooks_are_warnings(pytester: pytest.Pytester, stored: list[str]) -> None:
    pytester.makeconftest(FAILING)
    result = _resume(pytester, "--junitxml=j.xml")
    assert result.ret == 1  # the stored failure's, as without the hooks
    result.stdout.fnmatch_lines([
        f"gaia2: warning: pytest_gaia2_record failed: RuntimeError: record hook broke on {stored[0]}",
        "*gaia2 summary*",
        "gaia2: warning: pytest_gaia2_summary failed: KeyError: 'summary hook broke'",
        "team: before the failure",
    ])
    assert result.stdout.str().count("pytest_gaia2_record failed") == 4
    rows = (pytester.path / "run" / "results.jsonl").read_text().splitlines()
    summary = json.loads((pytester.path / "run" / "summary.json").read_text())
    props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "j.xml").iter("property")}
    assert (len(rows), summary["done"], props["gaia2_done"]) == (4, 4, "4")


HOOK = '''
def pytest_gaia2_container_env(scenario, env):
    env["TEAM_SCENARIO"] = f"{scenario.split}/{scenario.scenario_id}"
    env["TEAM_SERVICE_TOKEN"] = "HOOK_SECRET"
'''.replace("HOOK_SECRET", HOOK_SECRET)
PROBE = '''
import json
from pathlib import Path


def test_env_probe(gaia2_container):
    """What the engine started the container with; then a failure that quotes the token."""
    entries = gaia2_container.container.handle.attrs["Config"]["Env"]
    env = dict(entry.split("=", 1) for entry in entries)
    Path("probe.json").write_text(json.dumps({key: env.get(key) for key in ("TEAM_SCENARIO", "TEAM_SERVICE_TOKEN")}))
    print("the container has", env["TEAM_SERVICE_TOKEN"])
    assert False, "the container has " + env["TEAM_SERVICE_TOKEN"]
'''


@pytest.mark.docker
def test_container_env_hook_reaches_the_container_and_is_masked(pytester: pytest.Pytester, run_gaia2,
                                                                 clean_env: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(HOOK)
    pytester.makepyfile(test_probe=PROBE)
    result = run_gaia2("-k", "env_probe", f"--gaia2-scenarios={SCENARIO}", "-rA", "--junitxml=j.xml")
    result.assert_outcomes(failed=1)
    probe = json.loads((pytester.path / "probe.json").read_text(encoding="utf-8"))
    assert probe == {"TEAM_SCENARIO": f"search/{SCENARIO.stem}", "TEAM_SERVICE_TOKEN": HOOK_SECRET}
    text = result.stdout.str()
    assert "the container has ***" in text and HOOK_SECRET not in text  # the report and its captured output
    assert HOOK_SECRET not in (pytester.path / "j.xml").read_text(encoding="utf-8")
    leaks = [path for path in run_folder(pytester.path / "out").rglob("*")
             if path.is_file() and HOOK_SECRET.encode() in path.read_bytes()]
    assert leaks == []


BROKEN = '''
def pytest_gaia2_container_env(scenario, env):
    env["TEAM_API_KEY"] = "HOOK_SECRET"
    raise RuntimeError("cannot reach the vault with HOOK_SECRET")
'''.replace("HOOK_SECRET", HOOK_SECRET)


@pytest.mark.docker
def test_a_broken_container_env_hook_is_the_attempts_error(pytester: pytest.Pytester, run_gaia2,
                                                           clean_env: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(BROKEN)
    result = run_gaia2(f"--gaia2-scenarios={SCENARIO}", "--gaia2-retries=0")
    result.assert_outcomes(errors=1)
    rows = [json.loads(line) for line in (run_folder(pytester.path / "out") / "results.jsonl").read_text().splitlines()]
    assert [row["error_category"] for row in rows] == ["harness_error"]
    assert rows[0]["error"].startswith("pytest_gaia2_container_env: raised RuntimeError: cannot reach the vault with ***")
    assert HOOK_SECRET not in result.stdout.str()
    result.stdout.fnmatch_lines(["*[[]harness_error[]] pytest_gaia2_container_env: raised RuntimeError*"])

