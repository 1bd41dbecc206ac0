"""Token usage of one attempt, read from the ``trace.jsonl`` its agent container wrote.

Each ``llm_call`` line holds the provider's response: parsed (``response``, Format B) or the
raw HTTP body (``raw_response``, Format A), which is JSON, a JSON array of stream chunks, or a
server-sent-event stream of ``data:`` lines. Providers shape their ``usage`` block
differently, so every shape is normalised to one meaning: ``input_tokens`` counts *all* input,
cached reads and cache writes included (OpenAI's meaning; Anthropic reports them apart), so
prices per kind of token apply to disjoint parts of it.

A trace comes from the container, so nothing in it is trusted: lines that do not parse are
left out; a count or cost that is not a number in range (negative, fractional, past
``COUNT_MAX`` or ``CALL_USD_MAX``, a string) is *refused*: counted as nothing, and noted in
:attr:`Usage.refused` so the attempt's cost becomes unknown instead of silently smaller.
Reading is linear in the trace's size: at most ``MODELS_MAX`` model names are kept, the
others only counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_gaia2.store.folder import RECORD_MAX_BYTES, json_lines
from pytest_gaia2.store.record import USAGE_COUNTS
from pytest_gaia2.store.safejson import JsonLimitError, loads_bounded

COUNT_MAX = 10**12
"""More tokens than any one call uses: a larger count is garbage, not usage."""
CALL_USD_MAX = 1_000_000.0
"""More than any one call costs: a larger reported cost is garbage, not spend."""
NAME_MAX = 200
"""Longer "model names" are garbage, not names."""
MODELS_MAX = 50
"""Model names kept per attempt; more are counted in ``other_models``, never listed."""
REFUSED_MAX = 3
"""Refused values described per attempt (the first ones); enough to say which file and field."""
NAMES_SHOWN = 5
"""Model names a warning or summary line lists before "and N more"."""
COUNT_FIELDS = USAGE_COUNTS


@dataclass(frozen=True)
class Usage:
    """What the LLM calls of an attempt (or a sum of attempts) used; ``+`` adds two.

    ``usage_calls`` counts the calls whose response reported usage (a failed call reports
    none), ``reported_cost_calls`` those that also reported their cost (OpenRouter, LiteLLM).
    ``models`` are the first ``MODELS_MAX`` distinct names, ``other_models`` how many more
    there were (in a sum of usages, at most that many: their names are not kept);
    ``refused`` describes the first values refused as out of range.
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
    other_models: int = 0
    refused: tuple[str, ...] = field(default=())

    @property
    def uncached_input_tokens(self) -> int:
        """Input billed at the full input price: neither read from nor written to a cache."""
        return max(0, self.input_tokens - self.cached_input_tokens - self.cache_write_tokens)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        tally = _Tally()
        tally.add(self)
        tally.add(other)
        return tally.usage()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "models": list(self.models), "refused": list(self.refused)}


