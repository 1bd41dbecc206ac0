"""Parallel and leak-proof, on the real engine: xdist workers never collide on ports, runs never
touch each other's containers, and no container outlives its run however the run ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from filelock import FileLock
from gaia2_testing import (
    DATA,
    REAPING_LOCK,
    SEARCH,
    SEARCH_IDS,
    BackgroundRun,
    child_pids,
    gaia2_containers,
    results_of,
    run_folder,
    run_id_of,
)

from pytest_gaia2.engine import client as engine
from pytest_gaia2.engine.ports import worker_slice
from pytest_gaia2.run.run_end import WIND_DOWN_MISSED, WORKER_WIND_DOWN
from pytest_gaia2.run.terms import EXIT_REFUSED

HANG = ("--gaia2-env", "GAIA2_FAULT_HANG=1")  # containers stay up until the run is interrupted


def _workers(containers: list[Any]) -> set[str]:
    return {c.labels[engine.WORKER_LABEL] for c in containers}


@pytest.mark.slow
def test_forty_scenarios_on_four_workers_each_through_its_own_port(pytester: pytest.Pytester, run_gaia2) -> None:
    """Containers start at the same moment on four workers; every host port comes from the engine."""
    many = DATA / "scenarios" / "many"
    ids = sorted(p.stem for p in (many / "search").glob("*.json"))
    assert len(ids) == 40
    started = time.monotonic()
    result = run_gaia2("-n", "4", f"--gaia2-scenarios={many}")
    elapsed = time.monotonic() - started
    result.assert_outcomes(passed=40)
    output = pytester.path / "out"
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == ids
    assert all(r["outcome"] == "passed" and r["error_category"] is None for r in records)
    assert {r["worker"] for r in records} == {"gw0", "gw1", "gw2", "gw3"}
    # Each adapter was reached through its own engine-assigned port on 127.0.0.1 (never the
    # container port itself) and its own container, named after its scenario.
    assert all(r["adapter_port"] == 8090 for r in records)
    host_ports = [r["host_port"] for r in records]
    assert len(set(host_ports)) == 40 and 8090 not in host_ports, host_ports
    assert all(r["scenario_id"] in r["container"] for r in records)
    assert len({r["container"] for r in records}) == 40
    assert gaia2_containers(run_id_of(output)) == []
    print(f"stress: 40 scenarios on -n 4 in {elapsed:.1f} s")


@pytest.mark.parametrize("how", ["SIGINT to pytest", "SIGINT to the process group (Ctrl-C)", "SIGTERM to pytest"])
def test_interrupted_run_leaves_no_container(start_gaia2: Callable[..., BackgroundRun], how: str) -> None:
    """However the run is signalled, each scenario in flight gets one record and no container is
    left, well before WORKER_WIND_DOWN: a signal to the controller alone is forwarded to its workers."""
    run = start_gaia2("-n", "2", *SEARCH, *HANG)
    containers = run.wait_for_containers(2)
    assert _workers(containers) == {"gw0", "gw1"}
    in_flight = {c.labels[engine.SCENARIO_LABEL] for c in containers}
    signalled = time.monotonic()
    if how.startswith("SIGINT to the process group"):
        os.killpg(run.process.pid, signal.SIGINT)
    else:
        os.kill(run.process.pid, signal.SIGINT if how.startswith("SIGINT") else signal.SIGTERM)
    assert run.wait(90) == pytest.ExitCode.INTERRUPTED, run.text()
    took = time.monotonic() - signalled
    assert gaia2_containers(run.run_id()) == []
    ids = [record["scenario_id"] for record in run.results()]
    assert all(ids.count(scenario) == 1 for scenario in in_flight), (in_flight, ids)
    # Without the forwarded signal the controller waits the whole WORKER_WIND_DOWN for its workers.
    assert WIND_DOWN_MISSED not in run.text() and took < WORKER_WIND_DOWN, f"the run took {took:.1f} s to end"
    last = run.text().splitlines()[-1]  # the verdict line, after pytest's own, under -n 2 too
    assert last.startswith("gaia2: INCOMPLETE: ") and last.endswith(
        " planned scenarios did not run; stopped early: interrupted (Ctrl-C, SIGTERM or a collection error)"), last


def test_killed_worker_containers_are_removed_by_the_controller(start_gaia2: Callable[..., BackgroundRun]) -> None:
    """SIGKILL runs no teardown in the worker: the controller removes its containers at once."""
    two = " or ".join(SEARCH_IDS[:2])
    run = start_gaia2("-n", "2", *SEARCH, "-k", two, "--gaia2-env", "GAIA2_FAULT_JUDGE_DELAY=15")
    containers = run.wait_for_containers(2)
    assert _workers(containers) == {"gw0", "gw1"}
    workers = child_pids(run.process.pid)
    assert len(workers) == 2, workers
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while len(_workers(gaia2_containers(run.run_id()))) > 1 and time.monotonic() < deadline:
        time.sleep(0.3)
    survivors = gaia2_containers(run.run_id())
    assert run.process.poll() is None, "the run ended before the check"
    assert len(_workers(survivors)) == 1, "the killed worker's container is still there"
    assert run.wait(120) == pytest.ExitCode.TESTS_FAILED, run.text()
    text = run.text()
    assert "crashed while running" in text and "1 failed, 1 passed" in text, text
    assert gaia2_containers(run.run_id()) == []


def test_two_runs_at_once_leave_each_other_alone(start_gaia2: Callable[..., BackgroundRun]) -> None:
    """The second run starts while the first has containers, and reaps with no grace at all:
    the first run's owner is alive, so its containers are not orphans."""
    two = " or ".join(SEARCH_IDS[:2])  # one container a worker: the claim is about the reaping, not the count
    with FileLock(str(REAPING_LOCK)):
        first = start_gaia2("-n", "2", *SEARCH, "-k", two, "--gaia2-env", "GAIA2_FAULT_JUDGE_DELAY=8", output="first")
        first.wait_for_containers(1)
        second = start_gaia2(*SEARCH, "-k", two, "--gaia2-reap-grace=0", output="second")
        second.run_id()  # pre-flight, with its reaping, is done
        assert gaia2_containers(first.run_id()), "the first run should still have containers"
    assert first.wait() == 0, first.text()
    assert second.wait() == 0, second.text()
    assert first.run_id() != second.run_id()
    ours = {r["container"] for run in (first, second) for r in results_of(run.output)}
    for run in (first, second):
        records = results_of(run.output)
        assert sorted(r["scenario_id"] for r in records) == SEARCH_IDS[:2]
        assert all(r["outcome"] == "passed" for r in records), records
        # Neither reaped the other's containers (another test's orphans, on another xdist
        # worker, may be reaped and named: they are not these runs').
        reaped = [line for line in run.text().splitlines() if "left by earlier runs" in line]
        assert not [name for name in ours if any(name in line for line in reaped)], reaped
        assert gaia2_containers(run.run_id()) == []


