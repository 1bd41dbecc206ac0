"""What a gaia2-runner TOML asked for and the run replaced, read back from an untrusted run_config.json."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_gaia2.report.allure_environment import environment, replaced_settings

RUNTIME = {"key": "[agent].runtime", "configured": "apptainer", "used": "the container engine's API"}


def test_the_replacements_are_said_in_words_on_the_pages() -> None:
    run_config = {"upstream_config": {"file": "/x/eval.toml", "replaced": [RUNTIME]}}
    assert replaced_settings(run_config) == ["[agent].runtime = 'apptainer' replaced by the container engine's API"]
    assert environment(run_config)["upstream.replaced"] == replaced_settings(run_config)[0]
    assert "upstream.replaced" not in environment({})


@pytest.mark.parametrize(
    "upstream",
    [None, "x", {"replaced": "apptainer"}, {"replaced": [1, None, {"key": 1, "configured": "a", "used": "b"}]}],
)
def test_forged_entries_are_left_out(upstream: Any) -> None:
    assert replaced_settings({"upstream_config": upstream}) == []


def test_many_or_long_entries_are_bounded() -> None:
    entry = {**RUNTIME, "configured": "a" * 10_000}
    words = replaced_settings({"upstream_config": {"replaced": [entry] * 1000}})
    assert len(words) == 16 and all(len(word) < 500 for word in words)
