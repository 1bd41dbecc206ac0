"""Pre-flight through pytester: the report of --gaia2-preflight-only, each failed check with
its fix, and what the same problems do to a normal run (stop before any container)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest
from gaia2_testing import (
    SHIPPED,
    derived_image,
    engine_events,
    gaia2_containers,
    run_folder,
    run_id_of,
    session_containers,
    session_prefix,
)

from pytest_gaia2.engine.client import RUN_LABEL
from pytest_gaia2.run.terms import EXIT_REFUSED

HERMES = "pytest-gaia2-test/gaia2-hermes-envprobe:1"
MISSING = "pytest-gaia2-test/never-built:0"
SCENARIOS = f"--gaia2-scenarios={SHIPPED / 'search'}"
AGENT = ("--gaia2-provider=anthropic", "--gaia2-model=m", "--gaia2-judge-provider=anthropic",
         "--gaia2-judge-model=j")


def closed_port() -> int:
    """A host port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


def test_report_lists_every_check_and_records_engine_and_image(
    pytester: pytest.Pytester, run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch, host_server: tuple[int, str]
) -> None:
    port, _ = host_server
    result = run_gaia2_inprocess("--gaia2-preflight-only", SCENARIOS,
                       f"--gaia2-base-url=http://host.docker.internal:{port}/v1")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "gaia2 pre-flight:",
        "  [[]ok[]] engine answers: * (version *)",
        "  [[]ok[]] settings complete for the image's profile (oracle)",
        "  [[]ok[]] image pytest-gaia2/reference-oracle:* present (sha256:*)",
        "  [[]ok[]] entrypoint scripts have Unix line endings",
        f"  [[]ok[]] model endpoint host.docker.internal:{port} reachable from a container",
    ])
    assert "FAIL" not in result.stdout.str() and "passed" not in result.stdout.str()
    assert not (pytester.path / "out").exists()  # pre-flight only: no run folder
    assert session_containers(session_prefix(result.stdout.str())) == []


def test_each_failed_check_comes_with_its_fix(
    pytester: pytest.Pytester, run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch
) -> None:
    """A hermes image without model or judge, key variables named but unset or empty, and a
    model endpoint nobody serves (a warning: the report still ends in the failures' exit code)."""
    derived_image(HERMES)
    clean_env.setenv("TEAM_JUDGE_KEY", "")
    port = closed_port()
    result = run_gaia2_inprocess("--gaia2-preflight-only", SCENARIOS, f"--gaia2-image={HERMES}",
                       "--gaia2-api-key-env=TEAM_KEY", "--gaia2-judge-api-key-env=TEAM_JUDGE_KEY",
                       f"--gaia2-base-url=http://host.docker.internal:{port}/v1")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "  [[]ok[]] engine answers: *",
        "  [[]FAIL[]] settings complete for the image's profile (hermes)",
        f"         fix: Agent model configuration is required for image {HERMES}. "
        "Missing: --gaia2-provider, --gaia2-model",
        "         fix: --gaia2-api-key-env: the variable TEAM_KEY is not set or empty",
        f"         fix: In-container judge configuration is required for image {HERMES}. Missing: "
        "--gaia2-judge-model / GAIA2_JUDGE_MODEL, --gaia2-judge-provider / GAIA2_JUDGE_PROVIDER",
        "         fix: --gaia2-judge-api-key-env: the variable TEAM_JUDGE_KEY is not set or empty",
        f"  [[]ok[]] image {HERMES} present *",
        "  [[]ok[]] entrypoint scripts have Unix line endings",
        f"  [[]warn[]] model endpoint host.docker.internal:{port} did not accept a TCP connection *",
    ])
    assert session_containers(session_prefix(result.stdout.str())) == []


def test_without_preflight_only_the_same_problems_are_one_usage_error(
    pytester: pytest.Pytester, run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch
) -> None:
    result = run_gaia2_inprocess(SCENARIOS, f"--gaia2-image={HERMES}", "--gaia2-api-key-env=TEAM_KEY")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert errors.count("pytest-gaia2 configuration:") == 1
    for missing in ("--gaia2-provider, --gaia2-model", "the variable TEAM_KEY is not set or empty",
                    "--gaia2-judge-model / GAIA2_JUDGE_MODEL, --gaia2-judge-provider / GAIA2_JUDGE_PROVIDER"):
        assert missing in errors
    assert not (pytester.path / "out").exists()  # stopped at start-up: no run, no container


