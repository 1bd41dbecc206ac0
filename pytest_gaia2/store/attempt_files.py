"""An attempt folder's evidence, read in one bounded pass.

What a container left and the harness decides on or shows (daemon_status.json, the last line of
the judgments, events.jsonl, trace.jsonl) is read here once per attempt: the verdict's evidence,
the attempt's cost, the provider checks, the loop check and trace.html all take what this pass
read. None of it is trusted: only regular files that are no links are opened, every file and line
is capped (:data:`STATUS_MAX_BYTES` for the daemon's files, ``RECORD_MAX_BYTES`` for a trace line),
a malformed line is skipped and a file that cannot be read counts as absent. The trace's model
calls go to the readers the caller hands in, one line at a time, so no trace is held in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.store.folder import (
    EVENTS_FILE,
    JUDGMENTS_FILE,
    RECORD_MAX_BYTES,
    STATUS_FILE,
    TRACE_FILE,
    json_lines,
)
from pytest_gaia2.store.limits import STATUS_MAX_BYTES
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded, open_regular, read_regular_file

SHOWN_EVENTS = 1000
"""events.jsonl lines kept for trace.html (the rest are counted, and linked from the page)."""
ANY_SIZE = 1 << 40
"""A file of any size is looked at where only its end is read."""
CallReader = Callable[[dict[str, Any]], None]
"""Told of each ``llm_call`` line of the trace, in order."""


def is_agent_action(event: Any) -> bool:
    """A line of events.jsonl the agent wrote: the daemon stamps its ENV and user events with an ``event_id``."""
    return isinstance(event, dict) and not event.get("event_id")


def last_json_line(path: Path, window: int = STATUS_MAX_BYTES) -> tuple[Any, bytes]:
    """The last complete JSON line of a file, reading only its last ``window`` bytes, and its bytes
    (None and empty when there is none, it is not JSON, or the file is no regular file)."""
    try:
        with open_regular(path, max_bytes=ANY_SIZE) as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - window))
            tail = handle.read(window)
    except (JsonReadError, OSError):
        return None, b""
    for line in reversed(tail.splitlines()):
        if line.strip():
            try:
                return loads_bounded(line, max_bytes=window), line
            except JsonReadError:
                return None, b""
    return None, b""


@dataclass(frozen=True)
class AttemptFiles:
    """What one attempt folder's evidence files hold, each file read once."""

    folder: Path
    status: object = None
    """daemon_status.json parsed (any JSON value: its reader checks it is an object); None when absent."""
    status_raw: bytes = b""
    """Its bytes, when it parsed: what no judge writes (a byte-order mark, a key twice) shows there."""
    last_judgment: object = None
    """The last line of daemon_judgments.jsonl, parsed."""
    last_judgment_raw: bytes = b""
    events: tuple[dict[str, Any], ...] = ()
    """The first :data:`SHOWN_EVENTS` object lines of events.jsonl."""
    more_events: bool = False
    """Whether events.jsonl holds more object lines than those."""
    event_lines: int = 0
    """Every parseable line of events.jsonl (gaia2-runner's ``num_agent_events``)."""
    agent_actions: int = 0
    """Lines of events.jsonl the agent wrote (:func:`is_agent_action`)."""
    last_response: str = ""
    """The content of the last message to the user the agent wrote in events.jsonl."""
    model_calls: int = 0
    """``llm_call`` lines of trace.jsonl."""

    @classmethod
    def read(cls, folder: Path, *on_call: CallReader) -> AttemptFiles:
        """The folder's evidence; each of ``on_call`` is told of every model call of the trace."""
        status: object = None
        status_raw = b""
        try:
            raw = read_regular_file(folder / STATUS_FILE, max_bytes=STATUS_MAX_BYTES)
            status, status_raw = loads_bounded(raw, max_bytes=STATUS_MAX_BYTES), raw
        except JsonReadError:
            pass
        last, line = last_json_line(folder / JUDGMENTS_FILE)
        count, actions, response = 0, 0, ""
        shown: list[dict[str, Any]] = []
        more = False
        for event in json_lines(folder / EVENTS_FILE, STATUS_MAX_BYTES):
            count += 1
            actions += is_agent_action(event)
            if not isinstance(event, dict):
                continue
            if len(shown) < SHOWN_EVENTS:
                shown.append(event)
            else:
                more = True
            if event.get("app") == "AgentUserInterface" and event.get("fn") == "send_message_to_user":
                args = event.get("args")
                if isinstance(args, dict) and args.get("content") is not None:
                    response = str(args["content"])
        calls = 0
        for call in json_lines(folder / TRACE_FILE, RECORD_MAX_BYTES):
            if isinstance(call, dict) and call.get("type") == "llm_call":
                calls += 1
                for reader in on_call:
                    reader(call)
        return cls(folder, status, status_raw, last, line, tuple(shown), more, count, actions, response, calls)

    @property
    def status_object(self) -> dict[str, Any] | None:
        """daemon_status.json when it is a JSON object, else None."""
        return self.status if isinstance(self.status, dict) else None
