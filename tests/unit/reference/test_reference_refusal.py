"""The reference agent refused by its model provider (``GAIA2_REF_AGENT_LLM``) ends like an agent
whose LLM client raised: it answers nobody, and the daemon ends the run unjudged (status error),
so no judge ever blames the agent for its provider. No Docker: the in-container modules run here."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED, http_server, reference_module, reference_tools

# in import order: each imports the ones before it by name, as in the container
scenario_mod, runtime_mod, _, _, _, agent_mod, _, daemon_mod = (
    reference_module(f"gaia2_ref_{name}")
    for name in ("scenario", "runtime", "tools", "trace", "model", "agent", "judge", "daemon")
)

SEARCH = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"


def test_a_refused_model_call_stops_the_agent_without_an_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "daemon_status.json").write_text(json.dumps({"status": "running"}), encoding="utf-8")
    monkeypatch.setenv("GAIA2_REF_AGENT_LLM", "1")
    monkeypatch.setenv("GAIA2_TRACE_FILE", str(tmp_path / "trace.jsonl"))
    with http_server("127.0.0.1", b"{}") as port:  # it answers GET only: the POST is refused (HTTP 501)
        monkeypatch.setenv("BASE_URL", f"http://127.0.0.1:{port}/v1")
        faketime = tmp_path / "no-faketime.rc"
        with reference_tools(state, faketime) as tools:
            scenario = json.loads(SEARCH.read_text(encoding="utf-8"))
            agent_mod.Agent(scenario, tools, faketime, logging.getLogger("t"), threading.Event()).run()
    assert not (state / "events.jsonl").exists()  # no "I could not go on" for the judge to judge
    assert json.loads((state / runtime_mod.AGENT_STOPPED).read_text(encoding="utf-8"))["reason"].endswith("501")
    trace = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["http_status"] for line in trace] == [501]


def test_the_daemon_ends_unjudged_when_the_agent_stopped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / runtime_mod.AGENT_STOPPED).write_text("{}\n", encoding="utf-8")
    daemon = daemon_mod.Daemon(scenario_mod.Scenario.load(str(SEARCH)), state, None, 1.0, 0.05)
    daemon.run()
    status = json.loads((state / "daemon_status.json").read_text(encoding="utf-8"))
    assert status["status"] == "error" and "judgment" not in status
    assert not (state / "judgments.jsonl").exists()


def test_an_answer_that_arrived_before_the_stop_is_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agent_stopped.json is the agent's own file: written next to a wrong final answer, the daemon
    saw it first and ended 'error' unjudged, so a failure the judge would give became a retried
    provider error. The judge goes first: the failure stands."""
    monkeypatch.setenv("GAIA2_JUDGE_FINAL_TURN", "1")
    state = tmp_path / "state"
    state.mkdir()
    answer = {"t": 0, "app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "no"}, "w": True}
    (state / "events.jsonl").write_text(json.dumps(answer) + "\n", encoding="utf-8")
    (state / runtime_mod.AGENT_STOPPED).write_text("{}\n", encoding="utf-8")
    daemon = daemon_mod.Daemon(scenario_mod.Scenario.load(str(SEARCH)), state, None, 1.0, 0.05)
    daemon.run()
    status = json.loads((state / "daemon_status.json").read_text(encoding="utf-8"))
    assert status["status"] == "stopped" and status["judgment"]["success"] is False
