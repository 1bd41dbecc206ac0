"""Unit tests for the reference image's deterministic judge (no Docker needed).

The judge ships as flat in-container modules (``/opt/gaia2_ref_*.py``), so the
tests load them by file path exactly as Python does inside the image.
"""

from __future__ import annotations

from typing import Any

import pytest
from gaia2_testing import reference_module

START = 1_700_000_000.0


scenario_mod = reference_module("gaia2_ref_scenario")
judge_mod = reference_module("gaia2_ref_judge")


def arg(name: str, value: Any, value_type: str = "str") -> dict[str, Any]:
    return {"name": name, "value": value, "value_type": value_type}


def event(
    event_id: str,
    event_type: str,
    app: str,
    fn: str,
    args: list[dict[str, Any]],
    deps: list[str] = (),
    rel: float = 0.0,
    op: str = "write",
) -> dict[str, Any]:
    return {
        "class_name": "OracleEvent" if event_type == "AGENT" else "Event",
        "event_type": event_type,
        "event_time": START + rel,
        "event_id": event_id,
        "dependencies": list(deps),
        "event_relative_time": rel,
        "action": {
            "action_id": f"{app}.{fn}-{event_id}",
            "app": app,
            "function": fn,
            "operation_type": op,
            "args": args,
        },
    }


TASK = event(
    "Event-USER-task",
    "USER",
    "AgentUserInterface",
    "send_message_to_agent",
    [arg("content", "Do the thing")],
    op="read",
)


def scenario(*events: dict[str, Any]) -> Any:
    return scenario_mod.Scenario(
        {
            "metadata": {"definition": {"scenario_id": "unit", "duration": 180, "start_time": START}},
            "apps": [
                {
                    "name": "Contacts",
                    "class_name": "ContactsApp",
                    "app_state": {"contacts": {"u": {"first_name": "Nadia", "last_name": "Kim", "is_user": True}}},
                },
                {"name": "EmailClientV2", "class_name": "EmailClientV2", "app_state": {}},
                {"name": "Chats", "class_name": "MessagingAppV2", "app_state": {}},
                {"name": "Calendar", "class_name": "CalendarApp", "app_state": {}},
            ],
            "events": [TASK, *events],
        }
    )


def smu(event_id: str, content: str, deps: list[str], rel: float = 0.0) -> dict[str, Any]:
    return event(event_id, "AGENT", "AgentUserInterface", "send_message_to_user", [arg("content", content)], deps, rel)


def line(
    app: str,
    fn: str,
    args: dict[str, Any],
    w: bool = True,
    ret: Any = None,
    at: float = 0.0,
    event_id: str | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"t": START + at, "app": app, "fn": fn, "args": args, "w": w, "ret": ret}
    if event_id:
        record["event_id"] = event_id
    record["sim_t"] = scenario_mod.sim_time_to_str(START + at)
    return record


def judge(sc: Any, turn: int, lines: list[dict[str, Any]]) -> Any:
    j = judge_mod.Judge(sc)
    return j, j.judge_turn(turn, [judge_mod.LoggedEvent.from_line(rec, i) for i, rec in enumerate(lines)])


EMAIL = event(
    "Event-AGENT-mail",
    "AGENT",
    "EmailClientV2",
    "send_email",
    [
        arg("recipients", '["a@x.org", "b@x.org"]', "list[str]"),
        arg("subject", "Dinner"),
        arg("content", "See you at 7"),
        arg("cc", "[]", "list"),
    ],
    ["Event-USER-task"],
)
EMAIL_SCENARIO = scenario(EMAIL, smu("Event-AGENT-smu", "Sent.", ["Event-AGENT-mail"]))
GOOD_EMAIL = line(
    "EmailClientV2",
    "send_email",
    {"recipients": ["b@x.org", "a@x.org"], "subject": " Dinner ", "content": "See you at 7", "cc": []},
    ret="m1",
)


def test_oracle_replay_passes_and_record_has_contract_keys() -> None:
    _, result = judge(
        EMAIL_SCENARIO, 0, [GOOD_EMAIL, line("AgentUserInterface", "send_message_to_user", {"content": "sent."})]
    )
    assert result.success and result.failure_reason == ""
    assert set(result.record) == {
        "turn",
        "success",
        "failure_reason",
        "agent_events",
        "oracle_events",
        "match_details",
        "id_mapping",
    }
    assert result.record["failure_reason"] is None
    assert result.record["agent_events"][0]["tool"] == "EmailClientApp__send_email"
    assert all(d["matched"] for d in result.record["match_details"])
    assert set(result.record["id_mapping"].values()) == {"Event-AGENT-mail", "Event-AGENT-smu"}


