"""Every failure path, produced for real: the reference image's fault switches on the real engine,
through the plugin. Each test checks the pytest outcome, the error category, the message (the cause
and the file to read) and what is on disk, and that the run left no container behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import (
    DATA,
    SHIPPED,
    BackgroundRun,
    gaia2_containers,
    results_of,
    run_folder,
    run_id_of,
    scenario_variant,
)

from pytest_gaia2.engine.client import SCENARIO_LABEL

ONE = "scenario_universe_21_7kww6e"  # the quickest shipped scenario: one turn, one answer
ONE_FILE = SHIPPED / "search" / f"{ONE}.json"
JUDGE_FAIL = DATA / "scenarios" / "judge_fail"
JUDGE_FAIL_ID = "scenario_universe_22_ygzpjz"
LOGS = ("container.log", "entrypoint.log", "eventd.log")
EARLY = (*LOGS, "events.jsonl")  # a run stopped within seconds: the daemon may not have written its status yet
STATE = (*EARLY, "daemon_status.json")
JUDGED = (*STATE, "daemon_judgments.jsonl")


def fault(**switches: object) -> list[str]:
    """``--gaia2-env GAIA2_FAULT_<NAME>=<value>`` for each switch of the reference image."""
    return [arg for name, value in switches.items() for arg in ("--gaia2-env", f"GAIA2_FAULT_{name}={value}")]


def variant(pytester: pytest.Pytester, *, scenario_id: str = ONE, duration: float | None = None,
            answer_after: float | None = None) -> Path:
    """A variant of the quickest scenario under ``variants/search``; the folder for ``--gaia2-scenarios``."""
    return scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id=scenario_id, duration=duration,
                            answer_after=answer_after)


@dataclass
class Ran:
    """One scenario's run through the plugin: the pytest result, its result.json and its folder."""

    result: pytest.RunResult
    record: dict[str, Any]
    folder: Path

    def files(self, *names: str) -> None:
        missing = [name for name in names if not (self.folder / name).is_file()]
        assert not missing, f"missing in {self.folder}: {missing}; there: {sorted(os.listdir(self.folder))}"

    def log(self, name: str) -> str:
        return (self.folder / name).read_text(encoding="utf-8")

    def error(self, category: str, *in_message: str) -> str:
        """An infrastructure error of ``category``: reported in setup as one ``[category] ...`` message."""
        self.result.assert_outcomes(errors=1)
        record = self.record
        assert (record["success"], record["outcome"], record["error_category"]) == (None, "error", category), record
        assert record["failure_reasons"] == []
        message = record["error"]
        for text in (*in_message, f"(files: {self.folder})"):
            assert text in message, f"{text!r} not in {message!r}"
        assert f"[{category}] {message.splitlines()[0]}" in self.result.stdout.lines
        return message

    def passed(self) -> None:
        self.result.assert_outcomes(passed=1)
        record = self.record
        assert (record["success"], record["outcome"], record["error_category"]) == (True, "passed", None), record
        assert record["judged_in_container"] is True and record["daemon_status"]["judgment"]["success"] is True
        self.files(*JUDGED)

    def failed(self) -> str:
        """A judged failure: AssertionError starting with the judge's own reason."""
        self.result.assert_outcomes(failed=1)
        record = self.record
        assert (record["success"], record["outcome"], record["error_category"]) == (False, "failed", None), record
        reason = record["daemon_status"]["judgment"]["failure_reason"]
        assert reason and record["failure_reasons"] == [reason]
        assert f"AssertionError: {reason}" in self.result.stdout.lines
        self.files(*JUDGED)
        return reason


@pytest.fixture
def run_one(pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]) -> Callable[..., Ran]:
    """Run one scenario (the quickest shipped one unless told) and check what every path must leave."""

    def run(*args: str, scenarios: Path = SHIPPED, scenario_id: str = ONE) -> Ran:
        result = run_gaia2(f"--gaia2-scenarios={scenarios}", "-k", scenario_id, *args)
        output = pytester.path / "out"
        folder = run_folder(output) / "search" / scenario_id
        record = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        assert results_of(output) == [record]
        assert gaia2_containers(run_id_of(output)) == []
        return Ran(result, record, folder)

    return run


def test_slow_health_answer_still_passes(run_one: Callable[..., Ran]) -> None:
    ran = run_one(*fault(HEALTH_DELAY=3))
    ran.passed()
    assert ran.record["wall_time_s"] >= 3
    assert "FAULT GAIA2_FAULT_HEALTH_DELAY" in ran.log("container.log")


