"""Another engine: Podman's Docker-compatible API socket runs the search split on two workers.

Skipped only when podman is not installed (Debian: ``apt-get install podman``). The test starts
its own ``podman system service`` on a temporary socket and stops it at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED, results_of, run_folder, run_id_of

pytestmark = pytest.mark.skipif(
    shutil.which("podman") is None,
    reason="podman is not installed (apt-get install podman): the Podman engine test needs it",
)

# Containers cannot start on these machines while podman applies its default rlimits.
CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n"


def _podman_client(socket_url: str):  # noqa: ANN202 - docker is imported lazily
    import docker

    return docker.DockerClient(base_url=socket_url, timeout=30)


def _same_reference_image(socket_url: str) -> None:
    """Copy the reference image from the Docker engine into podman's store unless it is there already."""
    import docker
    import docker.errors
    from filelock import FileLock

    from pytest_gaia2.reference import build
    from pytest_gaia2.run.preflight import IMAGE_BUILD_LOCK

    name = build.image_name()
    source = docker.from_env()
    target = _podman_client(socket_url)
    try:
        with FileLock(str(IMAGE_BUILD_LOCK)):
            build.ensure_image(source, log=lambda line: None)
            wanted = source.images.get(name).labels.get(build.HASH_LABEL)
            try:
                if target.images.get(name).labels.get(build.HASH_LABEL) == wanted:
                    return
            except docker.errors.ImageNotFound:
                pass
            save = subprocess.Popen(["docker", "save", name], stdout=subprocess.PIPE)
            subprocess.run(["podman", "load"], stdin=save.stdout, check=True, capture_output=True)
            assert save.wait() == 0
    finally:
        source.close()
        target.close()


@pytest.fixture
def podman_socket(tmp_path: Path) -> Iterator[str]:
    """A podman API service on a temporary socket, stopped at teardown."""
    conf = tmp_path / "containers.conf"
    conf.write_text(CONTAINERS_CONF, encoding="utf-8")
    socket_url = f"unix://{tmp_path / 'podman.sock'}"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", socket_url],
        env={**os.environ, "CONTAINERS_CONF": str(conf)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _podman_client(socket_url).ping()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline or service.poll() is not None:
                    raise
                time.sleep(0.3)
        _same_reference_image(socket_url)
        yield socket_url
    finally:
        service.terminate()
        service.wait(30)


def test_search_split_on_podman_with_two_workers(
    pytester: pytest.Pytester, run_gaia2, podman_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    result = run_gaia2("-n", "2", "-m", "search_split", f"--gaia2-scenarios={SHIPPED}")
    searches = sorted(p.stem for p in (SHIPPED / "search").glob("*.json"))
    result.assert_outcomes(passed=len(searches))
    output = pytester.path / "out"
    assert sorted(r["scenario_id"] for r in results_of(output)) == searches
    client = _podman_client(podman_socket)
    try:
        engine = json.loads((run_folder(output) / "run_config.json").read_text(encoding="utf-8"))["engine"]
        assert engine["address"] == podman_socket and engine["version"] == client.version()["Version"]
        label = f"org.pytest-gaia2.run={run_id_of(output)}"
        assert client.containers.list(all=True, filters={"label": label}) == []
    finally:
        client.close()
