"""The verdict rules, as a table: a recorded judgment wins unless a stop or a conflict outranks
it; without one, the harness is blamed unless the scenario ran past its declared duration."""

from __future__ import annotations

import pytest

from pytest_gaia2.run.verdict import Fault, decide

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
        # a judgment counts only in a terminal status (the judge writes both at once)
        ({"status": "running", "judgment": {"success": True}}, True, None, None, "error", "timeout"),
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


def test_a_conflict_and_a_stop_outrank_the_judgment() -> None:
    conflict, stop = Fault("verdict_conflict", "disagree"), Fault("interrupted", "Ctrl-C")
    assert decide(PASS, timed_out=False, timeout_seconds=600, duration=None,
                  conflict=conflict).category == "verdict_conflict"
    stopped = decide(PASS, timed_out=False, timeout_seconds=600, duration=None, conflict=conflict, stop=stop)
    assert (stopped.outcome, stopped.category) == ("error", "interrupted")


@pytest.mark.parametrize("status", [
    {"status": ["complete"], "judgment": {"success": True}},
    {"status": {"complete": 1}, "judgment": {"success": True}},
    {"status": "complete", "judgment": [True]},
    {"status": "complete", "judgment": {"success": True, "failure_reason": ["x"]}, "turn": "one"},
    {"status": "stopped", "judgment": {"success": False, "failure_reason": {"deep": [1]}}},
])
def test_wrong_types_never_raise_and_never_pass_unless_well_formed(status) -> None:
    """A container writes what it likes: no field's type may crash the mapping."""
    from pytest_gaia2.run.verdict import reconcile

    verdict = decide(status, timed_out=False, timeout_seconds=60, duration=None)
    well_formed = status["status"] == "complete" and isinstance(status["judgment"], dict)
    assert (verdict.outcome == "passed") == well_formed
    assert isinstance(verdict.message, str)
    conflict = reconcile(status, status, None)
    assert conflict is None or conflict.category == "verdict_conflict"
