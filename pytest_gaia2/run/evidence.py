"""What a container left, read back with bounds, and the result tests receive.

The container wrote these files, so none is trusted: each read is capped, a malformed line
is skipped, and a file that cannot be read counts as absent. :class:`Evidence` is what the
collected files say about the verdict; :class:`ScenarioResult` is what the fixtures hand to
tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.run import provider
from pytest_gaia2.run.provider import ProviderTrouble
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.limits import STATUS_MAX_BYTES
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded, read_regular_file

if TYPE_CHECKING:
    from pytest_gaia2.engine.container import Container

STATUS_FILE = f"{store.STATE_DIR}/daemon_status.json"

"""daemon_status.json and judgment lines are small; a bigger one is not the contract."""


@dataclass(frozen=True)
class ScenarioResult:
    """What an attempt produced: its record and its folder (what the fixtures hand to tests)."""

    record: AttemptRecord
    folder: Path

    @property
    def passed(self) -> bool:
        return self.record.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.record.outcome == "failed"

    @property
    def errored(self) -> bool:
        return self.record.outcome == "error"

    @property
    def message(self) -> str:
        return self.record.message

    @property
    def daemon_status(self) -> dict[str, Any] | None:
        return self.record.daemon_status

    @property
    def agent_response(self) -> str:
        return self.record.agent_response

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events.jsonl lines the attempt left (agent actions, ENV events, turn boundaries)."""
        return store.read_jsonl(self.folder / "events.jsonl")

    @property
    def judgments(self) -> list[dict[str, Any]]:
        return store.read_jsonl(self.folder / "daemon_judgments.jsonl")


@dataclass(frozen=True)
class Evidence:
    """What the collected files say about the verdict and the agent's work."""

    status_file: dict[str, Any] | None
    """daemon_status.json: the daemon's own record of its last status."""
    last_judgment: bool | None
    """``success`` of the last line of daemon_judgments.jsonl."""
    num_agent_events: int
    last_response: str
    loop_calls: int = 0
    """Model calls in trace.jsonl since the agent's last final answer (:func:`calls_since_answer`)."""
    provider: ProviderTrouble = field(default=ProviderTrouble())
    """What trace.jsonl (else the agent's logs) says about the model provider."""

    agent_actions: int = 0
    """Lines of events.jsonl the agent wrote (no ``event_id``: the daemon stamps its ENV and user events)."""
    problems: tuple[str, ...] = ()
    """How the judge's files contradict themselves (a byte-order mark, a key given twice): no
    judge writes either, so a pass on such files is not believed."""

    @classmethod
    def read(cls, folder: Path) -> Evidence:
        problems: list[str] = []
        try:
            raw = read_regular_file(folder / "daemon_status.json", max_bytes=STATUS_MAX_BYTES)
            status_file = loads_bounded(raw, max_bytes=STATUS_MAX_BYTES)
            problems += [f"daemon_status.json {problem}" for problem in forged_signs(raw)]
        except JsonReadError:
            status_file = None
        last, line = last_json_line(folder / "daemon_judgments.jsonl")
        problems += [f"the judgments file's last line {problem}" for problem in forged_signs(line)]
        judged = last.get("success") if isinstance(last, dict) else None
        count, response, actions = scan_events(folder / "events.jsonl")
        return cls(
            status_file if isinstance(status_file, dict) else None,
            judged if isinstance(judged, bool) else None,
            count,
            response,
            calls_since_answer(folder / "trace.jsonl"),
            provider.read(folder),
            actions,
            tuple(problems),
        )


class _Repeated(ValueError):
    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise _Repeated(repeated)
    return dict(pairs)


def forged_signs(raw: bytes) -> list[str]:
    """What in a judge's JSON text no judge writes: a byte-order mark, a key given twice in one
    object (a reader keeps one of the two, another reader the other). ``raw`` has already been
    parsed within bounds; empty when it is not JSON at all (that is absence, not forgery)."""
    found = []
    if raw.startswith(b"\xef\xbb\xbf"):
        found.append("starts with a byte-order mark")
    try:
        json.loads(raw.decode("utf-8").removeprefix("\ufeff"), object_pairs_hook=_no_repeats)
    except _Repeated as exc:
        found.append(f"gives the key(s) {', '.join(repr(key[:40]) for key in exc.keys[:5])} twice")
    except (ValueError, RecursionError):
        pass
    return found


