"""The container engine, through the Docker SDK: launch, copy in and out, stop, reap, probe.

Everything goes through the engine API (no bind mounts, no host CLI), so a local socket,
a remote engine, Docker Desktop and Podman's Docker-compatible socket all work the same.
This is the only module that talks to the SDK, and it imports ``docker`` and ``requests``
only inside the functions that need them: a pytest run that never uses the plugin does not
pay for them.

Containers are hostile input: what is copied out is streamed with caps on sizes, names and
depth, and written only inside the destination folder (see :func:`extract`).
"""

from __future__ import annotations

import collections
import errno
import io
import itertools
import os
import re
import socket
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

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

LOG_TAIL_LINES = 20
LOG_MAX_BYTES = 4 << 20
"""Container logs kept in memory: the last 4 MiB (a chatty image must not fill the host)."""

ARCHIVE_CHUNK = 256 << 10
COPY_CHUNK = 1 << 20
"""Bytes read per step when copying a file out; also the window a redaction transform sees."""
MAX_NAME_BYTES = 255
MAX_HOST_PATH_BYTES = 3800
MAX_DEPTH = 32
MAX_ENTRIES = 10_000
"""Archive entries looked at per copy: bounds time and inodes against a tree of tiny files."""

_NO_RENAME: Mapping[str, str] = MappingProxyType({})
_PLAIN_HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}|[0-9A-Fa-f:.]{2,45}")
_temp_names = itertools.count()


class EngineError(Exception):
    """The engine cannot be reached or refused an operation."""


class ContainerExited(EngineError):
    """The container's main process ended (a wrong image, a missing entrypoint script, an
    entrypoint that exits): raised by :meth:`Engine.launch` when it ended before its port was
    published, returned by :meth:`Container.exited` after that. ``logs`` is the whole output."""

    def __init__(self, image: str, exit_code: int | None, logs: str) -> None:
        self.exit_code = exit_code
        self.logs = logs
        self.tail = "\n".join(logs.rstrip().splitlines()[-LOG_TAIL_LINES:])
        super().__init__(
            f"the main process of the container ({image}) exited with code {exit_code}; "
            f"last log lines:\n{self.tail or '(no output)'}"
        )


def _engine_errors() -> tuple[type[Exception], ...]:
    """What the SDK raises when the engine or its connection fails (evaluated only on failure)."""
    import docker.errors
    import requests

    return docker.errors.DockerException, requests.RequestException


def plain_host(host: str) -> bool:
    """Whether ``host`` is a plain DNS name or IP address: nothing a shell or URL would read
    as more (quotes, ``$``, spaces, backticks, slashes)."""
    return bool(_PLAIN_HOST.fullmatch(host))


def engine_address() -> str:
    """Where the engine is, for messages: ``DOCKER_HOST`` or the default socket."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock (default)"


def connect(timeout: float = 30.0) -> docker.DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` or the Docker context; one clear error if down."""
    import docker

    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except _engine_errors() + (OSError,) as exc:
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


# -- streaming archives out of containers -------------------------------------------------------


class _StreamBroken(Exception):
    """The engine's archive stream failed mid-way (not an OSError: those are local write errors)."""


class _ChunkStream(io.RawIOBase):
    """A read-only file over the engine's chunk iterator, so tarfile's stream mode can read it
    without the archive ever being held whole."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._rest = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                return 0
            except Exception as exc:  # noqa: BLE001 - any transport failure ends the stream alike
                raise _StreamBroken(f"{type(exc).__name__}: {exc}") from exc
            self._rest = memoryview(chunk)
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size


def _entries(chunks: Iterable[bytes]) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    """Each entry of a tar stream with the archive to read its data from, in order, once."""
    with tarfile.open(fileobj=_ChunkStream(iter(chunks)), mode="r|") as archive:
        while (member := archive.next()) is not None:
            archive.members.clear()  # type: ignore[attr-defined]  # stream mode keeps every header seen
            yield member, archive


@dataclass
class CopyReport:
    """What a copy out wrote (host-relative name, bytes), skipped (archive name, why) and noted."""

    written: list[tuple[str, int]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    total_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def _shown(name: str) -> str:
    """A hostile archive name made printable and short enough for a report."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    text = "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in text)
    return text if len(text) <= 300 else f"{text[:297]}..."


def _type_problem(member: tarfile.TarInfo) -> str | None:
    """Why an entry is not copied for its type; None for regular files (and directories)."""
    if member.isreg() or member.isdir():
        return None
    if member.issym():
        return "symbolic link"
    if member.islnk():
        return "hard link"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "FIFO"
    return f"unsupported entry type {member.type!r}"