def test_reads_env_and_user_lines_are_ignored() -> None:
    lines = [
        line("Contacts", "search_contacts", {"query": "x"}, w=False),
        line("EmailClientV2", "create_and_add_email", {"subject": "hi"}, ret="e1", event_id="Event-ENV-mail"),
        line("AgentUserInterface", "send_message_to_agent", {"content": "more"}, w=False, event_id="Event-USER-more"),
        GOOD_EMAIL,
        line("AgentUserInterface", "send_message_to_user", {"content": "Sent."}),
    ]
    assert judge(EMAIL_SCENARIO, 0, lines)[1].success


def test_read_action_in_oracle_fails_even_its_own_replay() -> None:
    sc = scenario(
        event(
            "Event-AGENT-read",
            "AGENT",
            "Contacts",
            "search_contacts",
            [arg("query", "Alice")],
            ["Event-USER-task"],
            op="read",
        ),
        smu("Event-AGENT-smu", "Found.", ["Event-AGENT-read"]),
    )
    lines = [
        line("Contacts", "search_contacts", {"query": "Alice"}, w=False),
        line("AgentUserInterface", "send_message_to_user", {"content": "Found."}),
    ]
    _, result = judge(sc, 0, lines)
    assert not result.success
    assert result.failure_reason == "Tool count mismatch: agent={}, oracle={'ContactsApp__search_contacts': 1}"
    assert result.record["match_details"] is None


def test_tool_count_mismatch_for_an_extra_write() -> None:
    lines = [GOOD_EMAIL, GOOD_EMAIL, line("AgentUserInterface", "send_message_to_user", {"content": "Sent."})]
    _, result = judge(EMAIL_SCENARIO, 0, lines)
    assert (
        result.failure_reason
        == "Tool count mismatch: agent={'EmailClientApp__send_email': 2}, oracle={'EmailClientApp__send_email': 1}"
    )


@pytest.mark.parametrize(("count", "ok"), [(0, False), (1, True), (2, True), (3, False)])
def test_send_message_to_user_count_allows_one_extra(count: int, ok: bool) -> None:
    lines = [GOOD_EMAIL] + [line("AgentUserInterface", "send_message_to_user", {"content": "Sent."})] * count
    _, result = judge(EMAIL_SCENARIO, 0, lines)
    assert result.success is ok
    if not ok:
        assert result.failure_reason == f"SMU count mismatch: agent={count}, oracle=1, allowed_extra=1"


def test_argument_mismatch_names_tool_oracle_event_and_argument() -> None:
    bad = line(
        "EmailClientV2",
        "send_email",
        {"recipients": ["a@x.org", "b@x.org"], "subject": "Lunch", "content": "See you at 7"},
    )
    _, result = judge(
        EMAIL_SCENARIO, 0, [bad, line("AgentUserInterface", "send_message_to_user", {"content": "Sent."})]
    )
    assert not result.success
    assert result.failure_reason.startswith(
        "Cannot match EmailClientApp__send_email (Event-AGENT-mail): AGENT-EmailClientV2.send_email-"
    )
    assert "arg subject differs (agent='Lunch', oracle='Dinner')" in result.failure_reason


def test_final_message_is_compared_case_insensitively_after_strip() -> None:
    lines = [GOOD_EMAIL, line("AgentUserInterface", "send_message_to_user", {"content": "  SENT. "})]
    assert judge(EMAIL_SCENARIO, 0, lines)[1].success
    lines = [GOOD_EMAIL, line("AgentUserInterface", "send_message_to_user", {"content": "Not sent"})]
    result = judge(EMAIL_SCENARIO, 0, lines)[1]
    assert result.failure_reason.startswith("Cannot match AgentUserInterface__send_message_to_user (Event-AGENT-smu)")


@pytest.mark.parametrize(
    ("agent", "oracle", "equal"),
    [
        (3, 3.0, True),
        ("3", 3, True),
        (True, True, True),
        ("true", True, True),
        (1, True, False),
        (["b", "a"], ["a", "b"], True),
        (["a"], ["a", "b"], False),
        ({"job": " Chef "}, {"job": "Chef"}, True),
        (None, "", True),
        (None, [], True),
        ("x", None, False),
    ],
)
def test_typed_value_comparison(agent: Any, oracle: Any, equal: bool) -> None:
    assert judge_mod.values_equal(agent, oracle) is equal