def test_never_healthy_is_health_timeout_with_the_logs_saved(run_one: Callable[..., Ran]) -> None:
    # HANG: the oracle image judges even without a healthy adapter; no verdict may exist here.
    ran = run_one(*fault(NEVER_HEALTHY=1, HANG=1), "--gaia2-health-timeout=5")
    ran.error("health_timeout", "did not report connected within 5 s", "container.log", "entrypoint.log")
    ran.files(*EARLY)
    assert "FAULT GAIA2_FAULT_NEVER_HEALTHY" in ran.log("container.log")
    assert "Initializing state" in ran.log("entrypoint.log")


def test_reachable_inside_but_not_from_the_host_is_port_unreachable(run_one: Callable[..., Ran]) -> None:
    """The Docker Desktop failure: the adapter answers `curl 127.0.0.1` inside, the published port does not."""
    ran = run_one(*fault(LOOPBACK_ONLY=1, HANG=1), "--gaia2-health-timeout=10")  # the adapter is up by then
    message = ran.error("port_unreachable", "answers /health inside the container (curl 127.0.0.1:8090)",
                        "-> 8090/tcp (network bridge, engine ", "container.log")
    published = re.search(r"published port 127\.0\.0\.1:(\d+) ->", message)
    assert published and int(published.group(1)) != 8090, message
    ran.files(*EARLY)


def test_a_verdict_on_file_wins_over_a_start_up_fault(run_one: Callable[..., Ran]) -> None:
    """Health never succeeds from the host, but the judge has spoken by the deadline: that is the verdict."""
    ran = run_one(*fault(LOOPBACK_ONLY=1), "--gaia2-health-timeout=15")
    ran.passed()
    assert "FAULT GAIA2_FAULT_LOOPBACK_ONLY" in ran.log("container.log")


@pytest.mark.parametrize("judged", ["pass", "fail"])
def test_dead_adapter_with_a_verdict_on_file_gives_that_verdict(run_one: Callable[..., Ran], judged: str) -> None:
    """/status is gone before the judgment exists (it comes 3 s after the terminal status): only
    daemon_status.json, read through the engine, can hold it."""
    args = fault(ADAPTER_EXIT_AFTER_VERDICT=1, JUDGMENT_LATE=3)
    if judged == "pass":
        ran = run_one(*args)
        ran.passed()
    else:
        ran = run_one(*args, scenarios=JUDGE_FAIL, scenario_id=JUDGE_FAIL_ID)
        assert ran.failed().startswith("Tool count mismatch")
    assert "FAULT GAIA2_FAULT_ADAPTER_EXIT_AFTER_VERDICT" in ran.log("container.log")
    assert "HTTP server stopped" in ran.log("container.log")


@pytest.mark.parametrize("switch", ["JUDGE_DELAY", "JUDGMENT_LATE"])
def test_slow_judge_gives_the_verdict(run_one: Callable[..., Ran], switch: str) -> None:
    ran = run_one(*fault(**{switch: 4}))
    ran.passed()
    assert ran.record["wall_time_s"] >= 4
    assert f"FAULT GAIA2_FAULT_{switch}" in ran.log("eventd.log")


def test_judgment_later_than_the_grace_is_no_judgment(run_one: Callable[..., Ran]) -> None:
    ran = run_one(*fault(JUDGMENT_LATE=30), "--gaia2-judge-grace=1")
    ran.error("no_judgment", "status 'complete' and no judgment", "daemon_status.json", "eventd.log")
    ran.files(*STATE)


def test_daemon_error_is_an_error_not_a_failure(run_one: Callable[..., Ran]) -> None:
    ran = run_one(*fault(DAEMON_ERROR=1), "--gaia2-judge-grace=1")
    ran.error("daemon_error", "ended with status 'error' and no judgment", "eventd.log")
    ran.files(*STATE)
    assert ran.record["daemon_status"]["status"] == "error"
    assert "FAULT GAIA2_FAULT_DAEMON_ERROR" in ran.log("eventd.log")


def test_hang_without_declared_duration_is_a_timeout_error(pytester: pytest.Pytester, run_one: Callable[..., Ran]) -> None:
    ran = run_one(*fault(HANG=1), "--gaia2-timeout=10", scenarios=variant(pytester))
    ran.error("timeout", "no terminal daemon status within 10 s (last status: running)", "eventd.log")
    ran.files(*STATE)
    assert (ran.record["timed_out"], ran.record["timeout_seconds"]) == (True, 10)


def test_hang_past_declared_duration_is_the_agent_failing(pytester: pytest.Pytester, run_one: Callable[..., Ran]) -> None:
    """As upstream: a scenario that declares a duration and runs past it by the slack (upstream's
    60 s; 4 s here) failed (too slow), even when the configured timeout is shorter."""
    ran = run_one(*fault(HANG=1), "--gaia2-timeout=1", "--gaia2-duration-slack=4", scenarios=variant(pytester, duration=1))
    ran.result.assert_outcomes(failed=1)
    record = ran.record
    assert (record["success"], record["outcome"], record["error_category"]) == (False, "failed", None)
    assert (record["timed_out"], record["timeout_seconds"]) == (True, 5)
    reason = "ran past the scenario's declared duration (1 s; timeout 5 s) without a judgment (last daemon status: running)"
    assert record["failure_reasons"] == [reason]
    assert f"AssertionError: {reason}" in ran.result.stdout.lines
    ran.files(*STATE)


