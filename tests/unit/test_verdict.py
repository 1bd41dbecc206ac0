"""The verdict rules, as a table: a judgment always wins; without one, the harness is blamed
unless the scenario ran past its declared duration."""

from __future__ import annotations

import pytest

from pytest_gaia2.verdict import Fault, decide

PASS = {"status": "complete", "judgment": {"success": True, "failure_reason": ""}}
FAIL = {"status": "stopped", "judgment": {"success": False, "failure_reason": "Tool count mismatch"}}


@pytest.mark.parametrize(
    ("status", "timed_out", "duration", "fault", "outcome", "category"),
    [
        (PASS, False, None, None, "passed", None),
        (FAIL, False, None, None, "failed", None),
        (PASS, False, None, Fault("container_exited", "exit 3"), "passed", None),
        (FAIL, True, None, Fault("status_unreachable", "gone"), "failed", None),
        (None, False, None, Fault("health_timeout", "never healthy"), "error", "health_timeout"),
        ({"status": "running"}, True, 120.0, None, "failed", None),
        ({"status": "running"}, True, None, None, "error", "timeout"),
        ({"status": "error"}, False, None, None, "error", "daemon_error"),
        ({"status": "complete"}, False, None, None, "error", "no_judgment"),
        ({"status": "complete", "judgment": {"success": "yes"}}, False, None, None, "error", "no_judgment"),
    ],
)
def test_mapping(status, timed_out, duration, fault, outcome, category) -> None:
    verdict = decide(status, timed_out=timed_out, timeout_seconds=180.0, duration=duration, fault=fault)
    assert verdict.outcome == outcome
    assert verdict.category == category
    assert verdict.success == {"passed": True, "failed": False, "error": None}[outcome]


def test_failure_message_starts_with_judge_reason() -> None:
    verdict = decide(FAIL, timed_out=False, timeout_seconds=600.0, duration=None)
    assert verdict.message.startswith("Tool count mismatch")
    assert verdict.failure_reason == "Tool count mismatch"


def test_duration_timeout_names_duration() -> None:
    verdict = decide({"status": "running"}, timed_out=True, timeout_seconds=180.0, duration=120.0)
    assert "declared duration (120 s" in verdict.message


def test_sources_that_disagree_are_a_verdict_conflict_even_with_a_pass() -> None:
    from pytest_gaia2.verdict import conflict_of

    fault = conflict_of({"/status": True, "daemon_status.json": True, "daemon_judgments.jsonl (last line)": False})
    assert fault is not None and fault.category == "verdict_conflict"
    assert "daemon_judgments.jsonl (last line): fail" in fault.message
    verdict = decide({"status": "complete", "judgment": {"success": True, "failure_reason": ""}},
                     timed_out=False, timeout_seconds=600, duration=None, conflict=fault)
    assert (verdict.outcome, verdict.category) == ("error", "verdict_conflict")


def test_missing_sources_are_no_conflict() -> None:
    from pytest_gaia2.verdict import conflict_of

    assert conflict_of({"/status": None, "daemon_status.json": False, "judgments": False}) is None
    assert conflict_of({"/status": None, "daemon_status.json": None}) is None
