"""``pytest-gaia2 rejudge`` with gaia2-cli's own judge: Meta's gaia2-core and gaia2-cli[judge]
(LiteLLM) installed from upstream's source into a test image, judging runs the reference image made.

The test image is the reference image without its offline judge plus upstream's two packages;
its /usr/local/bin/gaia2-eventd is the console script every gaia2-cli image starts, which is how
rejudge finds the Python that holds the judge. Upstream's source comes from a git repository of
facebookresearch/meta-agents-research-environments: ``PYTEST_GAIA2_UPSTREAM_GIT`` (a clone or a
bare mirror), else a shallow clone from GitHub; its dependencies are downloaded on the host with
pip (wheels for the image's Python) and installed offline in the build. The image is kept by tag
(upstream commit, base image id); when the source or the dependencies cannot be had, the tests
skip saying which.
"""

from __future__ import annotations

import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from gaia2_testing import SHIPPED, derived_image, made_once, run_folder, run_pytest
from llm_server import chat_server
from test_rejudge import (  # the scripted search run (three passes, one failure) and its helpers
    CANARY,
    CAPITALS,
    IN_CONTAINER,
    REWORDED,
    latest,
    no_rejudge_containers,
    rejudge,
    run,  # noqa: F401 - a fixture
    verdicts,
)

from pytest_gaia2.engine.archive import tar_files
from pytest_gaia2.reference import build
from pytest_gaia2.run.rejudge_images import eventd_python

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

UPSTREAM = "https://github.com/facebookresearch/meta-agents-research-environments"
UPSTREAM_ENV = "PYTEST_GAIA2_UPSTREAM_GIT"
SOURCES = ("gaia2-cli/core", "gaia2-cli/cli")
IMAGE = "pytest-gaia2-test/gaia2-cli-rejudge-oracle"
COMMIT_LABEL = "org.pytest-gaia2-test.upstream-commit"
BASE_LABEL = "org.pytest-gaia2-test.base-image"
TAMPERED = {  # the same three edits, judged by both judges: the reason each gives, as a pattern
    "execution/scenario_universe_28_5zyiit": re.escape("Cannot match MessagingAppV2__send_message"),
    # 40 s after the first event, which the run itself placed a second either way of the turn's start
    "time/scenario_universe_26_quwx1e": r"time check failed \(agent_relative=(39|40|41)s, oracle_relative=4s\)",
    "adaptability/scenario_universe_29_r5pzv7": re.escape(
        "Tool count mismatch: agent={}, oracle={'MessagingAppV2__send_message': 1}"),
}


def git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, timeout=300).stdout


def upstream_source(cache: Path) -> tuple[str, bytes]:
    """(commit, tar of upstream's gaia2-core and gaia2-cli sources); skips when neither the
    configured repository nor GitHub can give them."""
    repo = os.environ.get(UPSTREAM_ENV, "").strip()
    if not repo:
        repo = str(cache / "upstream.git")
        done = subprocess.run(["git", "clone", "--quiet", "--bare", "--depth", "1", UPSTREAM, repo],
                              check=False, capture_output=True, text=True, timeout=600)
        if done.returncode:
            pytest.skip(f"upstream's source cannot be fetched ({UPSTREAM}: {done.stderr.strip()[-300:]}); "
                        f"set {UPSTREAM_ENV} to a git repository of it")
    try:
        return git(repo, "rev-parse", "HEAD").decode().strip(), git(repo, "archive", "--format=tar", "HEAD", *SOURCES)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"upstream's source cannot be read from {repo}: {exc.stderr.decode(errors='replace')[-300:]}")


def requirements(source: bytes) -> list[str]:
    """What upstream's pyproject.toml files ask for (build backend, gaia2-cli's judge extra), but
    gaia2-core itself, which comes from the source."""
    wanted: list[str] = []
    with tarfile.open(fileobj=io.BytesIO(source)) as archive:
        for folder in SOURCES:
            member = archive.extractfile(f"{folder}/pyproject.toml")
            assert member is not None
            project = tomllib.load(member)
            wanted += [*project["build-system"]["requires"], *project["project"]["dependencies"],
                       *project["project"].get("optional-dependencies", {}).get("judge", [])]
    return sorted({spec for spec in wanted if not spec.startswith("gaia2-")})


