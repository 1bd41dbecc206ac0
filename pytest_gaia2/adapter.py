"""The adapter's HTTP contract, seen from the host: /health, /notify, /status.

Two ways to the same contract, chosen per engine (:func:`client_for`). :class:`AdapterClient`
talks through the published 127.0.0.1 port, the path the whole run uses on a local engine, so
a healthy check really means the run can be driven; proxies are never used.
:class:`ExecAdapterClient` runs curl inside the container through the engine API, for an engine
on another host: its 127.0.0.1 ports are not this host's, and the adapter is never published
on any other interface.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import requests

if TYPE_CHECKING:
    from .container import Container

EXEC_SPACING = 0.25
"""Least time between two exec calls: each costs the engine about 50 ms (create, start, inspect
an exec), so polling at the ports client's 50 ms would keep the engine busy for nothing."""
EXEC_MAX_BYTES = 1 << 20
"""Largest answer curl is allowed to print (the container is not trusted)."""


class AdapterUnavailable(Exception):
    """The adapter did not answer, or answered something that is not the contract."""


def _body(method: str, path: str, status: int, content: bytes) -> dict[str, Any]:
    """The JSON object of an answer, or AdapterUnavailable saying what was wrong with it."""
    try:
        body = json.loads(content)
    except ValueError:
        raise AdapterUnavailable(f"{method} {path}: HTTP {status}, body is not JSON") from None
    if not isinstance(body, dict):
        raise AdapterUnavailable(f"{method} {path}: HTTP {status}, body is not an object")
    if status >= 400:
        raise AdapterUnavailable(f"{method} {path}: HTTP {status} {body}")
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


class AdapterClient(_Calls):
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.trust_env = False  # never route 127.0.0.1 through a proxy

    def close(self) -> None:
        self.session.close()

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = self.session.request(method, f"{self.base_url}{path}", timeout=self.timeout,
                                            json=payload)
        except requests.RequestException as exc:
            raise AdapterUnavailable(f"{method} {path}: {type(exc).__name__}") from None
        return _body(method, path, response.status_code, response.content)


class ExecAdapterClient(_Calls):
    """The contract through the engine API: ``curl`` against 127.0.0.1:<adapter port> inside the
    container (gaia2-cli images and the reference image have it). Calls are spaced
    :data:`EXEC_SPACING` apart."""

    def __init__(self, container: Container, port: int, timeout: float = 5.0) -> None:
        self.container = container
        self.base_url = f"http://127.0.0.1:{port}"
        self.timeout = timeout
        self._last = 0.0

    def close(self) -> None:
        pass  # nothing is held between calls

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        time.sleep(max(0.0, self._last + EXEC_SPACING - time.monotonic()))
        self._last = time.monotonic()
        command = ["curl", "-s", "-m", f"{self.timeout:g}", "--noproxy", "*", "--max-filesize", str(EXEC_MAX_BYTES),
                   "-X", method, "-w", "\n%{http_code}", f"{self.base_url}{path}"]
        if payload is not None:
            command += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(payload)]
        code, output = self.container.exec(command)
        if code != 0:
            raise AdapterUnavailable(f"{method} {path}: curl inside the container exited with {code}")
        content, _, status = output.rpartition("\n")
        if not status.isdigit() or status == "000":
            raise AdapterUnavailable(f"{method} {path}: no HTTP answer inside the container")
        return _body(method, path, int(status), content.encode())


def client_for(container: Container, reach: str, adapter_port: int) -> AdapterClient | ExecAdapterClient:
    """The client for an engine's ``reach``: ``ports`` (published port) or ``api`` (exec)."""
    if reach == "api":
        return ExecAdapterClient(container, adapter_port)
    return AdapterClient(container.adapter_url)
