"""The engine module on the real engine: copy-out from a hostile state folder, early exits,
TCP probes with hostile hosts, the hardening and why each capability is there, teardown.

Images are built FROM the reference image (no registry is needed)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import socket
import tarfile
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from gaia2_testing import SHIPPED, derived_image, engine_events

from pytest_gaia2.engine import client as engine_mod
from pytest_gaia2.engine.archive import CopyReport, Keeper
from pytest_gaia2.engine.client import CAPABILITIES, RUN_LABEL, Engine, connect
from pytest_gaia2.engine.container import Container, LaunchSpec
from pytest_gaia2.engine.errors import ContainerExited, EngineError
from pytest_gaia2.store.kept import CONTAINER_FILES
from pytest_gaia2.store.redact import Redactor

MB = 1 << 20
SPARSE = 128 * MB
"""The planted sparse file: over the copy's file and total caps, twice the RSS bound and eight
times the Python peak bound, so a copy that held it whole fails them (1 GiB cost 8 core-seconds
of streaming at each run and a 1 GiB image layer at each build)."""
ADAPTER_PORT = 8090
STATE_DIR = "/var/gaia2/state"
STATE_NAMES = {"events.jsonl": "events.jsonl", "judgments.jsonl": "daemon_judgments.jsonl",
               "daemon_status.json": "daemon_status.json"}
REFERENCE_ENV = {"GAIA2_ADAPTER_PORT": str(ADAPTER_PORT), "GAIA2_JUDGE_FINAL_TURN": "1",
                 "GAIA2_JUDGE_MODEL": "none", "GAIA2_JUDGE_PROVIDER": "none", "THINKING": "low"}
SECRET = b"sk-test-SECRETVALUE123"

PLANT_STATE = r"""#!/usr/bin/bash
# A state folder a careless or hostile image could leave behind.
set -euo pipefail
cd /var/gaia2/state
printf '{"status": "complete", "judgment": {"success": true, "failure_reason": ""}}\n' > daemon_status.json
printf '{"t": 1}\n' > events.jsonl
printf '{}' > contacts.json
truncate -s 128M sparse.bin
printf long > "$(printf 'n%.0s' $(seq 250))"
printf space > 'with space'
printf nl > "$(printf 'new\nline')"
printf q > 'quote"and$dollar`tick'
printf e > 'été.json'
mkdir -p filesystem/docs && printf doc > filesystem/docs/a.txt
ok=$(printf 'd/%.0s' $(seq 20)); mkdir -p "$ok" && printf deep > "${ok}f"
deep=$(printf 'd/%.0s' $(seq 40)); mkdir -p "$deep" && printf deeper > "${deep}f"
wide=$(printf "$(printf 'w%.0s' $(seq 200))/%.0s" $(seq 19)); mkdir -p "$wide" && printf far > "${wide}f"
ln -s /etc/passwd passwd
ln -s / rootlink
ln contacts.json hardlink
mkfifo fifo
chown -R gaia2:gaia2 /var/gaia2/state
"""
EXIT_3 = "#!/usr/bin/bash\nfor i in $(seq 1 30); do echo \"line $i\"; done\nexit 3\n"
SLEEPER = f"""#!/usr/bin/bash
# PID 1 is sleep, which ignores SIGTERM; a process of gaia2 runs beside it.
setpriv --reuid=gaia2 --regid=gaia2 --init-groups sleep infinity &
echo $! > /tmp/gaia2.pid
echo "token {SECRET.decode()} here"
for i in $(seq 1 1000); do echo "line $i"; done
exec sleep infinity
"""
# What each capability lets root do in the init scripts of gaia2-cli images, as one command.
CAPABILITY_CHECKS = {
    "CHOWN": "touch /tmp/c && chown gaia2:gaia2 /tmp/c",
    "DAC_OVERRIDE": "touch /var/gaia2/state/probe",  # gaia2's folder, mode 700
    "FOWNER": "touch /tmp/f && chown agent /tmp/f && chmod 600 /tmp/f",  # Hermes's env file
    "SETUID": "setpriv --reuid=gaia2 true",
    "SETGID": "setpriv --regid=gaia2 --clear-groups true",
    "KILL": 'kill -0 "$(cat /tmp/gaia2.pid)"',  # su signalling its child of another user
}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    try:
        docker_client = connect(timeout=10)
    except EngineError as exc:
        pytest.skip(f"no Docker engine: {exc}")
    yield docker_client
    docker_client.close()


def podman_version(client: Any) -> tuple[int, ...] | None:
    """The Podman release behind a Docker-compatible socket (the Podman leg of CI), else None."""
    for component in client.version().get("Components") or ():
        if "podman" in str(component.get("Name", "")).lower():
            return tuple(int(part) for part in re.findall(r"\d+", str(component.get("Version")))[:3])
    return None


@pytest.fixture
def engine(client: Any) -> Iterator[Engine]:
    run = Engine(client, run_id=f"enginetest-{uuid.uuid4().hex[:12]}", worker="master", owner_pid=os.getpid())
    yield run
    run.remove_run()


@pytest.fixture(scope="module")
def reference(client: Any) -> str:
    from pytest_gaia2.reference import build

    derived_image("pytest-gaia2-test/engine-noop:1")  # builds the reference image when needed
    return build.image_name()


def launch(engine: Engine, image: str, **spec: Any) -> Container:
    return engine.launch(LaunchSpec(image=image, name=f"gaia2-enginetest-{uuid.uuid4().hex[:10]}",
                                    env=spec.pop("env", {}), labels=engine.labels("engine-test"),
                                    adapter_port=ADAPTER_PORT, **spec))


REDACTOR = Redactor([SECRET.decode()])


def tree(root: Path) -> dict[str, int]:
    found = {}
    for path in root.rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            found[path.relative_to(root).as_posix()] = path.stat().st_size
    return found


@pytest.mark.slow
def test_copy_out_of_a_hostile_state_folder_keeps_normal_files_and_lists_the_rest(
    engine: Engine, tmp_path: Path
) -> None:
    image = derived_image("pytest-gaia2-test/engine-hostile-state:1", "COPY plant.sh /tmp/plant.sh",
                          "RUN /tmp/plant.sh && rm /tmp/plant.sh", files={"plant.sh": PLANT_STATE.encode()})
    container = launch(engine, image)  # no scenario: the state folder is left as the image has it
    dest = tmp_path / "out"
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        with Keeper(dest / CONTAINER_FILES, REDACTOR) as keep:
            report = container.copy_out(STATE_DIR, dest, max_file_bytes=16 * MB, max_total_bytes=64 * MB,
                                        rename=STATE_NAMES, keep=keep, prefix="state", redactor=REDACTOR)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before

    skipped = dict(report.skipped)
    hard = "state/hardlink" if "state/hardlink" in skipped else "state/contacts.json"  # the one archived second
    kept = "state/contacts.json" if hard == "state/hardlink" else "state/hardlink"
    deep_ok = "state/" + "d/" * 20 + "f"
    wide = "state/" + ("w" * 200 + "/") * 19 + "f"
    assert skipped == {
        "state/sparse.bin": f"{SPARSE} bytes, over the {16 * MB}-byte file cap",
        "state/passwd": "symbolic link",
        "state/rootlink": "symbolic link",
        hard: "hard link",
        "state/fifo": "FIFO",
        "state/" + "d/" * 40 + "f": "deeper than 32 levels",
        wide[:297] + "...": "host path longer than 3800 bytes",  # names are shortened in reports
    }
    assert tree(dest).keys() == {"daemon_status.json", "events.jsonl", CONTAINER_FILES}  # the rest: members
    with tarfile.open(dest / CONTAINER_FILES) as archive:
        members = {member.name: member.size for member in archive.getmembers()}
    assert members == {
        kept: 2, "state/" + "n" * 250: 4, "state/with space": 5, "state/new\\x0aline": 2,
        'state/quote"and$dollar`tick': 1, "state/été.json": 1, "state/filesystem/docs/a.txt": 3, deep_ok: 4,
    }
    assert sorted(report.written) == [("daemon_status.json", 76), ("events.jsonl", 9)] and report.notes == []
    assert sorted(report.kept) == sorted(members.items())
    assert json.loads((dest / "daemon_status.json").read_text())["status"] == "complete"
    assert peak < 16 * MB, f"Python peak {peak / MB:.1f} MiB while {SPARSE // MB} MiB went by"
    assert rss_growth_kib < 64 * 1024, f"peak RSS grew by {rss_growth_kib / 1024:.0f} MiB"

    content, reason = container.read_file(f"{STATE_DIR}/sparse.bin", max_bytes=MB)
    assert (content, reason) == (None, f"{SPARSE} bytes, over the {MB}-byte cap")
    assert container.read_file(f"{STATE_DIR}/daemon_status.json", max_bytes=MB)[0] == (
        dest / "daemon_status.json").read_bytes()
    assert container.read_file(f"{STATE_DIR}/missing.json", max_bytes=MB) == (None, "not found")
    assert container.copy_out("/nowhere", dest, max_file_bytes=MB, max_total_bytes=MB) == CopyReport()


def exit_of(engine: Engine, image: str) -> ContainerExited:
    """The early exit: raised by launch when the process ended before the port was published
    (the usual case), else reported by the container as soon as it ends."""
    try:
        container = launch(engine, image)
    except ContainerExited as exc:
        assert engine.containers(run=engine.run_id) == []  # nothing left behind
        return exc
    deadline = time.monotonic() + 10
    while (exited := container.exited()) is None:
        assert time.monotonic() < deadline, "still running"
        time.sleep(0.1)
    return exited


@pytest.mark.parametrize(("lines", "code", "in_logs"), [
    (["COPY exit3.sh /opt/gaia2-init-entrypoint.sh"], 3, "line 1\n"),
    (["RUN rm /opt/gaia2-init-entrypoint.sh"], 127, "No such file or directory"),
], ids=["exit-3", "no-entrypoint-script"])
def test_an_image_that_exits_at_once_is_container_exited_with_code_and_logs(
    engine: Engine, lines: list[str], code: int, in_logs: str
) -> None:
    image = derived_image(f"pytest-gaia2-test/engine-exits-{code}:1", *lines, files={"exit3.sh": EXIT_3.encode()})
    exited = exit_of(engine, image)
    assert exited.exit_code == code and in_logs in exited.logs
    assert f"exited with code {code}; last log lines:\n{exited.tail}" in str(exited)
    if code == 3:
        assert exited.tail == "\n".join(f"line {i}" for i in range(11, 31))


@pytest.fixture
def bare_path_image(reference: str) -> str:
    """PATH as Meta's agent images have it: no coreutils, no timeout."""
    return derived_image("pytest-gaia2-test/engine-barepath:1", "ENV PATH=/home/agent/bin")


