"""Simulated LLM-call trace of the reference image's agent (``GAIA2_REF_USAGE``).

A real gaia2-cli agent image writes one line per model call to
``$GAIA2_TRACE_FILE`` (Format A of gaia2-cli's ``runner/TRACE_FORMAT.md``):
``seq``, ``timestamp``, ``type: "llm_call"``, ``url``, ``latency_ms``,
``http_status``, ``request`` (the request body, parsed) and ``raw_response``
(the raw response body, a string). The reference image calls no model, so by
default it writes no trace, like Gaia2's oracle image. With
``GAIA2_REF_USAGE=<prompt>,<completion>[,<cached>]`` its agent (oracle replay or
script) pretends that every action it takes was chosen by one model call and
writes that call's line *before* the action reaches events.jsonl (so the line
is on disk before the daemon can judge the turn). Every call reports the same
usage, so a test can compute the totals: calls x prompt, calls x completion.

The response is an OpenAI chat completion (non-streamed JSON): an action becomes
one ``tool_calls`` entry named ``<App>__<fn>`` with the arguments as a JSON
string (``finish_reason: "tool_calls"``); a message to the user becomes the
assistant's ``content`` (``finish_reason: "stop"``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

USAGE_VARIABLE = "GAIA2_REF_USAGE"
DEFAULT_TRACE_FILE = "/tmp/trace.jsonl"
DEFAULT_MODEL = "gaia2-reference"
TRACE_URL = "https://gaia2-reference.invalid/v1/chat/completions"
SYSTEM_PROMPT = (
    "pytest-gaia2 reference agent: no model is called; each line of this trace stands for the call "
    "that chose one action of the oracle replay or script."
)
AUI = "AgentUserInterface"
SMU = "send_message_to_user"


class Usage(NamedTuple):
    """Token counts reported by every simulated call."""

    prompt: int
    completion: int
    cached: int = 0

    def block(self) -> dict[str, Any]:
        """The OpenAI ``usage`` object of a chat completion."""
        return {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "prompt_tokens_details": {"cached_tokens": self.cached},
        }


def parse_usage(text: str | None) -> Usage | None:
    """``"P,C"`` or ``"P,C,K"`` (non-negative integers, spaces allowed) -> Usage; None when empty.

    Raises ValueError for anything else (wrong count, not an integer, negative, cached > prompt).
    """
    if text is None or not text.strip():
        return None
    parts = [part.strip() for part in text.split(",")]
    if len(parts) not in (2, 3):
        raise ValueError(f"{USAGE_VARIABLE}={text!r}: expected <prompt>,<completion>[,<cached>]")
    try:
        numbers = [int(part) for part in parts]
    except ValueError:
        raise ValueError(f"{USAGE_VARIABLE}={text!r}: token counts must be integers") from None
    if any(number < 0 for number in numbers):
        raise ValueError(f"{USAGE_VARIABLE}={text!r}: token counts must not be negative")
    usage = Usage(*numbers)
    if usage.cached > usage.prompt:
        raise ValueError(f"{USAGE_VARIABLE}={text!r}: cached tokens exceed prompt tokens")
    return usage


def iso_timestamp(epoch: float) -> str:
    """``2025-03-17T12:00:00.000Z`` (UTC, milliseconds), as in TRACE_FORMAT.md."""
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TraceWriter:
    """Appends one Format A ``llm_call`` line per agent action to the trace file."""

    def __init__(
        self, path: Path, usage: Usage, model: str = DEFAULT_MODEL, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self.usage = usage
        self.model = model
        self.clock = clock
        self.seq = 0
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TraceWriter | None:
        """The writer ``GAIA2_REF_USAGE`` asks for, or None when it is unset or empty.

        ValueError when it is malformed. Path: ``$GAIA2_TRACE_FILE`` (default /tmp/trace.jsonl);
        model: ``$MODEL`` (default ``gaia2-reference``).
        """
        env = os.environ if environ is None else environ
        usage = parse_usage(env.get(USAGE_VARIABLE))
        if usage is None:
            return None
        path = Path(env.get("GAIA2_TRACE_FILE", "").strip() or DEFAULT_TRACE_FILE)
        return cls(path, usage, env.get("MODEL", "").strip() or DEFAULT_MODEL)

    def record(self, app: str, fn: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Write (and return) the line of the call that chose the action ``app.fn(args)``."""
        with self._lock:
            self.seq += 1
            line = self.line(self.seq, self.clock(), app, fn, args)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            return line

    def line(self, seq: int, epoch: float, app: str, fn: str, args: Mapping[str, Any]) -> dict[str, Any]:
        request = {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}],
            "stream": False,
        }
        if app == AUI and fn == SMU:
            message: dict[str, Any] = {"role": "assistant", "content": str(args.get("content") or "")}
            finish = "stop"
        else:
            call = {
                "id": f"call_{seq:04d}",
                "type": "function",
                "function": {"name": f"{app}__{fn}", "arguments": json.dumps(dict(args), default=str)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        response = {
            "id": f"chatcmpl-gaia2-reference-{seq}",
            "object": "chat.completion",
            "created": int(epoch),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": self.usage.block(),
        }
        return {
            "seq": seq,
            "timestamp": iso_timestamp(epoch),
            "type": "llm_call",
            "url": TRACE_URL,
            "latency_ms": 0,
            "http_status": 200,
            "request": request,
            "raw_response": json.dumps(response),
        }
