"""The adapter's HTTP contract, seen from the host: /health, /notify, /status.

The host talks to the adapter through the published port, the same path the whole run
uses, so a healthy check really means the run can be driven. Proxies are never used.
"""

from __future__ import annotations

from typing import Any

import requests


class AdapterUnavailable(Exception):
    """The adapter did not answer, or answered something that is not the contract."""


class AdapterClient:
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.trust_env = False  # never route 127.0.0.1 through a proxy

    def close(self) -> None:
        self.session.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.session.request(method, f"{self.base_url}{path}", timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise AdapterUnavailable(f"{method} {path}: {type(exc).__name__}") from None
        try:
            body = response.json()
        except ValueError:
            raise AdapterUnavailable(f"{method} {path}: HTTP {response.status_code}, body is not JSON") from None
        if not isinstance(body, dict):
            raise AdapterUnavailable(f"{method} {path}: HTTP {response.status_code}, body is not an object")
        if response.status_code >= 400:
            raise AdapterUnavailable(f"{method} {path}: HTTP {response.status_code} {body}")
        return body

    def health(self) -> dict[str, Any]:
        return self._request("GET", "/health")

    def connected(self) -> bool:
        """True once /health reports a truthy ``connected``; False while it answers otherwise."""
        return bool(self.health().get("connected"))

    def status(self) -> dict[str, Any]:
        return self._request("GET", "/status")

    def notify(self, message: str) -> None:
        """Send the task (only for scenarios without events: the daemon sends it otherwise)."""
        body = self._request("POST", "/notify", json={"message": message})
        if body.get("ok") is not True:
            raise AdapterUnavailable(f"POST /notify: the adapter did not accept the task: {body}")
