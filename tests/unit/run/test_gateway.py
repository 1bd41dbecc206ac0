"""The model gateway against a scripted local provider: calls forwarded with the real key and
measured on the wire, tokens and paths refused, caps enforced. Only loopback is contacted."""

from __future__ import annotations

import itertools
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_gaia2.cost.prices import Price, PriceBook
from pytest_gaia2.cost.usage import response_usage
from pytest_gaia2.run.gateway import (
    KEPT_EVENTS,
    REQUEST_MAX_BYTES,
    WIRE_LOG,
    Gateway,
    GatewayClient,
    Upstream,
    _UsageKeeper,
    token_of,
    upstream_url,
)
from pytest_gaia2.run.pacer import PACER_FILE, Pacer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from llm_server import ChatServer, chat_server  # noqa: E402

REAL_KEY = "sk-real-provider-key-0123456789abcdef"
PRICES = PriceBook({"m": Price(input=1_000.0, output=2_000.0), "j": Price(input=100.0, output=100.0)})
"""USD per million tokens: the scripted 10 in, 5 out cost $0.02 a call."""
CALL_USD = 0.02


@pytest.fixture
def provider() -> Iterator[ChatServer]:
    with chat_server(lambda model, prompt: "scripted" if "fail" not in prompt else 503) as server:
        yield server


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    return folder


def start(provider: ChatServer, run_folder: Path, **kwargs: Any) -> Gateway:
    upstream = Upstream("agent", f"http://127.0.0.1:{provider.port}/v1", REAL_KEY, "openai")
    gateway = Gateway({"agent": upstream}, prices=PRICES, run_folder=run_folder, **kwargs)
    gateway.start()
    return gateway


@pytest.fixture
def gateway(provider: ChatServer, run_folder: Path) -> Iterator[Gateway]:
    gateway = start(provider, run_folder)
    yield gateway
    gateway.stop()


def client(gateway: Gateway) -> GatewayClient:
    return GatewayClient.of(gateway.access("127.0.0.1"))


