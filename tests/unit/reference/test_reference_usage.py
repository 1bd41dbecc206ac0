"""Unit tests for the reference image's simulated LLM-call trace (``GAIA2_REF_USAGE``), no Docker needed.

The reference modules are flat, standard-library-only in-container modules (``/opt/gaia2_ref_*.py``),
so they are loaded by file path, as Python does inside the image.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import reference_module, reference_tools

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "scenarios"
FORMAT_A_KEYS = {"seq", "timestamp", "type", "url", "latency_ms", "http_status", "request", "raw_response"}


scenario_mod = reference_module("gaia2_ref_scenario")
runtime_mod = reference_module("gaia2_ref_runtime")
reference_module("gaia2_ref_tools")
trace_mod = reference_module("gaia2_ref_trace")
model_mod = reference_module("gaia2_ref_model")  # the agent imports it as the container does
agent_mod = reference_module("gaia2_ref_agent")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- GAIA2_REF_USAGE ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1000,200", (1000, 200, 0)),
        ("1000,200,100", (1000, 200, 100)),
        (" 7 , 3 , 0 ", (7, 3, 0)),
        ("0,0", (0, 0, 0)),
    ],
)
def test_usage_is_prompt_completion_and_optional_cached(text: str, expected: tuple[int, int, int]) -> None:
    assert tuple(trace_mod.parse_usage(text)) == expected


@pytest.mark.parametrize("text", [None, "", "   "])
def test_no_usage_means_no_trace(text: str | None) -> None:
    assert trace_mod.parse_usage(text) is None
    assert trace_mod.TraceWriter.from_env({} if text is None else {"GAIA2_REF_USAGE": text}) is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1000", "expected <prompt>,<completion>"),
        ("1,2,3,4", "expected <prompt>,<completion>"),
        ("1000,abc", "must be integers"),
        ("1.5,2", "must be integers"),
        ("1000,-1", "must not be negative"),
        ("10,2,11", "cached tokens exceed prompt tokens"),
    ],
)
def test_malformed_usage_is_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        trace_mod.parse_usage(text)


def test_usage_block_is_openai_shaped() -> None:
    assert trace_mod.Usage(1000, 200, 100).block() == {
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "total_tokens": 1200,
        "prompt_tokens_details": {"cached_tokens": 100},
    }


def test_writer_from_env_defaults_and_overrides(tmp_path: Path) -> None:
    writer = trace_mod.TraceWriter.from_env({"GAIA2_REF_USAGE": "10,2"})
    assert (writer.path, writer.model, writer.usage) == (Path("/tmp/trace.jsonl"), "gaia2-reference", (10, 2, 0))
    target = tmp_path / "t.jsonl"
    writer = trace_mod.TraceWriter.from_env(
        {"GAIA2_REF_USAGE": "10,2,1", "GAIA2_TRACE_FILE": str(target), "MODEL": "test-model"}
    )
    assert (writer.path, writer.model, writer.usage) == (target, "test-model", (10, 2, 1))
    with pytest.raises(ValueError):
        trace_mod.TraceWriter.from_env({"GAIA2_REF_USAGE": "ten,two"})


# -- the Format A lines -------------------------------------------------------------------------


def test_each_action_is_one_format_a_line(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "trace.jsonl"
    writer = trace_mod.TraceWriter(path, trace_mod.Usage(1000, 200, 100), "test-model", clock=lambda: 1_742_212_800.25)
    writer.record("ContactsApp", "edit_contact", {"contact_id": "c1", "updates": {"job": "Architect"}})
    writer.record("AgentUserInterface", "send_message_to_user", {"content": "Done."})
    lines = read_jsonl(path)
    assert [line["seq"] for line in lines] == [1, 2]
    for line in lines:
        assert set(line) == FORMAT_A_KEYS
        assert line["type"] == "llm_call"
        assert line["timestamp"] == "2025-03-17T12:00:00.250Z"
        assert line["url"].endswith("/chat/completions")
        assert (line["latency_ms"], line["http_status"]) == (0, 200)
        assert line["request"]["model"] == "test-model"
        assert isinstance(line["request"]["messages"], list)
        assert isinstance(line["raw_response"], str)
        body = json.loads(line["raw_response"])
        assert body["object"] == "chat.completion" and body["model"] == "test-model"
        assert body["usage"] == {
            "prompt_tokens": 1000,
            "completion_tokens": 200,
            "total_tokens": 1200,
            "prompt_tokens_details": {"cached_tokens": 100},
        }

    action = json.loads(lines[0]["raw_response"])["choices"][0]
    assert action["finish_reason"] == "tool_calls"
    (call,) = action["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "ContactsApp__edit_contact"
    assert json.loads(call["function"]["arguments"]) == {"contact_id": "c1", "updates": {"job": "Architect"}}

    reply = json.loads(lines[1]["raw_response"])["choices"][0]
    assert reply["finish_reason"] == "stop"
    assert reply["message"] == {"role": "assistant", "content": "Done."}


def test_writer_appends_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"seq": 0, "type": "other"}\n', encoding="utf-8")
    trace_mod.TraceWriter(path, trace_mod.Usage(1, 1)).record("AgentUserInterface", "send_message_to_user", {})
    lines = read_jsonl(path)
    assert [line["seq"] for line in lines] == [0, 1]
    assert json.loads(lines[1]["raw_response"])["choices"][0]["message"]["content"] == ""


# -- the agent: one call per action it writes to events.jsonl -------------------------------------


@pytest.fixture
def make_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str | None, Path], Any]]:
    """An agent over ``tmp_path/state`` through the tool socket, as in the container."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("GAIA2_TRACE_FILE", str(tmp_path / "trace.jsonl"))
    monkeypatch.setenv("MODEL", "test-model")
    log = logging.getLogger("test-reference-usage")
    faketime = tmp_path / "no-faketime.rc"  # missing: timed oracle events do not wait for sim time

    with reference_tools(state, faketime) as tools:

        def make(usage: str | None, scenario: Path) -> Any:
            if usage is None:
                monkeypatch.delenv("GAIA2_REF_USAGE", raising=False)
            else:
                monkeypatch.setenv("GAIA2_REF_USAGE", usage)
            data = json.loads(scenario.read_text(encoding="utf-8"))
            return agent_mod.Agent(data, tools, faketime, log, threading.Event())

        yield make


