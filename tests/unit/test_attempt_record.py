"""The reconciliation of the judgment's sources in build_record, without an engine: the table of
(/status, daemon_status.json, last judgments line) -> outcome and category.

The agent may forge /status (a proxy in front of the adapter) and anything else it can write;
only the judge's own record (a terminal daemon_status.json with a judgment, and the judgments
file's last line agreeing) makes a verdict. /status is a hint: silent, it costs nothing; a
judgment it claims must be the record's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.plan.scenarios import load_scenario
from pytest_gaia2.run.attempt_record import AttemptFacts, build_record
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.run.verdict import ENDPOINT_SOURCE, LAST_JUDGMENT_SOURCE, STATE_SOURCE, Fault
from pytest_gaia2.store.redact import Redactor

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "search" / "scenario_universe_21_7kww6e.json"

PASS = {"status": "complete", "turn": 1, "nb_turns": 1, "judgment": {"success": True, "failure_reason": ""}}
FAIL = {"status": "stopped", "turn": 1, "nb_turns": 1, "judgment": {"success": False, "failure_reason": "Tool count"}}
RUNNING = {"status": "running", "turn": 0, "nb_turns": 1}
WAITING = {"status": "waiting"}
COMPLETE_NO_JUDGMENT = {"status": "complete", "turn": 1, "nb_turns": 1}
MALFORMED = {"status": ["complete"], "judgment": "yes", "turn": {"a": 1}}


def _record(endpoint: dict[str, Any] | None, on_file: dict[str, Any] | None, last_line: bool | None, *,
            timed_out: bool = False, fault: Fault | None = None, stop: Fault | None = None,
            redactor: Redactor | None = None) -> Any:
    redactor = redactor if redactor is not None else Redactor([])
    root = Path("/run-root")
    facts = AttemptFacts(
        scenario=load_scenario(SCENARIO, "search"), repeat=1, repeats=1, attempt=1,
        folder=root / "search" / "x" / "attempt_1", run_root=root, timeout=60.0,
        started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:00:05+00:00", wall_time_s=5.0,
        container="c", host_port=1, adapter_port=8090, worker=None, engine=None, provenance={},
        skipped_files=[], endpoint_status=endpoint, timed_out=timed_out, fault=fault, stop=stop)
    return build_record(facts, Evidence(on_file, last_line, 1, ""), redactor)


@pytest.mark.parametrize(
    ("endpoint", "on_file", "last_line", "outcome", "category"),
    [
        # the judge's record agrees with itself: /status only a hint, silent or agreeing
        (PASS, PASS, True, "passed", None),
        (None, PASS, True, "passed", None),            # the endpoint went away before the verdict
        (WAITING, PASS, True, "passed", None),         # the endpoint's last answer was older
        (MALFORMED, PASS, True, "passed", None),       # a malformed answer is no hint at all
        (FAIL, FAIL, False, "failed", None),
        (None, FAIL, False, "failed", None),
        (FAIL, FAIL, None, "failed", None),            # a rejection needs no line: forging one gains nothing
        # /status claims what the record does not say (the forged pass)
        (PASS, RUNNING, None, "error", "verdict_conflict"),
        (PASS, None, None, "error", "verdict_conflict"),
        (PASS, FAIL, False, "error", "verdict_conflict"),
        (PASS, COMPLETE_NO_JUDGMENT, None, "error", "verdict_conflict"),
        (FAIL, PASS, True, "error", "verdict_conflict"),
        (FAIL, RUNNING, None, "error", "verdict_conflict"),
        # the record's pass without the judgments line agreeing (a forged file)
        (None, PASS, None, "error", "verdict_conflict"),
        (PASS, PASS, None, "error", "verdict_conflict"),
        (PASS, PASS, False, "error", "verdict_conflict"),
        (None, FAIL, True, "error", "verdict_conflict"),
        # a judgment in a status that is not terminal is not the judge's record
        (None, {**RUNNING, "judgment": {"success": True}}, True, "error", "no_judgment"),
        # no recorded judgment, nothing claimed: the earlier rules; a line alone decides nothing
        (RUNNING, RUNNING, True, "error", "no_judgment"),
        (None, COMPLETE_NO_JUDGMENT, None, "error", "no_judgment"),
        (None, {"status": "error"}, None, "error", "daemon_error"),
        (MALFORMED, None, None, "error", "no_judgment"),
    ],
)
def test_reconciliation_table(endpoint, on_file, last_line, outcome, category) -> None:
    record = _record(endpoint, on_file, last_line)
    assert (record.outcome, record.error_category) == (outcome, category), record.error
    assert record.success == {"passed": True, "failed": False, "error": None}[outcome]
    assert record.judged_in_container == (outcome in ("passed", "failed"))
    if category == "verdict_conflict":
        assert set(record.verdict_sources) == {ENDPOINT_SOURCE, STATE_SOURCE, LAST_JUDGMENT_SOURCE}
        assert record.verdict_sources[LAST_JUDGMENT_SOURCE] == last_line
    else:
        assert record.verdict_sources is None


def test_a_forged_pass_keeps_every_source_and_the_file_as_daemon_status() -> None:
    record = _record(PASS, RUNNING, None)
    assert record.verdict_sources == {ENDPOINT_SOURCE: {"success": True, "failure_reason": ""},
                                      STATE_SOURCE: {"status": "running"}, LAST_JUDGMENT_SOURCE: None}
    assert record.daemon_status == RUNNING  # what the judge recorded, not the forged answer
    assert "/status: pass, daemon_status.json: running, no judgment" in record.error
    assert "absent" in record.error


def test_without_a_file_the_record_shows_the_endpoints_status_but_never_its_judgment() -> None:
    record = _record(PASS, None, None)
    assert record.daemon_status == {"status": "complete", "turn": 1, "nb_turns": 1}
    assert record.verdict_sources[STATE_SOURCE] is None


def test_the_timeout_rules_hold_when_the_file_has_no_verdict() -> None:
    late = _record(RUNNING, RUNNING, True, timed_out=True)  # the scenario declares a duration
    assert (late.outcome, late.error_category) == ("failed", None) and "declared duration" in late.failure_reasons[0]
    assert _record(None, None, None, fault=Fault("status_unreachable", "gone")).error_category == "status_unreachable"
    assert _record(None, PASS, True, fault=Fault("container_exited", "exit 1")).outcome == "passed"


def test_an_exception_that_stopped_the_attempt_is_the_outcome_even_over_a_pass() -> None:
    """pytest reports the exception (ERROR): results.jsonl must say the same, never passed."""
    record = _record(PASS, PASS, True, stop=Fault("interrupted", "stopped before a verdict by Failed: Timeout"))
    assert (record.outcome, record.error_category) == ("error", "interrupted")


def test_sources_are_masked() -> None:
    secret = "sk-canary-0123456789abcdef"
    record = _record({**PASS, "judgment": {"success": True, "failure_reason": secret}}, RUNNING, None,
                     redactor=Redactor([secret]))
    assert secret not in repr(record.verdict_sources) and "***" in repr(record.verdict_sources)