def post(gateway: Gateway, path: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{gateway.port}{path}",
        data=data,
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def chat(model: str = "m", prompt: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": prompt}], **extra}


def wire(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / WIRE_LOG).read_text(encoding="utf-8").splitlines()]


def granted(gateway: Gateway, run_folder: Path, cap: float | None = None, name: str = "a") -> tuple[str, Path]:
    folder = run_folder / "search" / name / "attempt_1"
    return client(gateway).grant(f"search/{name}#1", folder, cap), folder


def test_a_plain_call_goes_out_with_the_real_key_and_is_priced_from_the_answer(
    gateway: Gateway, provider: ChatServer, run_folder: Path
) -> None:
    token, folder = granted(gateway, run_folder)
    status, body = post(gateway, "/agent/chat/completions", chat(), {"Authorization": f"Bearer {token}"})
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "scripted"
    (request,) = provider.requests
    assert request.path == "/v1/chat/completions"
    assert request.authorization == f"Bearer {REAL_KEY}"
    (line,) = wire(folder)
    assert (line["status"], line["model"], line["input_tokens"], line["output_tokens"]) == (200, "m", 10, 5)
    assert line["cost_usd"] == pytest.approx(CALL_USD)
    summary = client(gateway).revoke(token)
    assert summary["calls"] == 1 and summary["cost_usd"] == pytest.approx(CALL_USD)
    assert summary["usage"]["input_tokens"] == 10
    assert REAL_KEY not in (folder / WIRE_LOG).read_text(encoding="utf-8")


def test_an_openai_stream_is_asked_for_its_usage_and_counted_from_its_last_chunk(
    gateway: Gateway, provider: ChatServer, run_folder: Path
) -> None:
    provider.usage = (1000, 300)
    token, folder = granted(gateway, run_folder)
    status, body = post(gateway, "/agent/chat/completions", chat(stream=True), {"Authorization": f"Bearer {token}"})
    assert status == 200 and body.rstrip().endswith(b"data: [DONE]")
    assert provider.requests[0].body["stream_options"] == {"include_usage": True}
    (line,) = wire(folder)
    assert (line["stream"], line["input_tokens"], line["output_tokens"]) == (True, 1000, 300)
    assert line["cost_usd"] == pytest.approx((1000 * 1000 + 300 * 2000) / 1e6)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_keep_their_own_key_header_and_are_counted(
    gateway: Gateway, provider: ChatServer, run_folder: Path, stream: bool
) -> None:
    token, folder = granted(gateway, run_folder)
    headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    status, _ = post(gateway, "/agent/messages", chat(stream=stream, max_tokens=10), headers)
    assert status == 200
    assert (provider.requests[0].authorization, provider.requests[0].api_key) == ("", REAL_KEY)
    assert "stream_options" not in provider.requests[0].body
    (line,) = wire(folder)
    assert (line["input_tokens"], line["output_tokens"], line["usage_reported"]) == (10, 5, True)


@pytest.mark.parametrize("header", ["Bearer gaia2-gw-forged", "Bearer ", "Basic abc"])
def test_a_foreign_or_missing_token_is_refused_before_the_provider_is_called(
    gateway: Gateway, provider: ChatServer, header: str
) -> None:
    status, body = post(gateway, "/agent/chat/completions", chat(), {"Authorization": header})
    assert status == 401 and b"token" in body
    assert provider.requests == []


def test_a_revoked_token_is_refused(gateway: Gateway, provider: ChatServer, run_folder: Path) -> None:
    token, _ = granted(gateway, run_folder)
    client(gateway).revoke(token)
    status, _ = post(gateway, "/agent/chat/completions", chat(), {"Authorization": f"Bearer {token}"})
    assert status == 401 and provider.requests == []


@pytest.mark.parametrize(
    "path", ["/agent/models", "/agent/../judge/chat/completions", "/judge/chat/completions", "/agent/v1/files"]
)
def test_only_model_calls_of_a_configured_route_are_forwarded(
    gateway: Gateway, provider: ChatServer, run_folder: Path, path: str
) -> None:
    token, _ = granted(gateway, run_folder)
    status, _ = post(gateway, path, chat(), {"Authorization": f"Bearer {token}"})
    assert status == 404 and provider.requests == []


def test_upstream_url_is_the_base_plus_a_checked_model_path() -> None:
    upstream = Upstream("agent", "https://api.example.test/v1/", "k")
    assert upstream_url(upstream, "chat/completions") == "https://api.example.test/v1/chat/completions"
    assert upstream_url(upstream, "v1/messages") == "https://api.example.test/v1/v1/messages"
    for tail in ("..//chat/completions", "x/../chat/completions", "@evil.test/chat/completions", "models"):
        assert upstream_url(upstream, tail) is None
    assert "k" not in repr(upstream)


def test_token_of_reads_the_header_each_client_uses() -> None:
    assert token_of({"authorization": "Bearer t1"}) == "t1"
    assert token_of({"x-api-key": "t2"}) == "t2"
    assert token_of({"api-key": "t3"}) == "t3"
    assert token_of({"authorization": "Basic t4"}) == ""


def test_a_redirect_is_answered_not_followed(run_folder: Path) -> None:
    with chat_server(lambda model, prompt: 302) as provider:
        gateway = start(provider, run_folder)
        try:
            token, folder = granted(gateway, run_folder)
            status, body = post(gateway, "/agent/chat/completions", chat(), {"Authorization": f"Bearer {token}"})
        finally:
            gateway.stop()
    assert status == 502 and b"redirect" in body
    assert len(provider.requests) == 1
    assert wire(folder)[0]["note"] == "redirect not followed"


def test_a_request_body_past_the_bound_is_refused(gateway: Gateway, provider: ChatServer, run_folder: Path) -> None:
    token, _ = granted(gateway, run_folder)
    status, _ = post(
        gateway, "/agent/chat/completions", b"x" * (REQUEST_MAX_BYTES + 1), {"Authorization": f"Bearer {token}"}
    )
    assert status == 413 and provider.requests == []


def test_provider_errors_are_relayed_and_counted(gateway: Gateway, provider: ChatServer, run_folder: Path) -> None:
    token, folder = granted(gateway, run_folder)
    status, _ = post(gateway, "/agent/chat/completions", chat(prompt="fail"), {"Authorization": f"Bearer {token}"})
    assert status == 503
    summary = client(gateway).revoke(token)
    assert (summary["calls"], summary["server_errors"], summary["cost_source"]) == (1, 1, "unknown")
    assert wire(folder)[0]["usage_reported"] is False


def test_a_call_after_a_failed_one_is_counted_as_a_retry(gateway: Gateway, provider: ChatServer, run_folder: Path) -> None:
    token, folder = granted(gateway, run_folder)
    auth = {"Authorization": f"Bearer {token}"}
    statuses = [post(gateway, "/agent/chat/completions", chat(prompt=prompt), auth)[0] for prompt in
                ("hello", "fail", "fail", "hello", "hello")]
    assert statuses == [200, 503, 503, 200, 200]
    assert [bool(line.get("retry")) for line in wire(folder)] == [False, False, True, True, False]
    summary = client(gateway).revoke(token)
    assert (summary["calls"], summary["server_errors"], summary["retried"]) == (5, 2, 2)


def test_the_scenario_cap_stops_a_runaway_scenario_after_the_call_that_reached_it(
    gateway: Gateway, provider: ChatServer, run_folder: Path
) -> None:
    token, folder = granted(gateway, run_folder, cap=CALL_USD * 1.5)
    other, _ = granted(gateway, run_folder, name="b")
    auth = {"Authorization": f"Bearer {token}"}
    assert post(gateway, "/agent/chat/completions", chat(), auth)[0] == 200
    assert client(gateway).stopped(token) is None
    assert post(gateway, "/agent/chat/completions", chat(), auth)[0] == 200  # passes the cap
    stopped = client(gateway).stopped(token)
    assert stopped is not None and stopped[0] == "scenario_cap"
    status, body = post(gateway, "/agent/chat/completions", chat(), auth)
    assert status == 402 and b"scenario_cap" in body
    assert len(provider.requests) == 2
    assert wire(folder)[-1]["refused"] == "scenario_cap"
    # another scenario is not stopped by this one's cap
    assert post(gateway, "/agent/chat/completions", chat(), {"Authorization": f"Bearer {other}"})[0] == 200


def test_the_run_cap_refuses_calls_once_the_run_spent_it(provider: ChatServer, run_folder: Path) -> None:
    gateway = start(provider, run_folder, run_cap=1.0, spent_before=0.99)
    try:
        token, _ = granted(gateway, run_folder)
        auth = {"Authorization": f"Bearer {token}"}
        assert post(gateway, "/agent/chat/completions", chat(), auth)[0] == 200  # 0.99 + 0.02 passes 1.00
        status, body = post(gateway, "/agent/chat/completions", chat(), auth)
        assert status == 402 and b"budget_cap" in body
        stopped = client(gateway).stopped(token)
        assert stopped is not None and stopped[0] == "budget_cap"
    finally:
        gateway.stop()
    assert len(provider.requests) == 1


def test_the_admin_listener_wants_the_run_secret_and_a_folder_in_the_run(
    gateway: Gateway, run_folder: Path, tmp_path: Path
) -> None:
    forged = GatewayClient(f"http://127.0.0.1:{gateway.admin_port}", "not-the-secret", {})
    with pytest.raises(Exception, match="grant"):
        forged.grant("x#1", run_folder / "x", None)
    with pytest.raises(Exception, match="grant"):
        client(gateway).grant("x#1", tmp_path / "elsewhere", None)
    assert gateway.grants == {}


def test_the_public_listener_has_no_admin(gateway: Gateway) -> None:
    status, _ = post(gateway, "/grant", {"entry": "x#1", "folder": "/tmp"}, {"X-Gaia2-Gateway-Secret": gateway.secret})
    assert status == 404


def test_calls_on_several_models_add_up_and_one_without_a_price_makes_the_cost_unknown(
    gateway: Gateway, run_folder: Path
) -> None:
    token, _ = granted(gateway, run_folder)
    auth = {"Authorization": f"Bearer {token}"}
    for model in ("m", "j"):
        assert post(gateway, "/agent/chat/completions", chat(model=model), auth)[0] == 200
    summary = client(gateway).revoke(token)
    assert summary["cost_usd"] == pytest.approx(CALL_USD + (10 * 100 + 5 * 100) / 1e6)
    assert summary["cost_source"] == "price file"
    other, _ = granted(gateway, run_folder, name="b")
    for model in ("m", "no-such-model-anywhere"):
        post(gateway, "/agent/chat/completions", chat(model=model), {"Authorization": f"Bearer {other}"})
    summary = client(gateway).revoke(other)
    assert (summary["cost_usd"], summary["cost_source"]) == (None, "unknown")  # never a partial sum


STREAM = (
    b'event: message_start\ndata: {"type": "message_start", "message": {"model": "m", '
    b'"usage": {"input_tokens": 7, "output_tokens": 1}}}\n\n'
    + b'data: {"type": "content_block_delta", "delta": {"text": "x"}}\n\n' * 40
    + b'event: message_delta\ndata: {"type": "message_delta", "usage": {"output_tokens": 9}}\n\n'
)


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=12, unique=True))
@example([1, 2, 3])
def test_a_streams_usage_is_the_same_however_it_is_cut_into_chunks(cuts: list[int]) -> None:
    keeper = _UsageKeeper(stream=True)
    edges = [0, *sorted(cuts), len(STREAM)]
    for start, end in itertools.pairwise(edges):
        keeper.feed(STREAM[start:end])
    usage = response_usage(keeper.text(), None, "test")
    assert (usage.input_tokens, usage.output_tokens, usage.models) == (7, 9, ("m",))