@pytest.mark.parametrize("when", ["before health", "while polling"])
def test_early_exit_is_container_exited_with_code_and_last_lines(run_one: Callable[..., Ran], when: str) -> None:
    after = 0 if when == "before health" else 3
    ran = run_one(*fault(EXIT_CODE=3, EXIT_AFTER=after, HANG=1))
    ran.error("container_exited", "exited with code 3 before a verdict; last log lines:",
              "RuntimeError: gaia2-ref simulated fault (exit code 3)", "container.log")
    ran.files(*EARLY)
    ran.result.stdout.fnmatch_lines(["*RuntimeError: gaia2-ref simulated fault (exit code 3)*"])  # stderr and stdout may share a line


@pytest.mark.parametrize("keep", [False, True], ids=["killed", "--gaia2-keep"])
def test_container_ignoring_sigterm_is_removed_within_the_stop_timeout(run_one: Callable[..., Ran], keep: bool) -> None:
    """After the verdict is collected the container is killed at once; --gaia2-keep stops it
    gracefully, waiting the stop timeout for a process that ignores SIGTERM, then kills it.
    Killed, the stop timeout is long, so a loaded engine's slow removal is not mistaken for a wait."""
    stop_timeout = 3 if keep else 30
    ran = run_one(*fault(IGNORE_SIGTERM=1), f"--gaia2-stop-timeout={stop_timeout}", "--durations=0", "-vv",
                  *(["--gaia2-keep"] if keep else []))
    ran.passed()
    durations = {phase: float(seconds) for seconds, phase in re.findall(
        rf"([\d.]+)s (setup|call|teardown) +gaia2/search::test_scenario\[{ONE}\]", ran.result.stdout.str())}
    elapsed = sum(durations.values())
    assert durations, ran.result.stdout.str()
    if keep:
        assert stop_timeout <= elapsed - ran.record["wall_time_s"] < stop_timeout + 5
    else:
        assert elapsed - ran.record["wall_time_s"] < stop_timeout / 2


def test_scripted_agent_gives_a_judged_failure(pytester: pytest.Pytester, run_one: Callable[..., Ran]) -> None:
    script = pytester.path / "agent-script.jsonl"
    answer = {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "I could not find it."}}
    script.write_text(json.dumps(answer) + "\n", encoding="utf-8")
    ran = run_one("--gaia2-copy-in", f"{script}:/tmp/agent-script.jsonl",
                  "--gaia2-env", "GAIA2_AGENT_SCRIPT=/tmp/agent-script.jsonl")
    reason = ran.failed()
    assert reason.startswith("Cannot match AgentUserInterface__send_message_to_user")
    assert "I could not find it." in reason
    events = [json.loads(line) for line in ran.log("events.jsonl").splitlines()]
    assert [(event["fn"], event["args"]) for event in events] == [(answer["fn"], answer["args"])]


def test_judge_fail_scenario_is_a_failure_with_the_judge_reason(run_one: Callable[..., Ran]) -> None:
    ran = run_one(scenarios=JUDGE_FAIL, scenario_id=JUDGE_FAIL_ID)
    reason = ran.failed()
    assert reason == "Tool count mismatch: agent={}, oracle={'ContactsApp__search_contacts': 1}"
    assert json.loads(ran.log("daemon_judgments.jsonl").splitlines()[-1])["failure_reason"] == reason


def test_pytest_timeout_bound_ends_a_stuck_test_and_still_removes_its_container(
    pytester: pytest.Pytester, run_one: Callable[..., Ran]
) -> None:
    """Each scenario item carries pytest-timeout's bound (run timeout + health + grace + stop + 60 s)
    with the signal method, which lets the test tear down even when the user's ini asks for the
    thread method (that one ends the process at once). A conftest records the mark, then tightens
    the bound to 10 s while the daemon hangs: pytest-timeout ends the test long before the run's own
    60 s timeout, the container still goes, and result.json says why."""
    pytester.makeconftest("""
        import json
        import pytest

        def pytest_collection_modifyitems(items):
            marks = {item.nodeid: item.get_closest_marker("timeout") for item in items}
            with open("bounds.json", "w") as handle:
                json.dump({nodeid: [mark.args, mark.kwargs] for nodeid, mark in marks.items()}, handle)
            for item in items:
                item.add_marker(pytest.mark.timeout(10, **marks[item.nodeid].kwargs), append=False)
    """)
    ran = run_one(*fault(HANG=1), "--gaia2-timeout=60", "--gaia2-health-timeout=30", "-o", "timeout_method=thread",
                  scenarios=variant(pytester))
    bounds = json.loads((pytester.path / "bounds.json").read_text(encoding="utf-8"))
    assert bounds == {f"gaia2/search::test_scenario[{ONE}]": [[60 + 30 + 15 + 5 + 60], {"method": "signal"}]}
    ran.error("interrupted", "stopped before a verdict by Failed: Timeout (>10.0s) from pytest-timeout",
              "container.log")
    ran.files(*EARLY)
    assert ran.record["wall_time_s"] < 60 and not ran.record["timed_out"]  # pytest-timeout's 10 s, not the 60 s