class _Tally:
    """A running sum of calls, in time linear in what is added: names in a dict, not a tuple
    rebuilt per call."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNT_FIELDS, 0)
        self.cost = 0.0
        self.models: dict[str, None] = {}
        self.others: set[str] = set()
        self.refused: list[str] = []

    def add(self, usage: Usage) -> None:
        for key in COUNT_FIELDS:
            self.counts[key] += getattr(usage, key)
        self.cost += usage.reported_cost_usd
        for name in usage.models:
            if name in self.models:
                continue
            if len(self.models) < MODELS_MAX:
                self.models[name] = None
            else:
                self.others.add(name)
        self.refused += usage.refused[: REFUSED_MAX - len(self.refused)]

    def usage(self) -> Usage:
        counts = {**self.counts, "other_models": self.counts["other_models"] + len(self.others)}
        return Usage(
            **counts, reported_cost_usd=self.cost, models=tuple(sorted(self.models)), refused=tuple(self.refused)
        )


def read_usage(path: Path, max_line_bytes: int = RECORD_MAX_BYTES) -> Usage:
    """The summed usage of every ``llm_call`` line of a trace; a missing file is no usage."""
    tally = _Tally()
    for line in json_lines(path, max_line_bytes):
        if isinstance(line, dict) and line.get("type") == "llm_call":
            tally.add(_call_usage(line, max_line_bytes, f"{path.name}, llm_call {tally.counts['calls'] + 1}"))
    return tally.usage()


def response_usage(raw: str, model: str | None, where: str, max_bytes: int = RECORD_MAX_BYTES) -> Usage:
    """One model call's usage from its response body as it came off the wire (JSON, or the
    ``data:`` lines of a stream), priced as ``model`` when the body names none: what the
    host-side gateway measures, read with the same rules as a trace line."""
    return _call_usage({"raw_response": raw, "request": {"model": model}}, max_bytes, where)


def _call_usage(line: Mapping[str, Any], max_bytes: int, where: str) -> Usage:
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
    counts = _Counts(usage, where)
    given, made, cached, written = counts.tokens()
    raw_cost = usage.get("cost")
    cost = usd_amount(raw_cost, CALL_USD_MAX)
    if cost is None and raw_cost is not None:
        counts.refuse("usage.cost", raw_cost, f"a cost in USD up to {CALL_USD_MAX:g} a call")
    return Usage(
        calls=1,
        usage_calls=int(bool(usage)),
        input_tokens=given,
        output_tokens=made,
        cached_input_tokens=cached,
        cache_write_tokens=written,
        reported_cost_usd=cost or 0.0,
        reported_cost_calls=int(cost is not None),
        models=(model,) if model else (),
        refused=tuple(counts.refused),
    )


def usd_amount(value: object, ceiling: float = math.inf) -> float | None:
    """``value`` as an amount of USD (OpenRouter's ``usage.cost``, a price) if it is a finite,
    non-negative number no larger than ``ceiling``; ``None`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        amount = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return amount if math.isfinite(amount) and 0 <= amount <= ceiling else None


def shown_names(names: Iterable[str], limit: int = NAMES_SHOWN, more: int = 0) -> str:
    """``a, b, c and 7 more``: a list of names for one line, never longer than ``limit`` names."""
    names = list(names)
    hidden = len(names) - limit + more if len(names) > limit else more
    text = ", ".join(names[:limit])
    return f"{text} and {hidden} more" if hidden > 0 else text


def _shown_value(value: object) -> str:
    """A refused value for a message: numbers as numbers, anything else by its type only (its
    text is the container's)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"a {type(value).__name__}"
    try:
        return f"{float(value):g}"
    except OverflowError:
        return "an integer too large for a float"


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


class _Counts:
    """The token counts of one call's usage block, with every present value that is not a
    count noted as refused."""

    def __init__(self, usage: Mapping[str, Any], where: str) -> None:
        self.usage = usage
        self.where = where
        self.refused: list[str] = []

    def refuse(self, name: str, value: object, expected: str) -> None:
        if len(self.refused) < REFUSED_MAX:
            self.refused.append(f"{self.where}: {name} is {_shown_value(value)}, not {expected}")

    def tokens(self) -> tuple[int, int, int, int]:
        """(input incl. cache, output, cache read, cache write) from any provider's usage block."""
        usage, count = self.usage, self.count
        # OpenAI chat completions, and LiteLLM / OpenRouter / vLLM in that shape
        if usage.keys() & {"prompt_tokens", "completion_tokens"}:
            cached = count("prompt_tokens_details", "cached_tokens") or count(None, "cache_read_input_tokens")
            written = count("prompt_tokens_details", "cache_write_tokens") or count(None, "cache_creation_input_tokens")
            return count(None, "prompt_tokens"), count(None, "completion_tokens"), cached, written
        # Gemini: thoughts are billed as output but counted apart
        if usage.keys() & {"promptTokenCount", "candidatesTokenCount"}:
            output = count(None, "candidatesTokenCount") + count(None, "thoughtsTokenCount")
            return count(None, "promptTokenCount"), output, count(None, "cachedContentTokenCount"), 0
        if usage.keys() & {"cache_read_input_tokens", "cache_creation_input_tokens"}:  # Anthropic
            cached, written = count(None, "cache_read_input_tokens"), count(None, "cache_creation_input_tokens")
            return count(None, "input_tokens") + cached + written, count(None, "output_tokens"), cached, written
        # OpenAI Responses (input includes the cached part), or Anthropic without cache fields
        cached = count("input_tokens_details", "cached_tokens")
        return count(None, "input_tokens"), count(None, "output_tokens"), cached, 0

    def count(self, details: str | None, key: str) -> int:
        """``usage[key]`` (or ``usage[details][key]``) as a token count; 0 when absent or refused."""
        block = self.usage.get(details) if details else self.usage
        if not isinstance(block, dict) or block.get(key) is None:
            return 0
        value = block[key]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COUNT_MAX:
            return value
        self.refuse(
            f"usage.{details}.{key}" if details else f"usage.{key}", value, f"a token count from 0 to {COUNT_MAX:.0e}"
        )
        return 0
