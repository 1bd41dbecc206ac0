"""The reconciliation of the judgment's sources in build_record, without an engine: the table of
(/status, daemon_status.json, last judgments line) -> outcome and category.

The agent may forge /status (a proxy in front of the adapter) and anything else it can write;
only the judge's own record (a terminal daemon_status.json with a judgment, and the judgments
file's last line agreeing) makes a verdict. /status is a hint: silent, it costs nothing; a
judgment it claims must be the record's.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.plan.scenarios import Scenario, load_scenario
from pytest_gaia2.run.attempt_record import AttemptFacts, build_record
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.run.verdict import ENDPOINT_SOURCE, LAST_JUDGMENT_SOURCE, STATE_SOURCE, Fault
from pytest_gaia2.store.limits import STATUS_MAX_BYTES
from pytest_gaia2.store.redact import Redactor

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "search" / "scenario_universe_21_7kww6e.json"

PASS = {"status": "complete", "turn": 1, "nb_turns": 1, "judgment": {"success": True, "failure_reason": ""}}
FAIL = {"status": "stopped", "turn": 1, "nb_turns": 1, "judgment": {"success": False, "failure_reason": "Tool count"}}
RUNNING = {"status": "running", "turn": 0, "nb_turns": 1}
WAITING = {"status": "waiting"}
COMPLETE_NO_JUDGMENT = {"status": "complete", "turn": 1, "nb_turns": 1}
MALFORMED = {"status": ["complete"], "judgment": "yes", "turn": {"a": 1}}
DAEMON_ERROR = {"status": "error"}
ERROR_WITH_REJECTION = {"status": "error", "judgment": {"success": False, "failure_reason": "gave up"}}
RUNNING_WITH_PASS = {**RUNNING, "judgment": {"success": True}}
STATUSES = {
    "absent": None, "pass": PASS, "fail": FAIL, "running": RUNNING, "waiting": WAITING,
    "complete, no judgment": COMPLETE_NO_JUDGMENT, "error": DAEMON_ERROR, "error with a rejection": ERROR_WITH_REJECTION,
    "running with a pass": RUNNING_WITH_PASS, "malformed": MALFORMED,
}


@cache
def _scenario() -> Scenario:
    return load_scenario(SCENARIO, "search")


def _facts(endpoint: dict[str, Any] | None, *, timed_out: bool = False, fault: Fault | None = None,
           stop: Fault | None = None, folder: Path = Path("/run-root/search/x")) -> AttemptFacts:
    return AttemptFacts(
        scenario=_scenario(), repeat=1, repeats=1, attempt=1, folder=folder, run_root=folder.parents[1],
        timeout=60.0, started_at="2026-01-01T00:00:00+00:00", ended_at="2026-01-01T00:00:05+00:00",
        wall_time_s=5.0, container="c", host_port=1, adapter_port=8090, worker=None, engine=None, provenance={},
        skipped_files=[], endpoint_status=endpoint, timed_out=timed_out, fault=fault, stop=stop)


def _record(endpoint: dict[str, Any] | None, on_file: dict[str, Any] | None, last_line: bool | None, *,
            timed_out: bool = False, fault: Fault | None = None, stop: Fault | None = None,
            redactor: Redactor | None = None) -> Any:
    facts = _facts(endpoint, timed_out=timed_out, fault=fault, stop=stop)
    return build_record(facts, Evidence(on_file, last_line, 1, "", agent_actions=1), redactor if redactor is not None else Redactor([]))


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
        # /status claims what the record does not say (a forged pass)
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
        # no recorded judgment, nothing claimed: the earlier rules; a pass line alone decides nothing
        (RUNNING, RUNNING, True, "error", "no_judgment"),
        # ... but a rejection the judge logged stands: a status rewritten to an unjudged end
        # (by the agent, same user in the container) made it a retried error
        (None, {"status": "error"}, False, "failed", None),
        (RUNNING, RUNNING, False, "failed", None),
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


def _expected(endpoint: dict[str, Any] | None, on_file: dict[str, Any] | None, last_line: bool | None) -> tuple[str, str | None]:
    """The contract's rules, stated once more from the sources' side: only a terminal
    daemon_status.json with a boolean judgment records one; a recorded pass needs the last line's
    success, a recorded rejection must not meet one; a judgment /status claims must be the
    recorded one (none recorded included). Without a recorded judgment, a rejection on the last
    line fails the run, else the status decides."""
    def judgment(status: dict[str, Any] | None) -> bool | None:
        claimed = (status or {}).get("judgment")
        success = claimed.get("success") if isinstance(claimed, dict) else None
        return success if isinstance(success, bool) else None

    terminal = isinstance(on_file, dict) and on_file.get("status") in ("complete", "stopped", "error")
    recorded = judgment(on_file) if terminal else None
    claimed = judgment(endpoint)
    if (claimed is not None and claimed != recorded) or (recorded is True and last_line is not True) or (
        recorded is False and last_line is True
    ):
        return "error", "verdict_conflict"
    if recorded is not None:
        return ("passed" if recorded else "failed"), None
    if last_line is False:
        return "failed", None
    shown = on_file if on_file is not None else endpoint
    return "error", "daemon_error" if (shown or {}).get("status") == "error" else "no_judgment"


@pytest.mark.parametrize(
    ("endpoint", "on_file", "last_line"),
    [
        pytest.param(STATUSES[a], STATUSES[b], line, id=f"/status {a} | file {b} | last line {line}")
        for a, b, line in itertools.product(STATUSES, STATUSES, (None, True, False))
    ],
)
def test_every_combination_of_the_three_sources(endpoint, on_file, last_line) -> None:
    """All 300 combinations of /status, daemon_status.json and the judgments file's last line."""
    record = _record(endpoint, on_file, last_line)
    outcome, category = _expected(endpoint, on_file, last_line)
    assert (record.outcome, record.error_category) == (outcome, category), record.error
    assert (record.verdict_sources is not None) == (category == "verdict_conflict")
    assert record.judged_in_container == (outcome != "error")
    if on_file is not None:
        assert record.daemon_status == on_file  # the judge's record, never the endpoint's answer
    elif record.daemon_status is not None:
        assert "judgment" not in record.daemon_status