def wheels(python: str, wanted: list[str], dest: Path) -> dict[str, bytes]:
    """pip and the wheels of ``wanted`` for the image's CPython ``python`` (``3.11``), from PyPI
    through the host's pip; skips when they cannot be downloaded."""
    arch = platform.machine()
    tags = [flag for tag in ("manylinux2014", "manylinux_2_17", "manylinux_2_28") for flag in ("--platform", f"{tag}_{arch}")]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest), "--only-binary=:all:",
         "--python-version", python, "--implementation", "cp", "--abi", f"cp{python.replace('.', '')}", *tags,
         "pip", *wanted], check=False, capture_output=True, text=True, timeout=900)
    if done.returncode:
        pytest.skip(f"upstream's dependencies cannot be downloaded for Python {python}: {done.stderr.strip()[-400:]}")
    return {path.name: path.read_bytes() for path in sorted(dest.iterdir())}


def image_python(client: docker.DockerClient, image: str) -> str:
    """``3.11``: the version of the image's python3, for the wheels."""
    out = client.containers.run(image, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                entrypoint=["python3"], remove=True)
    return out.decode().strip()


@pytest.fixture(scope="module")
def gaia2_cli_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The reference image with upstream's gaia2-core and gaia2-cli[judge] and without its own judge."""
    from filelock import FileLock

    from pytest_gaia2.run.preflight import IMAGE_BUILD_LOCK

    cache = tmp_path_factory.mktemp("gaia2-cli-build")
    commit, source = upstream_source(cache)
    tag = f"{IMAGE}:{commit[:12]}"
    client = docker.from_env()
    try:
        with FileLock(str(IMAGE_BUILD_LOCK)):
            base = build.ensure_image(client, log=lambda line: None)
        try:
            labels = client.images.get(tag).labels or {}
            if labels.get(COMMIT_LABEL) == commit and labels.get(BASE_LABEL) == base:
                return tag
        except docker.errors.ImageNotFound:
            pass
        downloaded = wheels(image_python(client, build.image_name()), requirements(source), cache / "wheels")
    finally:
        client.close()
    pip = next(name for name in downloaded if name.startswith("pip-"))
    try:
        derived_image(
            tag, "ADD gaia2-cli-src.tar /tmp/gaia2-src/", "ADD wheels.tar /tmp/wheels/",
            # gaia2-cli declares Python >= 3.12; the bootstrapped reference base has 3.11, which runs it.
            f"RUN python3 /tmp/wheels/{pip}/pip install --no-index --find-links /tmp/wheels --no-cache-dir "
            "--root-user-action=ignore --break-system-packages --ignore-requires-python "
            "/tmp/gaia2-src/gaia2-cli/core '/tmp/gaia2-src/gaia2-cli/cli[judge]' "
            "&& rm -rf /tmp/gaia2-src /tmp/wheels /opt/gaia2_ref_rejudge.py",
            f"LABEL {COMMIT_LABEL}={commit} {BASE_LABEL}={base}",
            files={"gaia2-cli-src.tar": source,
                   "wheels.tar": tar_files([(name, content, 0o644) for name, content in downloaded.items()])})
    except docker.errors.BuildError as exc:
        pytest.skip(f"upstream's packages cannot be installed in the test image: {exc}")
    return tag


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every shipped split replayed by the reference image's oracle: all pass in the container.
    Made once per session: the two tests reading it may run on two xdist workers."""

    def make(folder: Path) -> None:
        result = run_pytest(folder, "-n", "4", f"--gaia2-scenarios={SHIPPED}", f"--gaia2-image={build.image_name()}",
                            "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
        result.assert_outcomes(passed=12)

    return run_folder(made_once(tmp_path_factory, "oracle-run", make) / "out")


def as_image(run_path: Path, dest: Path, image: str) -> Path:
    """A copy of the run whose run_config names ``image`` (its id too): what rejudge judges with."""
    shutil.copytree(run_path, dest, symlinks=True, ignore=shutil.ignore_patterns("rejudge"))
    client = docker.from_env()
    try:
        image_id = client.images.get(image).id
    finally:
        client.close()
    config = json.loads((dest / "run_config.json").read_text())
    config["provenance"].update(image=image, image_id=image_id)
    (dest / "run_config.json").write_text(json.dumps(config))
    return dest


def tamper(run_path: Path) -> None:
    """The edits of TAMPERED: another recipient, a message 40 s late, a first turn's message gone."""
    def edit(key: str, change: Any) -> None:
        path = run_path / key / "events.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(line) + "\n" for line in change(lines)))

    def recipient(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**line, "args": {**line["args"], "user_id": "+1 555 0000"}} if line["fn"] == "send_message" else line
                for line in lines]

    edit("execution/scenario_universe_28_5zyiit", recipient)
    edit("time/scenario_universe_26_quwx1e",
         lambda lines: [lines[0], *({**line, "sim_t": "2025-01-21 15:00:40"} for line in lines[1:])])
    edit("adaptability/scenario_universe_29_r5pzv7", lambda lines: lines[1:])


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_upstream_judge_reproduces_the_daemon_on_every_shipped_split(
        gaia2_cli_image: str, oracle_run: Path, tmp_path: Path) -> None:
    copy = as_image(oracle_run, tmp_path / "run", gaia2_cli_image)
    done = rejudge(copy, "--judge", "reference")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    rows = verdicts(copy, "reference")
    assert len(rows) == 12 and all(row["success"] is True for row in rows.values())
    for key in rows:  # multi-turn, ENV and time scenarios: the daemon's status, turn by turn
        judged = latest(copy) / "reference" / key
        assert json.loads((judged / "status.json").read_text()) == json.loads(
            (copy / key / "daemon_status.json").read_text()), key
        assert [(r["turn"], r["success"]) for r in lines_of(judged / "judgments.jsonl")] == [
            (r["turn"], r["success"]) for r in lines_of(copy / key / "daemon_judgments.jsonl")], key
    assert "reference: 12 passed, 0 failed, 0 errors" in done.stdout
    assert no_rejudge_containers(done)