def test_probe_tcp_bounded_from_the_host_on_an_image_without_coreutils(
    client: Any, engine: Engine, bare_path_image: str, host_server: tuple[int, str]
) -> None:
    if (podman_version(client) or (99,)) < (4, 7):
        pytest.skip("Podman before 4.7 refuses --add-host's host-gateway value ('invalid IP address in add-host'), "
                    "which the probe uses to name this host")
    port, _ = host_server
    probe = {"network": "bridge", "extra_hosts": {"host.docker.internal": "host-gateway"}}
    assert engine.probe_tcp(bare_path_image, "host.docker.internal", port, timeout_s=10, **probe)
    with socket_closed() as closed:
        assert not engine.probe_tcp(bare_path_image, "host.docker.internal", closed, timeout_s=10, **probe)
    with socket_hanging() as hanging:
        started = time.monotonic()
        assert not engine.probe_tcp(bare_path_image, "host.docker.internal", hanging, timeout_s=2, **probe)
        assert 2 <= time.monotonic() - started < 60  # the timeout holds; the bound is a loaded engine's start
    assert engine.containers(run=engine.run_id) == []


@pytest.mark.parametrize("host", ["$(touch /tmp/pwned)", "`touch /tmp/pwned`", "a b", "host\"'", "x;id", "",
                                  "host.docker.internal/../x"])