def test_value_types_are_parsed() -> None:
    parse = scenario_mod.parse_value
    assert parse("3", "int") == 3
    assert parse("2.5", "Optional[float]") == 2.5
    assert parse("False", "bool") is False
    assert parse('["a"]', "list[str]") == ["a"]
    assert parse('{"k": 1}', "dict[str, int]") == {"k": 1}
    assert parse(None, "Optional[str]") is None
    assert parse("{{Event-AGENT-1}}", "int") == "{{Event-AGENT-1}}"


def test_app_aliases_normalise_both_sides() -> None:
    sc = scenario(
        event(
            "Event-AGENT-edit",
            "AGENT",
            "Contacts",
            "edit_contact",
            [arg("contact_id", "c1"), arg("updates", '{"job": "Chef"}', "dict")],
            ["Event-USER-task"],
        ),
        event(
            "Event-AGENT-chat",
            "AGENT",
            "MessagingAppV2",
            "send_message",
            [arg("user_id", "u1"), arg("content", "hi")],
            ["Event-USER-task"],
        ),
        smu("Event-AGENT-smu", "Done", ["Event-AGENT-edit", "Event-AGENT-chat"]),
    )
    lines = [
        line("ContactsApp", "edit_contact", {"contact_id": "c1", "updates": {"job": "Chef"}}),
        line("Chats", "send_message", {"user_id": "u1", "content": "hi"}),
        line("AgentUserInterface", "send_message_to_user", {"content": "done"}),
    ]
    assert judge(sc, 0, lines)[1].success


def _placeholder_scenario(reference: str) -> Any:
    return scenario(
        event(
            "Event-AGENT-add", "AGENT", "Calendar", "add_calendar_event", [arg("title", "Sync")], ["Event-USER-task"]
        ),
        event(
            "Event-AGENT-del",
            "AGENT",
            "Calendar",
            "delete_calendar_event",
            [arg("event_id", reference)],
            ["Event-AGENT-add"],
        ),
        smu("Event-AGENT-smu", "Done", ["Event-AGENT-del"]),
    )


@pytest.mark.parametrize(
    ("ret", "reference", "used", "ok"),
    [
        ("cal-1", "{{Event-AGENT-add}}", "cal-1", True),
        ("cal-1", "{{Event-AGENT-add}}", "cal-2", False),
        ({"id": "cal-9"}, "{{Event-AGENT-add.id}}", "cal-9", True),
    ],
)
def test_placeholders_resolve_against_the_matched_agent_return(ret: Any, reference: str, used: str, ok: bool) -> None:
    lines = [
        line("Calendar", "add_calendar_event", {"title": "Sync"}, ret=ret),
        line("Calendar", "delete_calendar_event", {"event_id": used}),
        line("AgentUserInterface", "send_message_to_user", {"content": "done"}),
    ]
    result = judge(_placeholder_scenario(reference), 0, lines)[1]
    assert result.success is ok
    if not ok:
        assert "arg event_id differs (agent='cal-2', oracle='cal-1')" in result.failure_reason


def test_placeholders_resolve_against_env_returns() -> None:
    sc = scenario(
        event(
            "Event-ENV-mail",
            "ENV",
            "EmailClientV2",
            "create_and_add_email",
            [arg("subject", "Q")],
            ["Event-USER-task"],
            rel=3,
        ),
        event(
            "Event-AGENT-reply",
            "AGENT",
            "EmailClientV2",
            "reply_to_email",
            [arg("email_id", "{{Event-ENV-mail}}"), arg("content", "Yes")],
            ["Event-ENV-mail"],
        ),
        smu("Event-AGENT-smu", "Replied", ["Event-AGENT-reply"]),
    )
    lines = [
        line("EmailClientV2", "create_and_add_email", {"subject": "Q"}, ret="mail-7", at=3, event_id="Event-ENV-mail"),
        line("EmailClientV2", "reply_to_email", {"email_id": "mail-7", "content": "Yes"}, at=4),
        line("AgentUserInterface", "send_message_to_user", {"content": "Replied"}, at=4),
    ]
    assert judge(sc, 0, lines)[1].success


def test_causality_parent_must_be_matched_to_an_earlier_agent_event() -> None:
    lines = [
        line("Calendar", "delete_calendar_event", {"event_id": "cal-1"}),
        line("Calendar", "add_calendar_event", {"title": "Sync"}, ret="cal-1"),
        line("AgentUserInterface", "send_message_to_user", {"content": "done"}),
    ]
    result = judge(_placeholder_scenario("cal-1"), 0, lines)[1]
    assert not result.success
    assert "causality violation (parent Event-AGENT-add" in result.failure_reason


