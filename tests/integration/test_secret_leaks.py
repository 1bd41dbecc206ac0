"""No key ever leaves the environment: every byte a run writes is searched for a canary.

Every key variable, the variables named with --gaia2-api-key-env/--gaia2-judge-api-key-env,
a .env file, a --gaia2-env token and a proxy password hold recognisable fake keys. The image is named so its
profile (hermes) gets the keys, and its entrypoint prints them, as a careless agent image
would, before running the reference entrypoint; the scripted agent writes one into its
events, its answer and (through a wrong argument) the judge's failure reason. Runs that
pass, fail, crash, error in the daemon and fail to start are then searched: output folder,
Allure folder, JUnit file, captured output, and the engine's record of each container's
name and labels.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    DATA,
    KEY_VARIABLES,
    SHIPPED,
    WITH_ALLURE,
    derived_image,
    engine_events,
    gaia2_containers,
    run_id_of,
)
from leaks import holds, leaks_in

from pytest_gaia2.engine.client import RUN_LABEL

MARK = "LEAKCANARY"
SECRETS = {name: f"sk-test-{MARK}-{name}-0123456789"
           for name in (*KEY_VARIABLES, "TEAM_AGENT_KEY", "TEAM_JUDGE_KEY", "SOME_TOKEN", "DOTENV_TOKEN", "PROXY")}
PROXY_URL = f"http://team:{SECRETS['PROXY']}@proxy.example:3128"
LEAK_IMAGE = "pytest-gaia2-test/gaia2-hermes-leak:1"
NO_BASH_IMAGE = "pytest-gaia2-test/gaia2-hermes-nobash:1"
LEAKY_ENTRYPOINT = """#!/usr/bin/bash
# A careless agent image: prints every key it got to its log, then starts as usual.
env | grep -E 'KEY|TOKEN|PROXY' | tee -a /tmp/entrypoint.log
exec bash /opt/gaia2-reference-entrypoint.sh
"""
INPUTS = (".env", "script.jsonl")
"""Files the test writes with the keys in them; everything else must be clean, raw and decoded
(JSON escapes, URL and HTML encodings, base64: :mod:`leaks`)."""


@dataclass(frozen=True)
class Run:
    scenarios: tuple[Path, ...]
    args: tuple[str, ...]
    outcomes: dict[str, int]
    category: str | None = None  # the error category every record must have
    image: str = LEAK_IMAGE


RUNS = {
    # A pass and a judge failure on two workers, everything a user might switch on.
    "judged": Run((SHIPPED / "search" / "scenario_universe_21_7kww6e.json", DATA / "scenarios" / "judge_fail"),
                  ("-n", "2", "--log-cli-level=DEBUG"), {"passed": 1, "failed": 1}),
    # The agent's events, answer and the judge's reason carry a key.
    "scripted": Run((Path("leak"),), ("--gaia2-copy-in=script.jsonl:/opt/script.jsonl",
                                      "--gaia2-env=GAIA2_AGENT_SCRIPT=/opt/script.jsonl"), {"failed": 1}),
    # The container dies at once: its log tail, which prints the keys, goes into the error.
    "crash": Run((Path("leak"),), ("--gaia2-env=GAIA2_FAULT_EXIT_CODE=3", "--gaia2-env=GAIA2_FAULT_EXIT_AFTER=0"),
                 {"errors": 1}, "container_exited"),
    "daemon_error": Run((Path("leak"),), ("--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1", "--gaia2-judge-grace=1"),
                        {"errors": 1}),
    # The engine refuses to start the container (the image has no bash).
    "start_failure": Run((Path("leak"),), (), {"errors": 1}, "container_start", NO_BASH_IMAGE),
    # A folder given to --gaia2-copy-in: refused at start-up (a usage error, no run folder),
    # shown with -l (locals) and -vv: the settings in those locals hold every key.
    "before_any_container": Run((Path("leak"),), ("-l", "--gaia2-copy-in=leak:/opt/leak"), {}),
}


@pytest.fixture(scope="module")
def images() -> None:
    derived_image(LEAK_IMAGE, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-reference-entrypoint.sh",
                  "COPY leaky-entrypoint.sh /opt/gaia2-init-entrypoint.sh",
                  files={"leaky-entrypoint.sh": LEAKY_ENTRYPOINT.encode()})
    derived_image(NO_BASH_IMAGE, "RUN rm -f /usr/bin/bash /bin/bash")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_no_key_in_anything_the_run_wrote(
    name: str, images: None, pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch
) -> None:
    run = RUNS[name]
    for variable, secret in SECRETS.items():
        if variable not in ("DOTENV_TOKEN", "PROXY"):
            clean_env.setenv(variable, secret)
    clean_env.setenv("HTTPS_PROXY", PROXY_URL)
    clean_env.setenv("XDG_CACHE_HOME", str(pytester.path / ".cache"))  # the run's cache is scanned with the rest
    (pytester.path / ".env").write_text(f"DOTENV_TOKEN={SECRETS['DOTENV_TOKEN']}\n", encoding="utf-8")
    (pytester.path / "leak" / "search").mkdir(parents=True)
    shutil.copy(DATA / "reference" / "reference_pass.json", pytester.path / "leak" / "search")
    script = [
        {"app": "Contacts", "fn": "search_contacts", "args": {"query": "Alba"}, "w": False, "ret": ["c-alba"]},
        {"app": "Contacts", "fn": "edit_contact", "w": True, "ret": "c-alba",
         "args": {"contact_id": "c-alba", "updates": {"job": SECRETS["SOME_TOKEN"]}}},
        {"app": "AgentUserInterface", "fn": "send_message_to_user", "w": True,
         "args": {"content": f"my key is {SECRETS['ANTHROPIC_API_KEY']}"}},
    ]
    (pytester.path / "script.jsonl").write_text("".join(json.dumps(line) + "\n" for line in script), encoding="utf-8")
    started = time.time()
    result = run_gaia2(
        "-v", "-v", "--log-level=DEBUG", "--junitxml=junit.xml", *WITH_ALLURE, "--alluredir=allure",
        f"--gaia2-image={run.image}", "--gaia2-provider=anthropic", "--gaia2-model=m",
        "--gaia2-judge-provider=anthropic", "--gaia2-judge-model=j", "--gaia2-api-key-env=TEAM_AGENT_KEY",
        "--gaia2-judge-api-key-env=TEAM_JUDGE_KEY", f"--gaia2-env=SOME_TOKEN={SECRETS['SOME_TOKEN']}",
        "--gaia2-gateway=off",  # the keys in the containers' environment, for the masking to be tested
        "--gaia2-health-timeout=30", *(f"--gaia2-scenarios={path}" for path in run.scenarios), *run.args,
    )
    if name == "before_any_container":
        assert result.ret == pytest.ExitCode.USAGE_ERROR and not (pytester.path / "out").exists()
        assert "is not a regular file (for /opt/leak)" in result.stderr.str()
        assert leaks_in(pytester.path, [MARK], skip=INPUTS) == []
        assert not holds("\n".join(result.outlines + result.errlines), MARK)
        return
    result.assert_outcomes(**run.outcomes)
    output = pytester.path / "out"
    run_id = run_id_of(output)
    assert gaia2_containers(run_id) == []
    records = [json.loads(p.read_text(encoding="utf-8")) for p in output.rglob("result.json")]
    assert records and (run.category is None or all(r["error_category"] == run.category for r in records))

    written = [pytester.path / "junit.xml", pytester.path / "stdout", pytester.path / "stderr"]
    assert all(path.is_file() for path in written) and any((pytester.path / "allure").glob("*-result.json"))
    assert leaks_in(pytester.path, [MARK], skip=INPUTS) == []
    captured = "\n".join(result.outlines + result.errlines)
    assert not holds(captured, MARK)
    events = engine_events(started, label=f"{RUN_LABEL}={run_id}")
    assert any(e.get("Action") == "create" for e in events), "the engine recorded no container of the run"
    assert not holds(json.dumps(events), MARK)

    # The keys were really there, and masked: not a clean run that proves nothing.
    masked = "\n".join(p.read_text(encoding="utf-8") for p in output.rglob("*.log"))
    masked += "\n".join(str(r.get("error")) + str(r.get("failure_reasons")) + r["agent_response"] for r in records)
    if name != "start_failure":
        assert "API_KEY=***" in masked and "HTTPS_PROXY=http://team:***@proxy.example:3128" in masked
    if name == "scripted":
        assert "'job': '***'" in masked and "my key is ***" in masked
    if name == "crash":
        assert "API_KEY=***" in str(records[0]["error"])