@given(st.binary(max_size=4096))
@example(b'data: {"usage": {"prompt_tokens": -5}}\n')
@example(b"data: " + b"[" * 5000)
def test_any_answer_bytes_give_some_usage_and_never_raise(data: bytes) -> None:
    for stream in (True, False):
        keeper = _UsageKeeper(stream=stream)
        keeper.feed(data)
        usage = response_usage(keeper.text(), "m", "test")
        assert usage.calls == 1 and usage.input_tokens >= 0 and usage.output_tokens >= 0


def test_a_long_stream_keeps_only_its_first_and_last_usage_events() -> None:
    keeper = _UsageKeeper(stream=True)
    for number in range(100):
        keeper.feed(b'data: {"usage": {"prompt_tokens": %d, "completion_tokens": 1}}\n' % number)
    assert len(keeper.head) + len(keeper.tail) == KEPT_EVENTS
    assert response_usage(keeper.text(), "m", "test").input_tokens == 99  # the last report is the total


def test_a_429_slows_the_runs_pacer_as_it_happens(run_folder: Path) -> None:
    with chat_server(lambda model, prompt: 429) as provider:
        gateway = start(provider, run_folder, pacer=Pacer(run_folder, None, workers=2))
        try:
            token, _ = granted(gateway, run_folder)
            status, _ = post(gateway, "/agent/chat/completions", chat(), {"Authorization": f"Bearer {token}"})
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not (run_folder / PACER_FILE).exists():
                time.sleep(0.02)
        finally:
            gateway.stop()
    assert status == 429
    state = json.loads((run_folder / PACER_FILE).read_text(encoding="utf-8"))
    assert (state["slowdowns"], state["provider_errors"]) == (1, 0)  # the attempt's end still counts it
    assert state["history"][-1]["event"] == "slower"