def _destination(
    name: str, root: str, rename: Mapping[str, str], prefix: tuple[str, ...]
) -> tuple[tuple[str, ...], str | None]:
    """Where an archive entry goes below ``root`` (its path below the archive's top folder,
    renamed or under ``prefix``; a single-file archive keeps the file's name), or why not."""
    if "\0" in name:
        return (), "name contains NUL"
    if name.startswith("/"):
        return (), "absolute name"
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        return (), "name contains '..'"
    relative = parts[1:] if len(parts) > 1 else parts
    mapped = rename.get("/".join(relative))
    host = tuple(mapped.split("/")) if mapped is not None else (*prefix, *relative)
    if not host or any(part in ("", ".", "..") or "\0" in part for part in host):
        return (), "not a plain relative name"
    if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in host):
        return (), f"a path component is longer than {MAX_NAME_BYTES} bytes"
    if len(host) > MAX_DEPTH:
        return (), f"deeper than {MAX_DEPTH} levels"
    if len(os.fsencode(os.path.join(root, *host))) > MAX_HOST_PATH_BYTES:
        return (), f"host path longer than {MAX_HOST_PATH_BYTES} bytes"
    return host, None


def _open_dirs(root_fd: int, names: Sequence[str]) -> int:
    """A descriptor of ``root/names...``, created as needed, never through a symlink."""
    fd = root_fd
    try:
        for name in names:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            if fd != root_fd:
                os.close(fd)
            fd = child
    except BaseException:
        if fd != root_fd:
            os.close(fd)
        raise
    return fd


def _read_chunks(source: IO[bytes]) -> Iterator[bytes]:
    while chunk := source.read(COPY_CHUNK):
        yield chunk


def _masked(
    chunks: Iterable[bytes], transform: Callable[[bytes], bytes] | None, overlap: int
) -> Iterator[bytes]:
    """``chunks`` through ``transform``: the last ``overlap`` bytes of each transformed window
    are carried into the next one, so a secret split by a chunk boundary is still seen whole."""
    if transform is None:
        yield from chunks
        return
    carry = b""
    for chunk in chunks:
        data = transform(carry + chunk)
        cut = max(0, len(data) - overlap)
        yield data[:cut]
        carry = data[cut:]
    yield carry


def _capped(pieces: Iterable[bytes], max_bytes: int) -> Iterator[bytes]:
    """At most ``max_bytes`` of ``pieces``, then a line saying the rest was cut."""
    left = max_bytes
    for piece in pieces:
        if len(piece) > left:
            yield piece[:left]
            yield f"\n[pytest-gaia2: cut here, over {max_bytes} bytes]\n".encode()
            return
        left -= len(piece)
        yield piece