def agent_lines(tmp_path: Path) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path / "state" / "events.jsonl")


def calls(tmp_path: Path) -> list[tuple[str, Any]]:
    """(tool name or "message", arguments or content) of every trace line."""
    out = []
    for line in read_jsonl(tmp_path / "trace.jsonl"):
        message = json.loads(line["raw_response"])["choices"][0]["message"]
        if message.get("tool_calls"):
            function = message["tool_calls"][0]["function"]
            out.append((function["name"], json.loads(function["arguments"])))
        else:
            out.append(("message", message["content"]))
    return out


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("search/scenario_universe_21_7kww6e.json", 1),  # the oracle's answer only
        ("execution/scenario_universe_22_mmow4l.json", 3),  # edit_contact, send_email, the answer
    ],
)
def test_oracle_replay_makes_one_call_per_oracle_agent_event(
    tmp_path: Path, make_agent: Callable[[str | None, Path], Any], scenario: str, expected: int
) -> None:
    path = SHIPPED / scenario
    agent = make_agent("1000,200,100", path)
    loaded = scenario_mod.Scenario.load(str(path))
    assert sum(1 for event in loaded.events if event.event_type == "AGENT") == expected
    agent.run_oracle(loaded)
    written = agent_lines(tmp_path)
    made = calls(tmp_path)
    assert len(written) == len(made) == expected
    for line, (name, payload) in zip(written, made, strict=False):
        if line["fn"] == "send_message_to_user":
            assert name == "message" and payload == line["args"]["content"]
        else:
            assert name == f"{line['app']}__{line['fn']}" and payload == line["args"]
    trace = read_jsonl(tmp_path / "trace.jsonl")
    assert [line["seq"] for line in trace] == list(range(1, expected + 1))
    assert {line["request"]["model"] for line in trace} == {"test-model"}


def test_synthetic_boundary_is_a_call_too(tmp_path: Path, make_agent: Callable[[str | None, Path], Any]) -> None:
    """A last turn without an oracle answer ends with ``[oracle replay complete]``: one more call."""
    data = json.loads((SHIPPED / "execution" / "scenario_universe_22_mmow4l.json").read_text(encoding="utf-8"))
    data["events"] = [e for e in data["events"] if e["action"].get("function") != "send_message_to_user"]
    path = tmp_path / "no_answer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    agent = make_agent("10,2", path)
    agent.run_oracle(scenario_mod.Scenario.load(str(path)))
    made = calls(tmp_path)
    assert [name for name, _ in made] == ["ContactsApp__edit_contact", "EmailClientV2__send_email", "message"]
    assert made[-1] == ("message", agent_mod.SYNTHETIC_BOUNDARY)
    assert len(agent_lines(tmp_path)) == 3


def test_scripted_agent_makes_one_call_per_action(tmp_path: Path, make_agent: Callable[[str | None, Path], Any]) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(
        "\n".join(
            json.dumps(item)
            for item in [
                {"app": "ContactsApp", "fn": "search_contacts", "args": {"query": "Alice"}},
                {"sleep": 0},
                {"app": "ContactsApp", "fn": "edit_contact", "args": {"contact_id": "c1"}, "w": True, "ret": "ok"},
                {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "Done."}, "w": True},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    agent = make_agent("5,1", SHIPPED / "search" / "scenario_universe_21_7kww6e.json")
    agent.run_script(script)
    assert calls(tmp_path) == [
        ("ContactsApp__search_contacts", {"query": "Alice"}),
        ("ContactsApp__edit_contact", {"contact_id": "c1"}),
        ("message", "Done."),
    ]
    assert len(agent_lines(tmp_path)) == 3


@pytest.mark.parametrize("usage", [None, "", "nonsense"])
def test_without_a_valid_usage_no_trace_is_written(
    tmp_path: Path, make_agent: Callable[[str | None, Path], Any], usage: str | None
) -> None:
    path = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
    agent = make_agent(usage, path)
    agent.run_oracle(scenario_mod.Scenario.load(str(path)))
    assert len(agent_lines(tmp_path)) == 1
    assert not (tmp_path / "trace.jsonl").exists()


def test_an_unwritable_trace_does_not_stop_the_agent(tmp_path: Path, make_agent: Callable[[str | None, Path], Any]) -> None:
    path = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
    agent = make_agent("1,1", path)
    agent.trace.path = tmp_path / "a-file"
    agent.trace.path.write_text("", encoding="utf-8")
    agent.trace.path = agent.trace.path / "trace.jsonl"  # its parent is a file
    agent.run_oracle(scenario_mod.Scenario.load(str(path)))
    assert len(agent_lines(tmp_path)) == 1
