"""The model gateway on the real engine, past the happy path (test_gateway_run.py has that): a
429 storm seen at the gateway and paced across xdist workers; a gateway that cannot listen or
that no container reaches, refused before any scenario with one message, exit 10 and no run
folder; calls from a container of the reference image, OpenAI-compatible and Anthropic-shaped,
plain and streamed, forwarded and measured, and a foreign or revoked token refused; and no byte
of the key in any container's environment or files. Only this host's addresses are contacted."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_folders, run_id_of
from llm_server import ChatServer, chat_server
from test_gateway_run import KEY_VAR, REAL_KEY, gateway_args

from pytest_gaia2.cost.prices import Price, PriceBook
from pytest_gaia2.engine.client import Engine
from pytest_gaia2.reference import build
from pytest_gaia2.run.gateway import WIRE_LOG, Gateway, GatewayClient, Upstream, listen_host
from pytest_gaia2.run.terms import EXIT_REFUSED

STORM = 2
"""Calls the provider refuses with HTTP 429 before it answers again."""


def attempts(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in folder.rglob("result.json")]


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def key_holders(key: bytes, port: int) -> tuple[list[str], int]:
    """This test's running scenario containers (``GAIA2_TEST_PROVIDER``) whose environment or
    changed files hold ``key``, and how many were searched."""
    client = docker.from_env()
    found, searched = [], 0
    for listed in client.api.containers(filters={"label": "org.pytest-gaia2.run"}):
        try:
            container = client.containers.get(listed["Id"])
            if f"GAIA2_TEST_PROVIDER={port}" not in (container.attrs["Config"]["Env"] or []):
                continue
            changed = [entry["Path"] for entry in container.diff() or []][:200]
            data = json.dumps(container.attrs).encode() + b"".join(
                b"".join(container.get_archive(path)[0]) for path in changed
            )
        except docker.errors.APIError:  # it ended meanwhile
            continue
        searched += 1
        if key in data:
            found.append(container.name)
    return found, searched


def test_a_429_storm_at_the_gateway_paces_both_workers_and_every_scenario_ends_with_its_record(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    answered: list[int] = []
    holders: list[tuple[list[str], int]] = []
    searches: list[threading.Thread] = []

    def reply(model: str, prompt: str) -> str | int:
        answered.append(429 if len(answered) < STORM else 200)
        if answered[-1] == 429:
            return 429
        if not searches:  # once, while a scenario's container is running and calling; the agent waits 20 s at most
            searches.append(threading.Thread(target=lambda: holders.append(key_holders(REAL_KEY.encode(), server.port))))
            searches[0].start()
            searches[0].join(10)
        return "scripted reply"

    clean_env.setenv(KEY_VAR, REAL_KEY)
    with chat_server(reply) as server:
        result = run_gaia2(
            "-n",
            "2",
            f"--gaia2-scenarios={SHIPPED / 'search'}",  # one model call a scenario
            "--gaia2-retries=2",
            "--gaia2-pacing=adaptive",
            *gateway_args(tmp_path, server.port),
        )
    output = pytester.path / "out"
    folder = run_folder(output)
    records = results_of(output)
    assert sorted(record["outcome"] for record in records) == ["passed"] * 4, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=4)
    searches[0].join(60)
    assert holders and holders[0][1] >= 1 and holders[0][0] == [], holders  # no key in a container's env or files
    every = attempts(folder)
    assert answered.count(429) == STORM
    assert sum(attempt["wire"]["calls"] for attempt in every) == len(answered)  # the gateway saw every call
    refused = [attempt for attempt in every if attempt["wire"]["rate_limited"]]
    assert len(refused) == STORM
    for path in folder.rglob("*"):
        assert not path.is_file() or REAL_KEY.encode() not in path.read_bytes(), path
    for attempt in refused:
        assert attempt["error_category"] == "provider_rate_limit", attempt["error"]
        assert (attempt["wire"]["calls"], attempt["wire"]["rate_limited"]) == (1, 1)
        (call,) = [json.loads(line) for line in (folder / attempt["folder"] / WIRE_LOG).read_text().splitlines()]
        assert call["status"] == 429
    pacer = json.loads((folder / "progress.json").read_text(encoding="utf-8"))["pacer"]
    assert pacer["pacing"] == "adaptive" and pacer["provider_errors"] >= STORM and pacer["slowdowns"] >= 1, pacer
    slower = [moment(entry["at"]) for entry in pacer["history"] if entry["event"] == "slower"]
    first_end = min(moment(attempt["ended_at"]) for attempt in refused)
    # the gateway told the pacer as the 429 went by, before any refused attempt had ended
    assert slower and slower[0] <= first_end.replace(microsecond=0), (pacer["history"], first_end)
    calls, reruns = len(answered), len(every) - 4
    result.stdout.fnmatch_lines([f"gateway: {calls} model calls measured on the wire in {len(every)} attempts*"
                                 f"({STORM} rate-limited*"])
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert f"{calls} model calls in 4 scenario(s) ({reruns} of their attempts re-run by --gaia2-retries): " \
           f"{STORM} rate-limited (HTTP 429)" in index
    assert gaia2_containers(run_id_of(output)) == []


UNBINDABLE = "192.0.2.1"
"""TEST-NET-1: an address no host of ours has, so binding the gateway to it fails as a taken or
vanished address would."""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    ("bind", "message"),
    [
        ("127.0.0.1", "pytest-gaia2: the model gateway at host.docker.internal:* is not reachable from a container*"
                      "allow the port, or run with --gaia2-gateway=off"),
        (UNBINDABLE, f"pytest-gaia2: the model gateway could not listen on {UNBINDABLE}: *; run with "
                     "--gaia2-gateway=off (the containers then get the provider keys as environment variables)"),
    ],
    ids=["unreachable", "unbindable"],
)
def test_a_gateway_no_container_can_use_stops_the_run_before_any_scenario(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
    workers: tuple[str, ...],
    bind: str,
    message: str,
) -> None:
    """Where the gateway listens is the one thing changed (a firewall that drops the engine's
    bridge leaves a gateway on loopback alone; a taken address leaves none): pre-flight, or the
    gateway's own start, refuses the run."""
    pytester.makeconftest(
        f"""
        from pytest_gaia2.run import gateway

        gateway.listen_host = lambda candidate: {bind!r}
        """
    )
    clean_env.setenv(KEY_VAR, REAL_KEY)
    with chat_server(lambda model, prompt: "scripted reply") as server:
        result = run_gaia2(
            *workers, f"--gaia2-scenarios={SHIPPED / 'search'}", *gateway_args(tmp_path, server.port)
        )
        assert server.requests == []
    assert result.ret == EXIT_REFUSED, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines([message])
    text = result.stdout.str() + result.stderr.str()
    assert text.count("model gateway") <= 2 and "Traceback" not in text and "INTERNALERROR" not in text
    output = pytester.path / "out"
    assert not output.exists() or run_folders(output) == []
    assert REAL_KEY not in text


