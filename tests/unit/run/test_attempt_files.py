"""Reading what a container left, bounded: events, the last judgment line, held interrupts."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from pytest_gaia2.run import interrupts
from pytest_gaia2.run.evidence import last_json_line, scan_events


def test_events_are_counted_as_gaia2_runner_counts_them(tmp_path: Path) -> None:
    lines = [
        {"app": "Contacts", "fn": "search", "args": {}},
        {"app": "Email", "fn": "x", "event_id": "Event-ENV-1"},
        {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "first"}},
        {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "last"}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{torn", encoding="utf-8")
    assert scan_events(path) == (4, "last")  # every parseable line, ENV and USER lines included
    assert scan_events(tmp_path / "missing.jsonl") == (0, "")


def test_the_last_judgment_line_is_read_from_the_end_only(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    path.write_text("x" * 100 + "\n" + json.dumps({"success": False}) + "\n\n", encoding="utf-8")
    assert last_json_line(path, window=40) == {"success": False}
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n", encoding="utf-8")
    assert last_json_line(tmp_path / "deep.jsonl") is None


def test_a_second_ctrl_c_waits_for_the_block_then_raises() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("written")
    assert done == ["written"]