def test_upstream_judge_fails_what_the_reference_judge_fails(
        gaia2_cli_image: str, oracle_run: Path, tmp_path: Path) -> None:
    judged = {}
    for image in (build.image_name(), gaia2_cli_image):
        copy = as_image(oracle_run, tmp_path / image.replace("/", "_").replace(":", "_"), image)
        tamper(copy)
        done = rejudge(copy, "--judge", "reference")
        assert done.returncode == 0, done.stderr
        judged[image] = verdicts(copy, "reference")
        summary = json.loads((latest(copy) / "summary.json").read_text())
        assert sorted(summary["judges"]["reference"]["flipped_to_fail"]) == sorted(TAMPERED)
    reference, upstream = judged[build.image_name()], judged[gaia2_cli_image]
    assert {k: r["success"] for k, r in upstream.items()} == {k: r["success"] for k, r in reference.items()}
    for key, reason in TAMPERED.items():
        found = [re.search(reason, judged_by[key]["failure_reason"]) for judged_by in (upstream, reference)]
        assert found[0] and found[1] and found[0][0] == found[1][0], key


def test_model_judges_through_upstreams_litellm_engine(gaia2_cli_image: str, run: Path, tmp_path: Path) -> None:  # noqa: F811
    copy = as_image(run, tmp_path / "run", gaia2_cli_image)

    def reply(model: str, prompt: str) -> str:
        return "Same facts. [[Success]]" if model == "lenient" else "Not the oracle's words. [[Failure]]"

    with chat_server(reply) as server:
        done = rejudge(copy, "--judge", "reference", "--judge", "openai-compat/lenient", "--judge",
                       "openai-compat/strict", "--judge-base-url", server.container_url,
                       "--judge-api-key-env", "TEAM_JUDGE_KEY", env={"TEAM_JUDGE_KEY": CANARY})
    assert done.returncode == 0, done.stderr
    # Only the reworded answer differs from the oracle's after upstream's normalisation (case,
    # punctuation): the one question each model is asked, through LiteLLM's OpenAI route.
    assert sorted(r.model for r in server.questions) == ["lenient", "strict"]
    assert all("17:42" in r.prompt and r.authorization == f"Bearer {CANARY}" for r in server.questions)
    hard_only, lenient, strict = (verdicts(copy, slug) for slug in (
        "reference", "openai-compat-lenient", "openai-compat-strict"))
    # Without a model upstream skips soft checks ("no LLM, hard-only"): the reworded answer passes.
    assert {key: row["success"] for key, row in hard_only.items()} == {**IN_CONTAINER, REWORDED: True}
    assert {key: row["success"] for key, row in lenient.items()} == {**IN_CONTAINER, REWORDED: True}
    assert {key: row["success"] for key, row in strict.items()} == IN_CONTAINER
    assert strict[REWORDED]["failure_reason"].startswith("Cannot match AgentUserInterface__send_message_to_user")
    assert hard_only[CAPITALS]["success"] is True
    record = lines_of(latest(copy) / "openai-compat-strict" / REWORDED / "judgments.jsonl")[0]
    assert "[[Failure]]" in record["match_details"][0]["judge_output"]
    leaks = [p for p in copy.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert leaks == []
    assert CANARY not in done.stdout + done.stderr
    assert no_rejudge_containers(done)


def test_a_model_that_cannot_answer_is_an_error_not_a_failed_check(
        gaia2_cli_image: str, run: Path, tmp_path: Path) -> None:  # noqa: F811
    """Upstream's daemon counts an unanswered check as a failure; a re-judge gives no verdict."""
    copy = as_image(run, tmp_path / "run", gaia2_cli_image)
    with chat_server(lambda model, prompt: 400) as server:
        done = rejudge(copy, "--judge", "openai-compat/down", "--judge-base-url", server.container_url,
                       "--judge-api-key-env", "TEAM_JUDGE_KEY", "--retries", "1", env={"TEAM_JUDGE_KEY": CANARY})
    assert done.returncode == 1, done.stderr
    rows = verdicts(copy, "openai-compat-down")
    assert len(server.questions) == 2  # asked once per pass, the error pass asked again (the ping's 400 is a warning)
    assert rows[REWORDED]["success"] is None and "did not answer" in rows[REWORDED]["error"]
    assert rows[REWORDED]["passes"] == 2
    assert {key: row["success"] for key, row in rows.items() if key != REWORDED} == {
        key: value for key, value in IN_CONTAINER.items() if key != REWORDED}
    assert CANARY not in rows[REWORDED]["error"] + done.stdout + done.stderr
    assert no_rejudge_containers(done)


@pytest.mark.parametrize(("script", "python"), [
    (b"#!/usr/local/bin/python3.12\nfrom gaia2_cli.daemon.eventd import main\n", "/usr/local/bin/python3.12"),
    ((b"#!/bin/sh\n'''exec' \"/opt/a/very/long/venv/bin/python\" \"$0\" \"$@\"\n' '''\n"
      b"from gaia2_cli.daemon.eventd import main\n"), "/opt/a/very/long/venv/bin/python"),
    (b"#!/usr/bin/python3\nfrom other.daemon import main\n", None),
    (b"#!/usr/bin/env bash\n# gaia2_cli.daemon.eventd\n", None),
])
def test_the_judges_python_is_read_from_the_eventd_script(script: bytes, python: str | None) -> None:
    assert eventd_python(script) == python
