"""The model gateway on the real engine, with the reference image's LLM agent (``--gaia2-model``:
one model call per action) and a scripted provider on this host: the real key never enters a
container (its environment as the engine reports it, its files, the run folder), the ledger is
the provider-reported usage times the price whatever the agent's trace says, and a scenario cap
ends a runaway scenario. The only addresses contacted are this host's."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of
from llm_server import ChatServer, chat_server

REAL_KEY = "sk-gateway-test-real-key-5f0c1d2e3b4a69788796a5b4"
KEY_VAR = "GAIA2_GATEWAY_TEST_KEY"
MODEL = "gaia2-gateway-test-model"
ONE = "scenario_universe_21_7kww6e"  # one agent action: one model call
THREE = "scenario_universe_22_mmow4l"  # three agent actions: three model calls
CALL_USD = 0.02
"""The scripted 10 input and 5 output tokens at the test's prices (1000 and 2000 USD per million)."""


@pytest.fixture
def provider() -> Iterator[tuple[ChatServer, list[dict[str, str]]]]:
    """The scripted provider, and the environment of every running gaia2 container as the engine
    reported it at the moment of each model call (the container is alive then)."""
    seen: list[dict[str, str]] = []
    lock = threading.Lock()
    client = docker.from_env()

    def reply(model: str, prompt: str) -> str:
        for listed in client.api.containers(filters={"label": "org.pytest-gaia2.run"}):
            try:  # another run's container may be gone by now
                inspected = client.api.inspect_container(listed["Id"])
            except docker.errors.NotFound:
                continue
            env = dict(item.partition("=")[::2] for item in inspected["Config"]["Env"] or [])
            if env.get("GAIA2_TEST_PROVIDER") == str(server.port):
                with lock:
                    seen.append(env)
        return "scripted reply"

    with chat_server(reply) as server:
        yield server, seen


def gateway_args(tmp_path: Path, port: int, *extra: str) -> tuple[str, ...]:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 1000, "output": 2000}}), encoding="utf-8")
    return (
        "--gaia2-provider=openai-compat",
        f"--gaia2-model={MODEL}",
        f"--gaia2-base-url=http://host.docker.internal:{port}/v1",
        f"--gaia2-api-key-env={KEY_VAR}",
        f"--gaia2-price-file={prices}",
        "--gaia2-skip-endpoint-check",
        f"--gaia2-env=GAIA2_TEST_PROVIDER={port}",  # names this test's containers on a shared engine
        *extra,
    )


def ledger(folder: Path) -> dict[str, float]:
    lines = (folder / "spend.jsonl").read_text(encoding="utf-8").splitlines()
    return {entry["entry"]: entry["usd"] for entry in map(json.loads, lines)}


def key_nowhere(folder: Path, envs: list[dict[str, str]]) -> None:
    assert envs, "no container environment was seen during a model call"
    for env in envs:
        assert not any(REAL_KEY in value for value in env.values()), sorted(env)
        assert env["API_KEY"].startswith("gaia2-gw-") and "/agent" in env["BASE_URL"]
    for path in folder.rglob("*"):
        if path.is_file():
            assert REAL_KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_calls_go_through_the_gateway_and_the_key_stays_on_the_host(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
    workers: tuple[str, ...],
) -> None:
    server, envs = provider
    clean_env.setenv(KEY_VAR, REAL_KEY)
    result = run_gaia2(
        *workers,
        f"--gaia2-scenarios={SHIPPED / 'search'}",
        "-k",
        f"{ONE} or scenario_universe_24_zqzvsf",
        *gateway_args(tmp_path, server.port),
    )
    result.assert_outcomes(passed=2)
    assert "model gateway on at" in result.stdout.str()
    result.stdout.fnmatch_lines(["gateway: 2 model calls measured on the wire, 30 tokens, $0.0400; the agents' traces agree"])
    output = pytester.path / "out"
    folder = run_folder(output)
    assert [request.authorization for request in server.requests] == [f"Bearer {REAL_KEY}"] * 2
    key_nowhere(folder, envs)
    records = results_of(output)
    for record in records:
        assert record["cost_usd"] == pytest.approx(CALL_USD)
        assert record["wire"]["calls"] == record["wire"]["trace_calls"] == 1
        assert record["wire"]["trace_minus_wire_usd"] == 0
        (call,) = [json.loads(line) for line in (folder / record["folder"] / "wire.jsonl").read_text().splitlines()]
        assert (call["status"], call["model"], call["input_tokens"], call["output_tokens"]) == (200, MODEL, 10, 5)
    assert sorted(ledger(folder).values()) == pytest.approx([CALL_USD, CALL_USD])
    assert gaia2_containers(run_id_of(output)) == []


