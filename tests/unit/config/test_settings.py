"""Run settings: profiles, key resolution, dotenv rules, container env and public view.

Expected environments follow gaia2-contract.md section 1 (tables 1.1 and 1.3).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.container_env import (
    CONTAINER_CA_BUNDLE,
    DEFAULT,
    HERMES,
    OPENCLAW,
    ORACLE,
    extra_hosts,
    faketime,
    profile_for,
)
from pytest_gaia2.config.options import OptionError
from pytest_gaia2.config.settings import RunSettings, container_env, problems, public_dict, validate

REFERENCE = "localhost/pytest-gaia2-reference:0.1"
HERMES_IMAGE = "localhost/gaia2-hermes:latest"
OC_IMAGE = "localhost/gaia2-oc:latest"
ORACLE_IMAGE = "localhost/gaia2-oracle:latest"
CUSTOM_IMAGE = "registry.example.com/waggle/agent:3"

ANT_KEY = "sk-ant-AGENT-0001"
OAI_KEY = "sk-oai-JUDGE-0002"
START = 1728975792.0  # 2024-10-15 07:03:12 UTC
JUDGE = {"judge_provider": "openai", "judge_model": "gpt-oss-120b"}


def make(
    tmp_path: Path, environ: Mapping[str, str] | None = None, **cli: Any
) -> RunSettings:
    """Settings as the plugin builds them: raw option strings through options.resolve."""
    values = options.resolve(cli, {}, {})
    return RunSettings.from_options(
        values, rootdir=tmp_path, environ=dict(environ or {}), reference_image=REFERENCE
    )


def env_of(settings: RunSettings, **kwargs: Any) -> dict[str, str]:
    kwargs.setdefault("adapter_port", 8090)
    kwargs.setdefault("gateway_port", None)
    kwargs.setdefault("start_time", None)
    return container_env(settings, **kwargs)


# --- profiles -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "profile"),
    [
        (OC_IMAGE, OPENCLAW),
        ("ghcr.io/team/OpenClaw-Agent:1", OPENCLAW),
        (HERMES_IMAGE, HERMES),
        ("team/hermes-fork", HERMES),
        (ORACLE_IMAGE, ORACLE),
        ("team/oracle-lite", ORACLE),
        (CUSTOM_IMAGE, DEFAULT),
        ("openclaw-hermes-oracle", OPENCLAW),  # OpenClaw is checked first
        ("hermes-oracle", HERMES),
    ],
)
def test_profile_for(image: str, profile: Any) -> None:
    assert profile_for(image) is profile


def test_profile_table() -> None:
    assert (OPENCLAW.name, OPENCLAW.needs_llm, OPENCLAW.default_provider) == ("openclaw", True, "anthropic")
    assert OPENCLAW.extra_env == (("OPENCLAW_FORCE_RECONFIG", "1"),)
    assert OPENCLAW.base_url_keys == ("BASE_URL", "OPENROUTER_BASE_URL")
    assert (HERMES.needs_llm, HERMES.default_provider, HERMES.extra_env, HERMES.base_url_keys) == (
        True, "anthropic", (), ("BASE_URL",))
    assert (ORACLE.needs_llm, ORACLE.default_provider, ORACLE.base_url_keys) == (False, "", ())
    assert (DEFAULT.name, DEFAULT.needs_llm, DEFAULT.base_url_keys) == ("default", True, ("BASE_URL",))


def test_extra_hosts_maps_host_docker_internal() -> None:
    assert extra_hosts() == {"host.docker.internal": "host-gateway"}


# --- container env per profile --------------------------------------------------------


def test_hermes_env(tmp_path: Path) -> None:
    settings = make(
        tmp_path,
        {"ANTHROPIC_API_KEY": ANT_KEY, "OPENAI_API_KEY": OAI_KEY, "HOME": "/root"},
        image=HERMES_IMAGE, provider="anthropic", model="claude-sonnet-4-6",
        base_url="http://host.docker.internal:4000", **JUDGE,
    )
    assert env_of(settings, start_time=START) == {
        "THINKING": "low",
        "BASE_URL": "http://host.docker.internal:4000",
        "GAIA2_TRACE_FILE": "/tmp/trace.jsonl",
        "FAKETIME": "2024-10-15 07:03:12",
        "GAIA2_JUDGE_FINAL_TURN": "1",
        "GAIA2_JUDGE_MODEL": "gpt-oss-120b",
        "GAIA2_JUDGE_PROVIDER": "openai",
        "GAIA2_JUDGE_API_KEY": OAI_KEY,
        "GAIA2_ADAPTER_PORT": "8090",
        "PROVIDER": "anthropic",
        "API_KEY": ANT_KEY,
        "MODEL": "claude-sonnet-4-6",
        "ANTHROPIC_API_KEY": ANT_KEY,
    }


def test_openclaw_env(tmp_path: Path) -> None:
    settings = make(
        tmp_path,
        {"OPENROUTER_API_KEY": "sk-or-123456", "GAIA2_JUDGE_API_KEY": OAI_KEY},
        image=OC_IMAGE, provider="openrouter", model="anthropic/claude-sonnet-4.6",
        base_url="https://openrouter.ai/api/v1", thinking="high", time_speed="5",
        notification_mode="native", **JUDGE,
    )
    assert env_of(settings, adapter_port=41000, gateway_port=41001) == {
        "THINKING": "high",
        "GAIA2_NOTIFICATION_MODE": "native",
        "GAIA2_TIME_SPEED": "5.0",
        "BASE_URL": "https://openrouter.ai/api/v1",
        "OPENROUTER_BASE_URL": "https://openrouter.ai/api/v1",
        "GAIA2_TRACE_FILE": "/tmp/trace.jsonl",
        "GAIA2_JUDGE_FINAL_TURN": "1",
        "GAIA2_JUDGE_MODEL": "gpt-oss-120b",
        "GAIA2_JUDGE_PROVIDER": "openai",
        "GAIA2_JUDGE_API_KEY": OAI_KEY,
        "GAIA2_ADAPTER_PORT": "41000",
        "OPENCLAW_GATEWAY_PORT": "41001",
        "OPENCLAW_GATEWAY_URL": "ws://127.0.0.1:41001",
        "PROVIDER": "openrouter",
        "API_KEY": "sk-or-123456",
        "MODEL": "anthropic/claude-sonnet-4.6",
        "OPENCLAW_FORCE_RECONFIG": "1",
        "OPENROUTER_API_KEY": "sk-or-123456",
    }


def test_oracle_env_has_no_provider_env(tmp_path: Path) -> None:
    settings = make(
        tmp_path,
        {"API_KEY": "generic-key-123", "ANTHROPIC_API_KEY": ANT_KEY},
        image=ORACLE_IMAGE, provider="anthropic", model="m", base_url="http://x:1",
        judge_provider="anthropic", judge_model="claude-sonnet-4-6",
    )
    assert env_of(settings) == {
        "THINKING": "low",
        "GAIA2_TRACE_FILE": "/tmp/trace.jsonl",
        "GAIA2_JUDGE_FINAL_TURN": "1",
        "GAIA2_JUDGE_MODEL": "claude-sonnet-4-6",
        "GAIA2_JUDGE_PROVIDER": "anthropic",
        "GAIA2_JUDGE_API_KEY": ANT_KEY,
        "GAIA2_ADAPTER_PORT": "8090",
    }
    assert settings.secrets.agent_key == ""


def test_host_base_url_is_copied_when_no_base_url_key_was_set(tmp_path: Path) -> None:
    oracle = make(tmp_path, {"BASE_URL": "http://proxy:4000"}, image=ORACLE_IMAGE,
                  base_url="http://ignored:1", **JUDGE)
    assert env_of(oracle)["BASE_URL"] == "http://proxy:4000"
    hermes = make(tmp_path, {"BASE_URL": "http://proxy:4000"}, image=HERMES_IMAGE,
                  provider="anthropic", model="m", base_url="http://mine:1", **JUDGE)
    assert env_of(hermes)["BASE_URL"] == "http://mine:1"


def test_default_profile_env(tmp_path: Path) -> None:
    settings = make(tmp_path, {"API_KEY": "litellm-key-1"}, image=CUSTOM_IMAGE,
                    provider="qwen", model="qwen3", base_url="http://host.docker.internal:8000", **JUDGE)
    env = env_of(settings)
    assert {key: env[key] for key in ("PROVIDER", "API_KEY", "MODEL", "BASE_URL")} == {
        "PROVIDER": "qwen", "API_KEY": "litellm-key-1", "MODEL": "qwen3",
        "BASE_URL": "http://host.docker.internal:8000",
    }
    assert "OPENROUTER_BASE_URL" not in env and "OPENCLAW_FORCE_RECONFIG" not in env
    assert env["GAIA2_JUDGE_API_KEY"] == "litellm-key-1"  # judge falls back to API_KEY


# --- provider key table ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "environ", "key", "exported"),
    [
        ("anthropic", {"ANTHROPIC_API_KEY": "ant-key-1", "API_KEY": "generic-1"}, "ant-key-1",
         {"ANTHROPIC_API_KEY"}),
        ("google", {"GOOGLE_API_KEY": "google-key-1"}, "google-key-1",
         {"GEMINI_API_KEY", "GOOGLE_API_KEY"}),
        ("google", {"GEMINI_API_KEY": "gemini-key-1", "GOOGLE_API_KEY": "google-key-1"},
         "gemini-key-1", {"GEMINI_API_KEY", "GOOGLE_API_KEY"}),
        ("openai", {"OPENAI_API_KEY": "oai-key-1"}, "oai-key-1", {"OPENAI_API_KEY"}),
        ("openai-codex", {"OPENAI_API_KEY": "oai-key-1"}, "oai-key-1", {"OPENAI_API_KEY"}),
        ("openai-compat", {"OPENAI_API_KEY": "oai-key-1"}, "oai-key-1",
         {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY"}),
        ("openai-completions", {"OPENAI_COMPLETIONS_API_KEY": "cmp-key-1", "OPENAI_API_KEY": "oai-key-1"},
         "cmp-key-1", {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY"}),
        ("openai-compat", {"OPENAI_COMPAT_API_KEY": "cpt-key-1", "OPENAI_COMPLETIONS_API_KEY": "cmp-key-1"},
         "cpt-key-1", {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY"}),
        ("openrouter", {"OPENROUTER_API_KEY": "or-key-1"}, "or-key-1", {"OPENROUTER_API_KEY"}),
        ("gemini", {"GEMINI_API_KEY": "gemini-key-1", "API_KEY": "generic-1"}, "generic-1", set()),
        ("anthropic", {"ANTHROPIC_API_KEY": "  ", "API_KEY": "generic-1"}, "generic-1",
         {"ANTHROPIC_API_KEY"}),
        ("Anthropic", {"ANTHROPIC_API_KEY": "ant-key-1"}, "ant-key-1", {"ANTHROPIC_API_KEY"}),
        ("OpenAI-Compat", {"OPENAI_API_KEY": "oai-key-1"}, "oai-key-1",
         {"OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY"}),
    ],
)
def test_agent_key_lookup_and_export(
    tmp_path: Path, provider: str, environ: dict[str, str], key: str, exported: set[str]
) -> None:
    settings = make(tmp_path, environ, image=HERMES_IMAGE, provider=provider, model="m", **JUDGE)
    env = env_of(settings)
    assert env["PROVIDER"] == provider  # passed on as given; only the lookup is lower-cased
    assert env["API_KEY"] == key
    mirrored = {name for name, value in env.items() if value == key} - {"API_KEY", "GAIA2_JUDGE_API_KEY"}
    assert mirrored == exported


def test_no_key_found_sets_no_key_variables(tmp_path: Path) -> None:
    settings = make(tmp_path, {}, image=HERMES_IMAGE, provider="anthropic", model="m", **JUDGE)
    env = env_of(settings)
    assert env["PROVIDER"] == "anthropic"
    assert not {"API_KEY", "ANTHROPIC_API_KEY", "GAIA2_JUDGE_API_KEY"} & env.keys()


def test_named_key_variable_wins_over_provider_table(tmp_path: Path) -> None:
    settings = make(
        tmp_path, {"TEAM_KEY": "team-key-123", "ANTHROPIC_API_KEY": ANT_KEY},
        image=HERMES_IMAGE, provider="anthropic", model="m", api_key_env="TEAM_KEY", **JUDGE,
    )
    env = env_of(settings)
    assert env["API_KEY"] == env["ANTHROPIC_API_KEY"] == "team-key-123"
    assert settings.secrets.agent_key_source == "TEAM_KEY"


# --- judge --------------------------------------------------------------------------------

JUDGE_ENV = {
    "JUDGE_VAR": "named-judge-key",
    "GAIA2_JUDGE_API_KEY": "gaia2-judge-key",
    "OPENAI_API_KEY": "openai-judge-key",
    "API_KEY": "generic-api-key",
    "TEAM_KEY": "team-agent-key",
}


@pytest.mark.parametrize(
    ("drop", "judge_key_env", "expected", "source"),
    [
        ((), "JUDGE_VAR", "named-judge-key", "JUDGE_VAR"),
        ((), None, "gaia2-judge-key", "GAIA2_JUDGE_API_KEY"),
        (("GAIA2_JUDGE_API_KEY",), None, "openai-judge-key", "OPENAI_API_KEY"),
        (("GAIA2_JUDGE_API_KEY", "OPENAI_API_KEY"), None, "generic-api-key", "API_KEY"),
        (("GAIA2_JUDGE_API_KEY", "OPENAI_API_KEY", "API_KEY"), None, "team-agent-key",
         "agent key (TEAM_KEY)"),
    ],
)
def test_judge_key_precedence(
    tmp_path: Path, drop: tuple[str, ...], judge_key_env: str | None, expected: str, source: str
) -> None:
    environ = {key: value for key, value in JUDGE_ENV.items() if key not in drop}
    settings = make(tmp_path, environ, image=HERMES_IMAGE, provider="anthropic", model="m",
                    api_key_env="TEAM_KEY", judge_api_key_env=judge_key_env, **JUDGE)
    assert env_of(settings)["GAIA2_JUDGE_API_KEY"] == expected
    assert settings.secrets.judge_key_source == source


def test_provider_specific_judge_keys_are_not_exported(tmp_path: Path) -> None:
    settings = make(tmp_path, {"ANTHROPIC_API_KEY": ANT_KEY, "OPENAI_API_KEY": OAI_KEY},
                    image=HERMES_IMAGE, provider="anthropic", model="m", **JUDGE)
    env = env_of(settings)
    assert env["GAIA2_JUDGE_API_KEY"] == OAI_KEY
    assert "OPENAI_API_KEY" not in env
    assert OAI_KEY not in {value for key, value in env.items() if key != "GAIA2_JUDGE_API_KEY"}


def test_judge_settings_come_from_environ_when_not_given(tmp_path: Path) -> None:
    environ = {"GAIA2_JUDGE_MODEL": "env-model", "GAIA2_JUDGE_PROVIDER": "env-provider",
               "GAIA2_JUDGE_BASE_URL": "http://judge:9000"}
    from_env = make(tmp_path, environ, image=ORACLE_IMAGE)
    assert (from_env.judge_model, from_env.judge_provider, from_env.judge_base_url) == (
        "env-model", "env-provider", "http://judge:9000")
    assert env_of(from_env)["GAIA2_JUDGE_BASE_URL"] == "http://judge:9000"
    given = make(tmp_path, environ, image=ORACLE_IMAGE, judge_model="opt-model",
                 judge_provider="opt-provider", judge_base_url="http://opt:1")
    assert (given.judge_model, given.judge_provider, given.judge_base_url) == (
        "opt-model", "opt-provider", "http://opt:1")


# --- reference image and problems -------------------------------------------------------


def test_reference_image_needs_no_model_and_gets_a_placeholder_judge(tmp_path: Path) -> None:
    settings = make(tmp_path, {"API_KEY": "generic-api-key"})
    assert settings.image == REFERENCE and settings.is_reference
    assert settings.profile is ORACLE  # an oracle replay even though its name says nothing
    assert problems(settings) == []
    env = env_of(settings)
    assert (env["GAIA2_JUDGE_MODEL"], env["GAIA2_JUDGE_PROVIDER"]) == ("none", "none")
    assert "GAIA2_JUDGE_API_KEY" not in env and "API_KEY" not in env


def test_reference_placeholder_judge_takes_a_named_key(tmp_path: Path) -> None:
    settings = make(tmp_path, {"JUDGE_VAR": "named-judge-key"}, judge_api_key_env="JUDGE_VAR")
    assert settings.judge_model == "none"
    assert env_of(settings)["GAIA2_JUDGE_API_KEY"] == "named-judge-key"
    assert problems(settings) == []


def test_reference_image_uses_a_configured_judge(tmp_path: Path) -> None:
    settings = make(tmp_path, {"OPENAI_API_KEY": OAI_KEY}, image=REFERENCE, **JUDGE)
    assert env_of(settings)["GAIA2_JUDGE_API_KEY"] == OAI_KEY
    half = make(tmp_path, {}, judge_model="gpt-oss-120b")
    assert problems(half) == [
        f"In-container judge configuration is required for image {REFERENCE}. "
        "Missing: --gaia2-judge-provider / GAIA2_JUDGE_PROVIDER"
    ]


def test_agent_images_need_provider_and_model(tmp_path: Path) -> None:
    settings = make(tmp_path, {}, image=HERMES_IMAGE, **JUDGE)
    assert problems(settings) == [
        f"Agent model configuration is required for image {HERMES_IMAGE}. "
        "Missing: --gaia2-provider, --gaia2-model"
    ]
    assert problems(make(tmp_path, {}, image=CUSTOM_IMAGE, provider="x", **JUDGE)) == [
        f"Agent model configuration is required for image {CUSTOM_IMAGE}. Missing: --gaia2-model"
    ]


def test_non_reference_images_need_a_judge(tmp_path: Path) -> None:
    assert problems(make(tmp_path, {}, image=ORACLE_IMAGE)) == [
        f"In-container judge configuration is required for image {ORACLE_IMAGE}. "
        "Missing: --gaia2-judge-model / GAIA2_JUDGE_MODEL, --gaia2-judge-provider / GAIA2_JUDGE_PROVIDER"
    ]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_named_key_variable_unset_or_empty_is_a_problem(tmp_path: Path, value: str | None) -> None:
    environ = {"ANTHROPIC_API_KEY": ANT_KEY, "OPENAI_API_KEY": OAI_KEY}
    if value is not None:
        environ["TEAM_KEY"] = environ["TEAM_JUDGE_KEY"] = value
    settings = make(tmp_path, environ, image=HERMES_IMAGE, provider="anthropic", model="m",
                    api_key_env="TEAM_KEY", judge_api_key_env="TEAM_JUDGE_KEY", **JUDGE)
    found = problems(settings)
    assert found == [
        "--gaia2-api-key-env: the variable TEAM_KEY is not set or empty",
        "--gaia2-judge-api-key-env: the variable TEAM_JUDGE_KEY is not set or empty",
    ]
    # a named variable never falls back to another key
    assert "API_KEY" not in env_of(settings) and "GAIA2_JUDGE_API_KEY" not in env_of(settings)


def test_validate_raises_one_error_listing_everything(tmp_path: Path) -> None:
    settings = make(tmp_path, {}, image=HERMES_IMAGE, env_file="missing.env",
                    copy_in=["nowhere.txt:/opt/x.txt"])
    with pytest.raises(OptionError) as excinfo:
        validate(settings)
    message = str(excinfo.value)
    for fragment in ("--gaia2-provider, --gaia2-model", "GAIA2_JUDGE_MODEL",
                     f"{tmp_path / 'missing.env'} does not exist", "nowhere.txt does not exist"):
        assert fragment in message
    validate(make(tmp_path, {}))  # the reference image with nothing configured is fine


# --- dotenv rules ------------------------------------------------------------------------


def test_rootdir_dotenv_is_read_and_environ_wins(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "# keys\nexport ANTHROPIC_API_KEY='from-dotenv-ant'\nOPENAI_API_KEY=\"from-dotenv-oai\" # c\n"
        "API_KEY=from-dotenv-generic\n"
    )
    settings = make(tmp_path, {"OPENAI_API_KEY": "from-environ-oai", "API_KEY": ""},
                    image=HERMES_IMAGE, provider="anthropic", model="m", **JUDGE)
    assert settings.env_file == tmp_path / ".env"
    assert settings.secrets.agent_key == "from-dotenv-ant"
    assert settings.secrets.judge_key == "from-environ-oai"
    assert "from-dotenv-generic" in settings.secret_values()  # empty environ value is filled


def test_judge_keys_in_dotenv_are_ignored_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "GAIA2_JUDGE_MODEL=dotenv-model\nGAIA2_JUDGE_PROVIDER=openai\n"
        "GAIA2_JUDGE_API_KEY=dotenv-judge-secret\nGAIA2_JUDGE_BASE_URL=http://x\n"
    )
    settings = make(tmp_path, {}, image=ORACLE_IMAGE)
    assert (settings.judge_model, settings.judge_provider, settings.judge_base_url) == ("", "", None)
    assert settings.secrets.judge_key == ""
    assert len(settings.warnings) == 1
    warning = settings.warnings[0]
    assert "GAIA2_JUDGE_API_KEY, GAIA2_JUDGE_BASE_URL, GAIA2_JUDGE_MODEL, GAIA2_JUDGE_PROVIDER" in warning
    assert "dotenv-judge-secret" not in warning
    assert "dotenv-judge-secret" in settings.secret_values()  # still masked if it shows up


def test_explicit_env_file_is_relative_to_rootdir(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "keys.env").write_text("OPENROUTER_API_KEY=or-from-file\n")
    (tmp_path / ".env").write_text("OPENROUTER_API_KEY=or-from-default\n")
    settings = make(tmp_path, {}, image=OC_IMAGE, provider="openrouter", model="m",
                    env_file="conf/keys.env", **JUDGE)
    assert settings.env_file == tmp_path / "conf" / "keys.env"
    assert settings.secrets.agent_key == "or-from-file"


def test_no_dotenv_file(tmp_path: Path) -> None:
    assert make(tmp_path, {}).env_file is None


def test_unreadable_dotenv_lines_are_warned_without_content(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GOOD=1\nthis is sk-secret-ish junk\n")
    settings = make(tmp_path, {})
    assert settings.warnings == (f"Skipped unreadable lines in {tmp_path / '.env'}: 2",)


# --- env details -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start_time", "expected"),
    [(START, "2024-10-15 07:03:12"), (START + 0.9, "2024-10-15 07:03:12"), (0, None), (None, None),
     (86400, "1970-01-02 00:00:00")],
)
def test_faketime_format(start_time: float | None, expected: str | None) -> None:
    assert faketime(start_time) == expected


def test_faketime_only_when_start_time_is_set(tmp_path: Path) -> None:
    settings = make(tmp_path, {})
    assert "FAKETIME" not in env_of(settings, start_time=None)
    assert "FAKETIME" not in env_of(settings, start_time=0)
    assert env_of(settings, start_time=START)["FAKETIME"] == "2024-10-15 07:03:12"


def test_extra_env_wins_except_adapter_port(tmp_path: Path) -> None:
    settings = make(
        tmp_path, {"ANTHROPIC_API_KEY": ANT_KEY}, image=HERMES_IMAGE, provider="anthropic",
        model="m", **JUDGE,
        env=["THINKING=off", "PROVIDER=custom", "GAIA2_ADAPTER_PORT=1", "FAKETIME=2020-01-01 00:00:00",
             "GAIA2_ORACLE_TURN_DELAY=5", "GAIA2_CA_BUNDLE=/nope", "GAIA2_PROXY_RELAY_URL=proxy:8080"],
    )
    env = env_of(settings, adapter_port=8123, start_time=START)
    assert env["THINKING"] == "off"
    assert env["PROVIDER"] == "custom"
    assert env["FAKETIME"] == "2020-01-01 00:00:00"
    assert env["GAIA2_ORACLE_TURN_DELAY"] == "5"
    assert env["GAIA2_ADAPTER_PORT"] == "8123"
    assert "GAIA2_CA_BUNDLE" not in env and "GAIA2_PROXY_RELAY_URL" not in env
    assert any("GAIA2_PROXY_RELAY_URL is not supported" in note for note in settings.warnings)
    assert any("GAIA2_CA_BUNDLE=/nope does not exist" in note for note in settings.warnings)


def test_notification_mode_message_and_time_speed_unset_are_not_exported(tmp_path: Path) -> None:
    env = env_of(make(tmp_path, {}))
    assert "GAIA2_NOTIFICATION_MODE" not in env and "GAIA2_TIME_SPEED" not in env
    assert env["THINKING"] == "low"


def test_proxy_variables_are_copied_when_non_empty(tmp_path: Path) -> None:
    environ = {"HTTPS_PROXY": "http://user:proxy-pass-1@proxy:3128", "no_proxy": "localhost",
               "http_proxy": "", "HTTP_PROXY": "http://proxy:3128"}
    settings = make(tmp_path, environ)
    env = env_of(settings)
    assert {key: env[key] for key in env if "proxy" in key.lower()} == {
        "HTTPS_PROXY": "http://user:proxy-pass-1@proxy:3128",
        "HTTP_PROXY": "http://proxy:3128",
        "no_proxy": "localhost",
    }
    assert "proxy-pass-1" in settings.secret_values()


def test_behind_a_proxy_the_model_hosts_are_reached_directly(tmp_path: Path) -> None:
    """As upstream's runner: the agent's and judge's endpoint hosts join no_proxy and NO_PROXY."""
    settings = make(
        tmp_path, {"ANTHROPIC_API_KEY": ANT_KEY, "HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost"},
        image=HERMES_IMAGE, provider="anthropic", model="m", base_url="http://vllm.cluster:8000/v1",
        judge_model="j", judge_provider="openai-compat", judge_base_url="http://[::1]:8001/v1",
    )
    env = env_of(settings)
    assert env["no_proxy"] == "localhost,vllm.cluster,::1"
    assert env["NO_PROXY"] == "vllm.cluster,::1"
    mine = make(tmp_path, {"ANTHROPIC_API_KEY": ANT_KEY, "HTTPS_PROXY": "http://proxy:3128"}, image=HERMES_IMAGE,
                provider="anthropic", model="m", base_url="http://vllm.cluster:8000/v1", env=["NO_PROXY=only-mine"])
    assert env_of(mine)["NO_PROXY"] == "only-mine" and env_of(mine)["no_proxy"] == "vllm.cluster"
    unproxied = make(tmp_path, {"ANTHROPIC_API_KEY": ANT_KEY}, image=HERMES_IMAGE, provider="anthropic", model="m",
                     base_url="http://vllm.cluster:8000/v1")
    assert "no_proxy" not in env_of(unproxied)  # no proxy set: nothing to bypass


