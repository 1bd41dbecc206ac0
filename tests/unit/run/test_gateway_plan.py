"""Which routes the model gateway serves for a run's settings, and the container environment it
gives: the gateway's URLs and a token where the keys were, never a key."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.container_env import REFERENCE_LLM, GatewayEnv
from pytest_gaia2.config.settings import RunSettings, container_env
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.run.gateway import plan

REFERENCE = "localhost/pytest-gaia2-reference:0.1"
HERMES = "localhost/gaia2-hermes:latest"
ANT_KEY = "sk-ant-AGENT-0001"
JUDGE_KEY = "sk-oai-JUDGE-0002"
TOKEN = "gaia2-gw-token"
GATEWAY = GatewayEnv(TOKEN, "http://host.docker.internal:1234/agent", "http://host.docker.internal:1234/judge")


def make(tmp_path: Path, environ: Mapping[str, str], **cli: Any) -> RunSettings:
    values = options.resolve(cli, {}, {})
    return RunSettings.from_options(values, rootdir=tmp_path, environ=dict(environ), reference_image=REFERENCE)


def hermes(tmp_path: Path, **cli: Any) -> RunSettings:
    return make(
        tmp_path,
        {"ANTHROPIC_API_KEY": ANT_KEY, "OPENAI_API_KEY": JUDGE_KEY},
        image=HERMES,
        provider="anthropic",
        model="claude-x",
        judge_provider="openai",
        judge_model="gpt-j",
        **cli,
    )


def test_keys_with_known_upstreams_turn_the_gateway_on_by_default(tmp_path: Path) -> None:
    routes, notes = plan(hermes(tmp_path), None)
    assert notes == []
    assert (routes["agent"].base_url, routes["agent"].key) == ("https://api.anthropic.com", ANT_KEY)
    assert (routes["judge"].base_url, routes["judge"].key) == ("https://api.openai.com/v1", JUDGE_KEY)


def test_a_local_base_url_is_reached_from_the_host_at_loopback(tmp_path: Path) -> None:
    routes, _ = plan(hermes(tmp_path, base_url="http://host.docker.internal:4000/v1"), None)
    assert routes["agent"].base_url == "http://127.0.0.1:4000/v1"


def test_off_keeps_the_keys_in_the_containers_and_says_so(tmp_path: Path) -> None:
    routes, notes = plan(hermes(tmp_path), "off")
    assert routes == {} and "environment variables" in notes[0]


def test_no_key_no_gateway_and_on_without_a_key_is_one_clear_error(tmp_path: Path) -> None:
    settings = make(tmp_path, {})
    assert plan(settings, None) == ({}, [])
    with pytest.raises(OptionError, match="--gaia2-gateway=on: no provider key"):
        plan(settings, "on")


def test_a_provider_without_a_known_upstream_turns_the_default_off_and_on_names_the_option(tmp_path: Path) -> None:
    settings = make(tmp_path, {"GEMINI_API_KEY": "g-key"}, image=HERMES, provider="google", model="gemini-x")
    routes, notes = plan(settings, None)
    assert routes == {} and "--gaia2-base-url" in notes[0]
    with pytest.raises(OptionError, match="google.*--gaia2-base-url"):
        plan(settings, "on")


def test_the_container_gets_the_gateway_and_a_token_never_a_key(tmp_path: Path) -> None:
    settings = hermes(tmp_path, env=[f"TEAM_COPY=prefix-{ANT_KEY}"])
    env = container_env(settings, adapter_port=8090, gateway_port=None, start_time=None, gateway=GATEWAY)
    assert env["BASE_URL"] == GATEWAY.agent_url and env["GAIA2_JUDGE_BASE_URL"] == GATEWAY.judge_url
    assert env["API_KEY"] == env["ANTHROPIC_API_KEY"] == env["GAIA2_JUDGE_API_KEY"] == TOKEN
    assert env["TEAM_COPY"] == f"prefix-{TOKEN}"  # a key copied by hand is replaced too
    assert not [name for name, value in env.items() if ANT_KEY in value or JUDGE_KEY in value]
    assert TOKEN not in repr(GATEWAY)


def test_the_reference_image_given_a_model_runs_its_llm_agent(tmp_path: Path) -> None:
    settings = make(
        tmp_path,
        {"OPENAI_COMPAT_API_KEY": ANT_KEY},
        provider="openai-compat",
        model="m",
        base_url="http://host.docker.internal:9/v1",
    )
    assert settings.profile is REFERENCE_LLM
    env = container_env(settings, adapter_port=8090, gateway_port=None, start_time=None, gateway=GATEWAY)
    assert env["GAIA2_REF_AGENT_LLM"] == "1" and env["MODEL"] == "m"
    assert (env["BASE_URL"], env["API_KEY"]) == (GATEWAY.agent_url, TOKEN)
    assert "GAIA2_JUDGE_BASE_URL" not in env or env["GAIA2_JUDGE_BASE_URL"] == GATEWAY.judge_url


def test_behind_a_proxy_the_gateway_not_the_provider_is_reached_directly(tmp_path: Path) -> None:
    settings = make(
        tmp_path,
        {"ANTHROPIC_API_KEY": ANT_KEY, "HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "localhost"},
        image=HERMES,
        provider="anthropic",
        model="claude-x",
        judge_provider="anthropic",
        judge_model="claude-j",
        base_url="https://llm.example.com/v1",
    )
    env = container_env(settings, adapter_port=8090, gateway_port=None, start_time=None, gateway=GATEWAY)
    assert env["NO_PROXY"] == "localhost,host.docker.internal"
    assert "llm.example.com" not in env["NO_PROXY"]