TIMED = scenario(
    event(
        "Event-AGENT-chat",
        "AGENT",
        "Chats",
        "send_message",
        [arg("user_id", "u1"), arg("content", "Boarding")],
        ["Event-USER-task"],
        rel=30,
    ),
    smu("Event-AGENT-smu", "Sent", ["Event-AGENT-chat"]),
)


@pytest.mark.parametrize(("at", "ok"), [(30, True), (20, True), (55, True), (19, False), (56, False), (5, False)])
def test_timing_window_is_rel_minus_10_to_rel_plus_25_in_sim_time(at: float, ok: bool) -> None:
    lines = [
        line("Chats", "send_message", {"user_id": "u1", "content": "Boarding"}, at=at),
        line("AgentUserInterface", "send_message_to_user", {"content": "Sent"}, at=at),
    ]
    result = judge(TIMED, 0, lines)[1]
    assert result.success is ok
    if not ok:
        assert f"time check failed (agent_relative={at:.0f}s, oracle_relative=30s)" in result.failure_reason


def test_timing_is_measured_from_a_matched_agent_parent() -> None:
    sc = scenario(
        event(
            "Event-AGENT-mail", "AGENT", "EmailClientV2", "send_email", [arg("subject", "Agenda")], ["Event-USER-task"]
        ),
        event(
            "Event-AGENT-chat",
            "AGENT",
            "Chats",
            "send_message",
            [arg("content", "Check mail")],
            ["Event-AGENT-mail"],
            rel=6,
        ),
        smu("Event-AGENT-smu", "Done", ["Event-AGENT-chat"]),
    )
    lines = [
        line("EmailClientV2", "send_email", {"subject": "Agenda"}, at=100),
        line("Chats", "send_message", {"content": "Check mail"}, at=106),
        line("AgentUserInterface", "send_message_to_user", {"content": "Done"}, at=106),
    ]
    assert judge(sc, 0, lines)[1].success
    lines[1] = line("Chats", "send_message", {"content": "Check mail"}, at=140)
    assert "agent_relative=40s, oracle_relative=6s" in judge(sc, 0, lines)[1].failure_reason


def test_turns_follow_oracle_send_message_to_user_ancestors() -> None:
    sc = scenario(
        smu("Event-AGENT-ask", "Which Sam?", ["Event-USER-task"]),
        event(
            "Event-USER-answer",
            "USER",
            "AgentUserInterface",
            "send_message_to_agent",
            [arg("content", "Sam Okafor")],
            ["Event-AGENT-ask"],
            op="read",
        ),
        event(
            "Event-AGENT-add",
            "AGENT",
            "Calendar",
            "add_calendar_event",
            [arg("title", "Call"), arg("attendees", '["Sam Okafor", "Nadia Kim"]', "list")],
            ["Event-USER-answer"],
        ),
        smu("Event-AGENT-done", "Booked", ["Event-AGENT-add"]),
    )
    assert sc.nb_turns == 2
    assert [e.event_id for e in sc.follow_ups(1)] == ["Event-USER-answer"]
    assert [e.event_id for e in sc.oracle_turn(1)] == ["Event-AGENT-add", "Event-AGENT-done"]
    j = judge_mod.Judge(sc)
    first = j.judge_turn(
        0,
        [
            judge_mod.LoggedEvent.from_line(
                line("AgentUserInterface", "send_message_to_user", {"content": "which sam?"}), 0
            )
        ],
    )
    assert first.success
    # The user's own name in the attendee list is tolerated on either side.
    second = [
        line(
            "AgentUserInterface",
            "send_message_to_agent",
            {"content": "Sam Okafor"},
            w=False,
            event_id="Event-USER-answer",
        ),
        line("Calendar", "add_calendar_event", {"title": "Call", "attendees": ["Sam Okafor"]}),
        line("AgentUserInterface", "send_message_to_user", {"content": "Booked"}),
    ]
    assert j.judge_turn(1, [judge_mod.LoggedEvent.from_line(rec, i + 1) for i, rec in enumerate(second)]).success


def test_turn_without_oracle_events_auto_passes() -> None:
    sc = scenario()
    assert not judge_mod.Judge(sc).enabled
    assert judge(sc, 0, [line("AgentUserInterface", "send_message_to_user", {"content": "hi"})])[1].success
