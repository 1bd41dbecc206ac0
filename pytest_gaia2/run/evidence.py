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
from pytest_gaia2.store.attempt_files import AttemptFiles, CallReader, is_agent_action
from pytest_gaia2.store.limits import STATUS_MAX_BYTES
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded

if TYPE_CHECKING:
    from pytest_gaia2.engine.container import Container

STATUS_FILE = f"{store.STATE_DIR}/{store.STATUS_FILE}"
"""daemon_status.json inside the container."""


@dataclass(frozen=True)
class ScenarioResult:
    """What an attempt produced: its record and its folder (what the fixtures hand to tests)."""

    record: AttemptRecord
    folder: Path
    evidence: Evidence | None = field(default=None, compare=False, repr=False)
    """What the attempt's files said when its record was made (None for a stored verdict)."""

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
        return store.read_jsonl(self.folder / store.EVENTS_FILE)

    @property
    def judgments(self) -> list[dict[str, Any]]:
        return store.read_jsonl(self.folder / store.JUDGMENTS_FILE)


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
    """Model calls in trace.jsonl since the agent's last final answer (:class:`LoopCalls`)."""
    provider: ProviderTrouble = field(default=ProviderTrouble())
    """What trace.jsonl (else the agent's logs) says about the model provider."""
    agent_actions: int = 0
    """Lines of events.jsonl the agent wrote (no ``event_id``: the daemon stamps its ENV and user events)."""
    problems: tuple[str, ...] = ()
    """How the judge's files contradict themselves (a byte-order mark, a key given twice): no
    judge writes either, so a pass on such files is not believed."""

    files: AttemptFiles | None = field(default=None, compare=False, repr=False)
    """The one pass over the attempt's files this was read from (trace.html shows them too)."""

    @classmethod
    def read(cls, folder: Path, *on_call: CallReader) -> Evidence:
        """The attempt folder's evidence, from one pass over its files (:class:`AttemptFiles`);
        ``on_call`` readers are told of each model call of its trace as well (its cost)."""
        loop, calls = LoopCalls(), provider.TraceCalls()
        files = AttemptFiles.read(folder, loop, calls, *on_call)
        problems = [f"{store.STATUS_FILE} {problem}" for problem in forged_signs(files.status_raw)]
        problems += [f"the judgments file's last line {problem}" for problem in forged_signs(files.last_judgment_raw)]
        last = files.last_judgment
        judged = last.get("success") if isinstance(last, dict) else None
        return cls(
            files.status_object,
            judged if isinstance(judged, bool) else None,
            files.event_lines,
            files.last_response,
            loop.calls,
            calls.trouble(folder),
            files.agent_actions,
            tuple(problems),
            files,
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


class LoopCalls:
    """The ``llm_call`` lines of a trace after the last one whose response was a final answer:
    the model calls of the agent's current turn, the measure of a runaway tool loop (a reader of
    :meth:`AttemptFiles.read`)."""

    def __init__(self, max_line_bytes: int = store.RECORD_MAX_BYTES) -> None:
        self.calls = 0
        self.max_line_bytes = max_line_bytes

    def __call__(self, line: dict[str, Any]) -> None:
        self.calls = 0 if _final_answer(line, self.max_line_bytes) else self.calls + 1


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


def agent_actions(events: bytes, max_line_bytes: int = STATUS_MAX_BYTES) -> int:
    """The agent's lines in saved events.jsonl bytes (a line that is not JSON is not counted)."""
    count = 0
    for line in events.splitlines():
        try:
            count += is_agent_action(loads_bounded(line, max_bytes=max_line_bytes)) if line.strip() else 0
        except JsonReadError:
            continue
    return count
