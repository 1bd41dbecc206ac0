"""Unit tests of re-judging: comparing judges (pure), judge specs, and the reference image's
offline judge on saved events (its modules loaded by file, as inside the image)."""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from gaia2_records import record
from gaia2_testing import SHIPPED, reference_module
from llm_server import chat_server
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cli.rejudge import parse_judge, summary_lines, verdict_line
from pytest_gaia2.report.rejudged import aggregate
from pytest_gaia2.run.rejudge import REFERENCE, Job, judge_env, verdict_row
from pytest_gaia2.store.console import CommandError
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


# -- what the command says, and the endpoint check before any container --------------------------


def test_agreement_is_over_what_each_judge_decided_and_the_last_line_names_who_gave_no_verdict() -> None:
    """A judge without a verdict on s/d never agrees on it: 1 of the 3 it decided, not of 4."""
    summary = aggregate(IN_CONTAINER, {"j": {"s/a": True, "s/b": False, "s/c": True, "s/d": None}},
                        {"j": {"s/d": "the judge model did not answer: Connection refused"}})
    lines = summary_lines(summary)
    assert lines[1] == ("j: 2 passed, 1 failed, 1 error (no verdict); pass rate 50.0% (2/4; 95% CI 15.0%-85.0%); "
                        "agrees with the in-container verdict on 1 of the 3 it decided (33.3%; 95% CI 6.1%-79.2%)")
    assert "  no verdict: s/d (the judge model did not answer: Connection refused)" in lines
    assert verdict_line(summary) == (
        "rejudge: FAIL: j gave no verdict on 1 of 4 (the reasons: 'no verdict' above and rejudgments.jsonl)")
    nothing = aggregate(IN_CONTAINER, {"down": dict.fromkeys(IN_CONTAINER)})
    assert summary_lines(nothing)[1].endswith("; agrees on nothing: it decided no scenario")
    every = aggregate(IN_CONTAINER, {"ref": dict(IN_CONTAINER), "j": {**IN_CONTAINER, "s/a": False}})
    assert verdict_line(every) == ("rejudge: done: every judge gave a verdict on all 4; agreement with the "
                                   "in-container verdicts: ref 4/4, j 3/4")


@pytest.fixture
def judged_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A run of two judged scenarios whose files are at hand, and no engine (DOCKER_HOST answers
    nothing): a re-judge that got as far as the engine would fail with the engine's error."""
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    sha = {}
    for sid in ("s1", "s2"):
        content = json.dumps({"id": sid}).encode()
        (scenarios / f"{sid}.json").write_bytes(content)
        sha[sid] = hashlib.sha256(content).hexdigest()
    for name in ("GAIA2_JUDGE_API_KEY", "OPENAI_API_KEY", "API_KEY", "GAIA2_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    return write_run(tmp_path / "run", {"s1": "P", "s2": "F"}, sha=sha), scenarios


def _rejudge(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main(["rejudge", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_unreachable_model_judge_is_refused_by_name_before_any_container(
        judged_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    run, scenarios = judged_run
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = _rejudge(capsys, run, "--scenarios", scenarios, "--judge", "reference", "--judge",
                              "openai-compat/judge-m", "--judge-base-url", f"http://host.docker.internal:{port}/v1")
    assert (code, out) == (2, "")
    assert err == (f"pytest-gaia2 rejudge: judge openai-compat/judge-m endpoint host.docker.internal:{port} (model "
                   "'judge-m'): connection refused (is the server up? --judge-base-url); nothing was judged\n")
    assert not (run / "rejudge").exists()


def test_a_model_judge_with_no_endpoint_and_no_key_is_refused(
        judged_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    run, scenarios = judged_run
    code, out, err = _rejudge(capsys, run, "--scenarios", scenarios, "--judge", "openai/gpt-4o",
                              "--judge-name", "hosted")
    assert (code, out) == (2, "")
    assert err == ("pytest-gaia2 rejudge: judge hosted: no --judge-base-url and no key (--judge-api-key-env NAME, "
                   "GAIA2_JUDGE_API_KEY, the provider's variable or API_KEY): its container would call the image's "
                   "default endpoint without one; nothing was judged\n")
    assert not (run / "rejudge").exists()


def test_a_reachable_judge_passes_the_check_and_only_then_the_engine_is_asked(
        judged_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A server that answers the ping: the check passes (one line), and the engine's error comes next."""
    run, scenarios = judged_run
    with chat_server(lambda model, prompt: "ok") as server:
        code, out, err = _rejudge(capsys, run, "--scenarios", scenarios, "--judge", "openai-compat/judge-m",
                                  "--judge-base-url", server.container_url)
    assert out == (f"rejudge: judge openai-compat/judge-m endpoint host.docker.internal:{server.port} (model "
                   "'judge-m'): a one-token completion came back\n")
    assert [(r.model, r.body.get("max_tokens")) for r in server.requests] == [("judge-m", 1)]
    assert code == 2 and "tcp://127.0.0.1:1" in err and not (run / "rejudge").exists()


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
