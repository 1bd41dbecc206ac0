"""Redaction of secret values in text, JSON-able structures and log records."""

from __future__ import annotations

import io
import json
import logging
import subprocess

import pytest

from pytest_gaia2.redact import (
    MASK,
    RedactingFilter,
    Redactor,
    looks_secret,
    secret_values,
)

AGENT_KEY = "sk-ant-api03-AGENTSECRET"
JUDGE_KEY = "sk-oai-JUDGESECRET"


def test_redact_replaces_every_occurrence_of_every_secret() -> None:
    redactor = Redactor([AGENT_KEY, JUDGE_KEY])
    text = f"-e API_KEY={AGENT_KEY} -e GAIA2_JUDGE_API_KEY={JUDGE_KEY} again {AGENT_KEY}"
    assert redactor.redact(text) == f"-e API_KEY={MASK} -e GAIA2_JUDGE_API_KEY={MASK} again {MASK}"


def test_longest_secret_is_masked_whole() -> None:
    redactor = Redactor(["abcdef", "abcdefghij"])
    assert redactor.redact("x abcdefghij y abcdef z") == "x *** y *** z"


def test_values_shorter_than_six_characters_are_not_secrets() -> None:
    redactor = Redactor(["true", "12345", "none"])
    assert redactor.redact("true 12345 none") == "true 12345 none"


def test_regex_metacharacters_are_matched_literally() -> None:
    redactor = Redactor(["a.b*c+d(e]"])
    assert redactor.redact("key a.b*c+d(e] and aXbbbccd(e]") == "key *** and aXbbbccd(e]"


def test_without_secrets_text_is_returned_unchanged() -> None:
    text = "nothing to hide"
    assert Redactor([]).redact(text) is text
    assert Redactor([""]).redact(text) is text


def test_redact_obj_masks_nested_strings_and_keys_without_mutating() -> None:
    redactor = Redactor([AGENT_KEY])
    original = {
        "error": f"docker run -e API_KEY={AGENT_KEY}",
        "nested": [{"cmd": (AGENT_KEY, 3)}, 1.5, None, True],
        AGENT_KEY: "as a key",
    }
    snapshot = json.dumps(original)
    redacted = redactor.redact_obj(original)
    assert redacted == {
        "error": "docker run -e API_KEY=***",
        "nested": [{"cmd": ("***", 3)}, 1.5, None, True],
        "***": "as a key",
    }
    assert json.dumps(original) == snapshot
    assert AGENT_KEY not in json.dumps(redacted)


def test_many_secrets_in_a_large_text() -> None:
    secrets = [f"secret-value-{index:05d}" for index in range(2000)]
    text = " | ".join(secrets) * 20
    redacted = Redactor(secrets).redact(text)
    assert "secret-value" not in redacted
    assert redacted.count(MASK) == 2000 * 20


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("OPENCLAW_HOOKS_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("my_client_secret", True),
        ("HOME", False),
        ("BASE_URL", False),
        ("GAIA2_ORACLE_TURN_DELAY", False),
    ],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_secret_values_takes_values_of_secret_names_only() -> None:
    env = {"OPENAI_API_KEY": " sk-openai-xyz ", "HOME": "/root", "EMPTY_TOKEN": ""}
    assert secret_values(env) == {"sk-openai-xyz"}


def _logger_with_filter(name: str, redactor: Redactor) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_log_filter_masks_message_and_args() -> None:
    logger, stream = _logger_with_filter("test_redact.args", Redactor([AGENT_KEY]))

    class Command:
        def __str__(self) -> str:
            return f"docker run -e API_KEY={AGENT_KEY}"

    logger.warning("launch failed: %s (key %r)", Command(), AGENT_KEY)
    logger.info(f"inline {AGENT_KEY}")
    output = stream.getvalue()
    assert AGENT_KEY not in output
    assert "WARNING launch failed: docker run -e API_KEY=*** (key '***')" in output
    assert "INFO inline ***" in output


def test_log_filter_masks_exception_text() -> None:
    logger, stream = _logger_with_filter("test_redact.exc", Redactor([AGENT_KEY]))
    try:
        raise subprocess.CalledProcessError(125, ["docker", "run", "-e", f"API_KEY={AGENT_KEY}"])
    except subprocess.CalledProcessError:
        logger.exception("container start failed")
    output = stream.getvalue()
    assert "CalledProcessError" in output
    assert "API_KEY=***" in output
    assert AGENT_KEY not in output


def test_log_filter_keeps_records_and_survives_bad_format_args() -> None:
    redactor = Redactor([AGENT_KEY])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d items", (AGENT_KEY,), None)
    assert RedactingFilter(redactor).filter(record) is True
    assert AGENT_KEY not in record.getMessage()
    assert record.args is None
