"""Bad input is refused before any scenario container: a broken scenario file is one clear error
(path and field, no traceback) while the other scenarios still run; an impossible option value stops
the run at start-up, naming the option."""

from __future__ import annotations

import glob
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gaia2_testing import DATA, SHIPPED, engine_events, gaia2_containers, results_of, run_id_of

from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL

MALFORMED = DATA / "scenarios" / "malformed"
PROBLEMS = {  # file -> the field and the start of the problem the message must name
    "not_json.json": "file: not valid JSON (line ",
    "not_object.json": "file: expected a JSON object, got list",
    "missing_id.json": "metadata.definition.scenario_id: missing or empty",
    "events_not_list.json": "events: expected a list, got dict",
    "action_missing_function.json": "events[1].action.function: missing or empty",
}
DUPLICATES = [MALFORMED / "dup_a" / "search" / "x.json", MALFORMED / "dup_b" / "search" / "x.json"]
ONE = "scenario_universe_21_7kww6e"


def scenario_containers_created(run_id: str, since: float) -> list[str]:
    """Scenario ids of the containers a run created (pre-flight's image probe is not a scenario)."""
    events = engine_events(since, event="create", label=f"{RUN_LABEL}={run_id}")
    scenarios = [event["Actor"]["Attributes"].get(SCENARIO_LABEL) for event in events]
    return [scenario for scenario in scenarios if scenario != "preflight"]


