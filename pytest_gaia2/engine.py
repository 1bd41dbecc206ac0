"""The container engine, through the Docker SDK: launch, copy in and out, stop, reap.

Everything goes through the engine API (no bind mounts, no host CLI), so a local socket,
a remote engine, Docker Desktop and Podman's Docker-compatible socket all work the same.
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Callable, Iterable, Mapping

import docker
import docker.errors
import requests

LABEL = "org.pytest-gaia2"
RUN_LABEL = f"{LABEL}.run"
WORKER_LABEL = f"{LABEL}.worker"
SCENARIO_LABEL = f"{LABEL}.scenario"
CREATED_LABEL = f"{LABEL}.created"
PID_LABEL = f"{LABEL}.pid"
HOST_LABEL = f"{LABEL}.host"

REMOVE_PASSES = 3
ENTRYPOINT = ["bash"]
COMMAND = ["/opt/gaia2-init-entrypoint.sh"]


class EngineError(Exception):
    """The engine cannot be reached or refused an operation."""


def engine_address() -> str:
    """Where the engine is, for messages: ``DOCKER_HOST`` or the default socket."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (default)"


def connect(timeout: float = 30.0) -> docker.DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` or the Docker context; one clear error if down."""
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
        raise EngineError(
            f"the Docker engine at {engine_address()} does not answer ({type(exc).__name__}). "
            "Start it (Linux: `sudo dockerd` or `systemctl start docker`; Docker Desktop: start the app; "
            "Podman: `podman system service --time=0 unix:///path.sock` and DOCKER_HOST=unix:///path.sock)."
        ) from None
    return client


def tar_files(files: Iterable[tuple[str, bytes, int]]) -> bytes:
    """A tar archive of ``(path, content, mode)`` entries, paths relative to the extraction dir."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content, mode in files:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            info.mode = mode
            info.mtime = int(time.time())
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def untar(stream: Iterable[bytes]) -> dict[str, bytes]:
    """Regular files of a ``get_archive`` stream, by their path inside the archive."""
    archive_bytes = b"".join(stream)
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r") as archive:
        for member in archive.getmembers():
            if member.isfile():
                extracted = archive.extractfile(member)
                if extracted is not None:
                    files[member.name] = extracted.read()
    return files


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to create one scenario container."""

    image: str
    name: str
    env: Mapping[str, str]
    labels: Mapping[str, str]
    adapter_port: int
    network: str = "bridge"
    files: tuple[tuple[str, bytes, int], ...] = ()  # (absolute container path, content, mode)
    extra_hosts: Mapping[str, str] = field(default_factory=dict)


class Container:
    """One running scenario container and what the host needs to reach it."""

    def __init__(self, handle: docker.models.containers.Container, spec: LaunchSpec, host_port: int) -> None:
        self.handle = handle
        self.spec = spec
        self.host_port = host_port

    @property
    def id(self) -> str:
        return str(self.handle.id)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def adapter_url(self) -> str:
        return f"http://127.0.0.1:{self.host_port}"

    def state(self) -> tuple[str, int | None]:
        """The engine's view: (status, exit code when exited)."""
        self.handle.reload()
        state = self.handle.attrs.get("State") or {}
        status = str(state.get("Status") or self.handle.status)
        code = state.get("ExitCode")
        return status, (int(code) if status in {"exited", "dead"} and code is not None else None)

    def logs(self, tail: int | str = "all") -> str:
        try:
            raw = self.handle.logs(stdout=True, stderr=True, tail=tail)
        except docker.errors.APIError:
            return ""
        return raw.decode("utf-8", errors="replace")

    def exec(self, cmd: list[str], user: str = "") -> tuple[int, str]:
        """Run a command inside; ``(exit code, output)``; -1 when the container cannot exec."""
        try:
            result = self.handle.exec_run(cmd, user=user, demux=False)
        except docker.errors.APIError as exc:
            return -1, str(exc)
        output = result.output.decode("utf-8", errors="replace") if result.output else ""
        return int(result.exit_code if result.exit_code is not None else -1), output

    def read_tree(self, path: str) -> dict[str, bytes]:
        """Files under ``path`` (works on running and stopped containers); empty when absent."""
        try:
            stream, _ = self.handle.get_archive(path)
        except (docker.errors.NotFound, docker.errors.APIError):
            return {}
        return untar(stream)

    def read_file(self, path: str) -> bytes | None:
        tree = self.read_tree(path)
        name = PurePosixPath(path).name
        return tree.get(name)


