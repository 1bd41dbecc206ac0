"""Two real Docker engines on one machine, one controller: scenarios spread over both by
capacity, none lost, none left on either engine; the adapter reached through the engine API;
a bad engine URL stopped before any container; a SIGKILLed worker's engine swept.

The second engine is started by ``scripts/start-second-engine.sh`` (its own socket, data root,
exec root, pid file and bridge) and left running for the next run; ``--stop`` stops it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from filelock import FileLock
from gaia2_testing import (
    REPO,
    SEARCH,
    SEARCH_IDS,
    BackgroundRun,
    child_pids,
    engine_events,
    record_engine_events,
    results_of,
    run_folder,
    run_id_of,
    run_pytest,
)

from pytest_gaia2.engine.client import RUN_LABEL, WORKER_LABEL
from pytest_gaia2.reference import build

FIRST = "unix:///var/run/docker.sock"
SECOND = "unix:///var/run/gaia2-docker2.sock"


SECOND_ENGINE_LOCK = Path(tempfile.gettempdir()) / "pytest-gaia2-tests-second-engine.lock"
"""Held by each test of this module while it uses the second engine: the tests on other xdist
workers would otherwise start runs there, copy or remove the image, while it reads the engine's
events or expects the copy."""


@pytest.fixture(scope="module")
def second_engine_up() -> str:
    """The second engine, up (started once by whichever worker comes first)."""
    if os.geteuid() != 0:
        pytest.skip("a second dockerd needs root")
    with FileLock(str(SECOND_ENGINE_LOCK)):
        done = subprocess.run(["bash", str(REPO / "scripts" / "start-second-engine.sh")], capture_output=True,
                              text=True)
    if done.returncode != 0:
        pytest.skip(f"the second engine did not start: {(done.stderr or done.stdout).strip()[-300:]}")
    record_engine_events(FIRST)
    record_engine_events(SECOND)
    return SECOND


@pytest.fixture
def second_engine(second_engine_up: str) -> Iterator[str]:
    """The second engine, this test's alone while it runs."""
    with FileLock(str(SECOND_ENGINE_LOCK)):
        yield second_engine_up


def _without_the_image(url: str) -> None:
    """The reference image removed from the engine, so the run's pre-flight copies it."""
    client = docker.DockerClient(base_url=url)
    try:
        client.images.remove(build.image_name(), force=True)
    except docker.errors.ImageNotFound:
        pass
    finally:
        client.close()


def _on(url: str, run_id: str) -> list[Any]:
    """The run's containers on one engine."""
    client = docker.DockerClient(base_url=url)
    try:
        return client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}, ignore_removed=True)
    finally:
        client.close()


def _created(events: list[dict[str, Any]]) -> set[str]:
    return {e["Actor"]["Attributes"]["name"] for e in events if e.get("Action") == "create"}


def _execs(events: list[dict[str, Any]]) -> list[str]:
    return [e["Action"] for e in events if str(e.get("Action", "")).startswith("exec_start")]


def _check_spread(path: Path, result: pytest.RunResult, since: float) -> tuple[list[dict[str, Any]], ...]:
    """Every scenario once and passed, containers created on both engines, none left: each engine's events."""
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text
    output = path / "out"
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == SEARCH_IDS, records
    assert all(r["outcome"] == "passed" for r in records), records
    run_id = run_id_of(output)
    config = json.loads((run_folder(output) / "run_config.json").read_text(encoding="utf-8"))
    assert [(e["address"], e["workers"]) for e in config["engines"]] == [(FIRST, ["gw0"]), (SECOND, ["gw1"])]
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    events = tuple(engine_events(since, engine=url, label=f"{RUN_LABEL}={run_id}") for url in (FIRST, SECOND))
    first, second = (_created(e) for e in events)
    assert first and second and not first & second, (first, second)
    scenario_containers = {r["container"] for r in records}
    assert scenario_containers <= first | second
    assert _on(FIRST, run_id) == [] and _on(SECOND, run_id) == []
    return events


def test_scenarios_spread_over_both_engines(second_engine: str, tmp_path: Path) -> None:
    _without_the_image(second_engine)
    since = time.time()
    result = run_pytest(tmp_path, "-n", "2", *SEARCH, f"--gaia2-engine={FIRST}#1", f"--gaia2-engine={second_engine}#1")
    text = "\n".join(result.outlines)
    assert f"copied image {build.image_name()} from {FIRST} to {SECOND}" in text, text
    first, second = _check_spread(tmp_path, result, since)
    assert _execs(first) == [] and _execs(second) == []  # both local: published ports, no exec


def test_the_adapter_reached_through_the_engine_api(second_engine: str, tmp_path: Path) -> None:
    """Forced on the second engine (local here; what a remote engine gets by default): every
    /health and /status is an exec of curl inside the container, none on the first engine."""
    since = time.time()
    result = run_pytest(tmp_path, "-n", "2", *SEARCH, f"--gaia2-engine={FIRST}", f"--gaia2-engine={second_engine}#1,api")
    first, second = _check_spread(tmp_path, result, since)
    assert _execs(first) == []
    assert len(_execs(second)) >= 2 * len(_created(second)), second  # at least /health and /status each


def test_a_bad_engine_url_stops_the_run_before_any_container(second_engine: str, tmp_path: Path) -> None:
    since = time.time()
    result = run_pytest(tmp_path, "-n", "2", *SEARCH, f"--gaia2-engine={second_engine}",
                        "--gaia2-engine=tcp://me:hunter2@build-host")
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    errors = [line for line in result.errlines if "--gaia2-engine" in line]
    assert len(errors) == 1 and "password" in errors[0], text
    assert "hunter2" not in text
    assert not (tmp_path / "out").exists()
    # Every creation on the second engine: this test holds it (SECOND_ENGINE_LOCK), and the run
    # was refused before its session had an id to filter by.
    assert engine_events(since, engine=second_engine, event="create") == []


def test_a_killed_worker_leaves_no_container_on_its_engine(
        second_engine: str, start_gaia2: Callable[..., BackgroundRun]) -> None:
    two = " or ".join(SEARCH_IDS[:2])
    run = start_gaia2("-n", "2", *SEARCH, "-k", two, "--gaia2-env", "GAIA2_FAULT_JUDGE_DELAY=15",
                      f"--gaia2-engine={FIRST}", f"--gaia2-engine={second_engine}")
    run_id = run.run_id()
    deadline = time.monotonic() + 60
    while not (_on(FIRST, run_id) and _on(SECOND, run_id)) and time.monotonic() < deadline:
        time.sleep(0.3)
    on_engine = {FIRST: _on(FIRST, run_id), SECOND: _on(SECOND, run_id)}
    assert all(on_engine.values()), f"a container on each engine expected:\n{run.text()}"
    workers = child_pids(run.process.pid)
    assert len(workers) == 2, workers
    os.kill(workers[1], signal.SIGKILL)
    left: dict[str, set[str]] = {}
    while time.monotonic() < deadline + 20:
        left = {url: {c.labels[WORKER_LABEL] for c in _on(url, run_id)} for url in (FIRST, SECOND)}
        if not all(left.values()):
            break
        time.sleep(0.3)
    assert run.process.poll() is None, "the run ended before the check"
    emptied = [url for url, found in left.items() if not found]
    assert len(emptied) == 1, f"the killed worker's engine still has its container: {left}"
    assert run.wait(120) == pytest.ExitCode.TESTS_FAILED, run.text()
    assert "crashed while running" in run.text(), run.text()
    assert _on(FIRST, run_id) == [] and _on(SECOND, run_id) == []
