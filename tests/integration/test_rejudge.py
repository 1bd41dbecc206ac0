"""``pytest-gaia2 rejudge`` on a real run of the shipped search split, on the real engine.

The run's image is the reference image plus an entrypoint that gives two scenarios a scripted
agent: one answers right but in capitals (the judge's case-insensitive match passes it, an
exact judge does not), one answers right in other words (the deterministic judge fails it, a
model may pass it); the other two replay the oracle. So the in-container verdicts are three
passes and one failure, and each re-judge below has ids it must flip, or must not.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    HOST_SETTINGS,
    SHIPPED,
    Finished,
    derived_image,
    file_sums,
    made_once,
    owned_containers,
    results_of,
    run_command,
    run_folder,
    run_pytest,
)
from llm_server import PING, chat_server

from pytest_gaia2.report.rejudged import REJUDGE_DIR, REJUDGMENTS_FILE

IMAGE = "pytest-gaia2-test/rejudge-oracle:1"
NO_JUDGE_IMAGE = "pytest-gaia2-test/rejudge-nojudge-oracle:1"
CAPITALS = "search/scenario_universe_21_7kww6e"
REWORDED = "search/scenario_universe_30_0vkdpg"
ORACLE = ["search/scenario_universe_24_zqzvsf", "search/scenario_universe_27_057i6s"]
IN_CONTAINER = {CAPITALS: True, REWORDED: False, **{key: True for key in ORACLE}}
CANARY = "sk-test-REJUDGECANARY-0123456789"


def _script(content: str) -> bytes:
    line = {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": content}, "w": True}
    return (json.dumps(line) + "\n").encode()


SCRIPTS = {
    CAPITALS: _script("DR. PRIYA RAMAN'S PHONE NUMBER IS +351 213 555 019."),
    REWORDED: _script("Lena's train gets into Berlin Hbf at 17:42 on Sunday."),
}
ENTRYPOINT = """#!/usr/bin/bash
# The scenario's own agent script when the image has one, else the oracle replay.
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["definition"]["scenario_id"])' \
     /var/gaia2/custom_scenario.json 2>/dev/null)
if [ -n "$id" ] && [ -f "/opt/scripts/$id.jsonl" ]; then export GAIA2_AGENT_SCRIPT="/opt/scripts/$id.jsonl"; fi
exec bash /opt/gaia2-reference-entrypoint.sh
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder of the search split on the scripted image, and its verdicts checked."""
    scripts = {f"{key.split('/')[1]}.jsonl": content for key, content in SCRIPTS.items()}
    derived_image(IMAGE, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-reference-entrypoint.sh",
                  "COPY entrypoint.sh /opt/gaia2-init-entrypoint.sh",
                  *(f"COPY {name} /opt/scripts/{name}" for name in scripts),
                  files={"entrypoint.sh": ENTRYPOINT.encode(), **scripts})

    def make(folder: Path) -> None:
        result = run_pytest(folder, "-n", "2", f"--gaia2-scenarios={SHIPPED / 'search'}", f"--gaia2-image={IMAGE}",
                            "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
        result.assert_outcomes(passed=3, failed=1)

    folder = made_once(tmp_path_factory, "rejudge", make)
    assert {r["scenario_id"]: r["success"] for r in results_of(folder / "out")} == {
        key.split("/")[1]: value for key, value in IN_CONTAINER.items()}
    return run_folder(folder / "out")


def rejudge(folder: Path, *args: str, env: dict[str, str] | None = None) -> Finished:
    clean = {name: value for name, value in os.environ.items() if name not in HOST_SETTINGS}
    return run_command([sys.executable, "-m", "pytest_gaia2.cli", "rejudge", str(folder), "--scenarios", str(SHIPPED),
                        *args], env={**clean, **(env or {})}, timeout=300)


def latest(folder: Path) -> Path:
    """The newest re-judge's own folder: ``rejudge/<NNN>-<time>``, the highest number."""
    return max((folder / REJUDGE_DIR).iterdir(), key=lambda path: int(path.name.split("-")[0]))


def verdicts(folder: Path, slug: str) -> dict[str, Any]:
    rows = [json.loads(line) for line in (latest(folder) / slug / REJUDGMENTS_FILE).read_text().splitlines()]
    return {row["key"]: row for row in rows}


def no_rejudge_containers(done: Finished) -> bool:
    """No container of that re-judge is left; the other tests' re-judges, at the same time on
    another xdist worker, are not its."""
    return owned_containers(done.pid) == []


def test_reference_judge_reproduces_the_in_container_verdicts(run: Path) -> None:
    before = file_sums(run)
    done = rejudge(run, "--judge", "reference")
    assert done.returncode == 0, done.stderr
    rows = verdicts(run, "reference")
    assert {key: row["success"] for key, row in rows.items()} == IN_CONTAINER
    for key in IN_CONTAINER:  # the very judgments the daemon made, turn by turn
        assert (latest(run) / "reference" / key / "judgments.jsonl").read_text() == (
            run / key / "daemon_judgments.jsonl").read_text()
    assert rows[REWORDED]["failure_reason"].startswith("Cannot match AgentUserInterface__send_message_to_user")
    summary = json.loads((latest(run) / "summary.json").read_text())
    assert summary["judges"]["reference"]["agreement_with_in_container"]["value"] == 1.0
    assert summary["disagree_with_in_container"] == {}
    assert "reference: 3 passed, 1 failed, 0 errors" in done.stdout
    after = file_sums(run)
    assert {name: digest for name, digest in after.items() if not name.startswith("rejudge/")} == before
    assert no_rejudge_containers(done)


