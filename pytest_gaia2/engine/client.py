"""The container engine, through the Docker SDK: launch, copy in and out, stop, reap, probe.

Everything goes through the engine API (no bind mounts, no host CLI), so a local socket,
a remote engine, Docker Desktop and Podman's Docker-compatible socket all work the same.
This module holds the client of one engine (several: :mod:`~pytest_gaia2.engine.pool`): it creates,
lists, probes, removes containers and copies images between engines. One running
container is a :class:`~pytest_gaia2.engine.container.Container`; what is copied out of one is
hostile input, handled by :mod:`pytest_gaia2.engine.archive`. ``docker`` and ``requests`` are
imported only inside the functions that need them: a pytest run that never uses the plugin
does not pay for them.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tarfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pytest_gaia2.engine.archive import ARCHIVE_CHUNK, FileContent, StreamBroken, tar_entries, tar_spool
from pytest_gaia2.engine.container import Container, LaunchSpec, exit_of
from pytest_gaia2.engine.errors import EngineError, sdk_errors
from pytest_gaia2.engine.spec import plain_host
from pytest_gaia2.store.redact import mask_userinfo

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container as Handle

LABEL = "org.pytest-gaia2"
RUN_LABEL = f"{LABEL}.run"
WORKER_LABEL = f"{LABEL}.worker"
SCENARIO_LABEL = f"{LABEL}.scenario"
CREATED_LABEL = f"{LABEL}.created"
PID_LABEL = f"{LABEL}.pid"
HOST_LABEL = f"{LABEL}.host"
HELPER_ID = "preflight"
"""Scenario label of short-lived helper containers (image files, TCP probes)."""

REMOVE_PASSES = 3
ENTRYPOINT = ["bash"]
COMMAND = ["/opt/gaia2-init-entrypoint.sh"]
DEFAULT_STOP_TIMEOUT = 5.0

CAPABILITIES = (
    # Everything else is dropped. gaia2-cli images start as root and hand the work to the
    # users gaia2 and agent; each capability below is one step of their init scripts (the
    # reference image reaches no judgment without CHOWN, DAC_OVERRIDE, SETUID or SETGID;
    # FOWNER and KILL are for the steps of Meta's Hermes/OpenClaw/oracle scripts noted).
    # AUDIT_WRITE is not needed: su works without it.
    "CHOWN",  # chown of the state dir, logs, faketime.rc (and Hermes/OC's agent env file)
    "DAC_OVERRIDE",  # root writes into gaia2-owned 700/711 dirs: state reset, gaia2-init as root
    "FOWNER",  # root chmods files it just gave away (Hermes/OC: chmod -R go-rwx state, chmod 600)
    "SETUID",  # su / setpriv / runuser: setresuid to gaia2 and agent
    "SETGID",  # the same for groups: setresgid, setgroups (--init-groups, su)
    "KILL",  # su stays root and forwards `docker stop`'s SIGTERM to its child of another user
)


def engine_address() -> str:
    """Where the engine is, for messages: ``DOCKER_HOST`` or the default socket."""
    return mask_userinfo(os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (default)")


def connect(timeout: float = 30.0, url: str = "") -> docker.DockerClient:
    """A client for ``url`` (unix://; tcp://, TLS from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH as docker's CLI reads
    them; ssh://, the system ssh), else for DOCKER_HOST's or the context's engine; one clear error if down."""
    import docker

    try:
        if not url:
            client = docker.from_env(timeout=int(timeout))
        else:
            tls = docker.utils.kwargs_from_env().get("tls") if url.startswith("tcp://") else None
            version = None  # with TLS, asked by a client that ignores REQUESTS_CA_BUNDLE (requests would use
            if tls:  # it in place of the engine's CA); otherwise asked by the client itself
                with docker.APIClient(url, version=docker.constants.MINIMUM_DOCKER_API_VERSION, tls=tls) as probe:
                    probe.trust_env = False
                    version = probe.version()["ApiVersion"]
            client = docker.DockerClient(
                base_url=url,
                timeout=int(timeout),
                tls=tls or False,
                version=version,
                use_ssh_client=url.startswith("ssh://"),
            )
            client.api.trust_env = not tls
        client.ping()
    except sdk_errors() + (OSError,) as exc:
        raise EngineError(
            f"the Docker engine at {mask_userinfo(url) or engine_address()} does not answer "
            f"({type(exc).__name__}: {str(exc)[:160]}). "
            "Start it (Linux: `sudo dockerd` or `systemctl start docker`; Docker Desktop: start the app; "
            "Podman: `podman system service --time=0 unix:///path.sock` and DOCKER_HOST=unix:///path.sock)."
        ) from None
    return client


def _published_port(handle: Handle, port: int) -> int | None:
    ports = (handle.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    for binding in ports.get(f"{port}/tcp") or []:
        host_port = binding.get("HostPort")
        if host_port:
            return int(host_port)
    return None


def _copy_in(handle: Handle, files: Iterable[tuple[str, FileContent, int]]) -> None:
    """Copy files into a created container in one archive at its root (each archive costs the
    engine a mount of the container's file system). The archive holds no folder entries, so
    existing folders keep owner and mode; missing ones are created. A host file is streamed
    into the archive, never read whole."""
    entries = [(str(PurePosixPath(path)).lstrip("/"), content, mode) for path, content, mode in files]
    if not entries:
        return
    try:
        archive = tar_spool(entries)
    except OSError as exc:
        raise EngineError(f"cannot copy into the container: {exc}") from None
    with archive:
        if not handle.put_archive("/", archive):
            raise EngineError(
                f"the engine refused to copy {', '.join('/' + name for name, _, _ in entries)} into the container"
            )


class Engine:
    """Containers of one pytest-gaia2 run on one engine."""

    def __init__(
        self,
        client: docker.DockerClient,
        *,
        run_id: str,
        worker: str,
        owner_pid: int,
        address: str = "",
        reach: str = "ports",
    ) -> None:
        self.client = client
        self.address = address or engine_address()
        self.reach = reach  # how the adapter is reached: "ports" (published on 127.0.0.1) or "api" (exec)
        self.run_id = run_id
        self.worker = worker
        self.owner_pid = owner_pid
        self._removals: list[threading.Thread] = []

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

    def version(self) -> dict[str, Any]:
        """The engine's version record (``Version``, ``Os``, ``Arch``, ...)."""
        try:
            return dict(self.client.version())
        except sdk_errors() as exc:
            raise EngineError(f"the engine at {self.address} did not report its version: {exc}") from None

    def image_id(self, image: str) -> str | None:
        """The id of a local image, or None when the engine does not have it."""
        from docker.errors import ImageNotFound

        try:
            return str(self.client.images.get(image).id)
        except ImageNotFound:
            return None
        except sdk_errors() as exc:
            raise EngineError(f"could not inspect image {image!r}: {exc}") from None

    def load_from(self, source: Engine, image: str) -> str:
        """Copy ``image`` from another engine (``docker save`` streamed into ``load``, never on disk); its id here."""
        try:
            for line in self.client.api.load_image(source.client.api.get_image(image)):
                if isinstance(line, dict) and line.get("error"):
                    raise EngineError(f"{self.address} refused {image!r}: {line['error']}")
        except sdk_errors() as exc:
            raise EngineError(f"could not copy {image!r} from {source.address} to {self.address}: {exc}") from None
        return self.image_id(image) or ""

    def launch(self, spec: LaunchSpec) -> Container:
        """Create, copy the files in, start, and read the published port; nothing is left on failure.

        Hardened: every capability but :data:`CAPABILITIES` dropped, the spec's pids and memory
        limits, no-new-privileges when the spec allows it, the adapter published on 127.0.0.1 only,
        the engine's log of the container's output capped (json-file max-size and max-file).
        """
        from docker.errors import ImageNotFound

        kwargs: dict[str, Any] = {
            "image": spec.image,
            "entrypoint": ENTRYPOINT,
            "command": list(spec.command) if spec.command else COMMAND,
            "name": spec.name,
            "environment": dict(spec.env),
            "labels": dict(spec.labels),
            "detach": True,
            "extra_hosts": dict(spec.extra_hosts) or None,
            "cap_drop": ["ALL"],
            "cap_add": list(CAPABILITIES),
            "security_opt": ["no-new-privileges"] if spec.no_new_privileges else None,
            "pids_limit": spec.pids_limit,
            "mem_limit": spec.memory_bytes,
            "memswap_limit": spec.memory_bytes,  # the same value: no swap on top of the limit
            "log_config": spec.log_config(),  # a flood of output cannot fill the engine's disk
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
            if spec.network == "host":
                return Container(handle, spec, spec.adapter_port)
            host_port = _published_port(handle, spec.adapter_port)
            if host_port is None:
                raise exit_of(handle, spec.image) or EngineError(
                    f"the engine published no host port for {spec.adapter_port}/tcp"
                )
            return Container(handle, spec, host_port)
        except ImageNotFound:
            self._discard(handle)
            raise EngineError(f"image {spec.image!r} is not present on the engine at {self.address}") from None
        except sdk_errors() as exc:
            self._discard(handle)
            raise EngineError(f"could not start a container from {spec.image!r}: {exc}") from None
        except BaseException:
            self._discard(handle)
            raise

    def _discard(self, handle: Handle | None) -> None:
        if handle is not None:
            self.remove_id(handle.id)

    def remove(
        self,
        container: Container,
        graceful: bool = False,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
        background: bool = False,
    ) -> None:
        """Dispose of a container whose files were collected: killed and removed at once, or with
        ``graceful`` stopped first (SIGTERM, SIGKILL after ``stop_timeout``), for debugging.

        ``background`` takes the removal off the next scenario's path; :meth:`remove_run` waits
        for every such removal before its sweep, so nothing outlives the run.
        """
        if background and not graceful:
            thread = threading.Thread(target=self._remove_quietly, args=(container.id,), daemon=True)
            thread.start()
            self._removals.append(thread)
            return
        self.remove_id(container.id, stop_timeout=stop_timeout if graceful else 0)

    def _remove_quietly(self, container_id: str) -> None:
        """A background removal; what it cannot remove, the run's sweep does."""
        try:
            self.remove_id(container_id)
        except Exception:  # noqa: BLE001 - remove_run sweeps by label afterwards
            pass

    def wait_removals(self, timeout: float = 60.0) -> None:
        """Every background removal of this process has finished."""
        for thread in self._removals:
            thread.join(timeout)
        self._removals.clear()

    def remove_id(self, container_id: str, stop_timeout: float = 0) -> None:
        """Remove (force: SIGKILL), after a ``docker stop`` when ``stop_timeout`` > 0; already gone is fine."""
        from docker.errors import APIError, NotFound

        api = self.client.api
        if stop_timeout > 0:
            try:
                api.stop(container_id, timeout=int(max(1, stop_timeout)))
            except NotFound:
                return
            except sdk_errors():
                pass  # removal below forces it
        try:
            api.remove_container(container_id, force=True, v=True)
        except NotFound:
            pass
        except APIError as exc:
            if "already in progress" not in str(exc):
                raise

    def image_files(
        self,
        image: str,
        path: str,
        *,
        max_total_bytes: int,
        select: Callable[[str], bool] = lambda name: True,
    ) -> dict[str, bytes]:
        """Regular files under ``path`` in an image whose archive name (``opt/x.sh``) passes
        ``select``, as far as ``max_total_bytes`` reach; read from a created, never started,
        container that is always removed. Empty when the path does not exist."""
        from docker.errors import NotFound

        files: dict[str, bytes] = {}
        total = 0
        handle = None
        try:
            handle = self.client.containers.create(
                image, entrypoint=ENTRYPOINT, command=["-c", "true"], labels=self.labels(HELPER_ID)
            )
            try:
                chunks, _ = handle.get_archive(path, chunk_size=ARCHIVE_CHUNK)
            except NotFound:
                return files
            try:
                for member, archive in tar_entries(chunks):
                    if member.isreg() and select(member.name) and total + member.size <= max_total_bytes:
                        source = archive.extractfile(member)
                        assert source is not None  # a regular file
                        files[member.name] = source.read()
                        total += member.size
            finally:
                chunks.close()
        except sdk_errors() + (StreamBroken, tarfile.TarError) as exc:
            raise EngineError(f"could not read {path} in image {image!r}: {exc}") from None
        finally:
            self._discard(handle)
        return files

    def probe_tcp(
        self,
        image: str,
        host: str,
        port: int,
        *,
        network: str,
        extra_hosts: Mapping[str, str],
        timeout_s: float,
    ) -> bool:
        """Whether a container of ``image`` on ``network`` opens a TCP connection to ``host:port``.

        Uses bash's ``/dev/tcp`` only (no coreutils: Meta's agent images have a bare PATH); host
        and port are argv entries, never shell text, and a host that is not a plain name or IP
        address raises ValueError before anything runs. Bounded from here: the probe is waited
        for at most ``timeout_s``, then removed with SIGKILL whatever happened.
        """
        if not plain_host(host) or not 0 < port < 65536:
            raise ValueError(f"not a host name or address and port: {host!r}:{port!r}")
        import requests

        handle = None
        try:
            handle = self.client.containers.create(
                image,
                entrypoint=["/bin/bash"],
                command=["-c", 'exec 3<>"/dev/tcp/$1/$2"', "probe", host, str(port)],
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin"},
                labels=self.labels(HELPER_ID),
                network_mode="host" if network == "host" else None,
                extra_hosts=dict(extra_hosts) or None,
            )
            handle.start()
            return int(handle.wait(timeout=timeout_s).get("StatusCode", -1)) == 0
        except requests.RequestException:  # the wait timed out: nothing answered in time
            return False
        except sdk_errors() as exc:
            raise EngineError(f"could not run a TCP probe from {image!r}: {exc}") from None
        finally:
            self._discard(handle)

    def host_gateway_address(self) -> str | None:
        """The IPv4 address ``host-gateway`` (so ``host.docker.internal``) names on this engine: its
        default bridge's gateway, else the first address of that bridge's subnet; None when unknown."""
        try:
            attrs = self.client.networks.get("bridge").attrs
        except sdk_errors():
            return None
        for config in (attrs.get("IPAM") or {}).get("Config") or []:
            try:
                if config.get("Gateway"):
                    return str(ipaddress.IPv4Address(config["Gateway"]))
                return str(next(ipaddress.IPv4Network(config.get("Subnet") or "").hosts()))
            except (ValueError, StopIteration):
                continue
        return None

    def containers(self, **label_filters: str) -> list[Listed]:
        """The engine's list of this plugin's containers (with these labels), as the list shows them.

        One list call, no inspect per container: every other run's containers on a shared engine are
        listed too, and inspecting each one cost a round trip per container on every pre-flight and
        removal pass (under load enough to time a pre-flight out).
        """
        filters = [f"{LABEL}.{key}={value}" for key, value in label_filters.items()] or [RUN_LABEL]
        try:
            found = self.client.api.containers(all=True, filters={"label": filters})
        except sdk_errors() as exc:
            raise EngineError(f"could not list containers on {self.address}: {exc}") from None
        return [Listed.of(entry) for entry in found if isinstance(entry, dict)]

    def remove_run(self, run_id: str | None = None, worker: str | None = None) -> int:
        """Remove every container of a run (optionally of one worker); how many were removed.

        Listed again until none is left: a killed worker's last create request may land late.
        """
        self.wait_removals()
        wanted = {"run": run_id or self.run_id}
        if worker is not None:
            wanted["worker"] = worker
        removed = 0
        for _ in range(REMOVE_PASSES):
            handles = self.containers(**wanted)
            if not handles:
                break
            for handle in handles:
                self.remove_id(handle.id)
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
            labels = handle.labels
            if labels.get(RUN_LABEL) == self.run_id or labels.get(HOST_LABEL) != host:
                continue
            try:
                age = now - float(labels.get(CREATED_LABEL, "0"))
                pid = int(labels.get(PID_LABEL, "0"))
            except ValueError:
                continue
            if age < grace_seconds or (pid and is_alive(pid)):
                continue
            self.remove_id(handle.id)
            removed.append(handle.name)
        return removed


@dataclass(frozen=True)
class Listed:
    """A container as the engine's list names it: enough to reap or remove it."""

    id: str
    name: str
    labels: dict[str, str]

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Listed:
        names = entry.get("Names")
        labels = entry.get("Labels")
        return cls(
            str(entry.get("Id", "")),
            str(names[0]).lstrip("/") if isinstance(names, list) and names else "",
            {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
        )


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
