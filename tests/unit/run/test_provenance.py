"""What a resume refused for other settings says: each setting in words, --gaia2-env by names
only, and the command that continues the run as it was made."""

from __future__ import annotations

from pathlib import Path

from pytest_gaia2.run import provenance

SECRET = "sk-resume-test-4b1d"


def _config(model: str, env: dict[str, str], digest: str | None) -> dict[str, object]:
    return {
        "provenance": {"image": "img", "model": model, "env_digest": digest, "plugin_version": "1"},
        "settings": {"extra_env": env},
    }


def test_each_changed_setting_is_named_in_words_and_no_value_of_the_environment_is_shown() -> None:
    stored = _config("model-a", {"GAIA2_FAULT_X": "v-fault-1", "TEAM_API_KEY": "***", "KEPT": "v-kept-2"}, "d1")
    now = _config("model-b", {"KEPT": "v-kept-3", "NEW_FLAG": SECRET}, "d2")
    found = provenance.differences(stored, now, [], {})
    assert found == [
        "--gaia2-model: 'model-a' then, 'model-b' now",
        "--gaia2-env: GAIA2_FAULT_X set by the run, not now; TEAM_API_KEY set by the run, not now; "
        "NEW_FLAG set now, not by the run; KEPT has another value",
    ]
    assert not any(value in line for line in found for value in ("v-fault-1", "v-kept", SECRET, "d1", "d2"))


def test_a_run_without_public_settings_still_says_the_environment_differs() -> None:
    stored = {"provenance": {"env_digest": "d1"}}
    assert provenance.differences(stored, {"provenance": {"env_digest": None}}, [], {}) == [
        "--gaia2-env: the variables or their values differ"
    ]


def test_the_command_that_continues_names_the_run_folder_whatever_resume_it_had() -> None:
    folder = Path("/out/20261201T091500Z-aaaaaaaa")
    for command in (
        "pytest -n 2 --gaia2-sample=12 --gaia2-output=out",
        "pytest -n 2 --gaia2-sample=12 --gaia2-resume --gaia2-output=out",
        "pytest -n 2 --gaia2-sample=12 --gaia2-resume=out/old --gaia2-output=out",
        "pytest -n 2 --gaia2-sample=12 --gaia2-resume out/old --gaia2-output=out",
    ):
        assert provenance.resume_command(command, folder) == (
            f"pytest -n 2 --gaia2-sample=12 --gaia2-output=out --gaia2-resume={folder}"
        ), command
    kept = provenance.resume_command("pytest --gaia2-resume-mismatch=warn 'a b'", folder)
    assert kept == f"pytest --gaia2-resume-mismatch=warn 'a b' --gaia2-resume={folder}"