def test_ca_bundle_is_copied_in_and_announced(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "data.txt").write_text("x")
    settings = make(tmp_path, {"GAIA2_CA_BUNDLE": "ca.pem"}, copy_in=["data.txt:/opt/data.txt"])
    env = env_of(settings)
    for name in ("NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        assert env[name] == CONTAINER_CA_BUNDLE == "/etc/ssl/certs/gaia2-host-ca-bundle.crt"
    assert "GAIA2_CA_BUNDLE" not in env
    assert settings.files_to_copy() == [(tmp_path / "data.txt", "/opt/data.txt"),
                                         (bundle, CONTAINER_CA_BUNDLE)]
    assert problems(settings) == []


def test_missing_ca_bundle_is_a_warning_only(tmp_path: Path) -> None:
    settings = make(tmp_path, {"GAIA2_CA_BUNDLE": str(tmp_path / "absent.pem")})
    assert settings.ca_bundle is None and settings.files_to_copy() == []
    assert "SSL_CERT_FILE" not in env_of(settings)
    assert settings.warnings == (
        f"GAIA2_CA_BUNDLE={tmp_path / 'absent.pem'} does not exist; containers get no host CA bundle",
    )


def test_timeouts_and_network_come_from_options(tmp_path: Path) -> None:
    settings = make(tmp_path, {}, timeout="900", health_timeout="30", judge_grace="0",
                    stop_timeout="2", network="host", port_range="30000-30099", output="out")
    limits = settings.limits
    assert (limits.timeout, limits.health_timeout, limits.judge_grace, limits.stop_timeout,
            limits.reap_grace) == (900.0, 30.0, 0.0, 2.0, 120.0)
    assert (settings.network, settings.port_range, settings.output) == (
        "host", (30000, 30099), tmp_path / "out")


# --- public view and repr ----------------------------------------------------------------


def _secretive(tmp_path: Path) -> RunSettings:
    return make(
        tmp_path,
        {"TEAM_KEY": "team-agent-key-123", "OPENAI_API_KEY": OAI_KEY,
         "GITHUB_TOKEN": "ghp_token_123456"},
        image=HERMES_IMAGE, provider="anthropic", model="claude-sonnet-4-6", api_key_env="TEAM_KEY",
        env=["WAGGLE_VERIFICATION_GATE=1", "MY_SERVICE_TOKEN=tok-visible-nowhere",
             "INNOCENT=team-agent-key-123"],
        **JUDGE,
    )


def test_public_dict_names_keys_but_never_shows_them(tmp_path: Path) -> None:
    data = public_dict(_secretive(tmp_path))
    dumped = json.dumps(data)
    for secret in ("team-agent-key-123", OAI_KEY, "tok-visible-nowhere", "ghp_token_123456"):
        assert secret not in dumped
    assert data["image"] == HERMES_IMAGE and data["profile"] == "hermes"
    assert (data["provider"], data["model"]) == ("anthropic", "claude-sonnet-4-6")
    assert (data["api_key_env"], data["api_key_source"], data["api_key_set"]) == (
        "TEAM_KEY", "TEAM_KEY", True)
    assert (data["judge_api_key_source"], data["judge_api_key_set"]) == ("OPENAI_API_KEY", True)
    assert (data["judge_provider"], data["judge_model"]) == ("openai", "gpt-oss-120b")
    assert data["extra_env"] == {
        "WAGGLE_VERIFICATION_GATE": "1", "MY_SERVICE_TOKEN": "***", "INNOCENT": "***",
    }
    assert data["timeout"] == 600.0 and data["network"] == "bridge"


def test_repr_shows_settings_without_secrets(tmp_path: Path) -> None:
    settings = _secretive(tmp_path)
    text = repr(settings) + repr(settings.secrets)
    for secret in ("team-agent-key-123", OAI_KEY, "tok-visible-nowhere", "ghp_token_123456"):
        assert secret not in text
    assert HERMES_IMAGE in text and "agent_key=set" in text
    assert "GITHUB_TOKEN" not in text
    expected = {"team-agent-key-123", OAI_KEY, "tok-visible-nowhere", "ghp_token_123456"}
    assert expected <= settings.secret_values()


def test_copy_in_takes_only_regular_files_within_the_size_cap(tmp_path: Path) -> None:
    """A device never ends (/dev/zero), a FIFO blocks, a huge file fills memory: refused by name."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    settings = make(tmp_path, {}, max_file_size="1K",
                    copy_in=["/dev/zero:/opt/zero", "pipe:/opt/pipe", "big.bin:/opt/big", "ok.txt:/opt/ok", ".:/opt/d"])
    assert [line for line in problems(settings) if "copy-in" in line] == [
        "--gaia2-copy-in: /dev/zero is not a regular file (for /opt/zero)",
        f"--gaia2-copy-in: {fifo} is not a regular file (for /opt/pipe)",
        f"--gaia2-copy-in: {tmp_path / 'big.bin'} is 2048 bytes, over the --gaia2-max-file-size of 1024 (for /opt/big)",
        f"--gaia2-copy-in: {tmp_path} is not a regular file (for /opt/d)",
    ]
