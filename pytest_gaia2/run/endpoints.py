"""One real, minimal completion per model endpoint before any container starts.

``/v1/models`` answering is not readiness: a wrong model id, a refused key or a TLS
interception only shows when a completion is asked for, and then every scenario of the run
fails the same way. So the pre-flight asks each OpenAI-compatible endpoint (agent and judge)
for one token with the exact model id, through the proxy and CA bundle the containers get,
and turns what went wrong into one line that says how to fix it.

The request goes from the host, not from a container: ``host.docker.internal`` (the name
containers use for this host) is asked at 127.0.0.1. The server's answers are untrusted:
bodies are read bounded, only model ids of plain characters are repeated, nothing else of
an error body reaches the terminal.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    import urllib.request

PING_SECONDS = 20.0
"""A cold model server may take a while for its first token; longer is a problem worth naming."""
ANSWER_MAX_BYTES = 1 << 20
MODELS_SHOWN = 20
HOST_ALIAS = "host.docker.internal"
PLAIN_ID = re.compile(r"[A-Za-z0-9._:/@+\-]{1,200}")
OWN_PROTOCOL = frozenset({"anthropic", "google", "gemini", "vertex", "vertex_ai", "bedrock"})
"""Providers whose endpoints do not speak OpenAI's /chat/completions: not pinged (said so)."""


@dataclass(frozen=True)
class Endpoint:
    """One model endpoint the run will use, and the options that set it (for the messages)."""

    role: str
    url: str
    model: str
    key: str
    url_option: str
    model_option: str
    key_option: str
    provider: str = ""

    @property
    def cache_key(self) -> tuple[str, str, str]:
        """Agent and judge on the same endpoint, model and key are asked once per run."""
        return self.url.rstrip("/"), self.model, hashlib.sha256(self.key.encode()).hexdigest()

    @property
    def where(self) -> str:
        """Host and port only: the URL's path, query or user part may carry a key."""
        parts = urlsplit(self.url)
        return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


@dataclass(frozen=True)
class Answer:
    """What the ping found: ``ok`` (a completion came back), else ``problem`` or only ``warning``."""

    ok: bool
    line: str
    fatal: bool = False


def host_side_url(url: str) -> str:
    """``url`` as this host reaches it: ``host.docker.internal`` (the containers' name for it) is 127.0.0.1."""
    parts = urlsplit(url)
    if parts.hostname != HOST_ALIAS:
        return url
    netloc = parts.netloc.replace(HOST_ALIAS, "127.0.0.1")
    return urlunsplit(parts._replace(netloc=netloc))


def proxies_for(url: str, proxy_env: Mapping[str, str]) -> dict[str, str]:
    """The proxy per scheme the containers' proxy variables give ``url`` (none when NO_PROXY covers it)."""
    import urllib.request

    lower = {name.lower(): value for name, value in proxy_env.items() if value}
    proxies = {scheme: lower[f"{scheme}_proxy"] for scheme in ("http", "https") if f"{scheme}_proxy" in lower}
    host = urlsplit(url).hostname or ""
    # proxy_bypass_environment is CPython's own NO_PROXY matcher, undocumented and so absent from typeshed.
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if "no_proxy" in lower and bypass(host, {"no": lower["no_proxy"]}):
        return {}
    return proxies


def _opener(url: str, proxy_env: Mapping[str, str], ca_bundle: Path | None) -> urllib.request.OpenerDirector:
    """The proxies and CA bundle the containers get, never the host's own settings beyond them;
    a redirect is an answer to report, not one to follow (it may lead the key elsewhere)."""
    import ssl
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    proxies = proxies_for(url, proxy_env)
    context = ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)
    return urllib.request.build_opener(
        urllib.request.ProxyHandler(proxies), urllib.request.HTTPSHandler(context=context), NoRedirect()
    )


def _read(response: IO[bytes]) -> bytes:
    return response.read(ANSWER_MAX_BYTES + 1)[:ANSWER_MAX_BYTES]