def test_probe_tcp_refuses_a_hostile_host_before_running_anything(engine: Engine, reference: str, host: str) -> None:
    started = time.time()
    with pytest.raises(ValueError, match="not a host name"):
        engine.probe_tcp(reference, host, 80, network="bridge", extra_hosts={}, timeout_s=5)
    assert engine_events(started, label=f"{RUN_LABEL}={engine.run_id}") == []


@contextlib.contextmanager
def socket_closed() -> Iterator[int]:
    """A host port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        port = int(sock.getsockname()[1])
    yield port


@contextlib.contextmanager
def socket_hanging() -> Iterator[int]:
    """A host port whose connections never complete: a listener that never accepts, its
    queue filled, so the kernel drops further SYNs and a connect waits (Linux)."""
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        fillers = []
        try:
            for _ in range(2):
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                fillers.append(filler)
            time.sleep(0.2)
            yield port
        finally:
            for filler in fillers:
                filler.close()


def wait_terminal(container: Container, timeout: float = 120.0) -> dict[str, Any]:
    """Poll /status through the published port until the daemon's status is terminal."""
    session = requests.Session()
    session.trust_env = False
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            status = session.get(f"{container.adapter_url}/status", timeout=5).json()
        except (requests.RequestException, ValueError):
            pass
        if status.get("status") in {"complete", "stopped", "error"}:
            return status
        assert container.state()[0] == "running", container.logs()
        time.sleep(0.5)
    raise AssertionError(f"no terminal status within {timeout:g} s: {status}")