@pytest.mark.parametrize("preflight_only", [True, False], ids=["preflight-only", "run"])
def test_missing_image_is_named_with_how_to_get_it(
    preflight_only: bool, run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch
) -> None:
    flags = ("--gaia2-preflight-only",) if preflight_only else ()
    result = run_gaia2_inprocess(*flags, SCENARIOS, f"--gaia2-image={MISSING}", *AGENT)
    fix = f"image '{MISSING}' is not on the engine at *; build or pull it (e.g. *docker pull {MISSING}*"
    if preflight_only:
        assert result.ret == 1
        result.stdout.fnmatch_lines([f"  [[]FAIL[]] image {MISSING} present", f"         fix: {fix}"])
    else:
        assert result.ret == EXIT_REFUSED
        result.stdout.fnmatch_lines([f"*pytest-gaia2: {fix}"])
        assert "PASSED" not in result.stdout.str() and "ERROR" not in result.stdout.str()


@pytest.mark.parametrize("preflight_only", [True, False], ids=["preflight-only", "run"])
def test_crlf_scripts_in_the_image_are_caught_before_any_scenario(
    preflight_only: bool, run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no per-image result cached yet
    image = f"pytest-gaia2-test/gaia2-oracle-crlf:{'preflight' if preflight_only else 'run'}"
    derived_image(image, "COPY helper.sh /opt/helper.sh", files={"helper.sh": b"#!/usr/bin/bash\r\necho hello\r\n"})
    flags = ("--gaia2-preflight-only",) if preflight_only else ()
    started = time.time()
    result = run_gaia2_inprocess(*flags, SCENARIOS, f"--gaia2-image={image}", *AGENT[2:])
    if preflight_only:
        assert result.ret == 1
        result.stdout.fnmatch_lines([
            "  [[]ok[]] settings complete for the image's profile (oracle)",
            "  [[]FAIL[]] entrypoint scripts have Unix line endings",
            "         fix: convert to LF and rebuild the image: opt/helper.sh",
        ])
    else:
        assert result.ret == EXIT_REFUSED
        result.stdout.fnmatch_lines(["*CRLF line endings: opt/helper.sh; convert them to LF and rebuild the image*"])
        assert "PASSED" not in result.stdout.str()
    # The check's own container: found through the engine's record (a failed pre-flight
    # writes no run folder), and gone.
    prefix = session_prefix(result.stdout.str())
    runs = {event["Actor"]["Attributes"][RUN_LABEL] for event in engine_events(started, label=RUN_LABEL)
            if event["Actor"]["Attributes"][RUN_LABEL].startswith(prefix)}
    assert runs and all(gaia2_containers(run_id) == [] for run_id in runs)


def test_a_second_run_on_the_same_image_reuses_the_line_ending_check(
    run_gaia2_inprocess: Any, clean_env: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Per-image checks are cached by image id: the second pre-flight starts no helper container."""
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    helpers = []
    for _ in range(2):
        started = time.time()
        result = run_gaia2_inprocess("--gaia2-preflight-only", SCENARIOS)
        assert result.ret == 0
        prefix = session_prefix(result.stdout.str())
        helpers.append([e for e in engine_events(started, label=RUN_LABEL)
                        if e["Actor"]["Attributes"][RUN_LABEL].startswith(prefix) and e.get("Action") == "create"])
    assert len(helpers[0]) >= 1 and helpers[1] == []


def test_unreachable_endpoint_warns_and_the_run_goes_on(
    pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch
) -> None:
    port = closed_port()
    result = run_gaia2(f"--gaia2-scenarios={SHIPPED / 'search' / 'scenario_universe_21_7kww6e.json'}",
                       f"--gaia2-base-url=http://host.docker.internal:{port}/v1")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"gaia2: warning: model endpoint host.docker.internal:{port} did not accept*"])
    assert gaia2_containers(run_id_of(pytester.path / "out")) == []
    run_config = json.loads((run_folder(pytester.path / "out") / "run_config.json").read_text(encoding="utf-8"))
    assert run_config["engine"]["version"] and run_config["provenance"]["image_id"].startswith("sha256:")
