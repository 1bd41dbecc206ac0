"""``GAIA2_REF_USAGE`` on the real engine: the reference image's agent writes a Format A trace
(one simulated LLM call per action) that the plugin copies into the run folder, so cost features
can be tested without a model."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of

ONE = "scenario_universe_21_7kww6e"  # the quickest shipped scenario: one turn, one answer
FORMAT_A_KEYS = {"seq", "timestamp", "type", "url", "latency_ms", "http_status", "request", "raw_response"}


def expected_calls(scenario: dict) -> int:
    """One call per oracle AGENT event replayed, plus the synthetic boundary of a last turn without
    an answer (not the case for the shipped scenarios, whose every turn ends with one)."""
    return sum(1 for event in scenario["events"] if event["event_type"] == "AGENT")


def test_usage_switch_writes_one_trace_line_per_agent_action(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]
) -> None:
    scenario = json.loads((SHIPPED / "search" / f"{ONE}.json").read_text(encoding="utf-8"))
    result = run_gaia2(
        f"--gaia2-scenarios={SHIPPED}", "-k", ONE,
        "--gaia2-env=GAIA2_REF_USAGE=1000,200,100", "--gaia2-env=MODEL=test-model",
    )
    result.assert_outcomes(passed=1)
    output = pytester.path / "out"
    folder = run_folder(output) / "search" / ONE
    (record,) = results_of(output)
    assert record["success"] is True
    assert gaia2_containers(run_id_of(output)) == []

    lines = [json.loads(line) for line in (folder / "trace.jsonl").read_text(encoding="utf-8").splitlines()]
    calls = expected_calls(scenario)
    assert calls == 1
    assert len(lines) == calls
    assert [line["seq"] for line in lines] == list(range(1, calls + 1))
    for line in lines:
        assert set(line) == FORMAT_A_KEYS
        assert (line["type"], line["http_status"]) == ("llm_call", 200)
        assert line["request"]["model"] == "test-model"
        body = json.loads(line["raw_response"])
        assert body["model"] == "test-model"
        assert body["usage"] == {
            "prompt_tokens": 1000,
            "completion_tokens": 200,
            "total_tokens": 1200,
            "prompt_tokens_details": {"cached_tokens": 100},
        }
    # the one call is the oracle's answer, the message the judge compared
    answer = json.loads(lines[-1]["raw_response"])["choices"][0]["message"]["content"]
    assert answer == record["daemon_status"]["last_response"]