def test_the_reference_image_reaches_a_judgment_under_the_hardening(
    client: Any, engine: Engine, reference: str, tmp_path: Path
) -> None:
    scenario = sorted((SHIPPED / "search").glob("*.json"))[0]
    container = launch(engine, reference, env=REFERENCE_ENV, no_new_privileges=True, pids_limit=256,
                       memory_bytes=1 << 30,
                       files=(("/var/gaia2/custom_scenario.json", scenario.read_bytes(), 0o644),))
    host_config = container.handle.attrs["HostConfig"]
    assert host_config["SecurityOpt"] == ["no-new-privileges"]
    assert (host_config["PidsLimit"], host_config["Memory"]) == (256, 1 << 30)
    if podman_version(client) is None:
        assert host_config["CapDrop"] == ["ALL"] and sorted(host_config["CapAdd"]) == sorted(CAPABILITIES)
    else:  # Podman's Docker-compatible inspect lists each dropped capability (and no CapAdd) instead
        assert host_config["CapDrop"] and not set(host_config["CapDrop"]) & set(CAPABILITIES)
    assert {b["HostIp"] for b in host_config["PortBindings"][f"{ADAPTER_PORT}/tcp"]} == {"127.0.0.1"}

    status = wait_terminal(container)
    assert status["judgment"] == {"success": True, "failure_reason": ""}, status
    report = container.copy_out(STATE_DIR, tmp_path, max_file_bytes=16 * MB, max_total_bytes=64 * MB,
                                rename=STATE_NAMES, prefix="state")
    assert {"daemon_status.json", "events.jsonl", "daemon_judgments.jsonl"} <= dict(report.written).keys()
    assert json.loads((tmp_path / "daemon_status.json").read_text())["judgment"]["success"] is True
    started = time.monotonic()
    engine.remove(container)
    assert time.monotonic() - started < engine_mod.DEFAULT_STOP_TIMEOUT  # killed, never stopped first
    assert engine.containers(run=engine.run_id) == []


@pytest.fixture
def sleeper(reference: str) -> str:
    return derived_image("pytest-gaia2-test/engine-sleeper:1", "COPY sleeper.sh /opt/gaia2-init-entrypoint.sh",
                         files={"sleeper.sh": SLEEPER.encode()})


def settled(container: Container, timeout: float = 30.0) -> Container:
    """Wait until the sleeper's script has run to its last line (its gaia2 process is started);
    a fixed sleep was too short when six workers share two cores."""
    deadline = time.monotonic() + timeout
    while "line 1000\n" not in container.logs():  # a failing setpriv's stderr may come after it
        assert time.monotonic() < deadline, container.logs()
        time.sleep(0.1)
    return container


def said(container: Container, cmd: list[str], user: str = "") -> tuple[int, str]:
    """An exec's exit code and output, asked again (up to three times) while the output is empty:
    Podman 4.3's exec stream can close before a short command's output."""
    answer = container.exec(cmd, user=user)
    for _ in range(2):
        if answer[1]:
            break
        answer = container.exec(cmd, user=user)
    return answer