def error_lines(result: pytest.RunResult) -> dict[str, list[str]]:
    """The text under each ``ERROR at setup of <test>`` heading, by test id."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in result.stdout.lines:
        if line.startswith("_") and " ERROR at setup of " in line:
            current = sections.setdefault(line.split(" ERROR at setup of ", 1)[1].rstrip(" _"), [])
        elif line.startswith(("=", "_")):
            current = None
        elif current is not None and line.strip():
            current.append(line)
    return sections


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_malformed_file_is_one_clear_error_and_starts_no_container(
    pytester: pytest.Pytester, run_gaia2_inprocess: Callable[..., pytest.RunResult], name: str
) -> None:
    path = MALFORMED / name
    since = time.time()
    result = run_gaia2_inprocess(f"--gaia2-scenarios={path}")
    result.assert_outcomes(errors=1)
    message = f"[invalid_scenario] {path}: {PROBLEMS[name]}"
    [lines] = error_lines(result).values()
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert "Traceback" not in result.stdout.str()
    output = pytester.path / "out"
    [record] = results_of(output)
    assert (record["outcome"], record["error_category"], record["scenario_file"]) == ("error", "invalid_scenario", str(path))
    assert record["error"].startswith(f"{path}: {PROBLEMS[name]}")
    run_id = run_id_of(output)
    assert scenario_containers_created(run_id, since) == []
    assert gaia2_containers(run_id) == []


def test_broken_files_do_not_stop_the_valid_scenarios(pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]) -> None:
    valid = SHIPPED / "search" / f"{ONE}.json"
    result = run_gaia2(f"--gaia2-scenarios={MALFORMED}", f"--gaia2-scenarios={valid}")
    result.assert_outcomes(passed=1, errors=len(PROBLEMS) + len(DUPLICATES))
    sections = error_lines(result)
    assert all(len(lines) == 1 and lines[0].startswith("[invalid_scenario] ") for lines in sections.values()), sections
    messages = sorted(lines[0] for lines in sections.values())
    expected = [f"[invalid_scenario] {MALFORMED / name}: {problem}" for name, problem in PROBLEMS.items()]
    expected += [f"[invalid_scenario] {path}: metadata.definition.scenario_id: duplicate id 'scenario_universe_29_dup0aa'"
                 for path in DUPLICATES]
    assert all(any(message.startswith(start) for message in messages) for start in expected), messages
    output = pytester.path / "out"
    records = results_of(output)
    assert [r["scenario_id"] for r in records if r["outcome"] == "passed"] == [ONE]
    assert sorted(r["scenario_file"] for r in records if r["error_category"] == "invalid_scenario") == sorted(
        [str(MALFORMED / name) for name in PROBLEMS] + [str(path) for path in DUPLICATES])
    result.stdout.fnmatch_lines([f"{len(records)} scenarios: 1 passed, 0 failed, {len(records) - 1} errors"])
    assert gaia2_containers(run_id_of(output)) == []


@pytest.mark.parametrize(("option", "value", "problem"), [
    ("--gaia2-timeout", "-1", "must not be negative, got '-1'"),
    ("--gaia2-health-timeout", "0", "must be greater than 0, got '0'"),
    ("--gaia2-stop-timeout", "soon", "expected a number of seconds, got 'soon'"),
    ("--gaia2-image", "Bad Image!", "'Bad Image!' is not a valid image reference"),
])
def test_impossible_option_stops_the_run_at_start_up_naming_it(
    pytester: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], option: str, value: str, problem: str
) -> None:
    result = check_gaia2(f"--gaia2-scenarios={SHIPPED}", f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option}: {glob.escape(problem)}*"])
    assert "Traceback" not in result.stderr.str()
    assert not (pytester.path / "out").exists()  # nothing started: no run folder, so no container either


def test_unreadable_files_are_errors_of_their_own_and_the_rest_runs(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]
) -> None:
    """Invalid UTF-8, nesting 200,000 deep, a FIFO named x.json (never opened: start-up does not
    hang) and a folder named y.json: one invalid_scenario record each; the good scenario passes."""
    import os
    import shutil

    split = pytester.path / "scenarios" / "search"
    split.mkdir(parents=True)
    shutil.copy(SHIPPED / "search" / f"{ONE}.json", split)
    (split / "latin1.json").write_bytes(b'{"metadata": {"definition": {"scenario_id": "caf\xe9"}}}')
    (split / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    os.mkfifo(split / "x.json")
    (split / "y.json").mkdir()
    result = run_gaia2("--gaia2-scenarios=scenarios")
    result.assert_outcomes(passed=1, errors=4)
    assert "INTERNALERROR" not in result.stdout.str()
    records = {record["scenario_id"]: record for record in results_of(pytester.path / "out")}
    expected = {"latin1": "not valid UTF-8", "deep": "nested deeper than", "x": "not a regular file (fifo)",
                "y": "not a regular file (directory)"}
    for name, problem in expected.items():
        assert records[name]["error_category"] == "invalid_scenario" and problem in records[name]["error"], records[name]
    assert records[ONE]["outcome"] == "passed"


@pytest.mark.parametrize(("option", "message"), [
    ("--gaia2-timeout=inf", "--gaia2-timeout: expected a finite number"),
    ("--gaia2-judge-grace=nan", "--gaia2-judge-grace: expected a finite number"),
    ("--gaia2-health-timeout=1e999", "--gaia2-health-timeout: expected a finite number"),
    ("--gaia2-max-file-size=0", "--gaia2-max-file-size"),
])
def test_impossible_numbers_stop_at_start_up_naming_the_option(
    check_gaia2: Callable[..., pytest.RunResult], option: str, message: str
) -> None:
    result = check_gaia2(f"--gaia2-scenarios={SHIPPED}", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() and "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("url", ["http://$(touch /tmp/pwned):80/v1", "http://a'b:80", "ftp://host/x", "http://"])
def test_a_base_url_that_is_not_a_plain_url_is_refused_before_any_container(
    check_gaia2: Callable[..., pytest.RunResult], url: str
) -> None:
    result = check_gaia2(f"--gaia2-scenarios={SHIPPED / 'search' / f'{ONE}.json'}", f"--gaia2-base-url={url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: --gaia2-base-url: *"])
    assert "PASSED" not in result.stdout.str() and not Path("/tmp/pwned").exists()


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_copy_in_of_a_device_is_refused_before_any_container(
    pytester: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], workers: tuple[str, ...]
) -> None:
    """/dev/zero as a copy-in source once took pytest to all of the machine's memory."""
    result = check_gaia2(f"--gaia2-scenarios={SHIPPED}", "--gaia2-copy-in=/dev/zero:/opt/zero", *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gaia2-copy-in: /dev/zero is not a regular file (for /opt/zero)*"])
    assert "Traceback" not in result.stderr.str()
    assert not (pytester.path / "out").exists()
