"""Reading what a container left, bounded: events, the last judgment line, held interrupts."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.run import interrupts
from pytest_gaia2.run.evidence import forged_signs
from pytest_gaia2.store.attempt_files import AttemptFiles, last_json_line


def test_events_are_counted_as_gaia2_runner_counts_them(tmp_path: Path) -> None:
    lines = [
        {"app": "Contacts", "fn": "search", "args": {}},
        {"app": "Email", "fn": "x", "event_id": "Event-ENV-1"},
        {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "first"}},
        {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "last"}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{torn", encoding="utf-8")
    # every parseable line, ENV and USER lines included; the agent's own: those without an event_id
    files = AttemptFiles.read(tmp_path)
    assert (files.event_lines, files.last_response, files.agent_actions) == (4, "last", 3)
    assert len(files.events) == 4 and not files.more_events
    missing = AttemptFiles.read(tmp_path / "missing")
    assert (missing.event_lines, missing.last_response, missing.agent_actions) == (0, "", 0)


def test_the_last_judgment_line_is_read_from_the_end_only(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    path.write_text("x" * 100 + "\n" + json.dumps({"success": False}) + "\n\n", encoding="utf-8")
    assert last_json_line(path, window=40) == ({"success": False}, b'{"success": false}')
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n", encoding="utf-8")
    assert last_json_line(tmp_path / "deep.jsonl") == (None, b"")


def test_a_second_ctrl_c_waits_for_the_block_then_raises() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("written")
    assert done == ["written"]


@settings(max_examples=examples(300), deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@example(raw=b"\xef\xbb\xbf{}")
@example(raw=b'{"a": 1, "a": 2}')
@example(raw=b"[" * 5000)
def test_the_signs_of_a_forged_judge_file_never_raise(raw: bytes) -> None:
    """Any bytes a container leaves: a list of what no judge writes, never an exception."""
    found = forged_signs(raw)
    assert all(isinstance(sign, str) for sign in found)
    assert ("starts with a byte-order mark" in found) == raw.startswith(b"\xef\xbb\xbf")


@settings(max_examples=examples(200), deadline=None)
@given(value=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=6))
def test_a_judge_file_as_json_writes_it_shows_no_sign(value: dict[str, object]) -> None:
    assert forged_signs(json.dumps(value).encode()) == []
