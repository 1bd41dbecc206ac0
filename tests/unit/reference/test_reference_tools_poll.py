"""The tool socket's ``poll``: a waiting agent's one request per step must answer what the three
single requests (status, events tail, notifications tail) would, and move each tail on only by
whole lines. No Docker: the in-container modules run here."""

from __future__ import annotations

import json
from pathlib import Path

from gaia2_testing import reference_module, reference_tools

tools_mod = reference_module("gaia2_ref_tools")


def _append(path: Path, *records: dict[str, object]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(record) + "\n" for record in records))


def test_poll_answers_the_status_and_only_new_whole_lines_of_each_tail(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    events, notes = tools_mod.RemoteTail("events"), tools_mod.RemoteTail("notes")
    with reference_tools(state, tmp_path / "no-faketime.rc") as client:
        assert client.poll([events, notes]) == ({"status": "waiting"}, [[], []])
        running = {"status": "running", "turn": 0, "nb_turns": 1, "num_events": 0}
        (state / "daemon_status.json").write_text(json.dumps(running), encoding="utf-8")
        _append(state / "events.jsonl", {"app": "A", "fn": "f", "event_id": "Event-ENV-1"})
        _append(state / "notifications.jsonl", {"type": "user_message", "content": "hi", "turn": 0})
        with open(state / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write('{"app": "B"')  # a line still being written is not read yet
        status, (new_events, new_notes) = client.poll([events, notes])
        assert status == running
        assert new_events == [{"app": "A", "fn": "f", "event_id": "Event-ENV-1"}]
        assert new_notes == [{"type": "user_message", "content": "hi", "turn": 0}]
        with open(state / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(', "fn": "g"}\n')
        assert client.poll([events, notes])[1] == [[{"app": "B", "fn": "g"}], []]
        assert client.poll([events, notes])[1] == [[], []]


def test_poll_without_the_socket_is_waiting_with_nothing_new(tmp_path: Path) -> None:
    client = tools_mod.ToolClient(tmp_path / "absent.sock")
    tail = tools_mod.RemoteTail("events")
    assert client.poll([tail]) == ({"status": "waiting"}, [[]])
    assert tail.offset == 0