# -- calls from a container ---------------------------------------------------------------------

CLIENT = r"""
import json, sys, urllib.request, urllib.error
base, token = sys.argv[1], sys.argv[2]
def call(path, body, headers):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **headers}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
bearer, anthropic = {"Authorization": "Bearer " + token}, {"x-api-key": token, "anthropic-version": "2023-06-01"}
chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
results = {
    "openai": call("/chat/completions", chat, bearer),
    "openai_stream": call("/chat/completions", {**chat, "stream": True}, bearer),
    "anthropic": call("/v1/messages", {**chat, "max_tokens": 8}, anthropic),
    "anthropic_stream": call("/v1/messages", {**chat, "max_tokens": 8, "stream": True}, anthropic),
    "foreign": call("/chat/completions", chat, {"Authorization": "Bearer gaia2-gw-forged"}),
    "no_token": call("/chat/completions", chat, {}),
}
print(json.dumps({name: [status, text[:2000]] for name, (status, text) in results.items()}))
"""
"""What a container's agent does: the four kinds of model call with its token, and two without one."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Gateway, ChatServer, Engine]]:
    """The run's gateway where this engine's containers reach the host, before a scripted provider."""
    engine = Engine(docker.from_env(), run_id=f"gwtest-{uuid.uuid4().hex[:12]}", worker="master", owner_pid=os.getpid())
    run = tmp_path / "run"
    run.mkdir()
    with chat_server(lambda model, prompt: "scripted reply") as server:
        upstream = Upstream("agent", f"http://127.0.0.1:{server.port}/v1", REAL_KEY, "openai")
        gateway = Gateway(
            {"agent": upstream},
            prices=PriceBook({"m": Price(input=1_000.0, output=2_000.0)}),
            run_folder=run,
            bind_host=listen_host(engine.host_gateway_address()),
        )
        gateway.start()
        try:
            yield gateway, server, engine
        finally:
            gateway.stop()


def in_container(token: str, port: int) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """CLIENT run in a container of the reference image; its answers, and the container as the
    engine saw it (its environment) and the files it changed, searched for the key."""
    client = docker.from_env()
    container = client.containers.create(
        build.ensure_image(client, log=lambda line: None),
        entrypoint=["python3", "-c", CLIENT, f"http://host.docker.internal:{port}/agent", token],
        extra_hosts={"host.docker.internal": "host-gateway"},
        labels={"org.pytest-gaia2.test": "gateway-engine"},
    )
    try:
        container.start()
        assert container.wait(timeout=120)["StatusCode"] == 0, container.logs().decode()[-2000:]
        answers = json.loads(container.logs(stdout=True, stderr=False).decode().strip().splitlines()[-1])
        inspected = client.api.inspect_container(container.id)
        changed = [entry["Path"] for entry in container.diff() or []]
        archives = b"".join(b"".join(container.get_archive(path)[0]) for path in changed[:200])
        return answers, {"inspected": json.dumps(inspected), "files": archives}
    finally:
        container.remove(force=True)


def test_calls_from_a_container_are_forwarded_measured_and_a_foreign_token_is_refused(
    served: tuple[Gateway, ChatServer, Engine], tmp_path: Path
) -> None:
    gateway, server, _ = served
    access = GatewayClient.of(gateway.access("127.0.0.1"))
    attempt = gateway.run_folder / "search" / "s" / "attempt_1"
    token = access.grant("search/s#1", attempt, None)
    answers, container = in_container(token, gateway.port)
    assert {name: status for name, (status, _) in answers.items()} == {
        "openai": 200, "openai_stream": 200, "anthropic": 200, "anthropic_stream": 200, "foreign": 401, "no_token": 401,
    }, answers
    assert "scripted reply" in answers["openai_stream"][1] and "message_delta" in answers["anthropic_stream"][1]
    assert [(request.path, request.authorization, request.api_key) for request in server.requests] == [
        ("/v1/chat/completions", f"Bearer {REAL_KEY}", ""),
        ("/v1/chat/completions", f"Bearer {REAL_KEY}", ""),
        ("/v1/v1/messages", "", REAL_KEY),
        ("/v1/v1/messages", "", REAL_KEY),
    ]
    assert server.requests[1].body["stream_options"] == {"include_usage": True}  # asked for the stream's usage
    calls = [json.loads(line) for line in (attempt / WIRE_LOG).read_text(encoding="utf-8").splitlines()]
    assert [(call["endpoint"], call["stream"], call["input_tokens"], call["output_tokens"]) for call in calls] == [
        ("completions", False, 10, 5), ("completions", True, 10, 5), ("messages", False, 10, 5), ("messages", True, 10, 5)
    ]
    summary = access.revoke(token)
    assert summary["calls"] == 4 and summary["cost_usd"] == pytest.approx(4 * 0.02)
    again, _ = in_container(token, gateway.port)  # a revoked token is as foreign as a forged one
    assert {status for status, _ in again.values()} == {401} and len(server.requests) == 4
    for where, data in (("environment", container["inspected"].encode()), ("files", container["files"])):
        assert REAL_KEY.encode() not in data, where
    for path in gateway.run_folder.rglob("*"):
        assert not path.is_file() or REAL_KEY.encode() not in path.read_bytes(), path