@pytest.mark.parametrize(
    "body",
    [b"[1, 2]", b"not json", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000],
    ids=["array", "text", "bytes", "deep"],
)
def test_a_body_that_is_not_one_json_object_is_refused(
    gateway: Gateway, provider: ChatServer, run_folder: Path, body: bytes
) -> None:
    token, _ = granted(gateway, run_folder)
    status, answer = post(gateway, "/agent/chat/completions", body, {"Authorization": f"Bearer {token}"})
    assert status == 400 and b"JSON object" in answer
    assert provider.requests == []


def test_the_scenario_token_cap_stops_a_scenario_of_a_zero_price_model(
    gateway: Gateway, provider: ChatServer, run_folder: Path
) -> None:
    folder = run_folder / "search" / "local" / "attempt_1"
    token = client(gateway).grant("search/local#1", folder, None, token_cap=25)
    auth = {"Authorization": f"Bearer {token}"}
    for _ in range(2):  # 15 tokens a call: the second reaches 25
        assert post(gateway, "/agent/chat/completions", chat(model="free-local-model"), auth)[0] == 200
    stopped = client(gateway).stopped(token)
    assert stopped is not None and stopped[0] == "scenario_cap" and "--gaia2-scenario-token-cap 25" in stopped[1]
    assert post(gateway, "/agent/chat/completions", chat(model="free-local-model"), auth)[0] == 402
    assert len(provider.requests) == 2


def test_a_long_context_arrives_whole(gateway: Gateway, provider: ChatServer, run_folder: Path) -> None:
    token, _ = granted(gateway, run_folder)
    prompt = "x" * (3 * 2**20)  # a long agent context, read whole however it is chunked
    status, _ = post(gateway, "/agent/chat/completions", chat(prompt=prompt), {"Authorization": f"Bearer {token}"})
    assert status == 200 and provider.requests[0].prompt == prompt


def test_a_responses_call_is_forwarded_to_the_same_upstream(
    gateway: Gateway, provider: ChatServer, run_folder: Path
) -> None:
    token, folder = granted(gateway, run_folder)
    status, _ = post(gateway, "/agent/responses", {"model": "m", "input": "hi"}, {"Authorization": f"Bearer {token}"})
    assert status == 404  # the scripted provider serves no Responses API: its answer is relayed as it is
    assert [(request.path, request.authorization) for request in provider.requests] == [
        ("/v1/responses", f"Bearer {REAL_KEY}")
    ]
    assert wire(folder)[0]["endpoint"] == "responses"