def _write_file(root_fd: int, parts: Sequence[str], pieces: Iterable[bytes]) -> int:
    """Write atomically (a temporary name in the same folder, then a rename); bytes written."""
    parent = _open_dirs(root_fd, parts[:-1])
    temp = f".gaia2-copy-{os.getpid()}-{next(_temp_names)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=parent)
        try:
            size = 0
            with os.fdopen(fd, "wb") as out:
                for piece in pieces:
                    out.write(piece)
                    size += len(piece)
            os.replace(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
            raise
        return size
    finally:
        if parent != root_fd:
            os.close(parent)


def _write_problem(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return "a file, folder or symlink is in the way on the host"
    return f"could not write on the host: {exc.strerror or exc}"


def extract(
    chunks: Iterable[bytes],
    dest: Path,
    *,
    max_file_bytes: int,
    max_total_bytes: int,
    rename: Mapping[str, str] = _NO_RENAME,
    prefix: str = "",
    transform: Callable[[bytes], bytes] | None = None,
    overlap: int = 0,
) -> CopyReport:
    """Write the regular files of a tar stream under ``dest``; everything else is listed as skipped.

    A file's archive path below the top folder (``state/a/b.json`` -> ``a/b.json``) goes to
    ``rename[path]`` when mapped, else to ``prefix/path``. Names are checked before anything
    is written (no NUL, absolute path or ``..``; components, depth and host path bounded), and
    folders are opened one by one with ``O_NOFOLLOW`` from ``dest``, so nothing lands outside
    it. Files over ``max_file_bytes``, or over what is left of ``max_total_bytes``, are
    skipped. Memory stays at a few chunks whatever the archive holds. ``transform`` (e.g.
    masking secrets) sees every file in windows of :data:`COPY_CHUNK` bytes, consecutive
    windows overlapping by ``overlap`` bytes (at least the longest value it replaces).
    A broken stream ends the copy with a note; what was written stays.
    """
    report = CopyReport()
    dest.mkdir(parents=True, exist_ok=True)
    root = os.path.abspath(dest)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    prefix_parts = tuple(part for part in prefix.split("/") if part)
    try:
        for count, (member, archive) in enumerate(_entries(chunks), start=1):
            if count > MAX_ENTRIES:
                report.notes.append(f"stopped after {MAX_ENTRIES} archive entries")
                break
            if member.isdir():
                continue
            shown = _shown(member.name)
            host_parts, problem = _destination(member.name, root, rename, prefix_parts)
            problem = _type_problem(member) or problem
            if problem is None and member.size > max_file_bytes:
                problem = f"{member.size} bytes, over the {max_file_bytes}-byte file cap"
            if problem is None and report.total_bytes + member.size > max_total_bytes:
                problem = f"{member.size} bytes, over what is left of the {max_total_bytes}-byte total cap"
            if problem is not None:
                report.skipped.append((shown, problem))
                continue
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            try:
                size = _write_file(root_fd, host_parts, _masked(_read_chunks(source), transform, overlap))
            except OSError as exc:
                report.skipped.append((shown, _write_problem(exc)))
                continue
            report.written.append(("/".join(host_parts), size))
            report.total_bytes += size
    except _StreamBroken as exc:
        report.notes.append(f"the engine's archive stream broke, the copy is partial: {exc}")
    except tarfile.TarError as exc:
        report.notes.append(f"the archive is unreadable, the copy is partial: {exc}")
    finally:
        os.close(root_fd)
    return report


def _first_file(chunks: Iterable[bytes], max_bytes: int) -> tuple[bytes | None, str | None]:
    """The content of a single-file archive, unless it is larger than ``max_bytes``."""
    for member, archive in _entries(chunks):
        if not member.isreg():
            return None, "not a regular file"
        if member.size > max_bytes:
            return None, f"{member.size} bytes, over the {max_bytes}-byte cap"
        source = archive.extractfile(member)
        assert source is not None
        return source.read(), None
    return None, "empty archive"


# -- containers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to create one scenario container.

    ``pids_limit`` and ``memory_bytes`` bound a runaway agent (None: the engine's default,
    unlimited). ``no_new_privileges`` must stay False for images whose agent reaches the state
    through a setuid helper (gaia2-cli's Hermes and OpenClaw images: ``gaia2-exec`` is
    setuid-gaia2, and with no-new-privileges every tool call runs as ``agent`` and fails); the
    reference image and oracle images have none and can take it.
    """

    image: str
    name: str
    env: Mapping[str, str]
    labels: Mapping[str, str]
    adapter_port: int
    network: str = "bridge"
    files: tuple[tuple[str, bytes, int], ...] = ()  # (absolute container path, content, mode)
    extra_hosts: Mapping[str, str] = field(default_factory=dict)
    pids_limit: int | None = None
    memory_bytes: int | None = None
    no_new_privileges: bool = False


def _log_chunks(handle: Handle, tail: int | str = "all") -> Iterator[bytes]:
    """The container's output (stdout and stderr) as it streams; a broken stream ends with a note."""
    try:
        yield from handle.logs(stdout=True, stderr=True, tail=tail, stream=True, follow=False)
    except _engine_errors() as exc:
        yield f"\n[pytest-gaia2: the engine's log stream broke: {type(exc).__name__}]\n".encode()


def _bounded_logs(handle: Handle, tail: int | str, max_bytes: int = LOG_MAX_BYTES) -> str:
    """The container's output, at most its last ``max_bytes`` (a chatty image must not fill memory)."""
    kept: collections.deque[bytes] = collections.deque()
    size = 0
    cut = False
    for chunk in _log_chunks(handle, tail):
        kept.append(chunk)
        size += len(chunk)
        while size - len(kept[0]) >= max_bytes:
            size -= len(kept.popleft())
            cut = True
    text = b"".join(kept)[-max_bytes:].decode("utf-8", errors="replace")
    return f"[pytest-gaia2: earlier output cut, the last {max_bytes} bytes follow]\n{text}" if cut else text


class Container:
    """One running scenario container and what the host needs to reach it."""

    def __init__(self, handle: Handle, spec: LaunchSpec, host_port: int) -> None:
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

    def exited(self) -> ContainerExited | None:
        """The early exit, as :meth:`Engine.launch` raises it, once the main process has ended."""
        return _exit_of(self.handle, self.spec.image)

    def logs(self, tail: int | str = "all") -> str:
        """Stdout and stderr so far, bounded to the last :data:`LOG_MAX_BYTES`."""
        return _bounded_logs(self.handle, tail)

    def save_logs(
        self, path: Path, *, max_bytes: int,
        transform: Callable[[bytes], bytes] | None = None, overlap: int = 0,
    ) -> int:
        """Stream the whole output into ``path`` (atomically), through ``transform`` as
        :func:`extract` does, cut after ``max_bytes`` of it; bytes written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            pieces = _capped(_masked(_log_chunks(self.handle), transform, overlap), max_bytes)
            return _write_file(parent_fd, (path.name,), pieces)
        finally:
            os.close(parent_fd)

    def exec(self, cmd: list[str], user: str = "") -> tuple[int, str]:
        """Run a command inside; ``(exit code, output)``; -1 when the container cannot exec."""
        try:
            result = self.handle.exec_run(cmd, user=user, demux=False)
        except _engine_errors() as exc:
            return -1, str(exc)
        output = result.output.decode("utf-8", errors="replace") if result.output else ""
        return int(result.exit_code if result.exit_code is not None else -1), output

    def copy_out(
        self,
        path: str,
        dest: Path,
        *,
        max_file_bytes: int,
        max_total_bytes: int,
        rename: Mapping[str, str] = _NO_RENAME,
        prefix: str = "",
        transform: Callable[[bytes], bytes] | None = None,
        overlap: int = 0,
    ) -> CopyReport:
        """Stream ``path`` (a file or folder; running or stopped container) into ``dest``.

        See :func:`extract` for the rules. A missing path gives an empty report; an engine
        failure gives what was written so far plus a note, never an exception.
        """
        from docker.errors import NotFound

        try:
            chunks, _ = self.handle.get_archive(path, chunk_size=ARCHIVE_CHUNK)
        except NotFound:
            return CopyReport()
        except _engine_errors() as exc:
            return CopyReport(notes=[f"the engine could not archive {path}: {exc}"])
        try:
            return extract(chunks, dest, max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes,
                           rename=rename, prefix=prefix, transform=transform, overlap=overlap)
        finally:
            chunks.close()

    def read_file(self, path: str, max_bytes: int) -> tuple[bytes | None, str | None]:
        """A small file's content (e.g. daemon_status.json), or None and why: absent, not a
        regular file, larger than ``max_bytes`` (then only its header was read)."""
        from docker.errors import NotFound

        try:
            chunks, _ = self.handle.get_archive(path, chunk_size=ARCHIVE_CHUNK)
        except NotFound:
            return None, "not found"
        except _engine_errors() as exc:
            return None, f"the engine could not archive {path}: {exc}"
        try:
            return _first_file(chunks, max_bytes)
        except (_StreamBroken, tarfile.TarError) as exc:
            return None, f"the engine's archive stream broke: {exc}"
        finally:
            chunks.close()


def _exit_of(handle: Handle, image: str) -> ContainerExited | None:
    """The exit, with code and logs, if the container's main process has ended; None while it runs."""
    handle.reload()
    state = handle.attrs.get("State") or {}
    if state.get("Status") not in {"exited", "dead"}:
        return None
    code = state.get("ExitCode")
    return ContainerExited(image, int(code) if code is not None else None, _bounded_logs(handle, "all"))


def _published_port(handle: Handle, port: int) -> int | None:
    ports = (handle.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    for binding in ports.get(f"{port}/tcp") or []:
        host_port = binding.get("HostPort")
        if host_port:
            return int(host_port)
    return None


def _copy_in(handle: Handle, files: Iterable[tuple[str, bytes, int]]) -> None:
    """Copy files into a created container; its existing directories keep owner and mode."""
    from docker.errors import NotFound

    for path, content, mode in files:
        target = PurePosixPath(path)
        try:
            ok = handle.put_archive(str(target.parent), tar_files([(target.name, content, mode)]))
        except NotFound:
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

    def version(self) -> dict[str, Any]:
        """The engine's version record (``Version``, ``Os``, ``Arch``, ...)."""
        try:
            return dict(self.client.version())
        except _engine_errors() as exc:
            raise EngineError(f"the engine at {engine_address()} did not report its version: {exc}") from None

    def image_id(self, image: str) -> str | None:
        """The id of a local image, or None when the engine does not have it."""
        from docker.errors import ImageNotFound

        try:
            return str(self.client.images.get(image).id)
        except ImageNotFound:
            return None
        except _engine_errors() as exc:
            raise EngineError(f"could not inspect image {image!r}: {exc}") from None

    def launch(self, spec: LaunchSpec) -> Container:
        """Create, copy the files in, start, and read the published port; nothing is left on failure.

        Hardened: every capability but :data:`CAPABILITIES` dropped, the spec's pids and memory
        limits, no-new-privileges when the spec allows it, the adapter published on 127.0.0.1 only.
        """
        from docker.errors import ImageNotFound

        kwargs: dict[str, Any] = {
            "image": spec.image,
            "entrypoint": ENTRYPOINT,
            "command": COMMAND,
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
                raise _exit_of(handle, spec.image) or EngineError(
                    f"the engine published no host port for {spec.adapter_port}/tcp")
            return Container(handle, spec, host_port)
        except ImageNotFound:
            self._discard(handle)
            raise EngineError(f"image {spec.image!r} is not present on the engine at {engine_address()}") from None
        except _engine_errors() as exc:
            self._discard(handle)
            raise EngineError(f"could not start a container from {spec.image!r}: {exc}") from None
        except BaseException:
            self._discard(handle)
            raise

    def _discard(self, handle: Handle | None) -> None:
        if handle is not None:
            self.remove_id(handle.id)

    def remove(self, container: Container, graceful: bool = False,
               stop_timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Dispose of a container whose files were collected: killed and removed at once, or with
        ``graceful`` stopped first (SIGTERM, SIGKILL after ``stop_timeout``), for debugging."""
        self.remove_id(container.id, stop_timeout=stop_timeout if graceful else 0)

    def remove_id(self, container_id: str, stop_timeout: float = 0) -> None:
        """Remove (force: SIGKILL), after a ``docker stop`` when ``stop_timeout`` > 0; already gone is fine."""
        from docker.errors import APIError, NotFound

        api = self.client.api
        if stop_timeout > 0:
            try:
                api.stop(container_id, timeout=int(max(1, stop_timeout)))
            except NotFound:
                return
            except _engine_errors():
                pass  # removal below forces it
        try:
            api.remove_container(container_id, force=True, v=True)
        except NotFound:
            pass
        except APIError as exc:
            if "already in progress" not in str(exc):
                raise

    def image_files(
        self, image: str, path: str, *, max_total_bytes: int, select: Callable[[str], bool] = lambda name: True,
    ) -> dict[str, bytes]:
        """Regular files under ``path`` in an image whose archive name (``opt/x.sh``) passes
        ``select``, as far as ``max_total_bytes`` reach; read from a created, never started,
        container that is always removed. Empty when the path does not exist."""
        from docker.errors import NotFound

        files: dict[str, bytes] = {}
        total = 0
        handle = None
        try:
            handle = self.client.containers.create(image, entrypoint=ENTRYPOINT, command=["-c", "true"],
                                                   labels=self.labels(HELPER_ID))
            try:
                chunks, _ = handle.get_archive(path, chunk_size=ARCHIVE_CHUNK)
            except NotFound:
                return files
            try:
                for member, archive in _entries(chunks):
                    if member.isreg() and select(member.name) and total + member.size <= max_total_bytes:
                        source = archive.extractfile(member)
                        assert source is not None  # a regular file
                        files[member.name] = source.read()
                        total += member.size
            finally:
                chunks.close()
        except _engine_errors() + (_StreamBroken, tarfile.TarError) as exc:
            raise EngineError(f"could not read {path} in image {image!r}: {exc}") from None
        finally:
            self._discard(handle)
        return files

    def probe_tcp(
        self, image: str, host: str, port: int, *,
        network: str, extra_hosts: Mapping[str, str], timeout_s: float,
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
                image, entrypoint=["/bin/bash"],
                command=["-c", 'exec 3<>"/dev/tcp/$1/$2"', "probe", host, str(port)],
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin"}, labels=self.labels(HELPER_ID),
                network_mode="host" if network == "host" else None, extra_hosts=dict(extra_hosts) or None,
            )
            handle.start()
            return int(handle.wait(timeout=timeout_s).get("StatusCode", -1)) == 0
        except requests.RequestException:  # the wait timed out: nothing answered in time
            return False
        except _engine_errors() as exc:
            raise EngineError(f"could not run a TCP probe from {image!r}: {exc}") from None
        finally:
            self._discard(handle)

    def containers(self, **label_filters: str) -> list[Handle]:
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
            self.remove_id(handle.id)
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