def _exchange(opener: urllib.request.OpenerDirector, request: urllib.request.Request) -> bytes:
    """The (bounded) body of the answer to ``request``, within :data:`PING_SECONDS` in all.

    The socket's timeout bounds each read only: a server that drips its head or body a byte at
    a time would hold the run for ever. So the exchange runs on a daemon thread, and one that
    is not done in time is left behind (it holds at most one bounded answer) as a TimeoutError;
    what the exchange raised (an HTTPError with the status) is raised here."""
    outcome: list[bytes | BaseException] = []

    def exchange() -> None:
        try:
            with opener.open(request, timeout=PING_SECONDS) as response:
                outcome.append(_read(response))
        except BaseException as exc:  # handed to the caller's thread, raised there
            outcome.append(exc)

    worker = threading.Thread(target=exchange, name="gaia2-endpoint-ping", daemon=True)
    worker.start()
    worker.join(PING_SECONDS)
    if not outcome:
        raise TimeoutError(f"no whole answer within {PING_SECONDS:g} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None


def _listed_models(opener: urllib.request.OpenerDirector, base: str, headers: dict[str, str]) -> list[str] | None:
    """The ids ``GET <base>/models`` lists (plain ones only), or None when it lists none."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{base}/models", headers=headers, method="GET")
    try:
        data = _json(_exchange(opener, request))
    except (OSError, urllib.error.URLError, ValueError):
        return None
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    ids = [row.get("id") for row in rows if isinstance(row, dict)]
    return [model for model in ids if isinstance(model, str) and PLAIN_ID.fullmatch(model)]


def _shown(model: str) -> str:
    return repr(model) if PLAIN_ID.fullmatch(model) else "(an id with unusual characters)"


def ping(endpoint: Endpoint, *, proxy_env: Mapping[str, str], ca_bundle: Path | None) -> Answer:
    """Ask for one token; name what went wrong in one line (never an answer's body)."""
    import urllib.error
    import urllib.request

    head = f"{endpoint.role} endpoint {endpoint.where} (model {_shown(endpoint.model)})"
    if endpoint.provider.lower() in OWN_PROTOCOL:
        return Answer(True, f"{head}: not pinged (provider {endpoint.provider} has its own protocol)")
    base = host_side_url(endpoint.url).rstrip("/")
    opener = _opener(base, proxy_env, ca_bundle)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.key:
        headers["Authorization"] = f"Bearer {endpoint.key}"
    body = {"model": endpoint.model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    request = urllib.request.Request(
        f"{base}/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        data = _json(_exchange(opener, request))
    except urllib.error.HTTPError as exc:
        return _refusal(endpoint, head, exc.code, opener, base, headers)
    except urllib.error.URLError as exc:
        return _unreachable(endpoint, head, exc.reason)
    except TimeoutError:
        return Answer(False, f"{head}: no answer within {PING_SECONDS:g} s", fatal=True)
    except (OSError, ValueError) as exc:
        return _unreachable(endpoint, head, exc)
    if isinstance(data, dict) and isinstance(data.get("choices"), list):
        return Answer(True, f"{head}: a one-token completion came back")
    return Answer(
        False,
        f"{head}: HTTP 200 but not a chat completion (no choices); is {endpoint.url_option} the API's base (…/v1)?",
        fatal=True,
    )


def _refusal(
    endpoint: Endpoint, head: str, code: int, opener: urllib.request.OpenerDirector, base: str, headers: dict[str, str]
) -> Answer:
    if code in (401, 403):
        return Answer(
            False,
            f"{head}: the key was refused (HTTP {code}); check the variable {endpoint.key_option} names",
            fatal=True,
        )
    if code == 429:
        return Answer(False, f"{head}: rate limited (HTTP 429) already before the run; scenarios may error")
    if 300 <= code < 400:
        return Answer(False, f"{head}: HTTP {code}, a redirect; give {endpoint.url_option} the final URL", fatal=True)
    if code >= 500:
        return Answer(False, f"{head}: the server failed a one-token completion (HTTP {code})", fatal=True)
    listed = _listed_models(opener, base, headers)
    if listed is not None and endpoint.model not in listed:
        shown = ", ".join(listed[:MODELS_SHOWN]) + (", ..." if len(listed) > MODELS_SHOWN else "")
        return Answer(
            False,
            f"{head}: the server does not serve this model id (HTTP {code}); it lists: {shown or 'none'}; "
            f"set {endpoint.model_option} to one of them exactly",
            fatal=True,
        )
    if code == 404:
        return Answer(
            False,
            f"{head}: HTTP 404 for /chat/completions; is {endpoint.url_option} the API's base (…/v1)?",
            fatal=True,
        )
    return Answer(False, f"{head}: HTTP {code} to a one-token completion (the model may not take max_tokens=1)")


def _unreachable(endpoint: Endpoint, head: str, reason: object) -> Answer:
    import ssl

    if isinstance(reason, ssl.SSLError):
        return Answer(
            False,
            f"{head}: TLS failed ({type(reason).__name__}); if a proxy re-signs HTTPS, "
            "point GAIA2_CA_BUNDLE at its CA bundle",
            fatal=True,
        )
    if isinstance(reason, ConnectionRefusedError):
        return Answer(False, f"{head}: connection refused (is the server up? {endpoint.url_option})", fatal=True)
    if isinstance(reason, TimeoutError):
        return Answer(False, f"{head}: no answer within {PING_SECONDS:g} s", fatal=True)
    if isinstance(reason, socket.gaierror):
        return Answer(False, f"{head}: the host name does not resolve here ({endpoint.url_option})", fatal=True)
    return Answer(False, f"{head}: cannot connect ({type(reason).__name__})", fatal=True)