def _final_answer(line: dict[str, Any], max_bytes: int) -> bool:
    """Whether one ``llm_call`` line's response ended the agent's turn: OpenAI's choice that
    stops without tool calls, or Anthropic's ``end_turn``. A streamed or unreadable response
    counts as a call that did not (so a loop is never hidden, only possibly undercounted)."""
    response = line.get("response")
    raw = line.get("raw_response")
    if not isinstance(response, dict) and isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            response = loads_bounded(raw.encode("utf-8", "replace"), max_bytes=max_bytes)
        except JsonReadError:
            return False
    if not isinstance(response, dict):
        return False
    if response.get("stop_reason") == "end_turn":
        return True
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[-1], dict):
        return False
    message = choices[-1].get("message")
    return choices[-1].get("finish_reason") == "stop" and not (isinstance(message, dict) and message.get("tool_calls"))


def calls_since_answer(path: Path, max_line_bytes: int = store.RECORD_MAX_BYTES) -> int:
    """The ``llm_call`` lines of a trace after the last one whose response was a final answer:
    the model calls of the agent's current turn, the measure of a runaway tool loop."""
    calls = 0
    for line in store.json_lines(path, max_line_bytes):
        if isinstance(line, dict) and line.get("type") == "llm_call":
            calls = 0 if _final_answer(line, max_line_bytes) else calls + 1
    return calls


def status_in_container(container: Container) -> dict[str, Any] | None:
    """daemon_status.json read inside a running container, for when /status stops answering."""
    raw, _ = container.read_file(STATUS_FILE, max_bytes=STATUS_MAX_BYTES)
    if raw is None:
        return None
    try:
        value = loads_bounded(raw, max_bytes=STATUS_MAX_BYTES)
    except JsonReadError:
        return None
    return value if isinstance(value, dict) else None


def is_agent_action(event: object) -> bool:
    """A line of events.jsonl the agent wrote: the daemon stamps its ENV and user events with an ``event_id``."""
    return isinstance(event, dict) and not event.get("event_id")


def agent_actions(events: bytes, max_line_bytes: int = STATUS_MAX_BYTES) -> int:
    """The agent's lines in saved events.jsonl bytes (a line that is not JSON is not counted)."""
    count = 0
    for line in events.splitlines():
        try:
            count += is_agent_action(loads_bounded(line, max_bytes=max_line_bytes)) if line.strip() else 0
        except JsonReadError:
            continue
    return count


def scan_events(path: Path, max_line_bytes: int = STATUS_MAX_BYTES) -> tuple[int, str, int]:
    """gaia2-runner's ``num_agent_events`` (every parseable line of events.jsonl), the
    content of the last turn boundary the agent wrote and the agent's own lines (no
    ``event_id``), in one streamed pass."""
    count, response, actions = 0, "", 0
    for event in store.json_lines(path, max_line_bytes):
        count += 1
        actions += is_agent_action(event)
        if (
            isinstance(event, dict)
            and event.get("app") == "AgentUserInterface"
            and event.get("fn") == "send_message_to_user"
        ):
            args = event.get("args")
            if isinstance(args, dict) and args.get("content") is not None:
                response = str(args["content"])
    return count, response, actions


def last_json_line(path: Path, window: int = STATUS_MAX_BYTES) -> tuple[Any, bytes]:
    """The last complete JSON line of a file, reading only its end, and its bytes
    (None and empty when there is none, or it is not JSON)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - window))
            tail = handle.read()
    except OSError:
        return None, b""
    for line in reversed(tail.splitlines()):
        if line.strip():
            try:
                return loads_bounded(line, max_bytes=window), line
            except JsonReadError:
                return None, b""
    return None, b""
    return None