def _plant(owner_pid: int, age: float) -> Any:
    """A sleeping container labelled as a pytest-gaia2 run owned by ``owner_pid``, ``age`` s old."""
    import docker

    from pytest_gaia2.reference import build

    client = docker.from_env()
    try:
        return client.containers.run(
            build.image_name(), entrypoint=["sleep", "300"], detach=True,
            name=f"gaia2-test-planted-{uuid.uuid4().hex[:8]}",
            labels={
                engine.RUN_LABEL: uuid.uuid4().hex, engine.WORKER_LABEL: "gw0",
                engine.SCENARIO_LABEL: "planted", engine.CREATED_LABEL: f"{time.time() - age:.0f}",
                engine.PID_LABEL: str(owner_pid), engine.HOST_LABEL: socket.gethostname(),
            },
        )
    finally:
        client.close()


def _present(container: Any) -> bool:
    import docker.errors

    try:
        container.reload()
    except docker.errors.NotFound:
        return False
    return True


def test_orphans_of_dead_runs_are_reaped_and_reported_in_one_line(run_gaia2) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    with FileLock(str(REAPING_LOCK)):
        orphan = _plant(finished.pid, age=90)  # dead owner, older than the grace: reaped
        young = _plant(finished.pid, age=0)  # dead owner, younger than the grace: kept for now
        live = _plant(os.getpid(), age=90)  # live owner (this test): another run in progress
        try:
            result = run_gaia2(*SEARCH, "-k", SEARCH_IDS[0], "--gaia2-reap-grace=60")
            kept = {"orphan": _present(orphan), "young": _present(young), "live": _present(live)}
        finally:
            for container in (orphan, young, live):
                if _present(container):
                    container.remove(force=True)
    result.assert_outcomes(passed=1)
    assert kept == {"orphan": False, "young": True, "live": True}
    lines = [line for line in result.outlines if "left by earlier runs" in line]
    assert len(lines) == 1 and lines[0].startswith("gaia2: removed ") and orphan.name in lines[0], lines