def test_exact_judge_flips_the_answer_in_capitals(run: Path) -> None:
    done = rejudge(run, "--judge", "reference,GAIA2_REF_JUDGE_EXACT=1")
    assert done.returncode == 0, done.stderr
    summary = json.loads((latest(run) / "summary.json").read_text())
    (slug,) = summary["judges"]
    assert slug.startswith("reference+")
    assert summary["judge_settings"][slug] == {"judge": "reference", "settings": {"GAIA2_REF_JUDGE_EXACT": "1"}}
    rows = verdicts(run, slug)
    assert {key: row["success"] for key, row in rows.items()} == {**IN_CONTAINER, CAPITALS: False}
    assert summary["judges"][slug]["flipped_to_fail"] == [CAPITALS]
    assert summary["disagree_with_in_container"] == {CAPITALS: [slug]}
    assert f"disagrees with the in-container verdict: {CAPITALS} ({slug})" in done.stdout


def test_model_judges_on_a_local_server_with_a_retried_error(run: Path) -> None:
    failed_once: set[str] = set()

    def reply(model: str, prompt: str) -> str | int:
        if prompt == PING:  # the endpoint check before any container
            return "ok"
        if model not in failed_once:  # every judge's first question fails: the pass is retried
            failed_once.add(model)
            return 503
        return "Same facts. [[Success]]" if model == "lenient" else "Not the oracle's words. [[Failure]]"

    with chat_server(reply) as server:
        done = rejudge(run, "--judge", "reference", "--judge", "openai-compat/lenient", "--judge",
                       "openai-compat/strict", "--judge-base-url", server.container_url,
                       "--judge-api-key-env", "TEAM_JUDGE_KEY", env={"TEAM_JUDGE_KEY": CANARY})
    assert done.returncode == 0, done.stderr
    # Each model's endpoint is checked once, before any container: the first requests are the pings.
    assert [r.model for r in server.requests[:2]] == ["lenient", "strict"] and server.requests[2:] == server.questions
    # Only the reworded answer differs from the oracle's: the one question each model was asked.
    assert [r.model for r in server.questions] == ["lenient", "lenient", "strict", "strict"]
    assert all("17:42" in r.prompt and r.authorization == f"Bearer {CANARY}" for r in server.questions)
    assert done.stdout.splitlines()[-1] == (
        "rejudge: done: every judge gave a verdict on all 4; agreement with the in-container verdicts: "
        "reference 4/4, openai-compat-lenient 3/4, openai-compat-strict 4/4")
    lenient, strict = verdicts(run, "openai-compat-lenient"), verdicts(run, "openai-compat-strict")
    assert {key: row["success"] for key, row in lenient.items()} == {**IN_CONTAINER, REWORDED: True}
    assert {key: row["success"] for key, row in strict.items()} == IN_CONTAINER
    assert (lenient[REWORDED]["passes"], lenient[CAPITALS]["passes"]) == (2, 1)  # only the error is asked again
    record = json.loads((latest(run) / "openai-compat-lenient" / REWORDED / "judgments.jsonl").read_text())
    assert "[[Success]]" in record["match_details"][0]["judge_output"]
    summary = json.loads((latest(run) / "summary.json").read_text())
    assert summary["disagree_with_in_container"] == {REWORDED: ["openai-compat-lenient"]}
    assert summary["disagreeing_judges"] == [REWORDED]
    assert (summary["strict_all"]["successes"], summary["majority"]["successes"]) == (3, 3)
    assert (summary["unanimity"]["successes"], summary["agreement"]["successes"], summary["agreement"]["n"]) == (
        3, 10, 12)
    assert summary["judges"]["openai-compat-lenient"]["flipped_to_pass"] == [REWORDED]
    leaks = [p for p in run.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert leaks == []
    assert CANARY not in done.stdout + done.stderr
    assert no_rejudge_containers(done)
    # A later re-judge gets a folder of its own: the model judges' paid verdicts stay as they were.
    paid = latest(run)
    kept = file_sums(paid)
    again = rejudge(run, "--judge", "reference", "--judge-name", "ref-check")
    assert again.returncode == 0, again.stderr
    assert latest(run) != paid and file_sums(paid) == kept
    assert int(latest(run).name.split("-")[0]) == int(paid.name.split("-")[0]) + 1
    later = json.loads((latest(run) / "summary.json").read_text())
    assert list(later["judges"]) == ["ref-check"] and later["judge_settings"]["ref-check"]["name"] == "ref-check"
    assert set(json.loads((paid / "summary.json").read_text())["judges"]) == {
        "reference", "openai-compat-lenient", "openai-compat-strict"}


def test_a_judge_that_never_answers_is_an_error_not_a_verdict(run: Path) -> None:
    """The endpoint answers the check, then fails every question: no verdict on the one scenario
    the model was asked about, which is never counted as agreeing, and the re-judge fails."""
    with chat_server(lambda model, prompt: "ok" if prompt == PING else 500) as server:
        done = rejudge(run, "--judge", "openai-compat/down", "--judge-base-url", server.container_url,
                       "--retries", "1")
    assert done.returncode == 1, done.stderr
    rows = verdicts(run, "openai-compat-down")
    assert len(server.questions) == 2 and len(server.requests) == 3
    assert rows[REWORDED]["success"] is None and "HTTP 500" in rows[REWORDED]["error"]
    assert {key: row["success"] for key, row in rows.items() if key != REWORDED} == {
        key: value for key, value in IN_CONTAINER.items() if key != REWORDED}
    assert f"  no verdict: {REWORDED} (" in done.stdout and "HTTP 500" in done.stdout.split("no verdict:")[1]
    assert ("openai-compat-down: 3 passed, 0 failed, 1 error (no verdict); pass rate 75.0% (3/4; 95% CI "
            "30.1%-95.4%); agrees with the in-container verdict on 3 of the 3 it decided") in done.stdout
    assert done.stdout.splitlines()[-1] == ("rejudge: FAIL: openai-compat-down gave no verdict on 1 of 4 "
                                            "(the reasons: 'no verdict' above and rejudgments.jsonl)")


def test_an_unreachable_judge_is_refused_before_any_container(run: Path) -> None:
    """An all-pass judge that was never reached "agreed 100%": it is now refused up front."""
    with chat_server(lambda model, prompt: 500) as server:
        port = server.port
    done = rejudge(run, "--judge", "openai-compat/gone", "--judge-base-url", f"http://host.docker.internal:{port}/v1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"pytest-gaia2 rejudge: judge openai-compat/gone endpoint host.docker.internal:{port} "
                           "(model 'gone'): connection refused (is the server up? --judge-base-url); nothing was "
                           "judged\n")
    assert no_rejudge_containers(done)


def test_image_without_an_offline_judge_is_refused_by_name(run: Path, tmp_path: Path) -> None:
    derived_image(NO_JUDGE_IMAGE, "RUN rm /opt/gaia2_ref_rejudge.py")
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, symlinks=True, ignore=shutil.ignore_patterns("rejudge"))
    done = rejudge(copy, "--judge", "reference", "--image", NO_JUDGE_IMAGE)
    assert done.returncode == 2
    assert f"image {NO_JUDGE_IMAGE!r} has no offline judge" in done.stderr
    assert not (copy / "rejudge").exists()
    assert no_rejudge_containers(done)


