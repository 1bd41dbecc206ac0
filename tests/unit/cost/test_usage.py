"""Usage from trace.jsonl: both trace formats, each provider's usage shape, streams, bad lines."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gaia2.cost import usage as usage_module
from pytest_gaia2.cost.usage import MODELS_MAX, REFUSED_MAX, Usage, read_usage, shown_names, usd_amount

OPENAI_CHAT = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200,
              "prompt_tokens_details": {"cached_tokens": 100}},
}
OPENAI_RESPONSES = {
    "id": "resp_1", "object": "response", "model": "gpt-5", "status": "completed",
    "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}],
    "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 300}, "output_tokens": 50,
              "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 950},
}
ANTHROPIC = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 50, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000,
              "output_tokens": 80},
}
OPENROUTER = {
    "id": "gen-1", "object": "chat.completion", "model": "anthropic/claude-sonnet-4.5", "provider": "Anthropic",
    "choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1300, "completion_tokens": 40, "total_tokens": 1340, "cost": 0.0123,
              "is_byok": False, "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 250},
              "completion_tokens_details": {"reasoning_tokens": 0}},
}
OPENAI_STREAM = [
    {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}], "usage": None},
    {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
     "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}], "usage": None},
    {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [],
     "usage": {"prompt_tokens": 700, "completion_tokens": 30, "total_tokens": 730,
               "prompt_tokens_details": {"cached_tokens": 512}}},
]
ANTHROPIC_STREAM = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-opus-4-6", "content": [],
        "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4000,
                  "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "Hello"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 42}}),
    ("message_stop", {"type": "message_stop"}),
]
RESPONSES_STREAM = [
    {"type": "response.created", "response": {"id": "resp_2", "model": "gpt-5", "status": "in_progress",
                                              "usage": None}},
    {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"},
    {"type": "response.completed", "response": {"id": "resp_2", "model": "gpt-5", "status": "completed",
                                                "usage": {"input_tokens": 400, "output_tokens": 60,
                                                          "input_tokens_details": {"cached_tokens": 0}}}},
]
GEMINI_STREAM = [
    {"candidates": [{"content": {"parts": [{"text": "Hel"}]}}], "modelVersion": "gemini-2.5-pro",
     "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 2, "totalTokenCount": 302}},
    {"candidates": [{"content": {"parts": [{"text": "lo"}]}, "finishReason": "STOP"}], "modelVersion": "gemini-2.5-pro",
     "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 9, "thoughtsTokenCount": 40,
                       "cachedContentTokenCount": 128, "totalTokenCount": 349}},
]


def format_a(body: str, model: str = "requested-model", seq: int = 1) -> dict[str, Any]:
    return {"seq": seq, "timestamp": "2025-03-17T12:00:00.000Z", "type": "llm_call",
            "url": "https://api.example.com/v1/chat/completions", "latency_ms": 1234, "http_status": 200,
            "request": {"model": model, "messages": [{"role": "user", "content": "Hi"}]}, "raw_response": body}


def sse(events: list[Any]) -> str:
    """An SSE body; ``(name, data)`` pairs also get an ``event:`` line, as Anthropic sends."""
    lines = []
    for event in events:
        if isinstance(event, tuple):
            lines.append(f"event: {event[0]}")
            event = event[1]
        lines += [f"data: {json.dumps(event)}", ""]
    return "\n".join(lines)


def trace(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def tokens(usage: Usage) -> tuple[int, int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens


@pytest.mark.parametrize(("body", "expected", "model"), [
    pytest.param(json.dumps(OPENAI_CHAT), (1000, 200, 100, 0), "gpt-4o-2024-08-06", id="openai-chat"),
    pytest.param(json.dumps(OPENAI_RESPONSES), (900, 50, 300, 0), "gpt-5", id="openai-responses"),
    pytest.param(json.dumps(ANTHROPIC), (1250, 80, 1000, 200), "claude-sonnet-4-5-20250929", id="anthropic"),
    pytest.param(json.dumps(OPENROUTER), (1300, 40, 1000, 250), "anthropic/claude-sonnet-4.5", id="openrouter"),
    pytest.param(sse(OPENAI_STREAM) + "data: [DONE]\n", (700, 30, 512, 0), "gpt-4o-mini", id="openai-sse"),
    pytest.param(sse(ANTHROPIC_STREAM), (4025, 42, 4000, 0), "claude-opus-4-6", id="anthropic-sse"),
    pytest.param(sse(RESPONSES_STREAM), (400, 60, 0, 0), "gpt-5", id="responses-sse"),
    pytest.param(sse(GEMINI_STREAM), (300, 49, 128, 0), "gemini-2.5-pro", id="gemini-sse"),
    pytest.param(json.dumps(GEMINI_STREAM), (300, 49, 128, 0), "gemini-2.5-pro", id="gemini-json-array"),
])
def test_each_provider_shape_in_format_a(
    tmp_path: Path, body: str, expected: tuple[int, int, int, int], model: str
) -> None:
    usage = read_usage(trace(tmp_path, format_a(body)))
    assert tokens(usage) == expected
    assert (usage.calls, usage.usage_calls, usage.models) == (1, 1, (model,))


def test_format_b_reads_the_parsed_response(tmp_path: Path) -> None:
    line = {"seq": 1, "timestamp": "2025-03-17T12:00:00.000Z", "type": "llm_call",
            "request": {"model": "claude-opus-4-6", "messages": []},
            "response": {"content": "The answer is 42", "tool_calls": [], "model": "claude-opus-4-6",
                         "usage": {"prompt_tokens": 100, "completion_tokens": 50}, "finish_reason": "stop"}}
    usage = read_usage(trace(tmp_path, line))
    assert tokens(usage) == (100, 50, 0, 0)
    assert usage.models == ("claude-opus-4-6",)


def test_only_provider_reported_cost_is_kept(tmp_path: Path) -> None:
    usage = read_usage(trace(tmp_path, format_a(json.dumps(OPENROUTER)), format_a(json.dumps(OPENAI_CHAT))))
    assert usage.reported_cost_usd == pytest.approx(0.0123)
    assert (usage.calls, usage.usage_calls, usage.reported_cost_calls) == (2, 2, 1)


def test_calls_are_summed_and_models_collected(tmp_path: Path) -> None:
    usage = read_usage(trace(
        tmp_path,
        format_a(json.dumps(OPENAI_CHAT), seq=1),
        format_a(json.dumps(OPENAI_CHAT), seq=2),
        format_a(json.dumps(ANTHROPIC), seq=3),
    ))
    assert tokens(usage) == (3250, 480, 1200, 200)
    assert usage.models == ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06")
    assert usage.uncached_input_tokens == 3250 - 1200 - 200


def test_request_model_when_the_response_names_none(tmp_path: Path) -> None:
    body = {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1}}
    assert read_usage(trace(tmp_path, format_a(json.dumps(body), model="local-llama"))).models == ("local-llama",)


def test_bad_and_torn_lines_are_skipped(tmp_path: Path) -> None:
    good = format_a(json.dumps(OPENAI_CHAT))
    torn = json.dumps(good)[:-20]
    path = trace(tmp_path, "not json\n", "[1, 2]\n", "\n", {"seq": 0, "type": "session_start"}, good, torn)
    usage = read_usage(path)
    assert (usage.calls, tokens(usage)) == (1, (1000, 200, 100, 0))


def test_a_torn_response_is_a_call_without_usage(tmp_path: Path) -> None:
    usage = read_usage(trace(tmp_path, format_a(json.dumps(OPENAI_CHAT)[:-30]), format_a("data: {broken\n\n")))
    assert (usage.calls, usage.usage_calls, tokens(usage)) == (2, 0, (0, 0, 0, 0))
    assert usage.models == ("requested-model",)


def test_a_trace_without_usage(tmp_path: Path) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    line = {**format_a(json.dumps(error)), "http_status": 529}
    usage = read_usage(trace(tmp_path, line, {**line, "seq": 2}))
    assert (usage.calls, usage.usage_calls, tokens(usage), usage.reported_cost_calls) == (2, 0, (0, 0, 0, 0), 0)


def test_a_missing_or_empty_trace_is_no_usage(tmp_path: Path) -> None:
    assert read_usage(tmp_path / "absent.jsonl") == Usage()
    assert read_usage(trace(tmp_path)) == Usage()


@pytest.mark.parametrize("bad", [True, -5, 10**40, "100", 1.5, None])
def test_counts_that_are_not_token_counts_are_ignored(tmp_path: Path, bad: Any) -> None:
    body = {"model": "m", "usage": {"prompt_tokens": bad, "completion_tokens": 7}}
    assert tokens(read_usage(trace(tmp_path, format_a(json.dumps(body))))) == (0, 7, 0, 0)


@pytest.mark.parametrize("bad", [True, -0.01, "0.5", 10**400, [0.1]])
def test_costs_that_are_not_amounts_are_ignored(tmp_path: Path, bad: Any) -> None:
    body = {"model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": bad}}
    usage = read_usage(trace(tmp_path, format_a(json.dumps(body))))
    assert (usage.reported_cost_usd, usage.reported_cost_calls) == (0.0, 0)


def test_an_infinite_cost_is_not_an_amount() -> None:
    assert usd_amount(float("inf")) is None
    assert usd_amount(0) == 0.0


def test_usages_add_and_serialise() -> None:
    one = Usage(calls=1, usage_calls=1, input_tokens=10, output_tokens=2, cached_input_tokens=4,
                reported_cost_usd=0.5, reported_cost_calls=1, models=("b",))
    two = Usage(calls=2, usage_calls=1, input_tokens=5, output_tokens=1, cache_write_tokens=3, models=("a", "b"))
    total = sum([one, two], Usage())
    assert total == Usage(calls=3, usage_calls=2, input_tokens=15, output_tokens=3, cached_input_tokens=4,
                          cache_write_tokens=3, reported_cost_usd=0.5, reported_cost_calls=1, models=("a", "b"))
    assert total.to_json() == {
        "calls": 3, "usage_calls": 2, "input_tokens": 15, "output_tokens": 3, "cached_input_tokens": 4,
        "cache_write_tokens": 3, "reported_cost_usd": 0.5, "reported_cost_calls": 1, "models": ["a", "b"],
        "other_models": 0, "refused": [],
    }
    assert json.loads(json.dumps(total.to_json())) == total.to_json()


# -- hostile numbers and names: refused where they enter, linear in the trace ---------------------

@pytest.mark.parametrize(("block", "field"), [
    ({"prompt_tokens": 1e308, "completion_tokens": 7}, "usage.prompt_tokens is 1e+308"),
    ({"prompt_tokens": 10**13, "completion_tokens": 7}, "usage.prompt_tokens is 1e+13"),
    ({"prompt_tokens": -5, "completion_tokens": 7}, "usage.prompt_tokens is -5"),
    ({"prompt_tokens": "100", "completion_tokens": 7}, "usage.prompt_tokens is a str"),
    ({"prompt_tokens": 1, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1.5}},
     "usage.prompt_tokens_details.cached_tokens is 1.5"),
    ({"prompt_tokens": 1, "completion_tokens": 7, "cost": 1e308}, "usage.cost is 1e+308"),
    ({"prompt_tokens": 1, "completion_tokens": 7, "cost": 10**400}, "usage.cost is an integer too large"),
])
def test_a_value_out_of_range_is_refused_and_named(tmp_path: Path, block: dict[str, Any], field: str) -> None:
    body = {"model": "m", "usage": block}
    usage = read_usage(trace(tmp_path, format_a(json.dumps(body)), format_a(json.dumps(body), seq=2)))
    assert usage.refused[0].startswith(f"trace.jsonl, llm_call 1: {field}")
    assert usage.refused[1].startswith(f"trace.jsonl, llm_call 2: {field}")
    assert math.isfinite(usage.reported_cost_usd) and usage.output_tokens == 14


def test_costs_of_many_calls_never_add_up_to_infinity(tmp_path: Path) -> None:
    body = {"model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 1e308}}
    usage = read_usage(trace(tmp_path, *(format_a(json.dumps(body), seq=n) for n in range(10))))
    assert usage.reported_cost_usd == 0.0 and usage.reported_cost_calls == 0
    assert len(usage.refused) == REFUSED_MAX and json.dumps(usage.to_json(), allow_nan=False)


def test_distinct_model_names_are_capped_and_the_rest_counted(tmp_path: Path) -> None:
    body = {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    lines = [format_a(json.dumps(body), model=f"model-{n:05d}", seq=n) for n in range(MODELS_MAX + 25)]
    lines += [format_a(json.dumps(body), model="model-00070", seq=999), format_a(json.dumps(body), model="x" * 201)]
    usage = read_usage(trace(tmp_path, *lines))
    assert usage.models == tuple(f"model-{n:05d}" for n in range(MODELS_MAX))
    assert usage.other_models == 25 and usage.calls == MODELS_MAX + 27 and usage.input_tokens == MODELS_MAX + 27
    assert (usage + usage).models == usage.models  # the same kept names are not more names
    assert (usage + usage).other_models == 50  # unkept names are not known: a sum's count is an upper bound


def test_a_trace_of_many_distinct_models_parses_in_linear_time(tmp_path: Path) -> None:
    """The quadratic reader took 58 s for 10k names and 502 s for 20k. Measured side by side (a
    busy machine slows both alike): 4x the names may take about 4x the time, never 16x."""
    body = json.dumps({"usage": {"prompt_tokens": 1, "completion_tokens": 1}})

    def parse(names: int) -> tuple[float, Any]:
        path = tmp_path / f"trace-{names}.jsonl"
        path.write_text("".join(json.dumps(format_a(body, model=f"m{n}", seq=n)) + "\n" for n in range(names)))
        started = time.process_time()
        usage = read_usage(path)
        return time.process_time() - started, usage

    small = min(parse(10_000)[0] for _ in range(2))
    large, usage = parse(40_000)
    assert large < 10 * max(small, 0.01), (small, large)
    assert usage.calls == 40_000 and len(usage.models) == MODELS_MAX and usage.other_models == 40_000 - MODELS_MAX


def test_a_list_of_names_for_one_line_is_short() -> None:
    assert shown_names(["a", "b"]) == "a, b"
    assert shown_names([f"n{n}" for n in range(10_000)]) == "n0, n1, n2, n3, n4 and 9995 more"
    assert shown_names(["a"], more=3) == "a and 3 more"


def test_usd_amount_with_a_ceiling() -> None:
    assert usd_amount(5.0, 5.0) == 5.0 and usd_amount(5.01, 5.0) is None and usd_amount(1e308) == 1e308


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["usage", "prompt_tokens", "completion_tokens", "cost", "model", "cached_tokens",
                         "prompt_tokens_details", "input_tokens", "message", "response", "usageMetadata",
                         "promptTokenCount", "cache_read_input_tokens", "type", "raw_response", "request"]),
        inner, max_size=5),
    max_leaves=20)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(JSON_VALUES, max_size=6))
def test_any_trace_lines_give_finite_bounded_usage(tmp_path: Path, lines: list[Any]) -> None:
    calls = [line if not isinstance(line, dict) else {**line, "type": "llm_call"} for line in lines]
    calls += [format_a(json.dumps(line)) for line in lines]
    path = trace(tmp_path, *calls)
    usage = read_usage(path)
    assert math.isfinite(usage.reported_cost_usd) and len(usage.models) <= MODELS_MAX
    assert all(0 <= getattr(usage, key) for key in usage_module.COUNT_FIELDS)
    json.dumps(usage.to_json(), allow_nan=False)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=3000))
def test_any_bytes_as_a_trace_never_raise(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(data)
    usage = read_usage(path)
    assert math.isfinite(usage.reported_cost_usd)
