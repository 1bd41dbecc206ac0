"""The pure parts of the Allure output: attachment caps, categories, environment, parameters."""

from __future__ import annotations

import re

from allure_commons.types import ParameterMode

from pytest_gaia2.allure_report import (
    INFRA_PREFIX, JUDGE_FAILURES, capped_text, categories, environment, parameters, read_capped, write_run_files,
)
from pytest_gaia2.run import Gaia2InfraError
from pytest_gaia2.verdict import CATEGORIES


def test_small_file_is_attached_whole() -> None:
    data = "naïve\n".encode()
    assert capped_text(data, len(data), "/out/x.log", keep_end=True, cap=100) == ("naïve\n", False)


def test_cut_keeps_start_or_end_and_says_so_first(tmp_path) -> None:
    data = b"".join(f"line {n}\n".encode() for n in range(1000))
    (tmp_path / "eventd.log").write_bytes(data)
    assert read_capped(tmp_path / "eventd.log", keep_end=True, cap=64) == (data[-64:], len(data))
    assert read_capped(tmp_path / "eventd.log", keep_end=False, cap=64) == (data[:64], len(data))
    head, cut = capped_text(data[:64], len(data), "/out/events.jsonl", keep_end=False, cap=64)
    note, *rest = head.splitlines()
    assert cut and rest[0] == "line 0"
    assert note == f"[pytest-gaia2: attachment cut to the first 64 B of 9 KiB ({len(data)} bytes); " \
                   "the whole file is /out/events.jsonl]"
    tail, _ = capped_text(data[-64:], len(data), "/out/eventd.log", keep_end=True, cap=64)
    assert tail.splitlines()[0].startswith("[pytest-gaia2: attachment cut to the last")
    assert tail.endswith("line 999\n")
    assert len(tail.splitlines()[1:]) < 10


def test_every_error_category_has_a_broken_group_matching_its_message() -> None:
    groups = categories()
    assert groups[0]["name"] == JUDGE_FAILURES and groups[0]["matchedStatuses"] == ["failed"]
    infra = {group["name"]: group for group in groups[1:]}
    assert infra.keys() == {f"{INFRA_PREFIX}{category}" for category in CATEGORIES}
    for category in CATEGORIES:
        error = Gaia2InfraError(category, "last log lines:\nline one\nline two")
        message = f"pytest_gaia2.run.Gaia2InfraError: {error}"
        matching = [name for name, group in infra.items() if re.fullmatch(group["messageRegex"], message)]
        assert matching == [f"{INFRA_PREFIX}{category}"]
        assert infra[f"{INFRA_PREFIX}{category}"]["matchedStatuses"] == ["broken"]


def test_environment_from_run_config_and_escaped(tmp_path) -> None:
    run_config = {
        "run_id": "abc", "plugin_version": "0.1.0", "started_at": "2026-01-01T00:00:00+00:00", "workers": 2,
        "image": {"name": "img:1", "id": "sha256:123"}, "engine": {"version": "27.0"},
        "settings": {"image": "img:1", "profile": "openclaw", "model": "qwen\\3 ü", "provider": "openai-compat",
                     "judge_provider": "anthropic", "judge_model": "claude", "network": "host"},
    }
    values = environment(run_config)
    assert values["image.id"] == "sha256:123" and values["engine.version"] == "27.0"
    assert values["judge"] == "anthropic/claude" and values["workers"] == "2"
    write_run_files(tmp_path, run_config)
    lines = (tmp_path / "environment.properties").read_text(encoding="utf-8").splitlines()
    assert "model=qwen\\\\3 \\u00fc" in lines
    assert (tmp_path / "categories.json").is_file()


def test_secret_looking_env_is_masked() -> None:
    shown = parameters({"image": "img", "judge_provider": "none", "extra_env": {"MY_TOKEN": "***", "MODE": "1"}},
                       "sha256:1")
    assert ("env MY_TOKEN", "***", ParameterMode.MASKED) in shown
    assert ("env MODE", "1", None) in shown
    assert ("judge", "none/none", None) in shown