def test_a_tag_that_moved_since_the_run_is_refused_unless_the_image_is_given(run: Path, tmp_path: Path) -> None:
    """The run's tag now names another image (rebuilt since): the judge inside may differ, so
    only an image the user names re-judges; the image named by a record is never launched."""
    copy = tmp_path / "moved"
    shutil.copytree(run, copy, symlinks=True, ignore=shutil.ignore_patterns("rejudge"))
    config = json.loads((copy / "run_config.json").read_text())
    config["provenance"]["image_id"] = "sha256:" + "0" * 64
    (copy / "run_config.json").write_text(json.dumps(config))
    lines = [json.loads(line) for line in (copy / "results.jsonl").read_text().splitlines()]
    (copy / "results.jsonl").write_text("".join(json.dumps({**r, "image": NO_JUDGE_IMAGE}) + "\n" for r in lines))
    done = rejudge(copy, "--judge", "reference")
    assert done.returncode == 2, done.stderr
    assert f"{IMAGE} is now image sha256:" in done.stderr and "the run used sha256:" + "0" * 64 in done.stderr
    assert "pass --image IMAGE" in done.stderr and not (copy / "rejudge" / "reference").exists()
    done = rejudge(copy, "--judge", "reference", "--image", IMAGE)
    assert done.returncode == 0, done.stderr
    assert json.loads((latest(copy) / "summary.json").read_text())["image"] == IMAGE


def test_an_image_whose_init_would_end_the_container_is_still_rejudged(run: Path, tmp_path: Path) -> None:
    """A Hermes or OpenClaw image's init starts its agent, which without a key may end the
    container: the re-judge never runs the init, only the judge."""
    dying = derived_image("pytest-gaia2-test/rejudge-init-dies:1",
                          "RUN printf '#!/usr/bin/bash\\necho no agent key >&2\\nexit 3\\n' > /opt/gaia2-init-entrypoint.sh")
    copy = tmp_path / "dying"
    shutil.copytree(run, copy, symlinks=True, ignore=shutil.ignore_patterns("rejudge"))
    done = rejudge(copy, "--judge", "reference", "--image", dying)
    assert done.returncode == 0, done.stderr
    assert {key: row["success"] for key, row in verdicts(copy, "reference").items()} == IN_CONTAINER
    assert no_rejudge_containers(done)
