"""One scenario container: what it is launched from, and the host's handle on it once it runs.

:class:`Engine.launch <pytest_gaia2.engine.client.Engine.launch>` creates it; this is what the
attempt then uses: its state and early exit, its logs (bounded in memory, streamed to disk),
commands run inside, and files copied out through :func:`~pytest_gaia2.engine.archive.extract`.
It receives SDK objects but imports the SDK only inside the methods that catch its errors.
"""

from __future__ import annotations

import collections
import os
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gaia2.engine.archive import (
    ARCHIVE_CHUNK,
    NO_RENAME,
    Capped,
    CopyReport,
    FileContent,
    Keeper,
    StreamBroken,
    extract,
    first_file,
    masked,
    write_file,
)
from pytest_gaia2.engine.errors import ContainerExited, sdk_errors

if TYPE_CHECKING:
    from docker.models.containers import Container as Handle

    from pytest_gaia2.store.redact import Redactor

LOG_MAX_BYTES = 4 << 20
"""Container logs kept in memory: the last 4 MiB (a chatty image must not fill the host)."""
ENGINE_LOG_MAX_BYTES = 256 << 20
"""What the engine may keep of one container's output on its disk, unless the spec says otherwise."""
ENGINE_LOG_FILES = 2
"""json-file rotation: the output lives in this many files of ``log_max_bytes / ENGINE_LOG_FILES``
each; once one is full the engine starts the next and drops the oldest."""
EXEC_ASKS = 3
"""How many times :meth:`Container.answer` asks a command that printed nothing."""
_JSON_LINE_MIN = len('{"log":"","stream":"stdout","time":"2006-01-02T15:04:05Z"}\n')
"""The least a json-file line adds around one message (its shortest time stamp)."""
_JSON_ESCAPED = bytes(range(32)) + b'"\\<>&'
"""Bytes json-file writes as an escape of two bytes or more."""


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
    files: tuple[tuple[str, FileContent, int], ...] = ()  # (absolute container path, bytes or host file, mode)
    extra_hosts: Mapping[str, str] = field(default_factory=dict)
    pids_limit: int | None = None
    memory_bytes: int | None = None
    no_new_privileges: bool = False
    command: tuple[str, ...] | None = None
    """Arguments to the image's bash instead of its init script: a container that must not start
    the agent (re-judging saved events) runs ``("-c", "exec sleep infinity")``."""
    log_max_bytes: int = ENGINE_LOG_MAX_BYTES
    """The engine's disk for this container's output (json-file max-size x max-file)."""

    @property
    def log_file_bytes(self) -> int:
        """One json-file's size: the engine rotates when the current file reaches it."""
        return max(1, self.log_max_bytes // ENGINE_LOG_FILES)

    def log_config(self) -> dict[str, object]:
        """The engine's log settings: json-file, rotated, so a flood of output cannot fill the
        engine's disk (Podman's compatible API takes it as its k8s-file driver with max-size)."""
        return {
            "type": "json-file",
            "config": {"max-size": str(self.log_file_bytes), "max-file": str(ENGINE_LOG_FILES)},
        }


def _log_chunks(handle: Handle, tail: int | str = "all") -> Iterator[bytes]:
    """The container's output (stdout and stderr) as it streams; a broken stream ends with a note."""
    try:
        yield from handle.logs(stdout=True, stderr=True, tail=tail, stream=True, follow=False)
    except sdk_errors() as exc:
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


def exit_of(handle: Handle, image: str) -> ContainerExited | None:
    """The exit, with code and logs, if the container's main process has ended; None while it runs."""
    handle.reload()
    state = handle.attrs.get("State") or {}
    if state.get("Status") not in {"exited", "dead"}:
        return None
    code = state.get("ExitCode")
    return ContainerExited(image, int(code) if code is not None else None, _bounded_logs(handle, "all"))


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
        return exit_of(self.handle, self.spec.image)

    def logs(self, tail: int | str = "all") -> str:
        """Stdout and stderr so far, bounded to the last :data:`LOG_MAX_BYTES`."""
        return _bounded_logs(self.handle, tail)

    def save_logs(
        self,
        path: Path,
        *,
        max_bytes: int,
        redactor: Redactor | None = None,
    ) -> list[str]:
        """Stream the whole output into ``path`` (atomically), masked with ``redactor`` as
        :func:`extract` does, cut after ``max_bytes`` of it; why the file is not the whole output.

        The engine's own cut is told from the size the output takes in its json-file (at least
        each message plus its escapes and the line around it): once that reaches one file's
        size, the engine has rotated and the oldest output may be gone."""
        path.parent.mkdir(parents=True, exist_ok=True)
        parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        stored = 0

        def measured() -> Iterator[bytes]:
            nonlocal stored
            for message in _log_chunks(self.handle):
                stored += len(message) * 2 - len(message.translate(None, _JSON_ESCAPED)) + _JSON_LINE_MIN
                yield message

        try:
            pieces = Capped(masked(measured(), redactor), max_bytes)
            write_file(parent_fd, (path.name,), pieces)
        finally:
            os.close(parent_fd)
        cuts = []
        if stored >= self.spec.log_file_bytes:
            cuts.append(
                f"the engine keeps at most {self.spec.log_max_bytes} bytes of a container's output "
                f"({ENGINE_LOG_FILES} json-file logs) and rotated them: the earliest output may be missing"
            )
        if pieces.cut:
            cuts.append(f"over the {max_bytes}-byte file cap: the output past it was not kept")
        return cuts

    def exec(self, cmd: list[str], user: str = "") -> tuple[int, str]:
        """Run a command inside; ``(exit code, output)``; -1 when the container cannot exec.

        OSError too: over ``ssh://`` the SDK's transport can break its pipe closing an exec's stream."""
        try:
            result = self.handle.exec_run(cmd, user=user, demux=False)
        except sdk_errors() + (OSError,) as exc:
            return -1, str(exc)
        output = result.output.decode("utf-8", errors="replace") if result.output else ""
        return int(result.exit_code if result.exit_code is not None else -1), output

    def answer(self, cmd: list[str], user: str = "", asks: int = EXEC_ASKS) -> tuple[int, str]:
        """:meth:`exec` for a command that always prints and may run again (a read, a health
        check): asked up to ``asks`` times while it printed nothing, since a busy engine can lose
        a short exec's output (seen on Docker and Podman), and a lost answer must not read as a
        missing file or a dead adapter."""
        for _ in range(asks - 1):
            code, output = self.exec(cmd, user=user)
            if output.strip():
                return code, output
            time.sleep(0.5)
        return self.exec(cmd, user=user)

    def copy_out(
        self,
        path: str,
        dest: Path,
        *,
        max_file_bytes: int,
        max_total_bytes: int,
        rename: Mapping[str, str] = NO_RENAME,
        keep: Keeper | None = None,
        prefix: str = "",
        redactor: Redactor | None = None,
        wanted: Callable[[str], bool] | None = None,
        ignore_limit: int = 0,
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
        except sdk_errors() as exc:
            return CopyReport(notes=[f"the engine could not archive {path}: {exc}"])
        try:
            return extract(
                chunks,
                dest,
                max_file_bytes=max_file_bytes,
                max_total_bytes=max_total_bytes,
                rename=rename,
                keep=keep,
                prefix=prefix,
                redactor=redactor,
                wanted=wanted,
                ignore_limit=ignore_limit,
            )
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
        except sdk_errors() as exc:
            return None, f"the engine could not archive {path}: {exc}"
        try:
            return first_file(chunks, max_bytes)
        except (StreamBroken, tarfile.TarError) as exc:
            return None, f"the engine's archive stream broke: {exc}"
        finally:
            chunks.close()