QUICK = ("scenario_universe_21_7kww6e", "scenario_universe_27_057i6s")
SLOW = "scenario_universe_30_zzslow"  # sorted last; its oracle answers 900 sim seconds late


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "two workers"])
def test_ctrl_c_keeps_finished_results_and_removes_containers(
    pytester: pytest.Pytester, start_gaia2: Callable[..., BackgroundRun], workers: tuple[str, ...]
) -> None:
    scenarios = variant(pytester, scenario_id=SLOW, answer_after=900)
    for scenario_id in QUICK:
        shutil.copy(SHIPPED / "search" / f"{scenario_id}.json", scenarios / "search")
    run = start_gaia2(*workers, f"--gaia2-scenarios={scenarios}", "--gaia2-order=file")  # the quick ones first
    run_id = run.run_id()

    def quick_ones_done_slow_one_running() -> bool:
        """Both quick results are in, and the slow one's adapter is up (so its launch has returned)."""
        slow = [c for c in gaia2_containers(run_id) if c.labels.get(SCENARIO_LABEL) == SLOW]
        return len(run.results()) == len(QUICK) and bool(slow) and b"Adapter listening" in slow[0].logs()

    exit_code = run.interrupt_when("the quick results and the slow adapter", quick_ones_done_slow_one_running)
    assert exit_code == pytest.ExitCode.INTERRUPTED, run.text()
    records = results_of(run.output)  # every planned scenario has its one line, the interrupted one too
    assert sorted(r["scenario_id"] for r in records) == sorted([*QUICK, SLOW])
    for record in records:
        assert record["outcome"] == ("error" if record["scenario_id"] == SLOW else "passed")
        folder = run_folder(run.output) / "search" / record["scenario_id"]
        assert json.loads((folder / "result.json").read_text(encoding="utf-8")) == record
    assert gaia2_containers(run_id) == []
    slow = json.loads((run_folder(run.output) / "search" / SLOW / "result.json").read_text(encoding="utf-8"))
    assert (slow["outcome"], slow["error_category"]) == ("error", "interrupted"), slow
    summary = json.loads((run_folder(run.output) / "summary.json").read_text(encoding="utf-8"))
    assert (summary["planned"], summary["done"]) == (3, 3)
    assert "stopped before a verdict by KeyboardInterrupt" in slow["error"]
    assert (run_folder(run.output) / "search" / SLOW / "container.log").is_file()


def remove_from_outside(container: Any) -> None:
    """What a prune would do, until it is done: the engine may refuse a forced removal while the
    harness copies from the container ('overlay2 failed to remove root filesystem: directory not
    empty', a 500), as it would refuse the prune; the prune's next pass removes it."""
    deadline = time.monotonic() + 30
    while True:
        try:
            container.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_container_removed_from_outside_is_a_harness_error_with_a_result(
    pytester: pytest.Pytester, start_gaia2: Callable[..., BackgroundRun]
) -> None:
    """Something else (a prune, another tool) removes the container while the run polls: the engine
    client's NotFound is not blamed on the agent, and result.json still says what happened."""
    run = start_gaia2(f"--gaia2-scenarios={variant(pytester)}", *fault(HANG=1), "--gaia2-timeout=60")
    [container] = run.wait_for_containers(1)
    deadline = time.monotonic() + 60
    while b"Adapter listening" not in container.logs():
        assert time.monotonic() < deadline, run.text()
        time.sleep(0.3)
    remove_from_outside(container)
    assert run.wait(60) == pytest.ExitCode.TESTS_FAILED, run.text()
    record = json.loads((run_folder(run.output) / "search" / ONE / "result.json").read_text(encoding="utf-8"))
    assert (record["outcome"], record["error_category"]) == ("error", "harness_error"), record
    assert "stopped before a verdict by NotFound" in record["error"]
    assert results_of(run.output) == [record]
    # Found at the next polls, not at the 60 s timeout: the bound is that timeout, as a shorter one
    # would count the container's start on a loaded machine too.
    assert record["wall_time_s"] < 60 and not record["timed_out"]
