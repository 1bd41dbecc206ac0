"""Unit tests of re-judging: comparing judges (pure), judge specs, and the reference image's
offline judge on saved events (its modules loaded by file, as inside the image)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gaia2_records import record
from gaia2_testing import SHIPPED, reference_module

from pytest_gaia2.cli.main import CommandError
from pytest_gaia2.cli.rejudge import (
    REFERENCE,
    Job,
    aggregate,
    judge_env,
    parse_judge,
    summary_lines,
    verdict_row,
)
from pytest_gaia2.store.record import AttemptRecord

for _name in ("gaia2_ref_scenario", "gaia2_ref_runtime", "gaia2_ref_judge", "gaia2_ref_llm"):
    reference_module(_name)
offline = reference_module("gaia2_ref_rejudge")
llm = reference_module("gaia2_ref_llm")
scenario_mod = reference_module("gaia2_ref_scenario")

IN_CONTAINER = {"s/a": True, "s/b": True, "s/c": False, "s/d": False}


def test_one_judge_against_the_in_container_verdicts() -> None:
    summary = aggregate(IN_CONTAINER, {"j": {"s/a": True, "s/b": False, "s/c": True, "s/d": None}})
    row = summary["judges"]["j"]
    assert (row["passed"], row["failed"], row["errors"]) == (2, 1, 1)
    assert (row["pass_rate"]["successes"], row["pass_rate"]["n"]) == (2, 4)  # an error is not a pass
    assert (row["agreement_with_in_container"]["successes"], row["agreement_with_in_container"]["n"]) == (1, 3)
    assert (row["flipped_to_fail"], row["flipped_to_pass"], row["error_ids"]) == (["s/b"], ["s/c"], ["s/d"])
    assert summary["disagree_with_in_container"] == {"s/b": ["j"], "s/c": ["j"]}
    assert "strict_all" not in summary  # a comparison of judges needs two


def test_several_judges_strict_all_majority_agreement_unanimity() -> None:
    summary = aggregate(IN_CONTAINER, {
        "x": {"s/a": True, "s/b": True, "s/c": False, "s/d": True},
        "y": {"s/a": True, "s/b": False, "s/c": False, "s/d": True},
        "z": {"s/a": True, "s/b": True, "s/c": None, "s/d": False},
    })
    assert summary["strict_all"]["successes"] == 1  # only s/a passes with every judge
    assert summary["majority"]["successes"] == 3  # s/a, s/b (2 of 3), s/d (2 of 3)
    assert summary["unanimity"]["successes"] == 1  # s/c has an abstention, s/b and s/d split
    # pairs with two votes: a 3/3, b 1/3, c 1/1 (x-y), d 1/3
    assert (summary["agreement"]["successes"], summary["agreement"]["n"]) == (6, 10)
    assert summary["disagreeing_judges"] == ["s/b", "s/d"]
    assert summary["disagree_with_in_container"] == {"s/b": ["y"], "s/d": ["x", "y"]}
    assert summary["in_container"]["successes"] == 2
    lines = summary_lines(summary)
    assert "strict-all: 25.0% (1/4; 95% CI 4.6%-69.9%)" in lines
    assert "disagrees with the in-container verdict: s/d (x, y)" in lines
    assert "  no verdict: s/c" in lines


def test_no_scenario_gives_no_rate() -> None:
    summary = aggregate({}, {"j": {}})
    assert summary["judges"]["j"]["pass_rate"]["value"] is None
    assert "n/a (0 scenarios)" in summary_lines(summary)[0]


def test_judge_specs_and_their_folders() -> None:
    reference = parse_judge(" reference ")
    assert (reference.name, reference.slug) == (REFERENCE, "reference")
    exact = parse_judge("reference,GAIA2_REF_JUDGE_EXACT=1")
    assert exact.settings == (("GAIA2_REF_JUDGE_EXACT", "1"),)
    assert exact.slug.startswith("reference+") and exact.slug != parse_judge("reference,GAIA2_REF_JUDGE_EXACT=0").slug
    model = parse_judge("openai-compat/meta-llama/Llama 3", [("A", "1")])
    assert (model.provider, model.model, model.slug[:33]) == ("openai-compat", "meta-llama/Llama 3",
                                                              "openai-compat-meta-llama-Llama-3+")
    for bad in ("gpt-4", "/model", "openai/", "reference,1=2", "reference,NOEQUALS"):
        with pytest.raises(CommandError, match="--judge"):
            parse_judge(bad)


def test_only_model_judges_get_the_url_and_key() -> None:
    assert judge_env(parse_judge("reference,GAIA2_REF_JUDGE_EXACT=1"), "http://h/v1", "sk-secret") == {
        "GAIA2_JUDGE_PROVIDER": "none", "GAIA2_JUDGE_MODEL": "none", "GAIA2_REF_JUDGE_EXACT": "1"}
    assert judge_env(parse_judge("openai/gpt"), "http://h/v1", "sk-secret") == {
        "GAIA2_JUDGE_PROVIDER": "openai", "GAIA2_JUDGE_MODEL": "gpt",
        "GAIA2_JUDGE_BASE_URL": "http://h/v1", "GAIA2_JUDGE_API_KEY": "sk-secret"}


# -- the reference image's offline judge ---------------------------------------------------------

SEARCH = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
ANSWER = "Dr. Priya Raman's phone number is +351 213 555 019."


def saved(tmp_path: Path, *answers: str) -> dict[str, Any]:
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps({"t": 1.0, "app": "AgentUserInterface", "fn": "send_message_to_user",
                                          "args": {"content": a}, "w": True, "ret": None}) + "\n"
                              for a in answers) + "not json\n")
    return {"folder": "search/x", "scenario": str(SEARCH), "events": str(events)}


def judged(tmp_path: Path, job: dict[str, Any], exact: bool = False, model: Any = None) -> dict[str, Any]:
    offline.rejudge_one(job, tmp_path / "out", exact, model)
    return json.loads((tmp_path / "out" / "search" / "x" / "status.json").read_text())


def test_offline_judge_passes_the_oracle_answer_and_an_exact_judge_wants_it_verbatim(tmp_path: Path) -> None:
    assert judged(tmp_path, saved(tmp_path, ANSWER))["judgment"] == {"success": True, "failure_reason": ""}
    shouted = saved(tmp_path, ANSWER.upper())
    assert judged(tmp_path, shouted)["judgment"]["success"] is True
    status = judged(tmp_path, shouted, exact=True)
    assert (status["status"], status["judgment"]["success"]) == ("stopped", False)
    assert status["judgment"]["failure_reason"].startswith("Cannot match AgentUserInterface__send_message_to_user")


def test_offline_judge_asks_the_model_only_when_the_texts_differ(tmp_path: Path) -> None:
    asked: list[tuple[str, str, Any]] = []

    def model(tool: str, oracle: str, agent: Any) -> tuple[bool | None, str]:
        asked.append((tool, oracle, agent))
        return (True, "[[Success]]") if "Priya" in agent else (None, "hmm")

    assert judged(tmp_path, saved(tmp_path, ANSWER), model=model)["judgment"]["success"] is True
    assert asked == []
    assert judged(tmp_path, saved(tmp_path, "Priya's number: +351 213 555 019"), model=model)["judgment"]["success"]
    assert asked == [("AgentUserInterface__send_message_to_user", ANSWER, "Priya's number: +351 213 555 019")]
    record = json.loads((tmp_path / "out" / "search" / "x" / "judgments.jsonl").read_text())
    assert record["match_details"][0]["judge_output"] == "content: [[Success]]"
    assert judged(tmp_path, saved(tmp_path, "No idea."), model=model)["judgment"]["success"] is False  # inconclusive


def test_offline_judge_without_a_verdict(tmp_path: Path) -> None:
    status = judged(tmp_path, saved(tmp_path))
    assert (status["status"], status.get("judgment")) == ("error", None)
    assert "the events end before turn 0 ended" in status["error"]
    status = judged(tmp_path, {**saved(tmp_path, ANSWER), "scenario": str(tmp_path / "missing.json")})
    assert (status["status"], status["retryable"]) == ("error", False)

    def down(tool: str, oracle: str, agent: Any) -> tuple[bool | None, str]:
        raise llm.JudgeUnavailable("the judge model at http://x/v1/chat/completions answered HTTP 503")

    status = judged(tmp_path, saved(tmp_path, "Other words."), model=down)
    assert (status["status"], status["retryable"], status["error"]) == (
        "error", True, "the judge model at http://x/v1/chat/completions answered HTTP 503")


def test_chat_judge_reads_verdicts_and_reports_an_unreachable_model() -> None:
    assert [llm.verdict_of(text) for text in ("ok [[Success]]", "[[False]]", "maybe")] == [True, False, None]
    assert llm.from_env({"GAIA2_JUDGE_MODEL": "none"}) is None
    judge = llm.from_env({"GAIA2_JUDGE_MODEL": "m", "GAIA2_JUDGE_BASE_URL": "http://127.0.0.1:9/v1/"})
    assert judge.url == "http://127.0.0.1:9/v1/chat/completions"
    with pytest.raises(llm.JudgeUnavailable, match="could not be reached"):
        judge("tool", "oracle", "agent")


ANSWER_LINE = json.dumps({"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "x"}}).encode()
ENV_LINE = json.dumps({"app": "Email", "fn": "x", "event_id": "Event-ENV-1"}).encode()


@pytest.mark.parametrize(
    ("events", "judge_says", "expected"),
    [
        (b"", None, False),  # the forged 0-event pass: the judge had nothing, the row disagrees
        (ENV_LINE + b"\n", None, False),  # the daemon's own lines are not the agent's
        (b"", {"status": "complete", "judgment": {"success": True}}, False),
        (ANSWER_LINE + b"\n", None, None),  # something done and no verdict: still no verdict
        (ANSWER_LINE + b"\n", {"status": "complete", "judgment": {"success": True}}, True),
    ],
)
def test_a_pass_with_no_agent_action_is_a_disagreement(tmp_path: Path, events: bytes, judge_says: Any,
                                                       expected: bool | None) -> None:
    if judge_says is not None:
        (tmp_path / "status.json").write_text(json.dumps(judge_says), encoding="utf-8")
    job = Job(AttemptRecord.from_json(record("a", "passed", success=True)), b"{}", events)
    row = verdict_row(job, tmp_path, 1)
    assert row["success"] is expected
    summary = aggregate({job.record.key: True}, {"j": {job.record.key: row["success"]}})
    assert (job.record.key in summary["disagree_with_in_container"]) == (expected is False)
