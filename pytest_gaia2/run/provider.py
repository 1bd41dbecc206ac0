"""Provider trouble in an attempt's files: HTTP 429, 5xx, "overloaded", timeouts.

A scenario whose agent was stopped by its model provider says nothing about the agent, so
the verdict names the provider instead (``provider_rate_limit`` / ``provider_error``) and the
run's pacer (:mod:`~pytest_gaia2.run.pacer`) slows down. The trace (``trace.jsonl``, one
``llm_call`` line per model call with its ``http_status``) is read first; an agent that
writes no trace is judged from the tail of its logs. Both come from the container: every
read is bounded, and only category names and numbers leave this module, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.store import folder as store
from pytest_gaia2.store.safejson import JsonReadError, open_regular

RATE_LIMIT = "provider_rate_limit"
PROVIDER_ERROR = "provider_error"
CATEGORIES = (RATE_LIMIT, PROVIDER_ERROR)
TEXT_SCANNED = 4096
"""Characters of one failed call's response body (or error) looked at for its kind."""
LOG_TAIL_BYTES = 64 * 1024
LOG_TAIL_LINES = 20
ANY_SIZE = 1 << 40
"""Logs of any size are looked at: only their last LOG_TAIL_BYTES are read."""
"""An agent log says it ended on provider trouble when one of its last lines does."""
AGENT_LOGS = ("adapter.log", "container.log")
"""The agent's own log (the reference image's agent runs in the adapter) and its console."""
_RATE_WORDS = re.compile(r"\b429\b|rate[ _-]?limit|too many requests|ratelimiterror", re.IGNORECASE)
_ERROR_WORDS = re.compile(
    r"overloaded|\b5(?:0[0-4]|29)\b|internal server error|bad gateway|service unavailable|"
    r"gateway time-?out|time[d]? ?out|apitimeouterror|apiconnectionerror",
    re.IGNORECASE,
)
_LOG_SIGNS = re.compile(
    r"(?:http|status|error|code)\D{0,12}(?:429|5(?:0[0-4]|29))\b|rate[ _-]?limit|too many requests|overloaded|"
    r"ratelimiterror|apitimeouterror|internalservererror|serviceunavailable",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ProviderTrouble:
    """What an attempt's files say about its model provider."""

    failed_calls: int = 0
    """Model calls the provider refused or failed (the pacer's signal, even if the agent recovered)."""
    last: str | None = None
    """The category of the trouble the agent ended on (its last model call failed), or None."""
    status: int | None = None
    """That call's HTTP status, when known."""
    source: str = "trace.jsonl"

    @property
    def message(self) -> str:
        """One line for the record: what the provider did, never the container's text."""
        what = f"HTTP {self.status}" if self.status else ("a rate limit" if self.last == RATE_LIMIT else "an error")
        return (
            f"the agent's last model call failed at the provider ({what}; {self.failed_calls} failed call(s) in "
            f"{self.source}): the provider's trouble, not the agent's; retried with backoff (--gaia2-retries)"
        )


def kind_of(status: object, text: str) -> str | None:
    """A model call's trouble from its HTTP status and the start of its body or error text."""
    code = status if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599 else None
    if code == 429:
        return RATE_LIMIT
    if code is not None and code >= 500:
        return PROVIDER_ERROR
    if code is not None and code < 400:
        return None  # an answer, whatever its body says
    if _RATE_WORDS.search(text):
        return RATE_LIMIT
    if _ERROR_WORDS.search(text):
        return PROVIDER_ERROR
    return None


def _text(line: dict[str, Any]) -> str:
    parts = [line.get(name) for name in ("error", "raw_response")]
    return " ".join(part[:TEXT_SCANNED] for part in parts if isinstance(part, str))


def from_trace(path: Path, max_line_bytes: int = store.RECORD_MAX_BYTES) -> ProviderTrouble | None:
    """The trace's verdict on the provider; None when it holds no model call."""
    calls = failed = 0
    last: str | None = None
    status: int | None = None
    for line in store.json_lines(path, max_line_bytes):
        if not isinstance(line, dict) or line.get("type") != "llm_call":
            continue
        calls += 1
        code = line.get("http_status")
        last = kind_of(code, _text(line))
        if last is not None:
            failed += 1
            status = code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 else None
    if not calls:
        return None
    return ProviderTrouble(failed, last, status if last else None)


def from_logs(folder: Path) -> ProviderTrouble:
    """The agent logs' tails: trouble when one of their last lines names a provider error."""
    for name in AGENT_LOGS:
        try:
            with open_regular(folder / name, max_bytes=ANY_SIZE, follow_symlinks=False) as stream:
                stream.seek(max(0, stream.seek(0, 2) - LOG_TAIL_BYTES))
                data = stream.read(LOG_TAIL_BYTES)
        except (JsonReadError, OSError):
            continue
        lines = data.decode("utf-8", "replace").splitlines()[-LOG_TAIL_LINES:]
        signs = [line for line in lines if _LOG_SIGNS.search(line[:TEXT_SCANNED])]
        if signs:
            kind = RATE_LIMIT if _RATE_WORDS.search(signs[-1]) else PROVIDER_ERROR
            return ProviderTrouble(len(signs), kind, None, name)
    return ProviderTrouble()


def read(folder: Path) -> ProviderTrouble:
    """An attempt's provider trouble: from its trace, else from its agent logs."""
    return from_trace(folder / "trace.jsonl") or from_logs(folder)
