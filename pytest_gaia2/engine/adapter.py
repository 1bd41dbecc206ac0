"""The adapter's HTTP contract, seen from the host: /health, /notify, /status.

Two ways to the same contract, chosen per engine (:func:`client_for`). :class:`AdapterClient`
talks through the published 127.0.0.1 port, the path the whole run uses on a local engine, so
a healthy check really means the run can be driven. :class:`ExecAdapterClient` runs curl
inside the container through the engine API, for an engine on another host: its 127.0.0.1
ports are not this host's, and the adapter is never published on any other interface.

The container is not trusted, so on both paths: no proxy and no redirect is ever followed
(only the adapter the harness started is contacted), every answer is cut at
:data:`~pytest_gaia2.store.limits.ADAPTER_ANSWER_MAX_BYTES`, and each call ends within its timeout
in wall-clock time, headers and body together.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_gaia2.store.limits import ADAPTER_ANSWER_MAX_BYTES, ADAPTER_TIMEOUT
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded

if TYPE_CHECKING:
    from pytest_gaia2.engine.container import Container

EXEC_SPACING = 0.25
"""Least time between two exec calls: each costs the engine about 50 ms (create, start, inspect
an exec), so polling at the ports client's 50 ms would keep the engine busy for nothing."""


class AdapterUnavailable(Exception):
    """The adapter did not answer, or answered something that is not the contract."""


def _body(method: str, path: str, status: int, content: bytes) -> dict[str, Any]:
    """The JSON object of a 2xx answer, or AdapterUnavailable saying what was wrong with it
    (a redirect is never followed: it names only its status)."""
    if 300 <= status < 400:
        raise AdapterUnavailable(f"{method} {path}: HTTP {status} redirect, not followed")
    try:
        body = loads_bounded(content, max_bytes=ADAPTER_ANSWER_MAX_BYTES)
    except JsonReadError as exc:
        raise AdapterUnavailable(f"{method} {path}: HTTP {status}, body is not JSON the host reads ({exc})") from None
    if not isinstance(body, dict):
        raise AdapterUnavailable(f"{method} {path}: HTTP {status}, body is not an object")
    if not 200 <= status < 300:
        raise AdapterUnavailable(f"{method} {path}: HTTP {status} {json.dumps(body)[:200]}")
    return body


class _Calls:
    """The contract's calls, whatever carries the requests (``_request`` in each client)."""

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def connected(self) -> bool:
        """True once /health reports a truthy ``connected``; False while it answers otherwise."""
        return bool(self.health().get("connected"))

    def status(self) -> dict[str, Any]:
        return self._request("GET", "/status")

    def notify(self, message: str) -> None:
        """Send the task (only for scenarios without events: the daemon sends it otherwise)."""
        body = self._request("POST", "/notify", {"message": message})
        if body.get("ok") is not True:
            raise AdapterUnavailable(f"POST /notify: the adapter did not accept the task: {body}")


class _DeadlineSocket(socket.socket):
    """A socket whose every read waits only for what is left of one call's wall-clock time, so
    an answer dripped a byte at a time ends at the deadline, not at each read's timeout."""

    deadline = 0.0

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the answer took longer than the call's time bound")
        self.settimeout(remaining)
        return super().recv_into(buffer, nbytes, flags)


class _DeadlineConnection(http.client.HTTPConnection):
    """http.client (never a proxy, never a redirect) on a :class:`_DeadlineSocket`."""

    def __init__(self, host: str, port: int | None, deadline: float) -> None:
        super().__init__(host, port, timeout=max(0.001, deadline - time.monotonic()))
        self.deadline = deadline

    def connect(self) -> None:
        plain = socket.create_connection((self.host, self.port), self.timeout)
        sock = _DeadlineSocket(fileno=plain.detach())
        sock.deadline = self.deadline
        sock.settimeout(max(0.001, self.deadline - time.monotonic()))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock


class AdapterClient(_Calls):
    """The contract through the published port: one connection per call, closed after it."""

    def __init__(self, base_url: str, timeout: float = ADAPTER_TIMEOUT) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port
        self.timeout = timeout

    def close(self) -> None:
        pass  # nothing is held between calls

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        connection = _DeadlineConnection(self.host, self.port, time.monotonic() + self.timeout)
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Connection": "close", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read(ADAPTER_ANSWER_MAX_BYTES + 1)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise AdapterUnavailable(f"{method} {path}: {type(exc).__name__}") from None
        finally:
            connection.close()
        if len(content) > ADAPTER_ANSWER_MAX_BYTES:
            raise AdapterUnavailable(f"{method} {path}: answer larger than {ADAPTER_ANSWER_MAX_BYTES} bytes")
        return _body(method, path, response.status, content)


class ExecAdapterClient(_Calls):
    """The contract through the engine API: ``curl`` against 127.0.0.1:<adapter port> inside the
    container (gaia2-cli images and the reference image have it). Calls are spaced
    :data:`EXEC_SPACING` apart."""

    def __init__(self, container: Container, port: int, timeout: float = ADAPTER_TIMEOUT) -> None:
        self.container = container
        self.base_url = f"http://127.0.0.1:{port}"
        self.timeout = timeout
        self._last = 0.0

    def close(self) -> None:
        pass  # nothing is held between calls

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        time.sleep(max(0.0, self._last + EXEC_SPACING - time.monotonic()))
        self._last = time.monotonic()
        # -m bounds the whole call; no -L, so a redirect is never followed; head cuts the
        # answer (curl's --max-filesize cannot see the size of a chunked one).
        curl = [
            "/usr/bin/curl",
            "-s",
            "-m",
            f"{self.timeout:g}",
            "--noproxy",
            "*",
            "--proto",
            "=http",
            "-X",
            method,
            "-w",
            "\n%{http_code}",
            f"{self.base_url}{path}",
        ]
        if payload is not None:
            curl += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(payload)]
        command = ["/bin/sh", "-c", f'"$@" | /usr/bin/head -c {ADAPTER_ANSWER_MAX_BYTES + 8}', "sh", *curl]
        code, output = self.container.exec(command)
        if code != 0:
            raise AdapterUnavailable(f"{method} {path}: curl inside the container exited with {code}")
        content, _, status = output.rpartition("\n")
        if len(output) > ADAPTER_ANSWER_MAX_BYTES + 4:
            raise AdapterUnavailable(f"{method} {path}: answer larger than {ADAPTER_ANSWER_MAX_BYTES} bytes")
        if not status.isdigit() or status == "000":
            raise AdapterUnavailable(f"{method} {path}: no HTTP answer inside the container")
        return _body(method, path, int(status), content.encode())


def client_for(container: Container, reach: str, adapter_port: int) -> AdapterClient | ExecAdapterClient:
    """The client for an engine's ``reach``: ``ports`` (published port) or ``api`` (exec)."""
    if reach == "api":
        return ExecAdapterClient(container, adapter_port)
    return AdapterClient(container.adapter_url)
