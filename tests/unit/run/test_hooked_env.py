"""What a ``pytest_gaia2_container_env`` hook may leave in a container's environment, and the
secrets it adds, checked without an engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.run.hooked_env import LearningRedactor, adjust
from pytest_gaia2.run.verdict import Gaia2InfraError
from pytest_gaia2.store import redact

SCENARIO = Scenario(scenario_id="scenario_universe_21_abc", split="search", path=Path("s.json"))
BASE = {"GAIA2_ADAPTER_PORT": "8090", "THINKING": "low", "GAIA2_JUDGE_API_KEY": "judge-key-000001"}


def _adjusted(hook: Callable[..., Any]) -> tuple[dict[str, Any], LearningRedactor]:
    env, redactor = dict(BASE), LearningRedactor([BASE["GAIA2_JUDGE_API_KEY"]])
    adjust(hook, redactor, SCENARIO, env)
    return env, redactor


def test_changes_reach_the_environment_and_secret_names_are_masked_from_then_on() -> None:
    def hook(scenario: Scenario, env: dict[str, str]) -> None:
        env.update(TEAM_SCENARIO=scenario.scenario_id, TEAM_API_KEY="team-key-123456", TEAM_URL="http://team.example")
        del env["THINKING"]

    env, redactor = _adjusted(hook)
    assert env == {"GAIA2_ADAPTER_PORT": "8090", "GAIA2_JUDGE_API_KEY": "judge-key-000001",
                   "TEAM_SCENARIO": SCENARIO.scenario_id, "TEAM_API_KEY": "team-key-123456",
                   "TEAM_URL": "http://team.example"}
    line = "team-key-123456 judge-key-000001 http://team.example"
    assert redactor.redact(line) == "*** *** http://team.example"  # a URL under a plain name is not a secret
    assert redactor.redact_bytes(b"\"team-key-123456\"") == b"\"***\""
    with redact.installed(redactor):  # the same object: the store's writers mask it too
        assert redact.active().redact("x team-key-123456") == "x ***"


def test_a_hook_that_changes_nothing_keeps_the_redactor() -> None:
    env, redactor = _adjusted(lambda scenario, env: None)
    assert env == BASE and redactor.values == ("judge-key-000001",)


@pytest.mark.parametrize(("change", "problem"), [
    ({"BAD=NAME": "x"}, "'BAD=NAME' is not a variable name"),
    ({"": "x"}, "'' is not a variable name"),
    ({1: "x"}, "'1' is not a variable name"),
    ({"TEAM_PORT": 9000}, "TEAM_PORT: the value must be a string without NUL, got int"),
    ({"TEAM_FLAG": "a\0b"}, "TEAM_FLAG: the value must be a string without NUL, got str"),
    ({"GAIA2_ADAPTER_PORT": "9999"}, "GAIA2_ADAPTER_PORT may not change: the plugin polls port 8090"),
])
def test_an_environment_no_engine_takes_is_a_harness_error(change: dict[Any, Any], problem: str) -> None:
    with pytest.raises(Gaia2InfraError) as info:
        _adjusted(lambda scenario, env: env.update(change))
    assert (info.value.category, info.value.detail) == ("harness_error", f"pytest_gaia2_container_env: {problem}")


def test_a_removed_adapter_port_is_refused() -> None:
    with pytest.raises(Gaia2InfraError, match="GAIA2_ADAPTER_PORT may not change"):
        _adjusted(lambda scenario, env: env.pop("GAIA2_ADAPTER_PORT"))


def test_a_raising_hook_is_a_harness_error_that_masks_what_it_set() -> None:
    def hook(scenario: Scenario, env: dict[str, str]) -> None:
        env["VAULT_TOKEN"] = "vault-token-777777"
        raise ConnectionError("vault refused vault-token-777777 \x1b[2J" + "x" * 1000)

    with pytest.raises(Gaia2InfraError) as info:
        _adjusted(hook)
    detail = info.value.detail
    assert detail.startswith("pytest_gaia2_container_env: raised ConnectionError: vault refused *** \\x1b[2J")
    assert "vault-token" not in detail and "\x1b" not in detail and len(detail) < 600