def test_each_capability_is_what_one_init_step_needs(
    engine: Engine, sleeper: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = settled(launch(engine, sleeper))
    for name, command in CAPABILITY_CHECKS.items():
        assert container.exec(["bash", "-c", command]) == (0, ""), name
    assert said(container, ["su", "-s", "/usr/bin/bash", "gaia2", "-c", "id -un"]) == (0, "gaia2\n")  # Meta's images
    engine.remove(container)
    for name, command in CAPABILITY_CHECKS.items():
        monkeypatch.setattr(engine_mod, "CAPABILITIES", tuple(cap for cap in CAPABILITIES if cap != name))
        container = settled(launch(engine, sleeper))
        code, output = said(container, ["bash", "-c", command])
        assert code != 0 and re.search("not permitted|denied", output), (name, code, output)
        engine.remove(container)


@pytest.mark.parametrize(("no_new_privileges", "effective_user"), [(False, "gaia2"), (True, "agent")])
def test_no_new_privileges_disables_the_setuid_tool_wrapper_of_agent_images(
    engine: Engine, reference: str, no_new_privileges: bool, effective_user: str
) -> None:
    """Why it is a per-launch choice: Hermes and OpenClaw run every tool through gaia2-exec,
    setuid gaia2; with no-new-privileges the tools run as agent and cannot reach the state."""
    image = derived_image("pytest-gaia2-test/engine-setuid:1", "RUN cp /usr/bin/id /usr/local/bin/gaia2-id "
                          "&& chown gaia2:gaia2 /usr/local/bin/gaia2-id && chmod u+s /usr/local/bin/gaia2-id")
    container = launch(engine, image, no_new_privileges=no_new_privileges)
    assert said(container, ["/usr/local/bin/gaia2-id", "-un"], user="agent") == (0, f"{effective_user}\n")


def test_teardown_kills_at_once_unless_graceful_and_logs_are_saved_bounded_and_masked(
    engine: Engine, sleeper: str, tmp_path: Path
) -> None:
    container = settled(launch(engine, sleeper))
    assert container.logs().endswith("line 999\nline 1000\n") and container.logs(tail=1) == "line 1000\n"
    cuts = container.save_logs(tmp_path / "container.log", max_bytes=2000, redactor=REDACTOR)
    saved = (tmp_path / "container.log").read_bytes()
    assert cuts == ["over the 2000-byte file cap: the output past it was not kept"]
    assert saved.startswith(b"token *** here\n") and SECRET not in saved
    assert saved.endswith(b"\n[pytest-gaia2: cut here, over 2000 bytes]\n") and len(saved) < 2100
    started = time.monotonic()
    engine.remove(container)  # PID 1 ignores SIGTERM: only a kill ends it before the stop timeout
    assert time.monotonic() - started < engine_mod.DEFAULT_STOP_TIMEOUT
    engine.remove(container)  # already gone is fine

    container = launch(engine, sleeper)
    started = time.monotonic()
    engine.remove(container, graceful=True, stop_timeout=2)
    assert time.monotonic() - started >= 2
    assert engine.containers(run=engine.run_id) == []


def test_images_version_and_files_through_the_engine(engine: Engine, reference: str) -> None:
    assert engine.version()["Version"]
    assert (engine.image_id(reference) or "").startswith("sha256:")
    assert engine.image_id("pytest-gaia2-test/never-built:0") is None
    scripts = engine.image_files(reference, "/opt", max_total_bytes=MB, select=lambda name: name.endswith(".sh"))
    assert list(scripts) == ["opt/gaia2-init-entrypoint.sh"] and scripts["opt/gaia2-init-entrypoint.sh"].startswith(
        b"#!/usr/bin/bash")
    assert engine.image_files(reference, "/opt", max_total_bytes=10) == {}  # over the cap: nothing read
    assert engine.image_files(reference, "/nowhere", max_total_bytes=MB) == {}
    with pytest.raises(EngineError, match="never-built"):
        engine.image_files("pytest-gaia2-test/never-built:0", "/opt", max_total_bytes=MB)
    assert engine.containers(run=engine.run_id) == []


def test_preflight_reads_an_image_once_per_image_id(engine: Engine, reference: str, tmp_path: Path) -> None:
    """The line-ending check starts a helper container for a new image id only."""
    from pytest_gaia2.run import preflight

    crlf = derived_image("pytest-gaia2-test/engine-crlf:1", "COPY helper.sh /opt/helper.sh",
                         files={"helper.sh": b"#!/usr/bin/bash\r\necho hello\r\n"})
    started = time.time()
    for _ in range(2):
        assert preflight._image_checks(engine, str(engine.image_id(reference)), tmp_path) == {"crlf_scripts": []}
        assert preflight._image_checks(engine, crlf, tmp_path) == {"crlf_scripts": ["opt/helper.sh"]}
    created = engine_events(started, label=f"{RUN_LABEL}={engine.run_id}", event="create")
    assert len(created) == 2 and engine.containers(run=engine.run_id) == []
    assert set(json.loads((tmp_path / preflight.IMAGE_CHECKS_FILE).read_text())) == {engine.image_id(reference), crlf}


@pytest.mark.parametrize(("url", "problem"), [
    ("ftp://host/v1", "the scheme must be http or https, not 'ftp'"),
    ("http:///v1", "the URL has no host"),
    ("http://host:99999/v1", "not a URL with a host and a port from 0 to 65535"),
    ("http://host:port/v1", "not a URL with a host and a port from 0 to 65535"),
    ("http://[::1/v1", "not a URL with a host and a port from 0 to 65535"),
    ("http://$(touch x)/v1", "'$(touch x)' is not a host name or IP address"),
    ("http://a`b`/v1", "'a`b`' is not a host name or IP address"),
    ("http://a'b/v1", "\"a'b\" is not a host name or IP address"),
    ("http://a b/v1?key=sk-secret", "'a b' is not a host name or IP address"),
])
def test_base_urls_are_validated_naming_the_option(url: str, problem: str) -> None:
    from pytest_gaia2.run import preflight

    with pytest.raises(preflight.PreflightError) as raised:
        preflight._endpoint("--gaia2-judge-base-url", url)
    assert str(raised.value) == f"--gaia2-judge-base-url: {problem}"
    assert preflight._endpoint("--gaia2-base-url", "https://host.docker.internal/v1") == ("host.docker.internal", 443)
    assert preflight._endpoint("--gaia2-base-url", "http://[::1]:8000/v1") == ("::1", 8000)


def test_files_go_in_as_one_archive_keeping_existing_folders_and_making_missing_ones(
        client: Any, engine: Engine, reference: str) -> None:
    """The scenario into /var/gaia2 (owned by gaia2), a file into a folder that does not exist:
    both land with their modes, and /var/gaia2 keeps its owner and mode."""
    since = time.time()
    container = launch(engine, reference, command=("-c", "exec sleep infinity"), files=(
        ("/var/gaia2/custom_scenario.json", b'{"x": 1}', 0o644),
        ("/opt/new/deeper/tool.sh", b"#!/usr/bin/bash\nexit 7\n", 0o755)))
    identity = container.id
    try:
        code, out = said(container, ["stat", "-c", "%U %a %n", "/var/gaia2", "/var/gaia2/custom_scenario.json",
                                    "/opt/new/deeper/tool.sh"])
        assert code == 0, out
        owner, mode, _ = out.splitlines()[0].split()
        assert (owner, mode) == ("gaia2", "700"), out  # as the Dockerfile made it: the judge's alone
        assert out.splitlines()[1].split()[1] == "644" and out.splitlines()[2].split()[1] == "755"
        # It runs: its exit code, not its output (Podman 4.3 can lose a short exec's output).
        assert container.exec(["/opt/new/deeper/tool.sh"])[0] == 7
    finally:
        engine.remove(container)
    if podman_version(client) is not None:
        pytest.skip("Podman's events API reports no extract-to-dir event for an archive put, so the count of "
                    "archives cannot be observed (the files above landed)")
    copies = [event for event in engine_events(since, container=identity) if event.get("Action") == "extract-to-dir"]
    assert len(copies) == 1, copies  # one archive, however many files
