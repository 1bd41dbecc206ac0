"""Log records never carry a key: live log, captured log in a failure report, and the log file."""

from __future__ import annotations

import pytest
from gaia2_testing import SHIPPED

CANARY = "sk-canary-LOGLEAK-0123456789"


def test_log_records_are_masked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    pytester.makepyfile(test_logs="""
        import logging
        import os

        def test_logs_a_key():
            logging.getLogger("agent").warning("calling the model with key %s", os.environ["ANTHROPIC_API_KEY"])
            assert False, "fail so the captured log is shown"
    """)
    result = pytester.runpytest_subprocess(
        "test_logs.py", f"--gaia2-scenarios={SHIPPED}", "-k", "test_logs_a_key", "-p", "no:cacheprovider",
        "-o", "log_cli=true", "--log-cli-level=INFO", "--log-file=run.log", "--log-file-level=INFO",
    )
    result.assert_outcomes(failed=1)
    output = result.stdout.str() + result.stderr.str()
    log_file = (pytester.path / "run.log").read_text(encoding="utf-8")
    assert "calling the model with key ***" in output
    assert "calling the model with key ***" in log_file
    assert CANARY not in output
    assert CANARY not in log_file