def _published_port(handle: docker.models.containers.Container, port: int) -> int:
    ports = (handle.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    bindings = ports.get(f"{port}/tcp") or []
    for binding in bindings:
        host_port = binding.get("HostPort")
        if host_port:
            return int(host_port)
    raise EngineError(f"the engine published no host port for {port}/tcp (bindings: {bindings!r})")


def _copy_in(handle: docker.models.containers.Container, files: Iterable[tuple[str, bytes, int]]) -> None:
    """Copy files into a created container; its existing directories keep owner and mode."""
    for path, content, mode in files:
        target = PurePosixPath(path)
        try:
            ok = handle.put_archive(str(target.parent), tar_files([(target.name, content, mode)]))
        except docker.errors.NotFound:
            ok = handle.put_archive("/", tar_files([(str(target).lstrip("/"), content, mode)]))
        if not ok:
            raise EngineError(f"the engine refused to copy {path} into the container")


class Engine:
    """Containers of one pytest-gaia2 run on one engine."""

    def __init__(self, client: docker.DockerClient, *, run_id: str, worker: str, owner_pid: int) -> None:
        self.client = client
        self.run_id = run_id
        self.worker = worker
        self.owner_pid = owner_pid

    def labels(self, scenario_id: str) -> dict[str, str]:
        """What identifies a container as ours, and whose: run, worker, scenario, owner, age."""
        return {
            RUN_LABEL: self.run_id,
            WORKER_LABEL: self.worker,
            SCENARIO_LABEL: scenario_id,
            CREATED_LABEL: f"{time.time():.0f}",
            PID_LABEL: str(self.owner_pid),
            HOST_LABEL: socket.gethostname(),
        }

    def launch(self, spec: LaunchSpec) -> Container:
        """Create, copy the files in, start, and read the published port; nothing is left on failure."""
        kwargs: dict[str, object] = {
            "image": spec.image,
            "entrypoint": ENTRYPOINT,
            "command": COMMAND,
            "name": spec.name,
            "environment": dict(spec.env),
            "labels": dict(spec.labels),
            "detach": True,
            "extra_hosts": dict(spec.extra_hosts) or None,
        }
        if spec.network == "host":
            kwargs["network_mode"] = "host"
        else:
            kwargs["ports"] = {f"{spec.adapter_port}/tcp": ("127.0.0.1", None)}
        handle = None
        try:
            handle = self.client.containers.create(**kwargs)
            _copy_in(handle, spec.files)
            handle.start()
            handle.reload()
            host_port = spec.adapter_port if spec.network == "host" else _published_port(handle, spec.adapter_port)
            return Container(handle, spec, host_port)
        except docker.errors.ImageNotFound:
            self._discard(handle)
            raise EngineError(f"image {spec.image!r} is not present on the engine at {engine_address()}") from None
        except (docker.errors.DockerException, requests.RequestException) as exc:
            self._discard(handle)
            raise EngineError(f"could not start a container from {spec.image!r}: {exc}") from None
        except BaseException:
            self._discard(handle)
            raise

    def _discard(self, handle: docker.models.containers.Container | None) -> None:
        if handle is not None:
            self.remove_id(handle.id, stop_timeout=0)

    def remove(self, container: Container, stop_timeout: float) -> None:
        self.remove_id(container.id, stop_timeout=stop_timeout)

    def remove_id(self, container_id: str, stop_timeout: float) -> None:
        """Stop (SIGTERM, then SIGKILL after ``stop_timeout``) and remove; already gone is fine."""
        try:
            handle = self.client.containers.get(container_id)
        except docker.errors.NotFound:
            return
        try:
            if stop_timeout > 0 and handle.status == "running":
                handle.stop(timeout=int(max(1, stop_timeout)))
        except (docker.errors.APIError, requests.RequestException):
            pass  # removal below forces it
        try:
            handle.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise

    def containers(self, **label_filters: str) -> list[docker.models.containers.Container]:
        filters = [f"{LABEL}.{key}={value}" for key, value in label_filters.items()] or [RUN_LABEL]
        # ignore_removed: another run may remove a listed container before it is inspected.
        return self.client.containers.list(all=True, filters={"label": filters}, ignore_removed=True)

    def remove_run(self, run_id: str | None = None, worker: str | None = None) -> int:
        """Remove every container of a run (optionally of one worker); how many were removed.

        Listed again until none is left: a killed worker's last create request may land late.
        """
        wanted = {"run": run_id or self.run_id}
        if worker is not None:
            wanted["worker"] = worker
        removed = 0
        for _ in range(REMOVE_PASSES):
            handles = self.containers(**wanted)
            if not handles:
                break
            for handle in handles:
                self.remove_id(handle.id, stop_timeout=0)
            removed += len(handles)
        return removed

    def reap_orphans(self, grace_seconds: float, is_alive: Callable[[int], bool]) -> list[str]:
        """Remove containers of *earlier* runs on this host whose owning process is gone; their names.

        Containers of a live process (another run in progress) are never touched, nor
        those younger than the grace age, nor those owned on another host.
        """
        removed: list[str] = []
        now = time.time()
        host = socket.gethostname()
        for handle in self.containers():
            labels = handle.labels or {}
            if labels.get(RUN_LABEL) == self.run_id or labels.get(HOST_LABEL) != host:
                continue
            try:
                age = now - float(labels.get(CREATED_LABEL, "0"))
                pid = int(labels.get(PID_LABEL, "0"))
            except ValueError:
                continue
            if age < grace_seconds or (pid and is_alive(pid)):
                continue
            self.remove_id(handle.id, stop_timeout=0)
            removed.append(str(handle.name))
        return removed


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
