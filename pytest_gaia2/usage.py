"""Token usage of one attempt, read from the ``trace.jsonl`` its agent container wrote.

Each ``llm_call`` line holds the provider's response: parsed (``response``, Format B) or the
raw HTTP body (``raw_response``, Format A), which is JSON, a JSON array of stream chunks, or a
server-sent-event stream of ``data:`` lines. Providers shape their ``usage`` block
differently, so every shape is normalised to one meaning: ``input_tokens`` counts *all* input,
cached reads and cache writes included (OpenAI's meaning; Anthropic reports them apart), so
prices per kind of token apply to disjoint parts of it.

A trace comes from the container, so nothing in it is trusted: lines that do not parse, or
counts that are not non-negative integers, are left out rather than stopping the run.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .safejson import JsonLimitError, loads_bounded
from .store import RECORD_MAX_BYTES, json_lines

COUNT_MAX = 10**12
"""More tokens than any one call uses: a larger count is garbage, not usage."""
NAME_MAX = 200
"""Longer "model names" are garbage, not names."""


@dataclass(frozen=True)
class Usage:
    """What the LLM calls of an attempt (or a sum of attempts) used; ``+`` adds two.

    ``usage_calls`` counts the calls whose response reported usage (a failed call reports
    none), ``reported_cost_calls`` those that also reported their cost (OpenRouter, LiteLLM).
    """

    calls: int = 0
    usage_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reported_cost_usd: float = 0.0
    reported_cost_calls: int = 0
    models: tuple[str, ...] = ()

    @property
    def uncached_input_tokens(self) -> int:
        """Input billed at the full input price: neither read from nor written to a cache."""
        return max(0, self.input_tokens - self.cached_input_tokens - self.cache_write_tokens)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            calls=self.calls + other.calls,
            usage_calls=self.usage_calls + other.usage_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reported_cost_usd=self.reported_cost_usd + other.reported_cost_usd,
            reported_cost_calls=self.reported_cost_calls + other.reported_cost_calls,
            models=tuple(sorted(set(self.models) | set(other.models))),
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "models": list(self.models)}


def read_usage(path: Path, max_line_bytes: int = RECORD_MAX_BYTES) -> Usage:
    """The summed usage of every ``llm_call`` line of a trace; a missing file is no usage."""
    total = Usage()
    for line in json_lines(path, max_line_bytes):
        if isinstance(line, dict) and line.get("type") == "llm_call":
            total += _call_usage(line, max_line_bytes)
    return total


def _call_usage(line: Mapping[str, Any], max_bytes: int) -> Usage:
    """One call's usage: the usage blocks of its response merged, the last value of each field winning.

    Streams spread usage over events (Anthropic: input in ``message_start``, output in
    ``message_delta``) or repeat it cumulatively (Gemini), so the last report is the total.
    """
    usage: dict[str, Any] = {}
    names: list[Any] = []
    for payload in _payloads(_response_events(line, max_bytes)):
        for key in ("usage", "usageMetadata"):
            block = payload.get(key)
            if isinstance(block, dict):
                usage.update((name, value) for name, value in block.items() if value is not None)
        names += (payload.get("model"), payload.get("modelVersion"))
    request = line.get("request")
    names.append(request.get("model") if isinstance(request, dict) else None)
    model = next((name for name in names if isinstance(name, str) and 0 < len(name.strip()) <= NAME_MAX), None)
    counts = _counts(usage)
    cost = usd_amount(usage.get("cost"))
    return Usage(
        calls=1,
        usage_calls=int(bool(usage)),
        input_tokens=counts[0],
        output_tokens=counts[1],
        cached_input_tokens=counts[2],
        cache_write_tokens=counts[3],
        reported_cost_usd=cost or 0.0,
        reported_cost_calls=int(cost is not None),
        models=(model,) if model else (),
    )


def usd_amount(value: Any) -> float | None:
    """``value`` as an amount of USD (OpenRouter's ``usage.cost``, a price) if it is a finite,
    non-negative number; ``None`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        cost = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None


def _response_events(line: Mapping[str, Any], max_bytes: int) -> list[Any]:
    """The response as a list of JSON values: one body, an array's chunks, or the SSE ``data:`` events."""
    response = line.get("response")
    if isinstance(response, dict):
        return [response]
    raw = line.get("raw_response")
    if not isinstance(raw, str):
        return []
    if raw.lstrip().startswith(("{", "[")):
        body = _parse(raw, max_bytes)
        return body if isinstance(body, list) else [body]
    events = []
    for text in raw.splitlines():
        if text.startswith("data:") and (data := text[5:].strip()) != "[DONE]":
            events.append(_parse(data, max_bytes))
    return events


def _parse(text: str, max_bytes: int) -> Any:
    try:
        return loads_bounded(text.encode("utf-8", "replace"), max_bytes=max_bytes)
    except JsonLimitError:
        return None


def _payloads(events: list[Any]) -> Iterator[Mapping[str, Any]]:
    """Each event and the object it wraps: Anthropic's ``message_start`` a ``message``, a
    Responses stream event its ``response``."""
    for event in events:
        if isinstance(event, dict):
            yield event
            for key in ("message", "response"):
                if isinstance(event.get(key), dict):
                    yield event[key]


def _counts(usage: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(input incl. cache, output, cache read, cache write) from any provider's usage block."""
    # OpenAI chat completions, and LiteLLM / OpenRouter / vLLM in that shape
    if usage.keys() & {"prompt_tokens", "completion_tokens"}:
        details = _details(usage, "prompt_tokens_details")
        cached = _count(details, "cached_tokens") or _count(usage, "cache_read_input_tokens")
        written = _count(details, "cache_write_tokens") or _count(usage, "cache_creation_input_tokens")
        return _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"), cached, written
    # Gemini: thoughts are billed as output but counted apart
    if usage.keys() & {"promptTokenCount", "candidatesTokenCount"}:
        output = _count(usage, "candidatesTokenCount") + _count(usage, "thoughtsTokenCount")
        return _count(usage, "promptTokenCount"), output, _count(usage, "cachedContentTokenCount"), 0
    if usage.keys() & {"cache_read_input_tokens", "cache_creation_input_tokens"}:  # Anthropic
        cached, written = _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")
        return _count(usage, "input_tokens") + cached + written, _count(usage, "output_tokens"), cached, written
    # OpenAI Responses (input includes the cached part), or Anthropic without cache fields
    cached = _count(_details(usage, "input_tokens_details"), "cached_tokens")
    return _count(usage, "input_tokens"), _count(usage, "output_tokens"), cached, 0


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = usage.get(key)
    return value if isinstance(value, dict) else {}


def _count(block: Mapping[str, Any], key: str) -> int:
    value = block.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COUNT_MAX else 0