ANSWER = json.dumps({"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "x"}}) + "\n"


def _from_files(folder: Path, status: str | bytes | None, judgments: str | bytes | None,
                events: str = ANSWER, observed: dict[str, Any] | None = None) -> Any:
    """The record built from what a container left in ``folder`` (read as the harness reads it)."""
    for name, text in (("daemon_status.json", status), ("daemon_judgments.jsonl", judgments), ("events.jsonl", events)):
        if text is not None:
            (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    facts = replace(_facts(None, folder=folder), observed_status=observed)
    return build_record(facts, Evidence.read(folder), Redactor([]))


LINE_PASS, LINE_FAIL = json.dumps({"success": True}) + "\n", json.dumps({"success": False}) + "\n"


@pytest.mark.parametrize(
    ("status", "judgments", "outcome", "category"),
    [
        (json.dumps(PASS), LINE_PASS, "passed", None),
        (json.dumps(FAIL), LINE_FAIL, "failed", None),
        (json.dumps(FAIL), None, "failed", None),  # a rejection needs no judgments file
        (json.dumps(PASS), None, "error", "verdict_conflict"),  # the judgments file is missing
        (json.dumps(PASS), "", "error", "verdict_conflict"),
        (json.dumps(PASS), LINE_FAIL + LINE_PASS + LINE_FAIL, "error", "verdict_conflict"),  # the last line counts
        (json.dumps(PASS), LINE_PASS + '{"success": tr', "error", "verdict_conflict"),  # a torn last line is none
        (json.dumps(PASS), '{"success": "true"}\n', "error", "verdict_conflict"),
        (json.dumps(PASS), LINE_FAIL + LINE_PASS + "\n\n", "passed", None),  # blank lines are no lines
        (json.dumps(RUNNING), LINE_PASS, "error", "no_judgment"),  # an earlier turn's pass decides nothing
        (json.dumps({"status": "error"}), LINE_PASS + LINE_FAIL, "failed", None),  # a logged rejection stands
        (None, LINE_PASS, "error", "no_judgment"),
        ("[" + json.dumps(PASS) + "]", LINE_PASS, "error", "no_judgment"),  # not an object: no status at all
        (json.dumps(PASS)[:-1], LINE_PASS, "error", "no_judgment"),
        (json.dumps({**PASS, "pad": "x" * STATUS_MAX_BYTES}), LINE_PASS, "error", "no_judgment"),  # past the bound
    ],
)
def test_the_sources_as_read_from_the_containers_files(tmp_path: Path, status, judgments, outcome, category) -> None:
    record = _from_files(tmp_path, status, judgments)
    assert (record.outcome, record.error_category) == (outcome, category), record.error


ENV_LINE = json.dumps({"app": "Email", "fn": "x", "event_id": "Event-ENV-1"}) + "\n"
DUPLICATE = '{"status": "complete", "judgment": {"success": false}, "judgment": {"success": true, "failure_reason": ""}}'


@pytest.mark.parametrize(
    ("status", "judgments", "events", "why"),
    [
        (json.dumps(PASS), LINE_PASS, "", "no action"),  # the forger's pass: no agent event at all
        (json.dumps(PASS), LINE_PASS, ENV_LINE, "no action"),  # the daemon's own lines are not the agent's
        (b"\xef\xbb\xbf" + json.dumps(PASS).encode(), LINE_PASS, ANSWER, "byte-order mark"),
        (DUPLICATE, LINE_PASS, ANSWER, "'judgment'"),
        (json.dumps(PASS), '{"success": false, "success": true}\n', ANSWER, "'success'"),
        (json.dumps(PASS), b"\xef\xbb\xbf" + LINE_PASS.encode(), ANSWER, "byte-order mark"),
    ],
)
def test_a_pass_the_judge_cannot_have_given_is_a_verdict_conflict(tmp_path: Path, status, judgments, events,
                                                                   why) -> None:
    record = _from_files(tmp_path, status, judgments, events)
    assert (record.outcome, record.error_category) == ("error", "verdict_conflict"), record.error
    assert why in record.error
    assert record.verdict_sources is not None


def test_the_same_signs_on_a_rejection_change_nothing(tmp_path: Path) -> None:
    """A forged rejection gains an agent nothing: it stays a failure."""
    record = _from_files(tmp_path, b"\xef\xbb\xbf" + json.dumps(FAIL).encode(), LINE_FAIL, "")
    assert record.outcome == "failed"


@pytest.mark.parametrize(
    ("status", "judgments"),
    [
        (json.dumps({"status": "error"}), ""),  # killed daemon, emptied judgments file, status rewritten
        (None, None),  # both gone
        (json.dumps(PASS), LINE_PASS),  # rewritten to a pass after the judge's rejection was seen
        (json.dumps(RUNNING), None),
    ],
)
def test_a_rejection_the_harness_saw_first_is_final(tmp_path: Path, status, judgments) -> None:
    record = _from_files(tmp_path, status, judgments, observed=FAIL)
    assert (record.outcome, record.error_category) == ("failed", None), record.error
    assert record.failure_reasons == ["Tool count"]


def test_a_pass_the_harness_saw_first_still_needs_the_record(tmp_path: Path) -> None:
    """/status is forgeable: a pass seen there is no verdict of its own."""
    record = _from_files(tmp_path, json.dumps({"status": "error"}), "", observed=PASS)
    assert (record.outcome, record.error_category) == ("error", "daemon_error")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
STATUS_FIELD = st.sampled_from(["complete", "stopped", "error", "running", "waiting", ""]) | JSON
JUDGMENT = st.fixed_dictionaries({"success": st.booleans() | JSON}, optional={"failure_reason": JSON}) | JSON
STATUS = st.none() | st.fixed_dictionaries({}, optional={"status": STATUS_FIELD, "judgment": JUDGMENT, "turn": JSON})


@settings(max_examples=examples(300), deadline=None)
@given(endpoint=STATUS, on_file=STATUS, last_line=st.none() | st.booleans())
def test_any_shape_the_container_writes_gives_the_rules_verdict(endpoint, on_file, last_line) -> None:
    """The container writes both status sources: whatever their shape, the record is built
    (never an exception) and the verdict is the rules' one; a pass needs all three to agree."""
    record = _record(endpoint, on_file, last_line)
    assert (record.outcome, record.error_category) == _expected(endpoint, on_file, last_line), record.error
    if record.outcome == "passed":
        assert on_file["judgment"]["success"] is True and last_line is True


def test_a_conflict_outranks_a_fault_and_the_deadline() -> None:
    """A forged pass stays a verdict_conflict however the attempt ended (short of an exception)."""
    record = _record(PASS, RUNNING, None, timed_out=True, fault=Fault("container_exited", "exit 1"))
    assert (record.outcome, record.error_category) == ("error", "verdict_conflict")