def test_the_ledger_is_what_the_provider_reported_even_when_the_agent_writes_no_trace(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
) -> None:
    server, envs = provider
    server.usage = (3000, 700)
    clean_env.setenv(KEY_VAR, REAL_KEY)
    result = run_gaia2(
        f"--gaia2-scenarios={SHIPPED / 'execution'}",
        "-k",
        THREE,
        "--gaia2-env=GAIA2_TRACE_FILE=/tmp/hidden-trace.jsonl",  # the agent's own account goes nowhere
        *gateway_args(tmp_path, server.port),
    )
    result.assert_outcomes(passed=1)
    output = pytester.path / "out"
    folder = run_folder(output)
    (record,) = results_of(output)
    expected = 3 * (3000 * 1000 + 700 * 2000) / 1e6
    assert len(server.requests) == 3
    assert record["cost_usd"] == pytest.approx(expected)
    assert record["usage"]["input_tokens"] == 9000 and record["usage"]["output_tokens"] == 2100
    assert (record["wire"]["trace_calls"], record["wire"]["trace_cost_usd"]) == (0, None)
    assert list(ledger(folder).values()) == pytest.approx([expected])
    key_nowhere(folder, envs)
    result.stdout.fnmatch_lines(
        [
            f"cost: ${expected:.2f} over 1 priced scenario(s)",
            "*the agents' traces differ in 1 scenario(s)*1 with no trace",
        ]
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_scenario_cap_ends_a_runaway_scenario_mid_way_and_it_is_not_retried(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
    workers: tuple[str, ...],
) -> None:
    server, _ = provider
    clean_env.setenv(KEY_VAR, REAL_KEY)
    result = run_gaia2(
        *workers,
        f"--gaia2-scenarios={SHIPPED / 'execution'}",
        "-k",
        THREE,
        *gateway_args(tmp_path, server.port, "--gaia2-scenario-cap=0.03", "--gaia2-retries=1"),
    )
    result.assert_outcomes(errors=1)
    output = pytester.path / "out"
    folder = run_folder(output)
    (record,) = results_of(output)
    assert record["error_category"] == "scenario_cap", record["error"]
    assert "--gaia2-scenario-cap" in record["error"]
    assert len(server.requests) == 2  # the call that passed the cap was the last to go out
    calls = [json.loads(line) for line in (folder / record["folder"] / "wire.jsonl").read_text().splitlines()]
    assert [call["status"] for call in calls][:2] == [200, 200]
    assert all(call.get("refused") == "scenario_cap" for call in calls[2:])
    assert record["cost_usd"] == pytest.approx(2 * CALL_USD)
    assert len(list(folder.rglob("result.json"))) == 1  # not retried
    assert gaia2_containers(run_id_of(output)) == []


def test_gateway_off_keeps_the_keys_in_the_environment_as_upstream_does(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
) -> None:
    server, envs = provider
    clean_env.setenv(KEY_VAR, REAL_KEY)
    result = run_gaia2(
        f"--gaia2-scenarios={SHIPPED / 'search'}",
        "-k",
        ONE,
        *gateway_args(tmp_path, server.port, "--gaia2-gateway=off"),
    )
    result.assert_outcomes(passed=1)
    assert "model gateway off" in result.stdout.str()
    assert envs and envs[0]["API_KEY"] == REAL_KEY and envs[0]["BASE_URL"].endswith(f":{server.port}/v1")
    (record,) = results_of(pytester.path / "out")
    assert record["wire"] is None and record["cost_usd"] == pytest.approx(CALL_USD)  # from the trace


def test_a_rate_limit_is_seen_at_the_gateway_and_slows_the_run(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    clean_env.setenv(KEY_VAR, REAL_KEY)
    with chat_server(lambda model, prompt: 429) as server:
        result = run_gaia2(f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, *gateway_args(tmp_path, server.port))
    result.assert_outcomes(errors=1)
    output = pytester.path / "out"
    (record,) = results_of(output)
    assert record["error_category"] == "provider_rate_limit"
    assert (record["wire"]["calls"], record["wire"]["rate_limited"]) == (1, 1)
    assert (record["cost_usd"], record["cost_source"]) == (None, "unknown")  # a refused call reports no usage
    pacer = json.loads((run_folder(output) / "progress.json").read_text(encoding="utf-8"))["pacer"]
    assert pacer["slowdowns"] == 1 and pacer["provider_errors"] == 1


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_run_cap_refuses_calls_mid_scenario_and_a_resume_spends_nothing_more(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
    workers: tuple[str, ...],
) -> None:
    server, _ = provider
    clean_env.setenv(KEY_VAR, REAL_KEY)
    args = (*workers, f"--gaia2-scenarios={SHIPPED / 'execution'}", "-k", THREE)
    capped = gateway_args(tmp_path, server.port, "--gaia2-budget-cap=0.03")
    result = run_gaia2(*args, *capped)
    result.assert_outcomes(errors=1)
    output = pytester.path / "out"
    (record,) = results_of(output)
    assert record["error_category"] == "budget_cap", record["error"]
    assert len(server.requests) == 2 and record["cost_usd"] == pytest.approx(2 * CALL_USD)
    assert sum(ledger(run_folder(output)).values()) == pytest.approx(2 * CALL_USD)

    resumed = run_gaia2(*args, *capped, "--gaia2-resume")
    resumed.assert_outcomes(skipped=1)
    assert len(server.requests) == 2  # the ledger's spend is the cap's: nothing more goes out
    assert gaia2_containers(run_id_of(output)) == []


def test_a_scenario_token_cap_ends_a_scenario_of_a_model_without_a_price(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    clean_env: pytest.MonkeyPatch,
    provider: tuple[ChatServer, list[dict[str, str]]],
    tmp_path: Path,
) -> None:
    server, _ = provider
    clean_env.setenv(KEY_VAR, REAL_KEY)
    args = [arg for arg in gateway_args(tmp_path, server.port) if not arg.startswith("--gaia2-price-file")]
    result = run_gaia2(
        f"--gaia2-scenarios={SHIPPED / 'execution'}", "-k", THREE, *args, "--gaia2-scenario-token-cap=25"
    )
    result.assert_outcomes(errors=1)
    (record,) = results_of(pytester.path / "out")
    assert record["error_category"] == "scenario_cap" and "--gaia2-scenario-token-cap 25" in record["error"]
    assert len(server.requests) == 2 and record["usage"]["input_tokens"] + record["usage"]["output_tokens"] == 30
    assert record["cost_usd"] is None  # no price for the model: the tokens stopped it
