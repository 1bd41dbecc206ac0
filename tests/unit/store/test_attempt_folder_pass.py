"""One bounded pass over an attempt folder: what a container left is read once, whatever it holds.

The files are the container's (hostile): any bytes, lines of any shape, links and folders where
files should be. The pass never raises, counts what it can parse, hands every model call of the
trace to its readers, and the record, the cost and trace.html of an attempt open each of the
daemon's status, the events and the trace once.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.cost.usage import TraceUsage
from pytest_gaia2.report.trace_page import write_trace
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.attempt_files import SHOWN_EVENTS, AttemptFiles, is_agent_action

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
EVENT = st.fixed_dictionaries(
    {},
    optional={
        "app": st.sampled_from(["AgentUserInterface", "Contacts"]),
        "fn": st.sampled_from(["send_message_to_user", "search"]),
        "args": st.fixed_dictionaries({}, optional={"content": st.text(max_size=10) | st.none()}),
        "event_id": st.sampled_from(["", "Event-ENV-1"]),
    },
)
CALL = st.fixed_dictionaries({"type": st.just("llm_call")}, optional={"http_status": st.integers(0, 700) | st.none()})
TORN = st.text(max_size=20).map(lambda text: ("torn", "{torn " + text.replace("\n", " ").replace("\r", " ")))
"""A line no JSON reader parses (a tuple: no JSON value drawn is one)."""


def _lines(lines: list[Any]) -> bytes:
    return "".join((line[1] if isinstance(line, tuple) else json.dumps(line)) + "\n" for line in lines).encode()


@settings(max_examples=examples(150), deadline=None)
@given(
    status=st.binary(max_size=60) | JSON.map(lambda value: json.dumps(value).encode()),
    judgments=st.lists(JSON | TORN, max_size=4),
    events=st.lists(EVENT | JSON | TORN, max_size=12),
    trace=st.lists(CALL | JSON | TORN, max_size=12),
)
@example(status=b"\xef\xbb\xbf{}", judgments=[], events=[], trace=[])
@example(status=b'{"a": 1, "a": 2}', judgments=[("torn", "{")], events=[("torn", "{")], trace=[("torn", "{")])
@example(status=b"[" * 5000, judgments=[{"success": True}], events=[[1]], trace=[{"type": "llm_call"}, [1]])
def test_any_attempt_folder_reads_in_one_pass_without_raising(
    status: bytes, judgments: list[Any], events: list[Any], trace: list[Any]
) -> None:
    with tempfile.TemporaryDirectory() as raw:
        folder = Path(raw)
        (folder / store.STATUS_FILE).write_bytes(status)
        (folder / store.JUDGMENTS_FILE).write_bytes(_lines(judgments))
        (folder / store.EVENTS_FILE).write_bytes(_lines(events))
        (folder / store.TRACE_FILE).write_bytes(_lines(trace))
        told: list[dict[str, Any]] = []
        files = AttemptFiles.read(folder, told.append)
    parsed = [event for event in events if not isinstance(event, tuple)]
    assert files.event_lines == len(parsed)
    assert files.agent_actions == sum(map(is_agent_action, parsed))
    assert list(files.events) == [event for event in parsed if isinstance(event, dict)][:SHOWN_EVENTS]
    calls = [line for line in trace if isinstance(line, dict) and line.get("type") == "llm_call"]
    assert told == calls and files.model_calls == len(calls)
    if files.status_raw:  # what parsed within the bounds is what the file says
        assert files.status_raw == status and json.dumps(files.status) == json.dumps(json.loads(status))
    else:
        assert files.status is None
        if status.count(b"[") < 100:  # only what is no JSON (or nested past the bounds) reads as absent
            with pytest.raises(ValueError):
                json.loads(status)
    if judgments and not isinstance(judgments[-1], tuple):
        assert files.last_judgment == judgments[-1]
    else:
        assert (files.last_judgment, files.last_judgment_raw) == (None, b"")


@pytest.mark.parametrize("name", [store.STATUS_FILE, store.JUDGMENTS_FILE, store.EVENTS_FILE, store.TRACE_FILE])
def test_a_folder_or_fifo_in_place_of_a_file_reads_as_absent(tmp_path: Path, name: str) -> None:
    """Nothing hangs on a FIFO (no writer) or reads a folder's tree: each counts as absent."""
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / name)
    (tmp_path / "dir" / name).mkdir(parents=True)
    for folder in (tmp_path / "fifo", tmp_path / "dir"):
        assert AttemptFiles.read(folder) == AttemptFiles(folder)


def test_the_record_the_cost_and_the_page_open_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an ended attempt does with its folder: the evidence and the trace's usage in one pass,
    then trace.html from it. trace.jsonl, daemon_status.json and events.jsonl are opened once."""
    body = {"choices": [{"finish_reason": "stop", "message": {"content": "hi"}}], "usage": {"prompt_tokens": 7}}
    (tmp_path / store.TRACE_FILE).write_bytes(_lines([{"type": "llm_call", "http_status": 429, "raw_response": ""},
                                                      {"type": "llm_call", "response": body}]))
    (tmp_path / store.STATUS_FILE).write_text(json.dumps({"status": "complete"}), encoding="utf-8")
    (tmp_path / store.EVENTS_FILE).write_bytes(_lines([{"app": "Contacts", "fn": "search"}]))
    opened: list[str] = []
    real_open = os.open

    def counted(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(Path(path).name)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    usage = TraceUsage()
    evidence = Evidence.read(tmp_path, usage)
    write_trace(tmp_path, evidence.files, usage.usage())
    monkeypatch.undo()
    assert {name: opened.count(name) for name in (store.TRACE_FILE, store.STATUS_FILE, store.EVENTS_FILE)} == {
        store.TRACE_FILE: 1, store.STATUS_FILE: 1, store.EVENTS_FILE: 1}
    assert (evidence.loop_calls, evidence.provider.failed_calls, evidence.num_agent_events) == (0, 1, 1)
    assert usage.usage().calls == 2 and usage.usage().input_tokens == 7
    assert "complete" in (tmp_path / "trace.html").read_text(encoding="utf-8")