@pytest.mark.parametrize("in_flight", [1, 2])
def test_host_network_shipped_scenarios_on_two_workers(pytester: pytest.Pytester, run_gaia2, in_flight: int) -> None:
    """Each container gets its own adapter port from its worker's slice of the range (the search
    split's four scenarios: two on each worker are enough to show the slices), also when a
    worker's two are in flight at once, each leasing from the same slice on its own thread."""
    low, high = 31000, 31999
    result = run_gaia2("-n", "2", "--gaia2-network=host", f"--gaia2-port-range={low}-{high}",
                       f"--gaia2-in-flight={in_flight}", *SEARCH)
    result.assert_outcomes(passed=len(SEARCH_IDS))
    output = pytester.path / "out"
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == SEARCH_IDS
    assert {r["worker"] for r in records} == {"gw0", "gw1"}
    assert all(r["attempt"] == 1 for r in records), records  # no port taken twice, so none retried
    for record in records:
        port = record["adapter_port"]
        assert record["host_port"] == port and port in worker_slice(low, high, int(record["worker"][2:]), 2)
        # The adapter itself says which port it listens on: the environment reached the container.
        log = (run_folder(output) / record["split"] / record["scenario_id"] / "entrypoint.log").read_text(encoding="utf-8")
        assert f"on port {port}" in log, log
    assert gaia2_containers(run_id_of(output)) == []


def test_host_port_taken_after_the_lease_is_retried_on_new_ports(pytester: pytest.Pytester, run_gaia2) -> None:
    """Another program binds the leased adapter port in the moment between the lease's check and
    the container's bind: the container cannot listen, and the run starts it again on new ports."""
    pytester.makeconftest(
        """
        import socket
        from pathlib import Path
        from pytest_gaia2.engine import ports

        _acquire = ports.PortLeases.acquire
        _taken = []

        def acquire(self, count):
            chosen = _acquire(self, count)
            if not _taken:
                sock = socket.socket()
                sock.bind(("0.0.0.0", chosen[0]))
                sock.listen()
                _taken.append(sock)
                Path("taken.txt").write_text(str(chosen[0]))
            return chosen

        ports.PortLeases.acquire = acquire
        """
    )
    result = run_gaia2("--gaia2-network=host", "--gaia2-port-range=32000-32099", *SEARCH, "-k", SEARCH_IDS[0])
    result.assert_outcomes(passed=1)
    taken = int((pytester.path / "taken.txt").read_text())
    (record,) = results_of(pytester.path / "out")
    assert record["adapter_port"] != taken and record["adapter_port"] in range(32000, 32100)
    assert gaia2_containers(run_id_of(pytester.path / "out")) == []


MODEL = ("--gaia2-provider=openai", "--gaia2-model=m", "--gaia2-judge-provider=openai", "--gaia2-judge-model=m")


@pytest.mark.parametrize(
    "args, docker_host, message",
    [
        (("--gaia2-image=pytest-gaia2/does-not-exist:1", *MODEL), None,
         "image 'pytest-gaia2/does-not-exist:1' is not on the engine"),
        ((), "tcp://127.0.0.1:1", "the Docker engine at tcp://127.0.0.1:1 does not answer"),
    ],
    ids=["missing image", "engine down"],
)
def test_setup_failure_ends_the_run_with_one_message(
    run_gaia2_inprocess, clean_env: pytest.MonkeyPatch, args: tuple[str, ...], docker_host: str | None, message: str
) -> None:
    """Checked once, on the controller: one message, no error per test, no container (so the run
    is made in this process)."""
    if docker_host:
        clean_env.setenv("DOCKER_HOST", docker_host)
    result = run_gaia2_inprocess("-n", "2", *SEARCH, *args)
    assert result.ret == EXIT_REFUSED
    output = result.stdout.lines + result.stderr.lines
    assert len([line for line in output if message in line]) == 1, "\n".join(output)
    assert not [line for line in output if line.startswith("ERROR") or "Gaia2InfraError" in line]
    result.assert_outcomes()
