"""The model gateway: the host-side end of every model call a scenario's container makes.

Containers get the gateway's URL as their base URLs and a per-scenario token as their key;
the gateway forwards each call to the one upstream configured for its route (the agent's or
the judge's) with the real key, so no real key ever enters a container. It reads the usage
the provider reports in each answer (the last chunk of a stream included, asked for with
``stream_options.include_usage`` on OpenAI-compatible streams), prices it and writes one line
per call to the attempt's ``wire.jsonl``; that figure, not the agent's trace, is what the
ledger records. It refuses calls past the run's ``--gaia2-budget-cap`` or the scenario's
``--gaia2-scenario-cap`` with an error the agent sees, and the attempt ends on it.

Everything a container sends is hostile: only ``POST /<route>/…/chat/completions``,
``…/responses`` and ``…/messages`` are forwarded, bodies are bounded both ways, redirects are
answered, never followed, and no host but the configured upstream's is contacted (the URL is
the upstream's base plus a checked path). Tokens are granted and revoked by the run's own
processes through an admin listener on 127.0.0.1 that needs the run's admin secret.

aiohttp serves and forwards, on an event loop of its own thread, so pytest's processes call
it like any other service (:class:`GatewayClient`).
"""

from __future__ import annotations

import datetime as _dt
import hmac
import json
import math
import re
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_gaia2.config.settings import REFERENCE_JUDGE_PLACEHOLDER, RunSettings
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost.budget import usd_text
from pytest_gaia2.cost.prices import PriceBook
from pytest_gaia2.cost.spend import WIRE_LOG
from pytest_gaia2.cost.usage import Usage, response_usage
from pytest_gaia2.run.endpoints import host_side_url, proxies_for
from pytest_gaia2.store import folder as store

if TYPE_CHECKING:
    import asyncio

    from aiohttp import ClientSession, web

    from pytest_gaia2.run.pacer import Pacer

REQUEST_MAX_BYTES = 32 * 2**20
"""A request body larger than this is refused (413): long agent contexts stay far below it."""
RESPONSE_MAX_BYTES = 64 * 2**20
"""An answer is relayed up to this many bytes, then cut (the call is logged as cut)."""
KEPT_MAX_BYTES = 4 * 2**20
"""Bytes of an answer kept to read its usage: a JSON body, or a stream's usage events."""
KEPT_EVENTS = 16
"""Usage-bearing stream events kept (the first and last halves): the last report is the total."""
UPSTREAM_SECONDS = 900.0
"""One call, from sending to the last byte: a long reasoning stream, not a hung provider."""
ADMIN_SECONDS = 10.0
STATUS_EVERY_S = 0.5
"""How often an attempt asks whether its grant was stopped (a loopback call)."""
HOST_ALIAS = "host.docker.internal"
SECRET_HEADER = "X-Gaia2-Gateway-Secret"
TOKEN_PREFIX = "gaia2-gw-"
_TAIL = re.compile(r"(?:[A-Za-z0-9._-]{1,64}/){0,4}(?:chat/completions|responses|messages)")
_PLAIN_MODEL = re.compile(r"[A-Za-z0-9._:/@+\-]{1,200}")
FORWARDED_HEADERS = ("content-type", "accept", "anthropic-version", "anthropic-beta", "user-agent")
"""Request headers passed on; every other (cookies, the container's own auth) stays behind."""
AUTH_HEADERS = ("authorization", "x-api-key", "api-key")
REFUSED_STATUS = 402
"""The answer to a call past a cap: an error no client retries, unlike 429 or 5xx."""


OFF_FIX = "run with --gaia2-gateway=off (the containers then get the provider keys as environment variables)"
"""The way out when the gateway cannot listen or be reached."""


class GatewayError(Exception):
    """The gateway cannot start or a run process cannot reach it."""


@dataclass(frozen=True)
class Upstream:
    """Where one route's calls go, and with which key (never shown)."""

    route: str
    base_url: str
    key: str
    provider: str = ""
    proxy: str | None = None

    def __repr__(self) -> str:
        return f"Upstream(route={self.route!r}, host={urlsplit(self.base_url).hostname!r})"


DEFAULT_BASES: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "openai-codex": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "openrouter": "https://openrouter.ai/api/v1",
}
"""The upstream of a provider when no base URL is configured."""

SCENARIO_CAP = "scenario_cap"
BUDGET_CAP = "budget_cap"


def _upstream(
    route: str, base: str | None, key: str, provider: str, settings: RunSettings, option: str
) -> Upstream | str:
    """A route's upstream, or why it has none (a sentence naming the option)."""
    url = base or DEFAULT_BASES.get(provider.lower())
    if not url:
        return f"no upstream URL is known for the {route}'s provider {provider or '(none)'}; set {option}"
    url = host_side_url(url)
    proxy = proxies_for(url, dict(settings.proxy_env)).get(urlsplit(url).scheme)
    return Upstream(route, url, key, provider, proxy)


def plan(settings: RunSettings, mode: str | None) -> tuple[dict[str, Upstream], list[str]]:
    """The gateway's routes for this run (none: the gateway is off) and the notes for the header.

    ``mode`` is ``--gaia2-gateway``: None (the default) turns it on when a provider key is
    configured and every keyed route's upstream is known; ``on`` raises OptionError when that
    cannot be; ``off`` keeps the keys in the containers' environment."""
    if mode == "off":
        return {}, [
            "model gateway off (--gaia2-gateway=off): containers get the provider keys as environment variables"
        ]
    secrets_ = settings.secrets
    found: dict[str, Upstream] = {}
    missing: list[str] = []
    routes = (
        (
            "agent",
            settings.profile.needs_llm and bool(secrets_.agent_key),
            settings.base_url or settings.host_base_url,
            secrets_.agent_key,
            settings.agent_provider,
            "--gaia2-base-url",
        ),
        (
            "judge",
            bool(secrets_.judge_key) and settings.judge_model != REFERENCE_JUDGE_PLACEHOLDER,
            settings.judge_base_url,
            secrets_.judge_key,
            settings.judge_provider,
            "--gaia2-judge-base-url",
        ),
    )
    for route, keyed, url, key, provider, option in routes:
        if not keyed:
            continue
        upstream = _upstream(route, url, key, provider, settings, option)
        if isinstance(upstream, str):
            missing.append(upstream)
        else:
            found[route] = upstream
    if mode == "on" and (missing or not found):
        raise OptionError(
            "--gaia2-gateway=on: "
            + ("; ".join(missing) if missing else "no provider key is configured to forward with")
        )
    if missing:
        return {}, [
            f"model gateway off: {'; '.join(missing)}; containers get the provider keys as environment variables"
        ]
    return found, []


def run_fact(routes: Mapping[str, Upstream], notes: list[str]) -> dict[str, Any]:
    """run_config.json's ``gateway``: whether it was on, for which routes, and, off, why (the
    pages say a run with the gateway off gave its containers the keys and trusted their traces)."""
    return {"on": bool(routes), "routes": sorted(routes), "off": "; ".join(notes) or None}


@dataclass
class Grant:
    """One attempt's token: where its calls are logged, its cap and what it has spent."""

    entry: str
    folder: Path
    scenario_cap: float | None
    token_cap: int | None = None
    usage: Usage = field(default_factory=Usage)
    spent: float = 0.0
    calls: int = 0
    refused_calls: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    retried: int = 0
    """Calls made after the attempt's previous call was refused or failed (429, 5xx, no answer):
    the client's retries, as the wire sees them."""
    failing: bool = False
    stopped: tuple[str, str] | None = None
    """``(category, message)`` once a cap ended the scenario."""
    sources: set[str] = field(default_factory=set)
    unpriced: str | None = None
    """Why the first call that reported usage has no price (its cost source), if one has none."""

    def cost(self) -> tuple[float | None, str]:
        """The attempt's cost: the sum of its calls' (each priced as its own model, so an agent and
        a judge on other models still add up), unknown when one call that reported usage has no
        price, and nothing when no call was made."""
        if not self.usage.calls:
            return 0.0, "no model call"
        if not self.usage.usage_calls:
            return None, "unknown"
        if self.unpriced is not None:
            return None, self.unpriced
        return round(self.spent, 6), "; ".join(sorted(self.sources))

    def summary(self) -> dict[str, Any]:
        """What the attempt's record takes from the gateway: usage, cost, calls, and why it was stopped."""
        usd, source = self.cost()
        return {
            "calls": self.calls,
            "refused_calls": self.refused_calls,
            "rate_limited": self.rate_limited,
            "server_errors": self.server_errors,
            "retried": self.retried,
            "usage": self.usage.to_json(),
            "cost_usd": usd,
            "cost_source": source,
            "stopped": list(self.stopped) if self.stopped else None,
        }


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def _error_body(kind: str, message: str) -> bytes:
    """An error both OpenAI's and Anthropic's clients read (``error.message``, ``error.type``)."""
    return json.dumps({"type": "error", "error": {"type": kind, "code": kind, "message": message}}).encode()


def token_of(headers: Mapping[str, str]) -> str:
    """The token a client sent: a Bearer ``Authorization``, ``x-api-key`` (Anthropic) or ``api-key``."""
    for name in AUTH_HEADERS:
        value = headers.get(name, "").strip()
        if name == "authorization":
            scheme, _, value = value.partition(" ")
            value = value.strip() if scheme.lower() == "bearer" else ""
        if value:
            return value
    return ""


def upstream_url(upstream: Upstream, tail: str) -> str | None:
    """The upstream URL for a request path below the route, or None when the path is not one
    the gateway forwards (only the model endpoints, plain path parts, never ``..``)."""
    if not _TAIL.fullmatch(tail) or any(part in (".", "..") for part in tail.split("/")):
        return None
    return f"{upstream.base_url.rstrip('/')}/{tail}"


class _UsageKeeper:
    """What of an answer is kept to read its usage: a JSON body up to KEPT_MAX_BYTES, or a stream's
    ``data:`` events that carry a usage block (first and last halves of KEPT_EVENTS)."""

    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.body = bytearray()
        self.partial = bytearray()
        self.head: list[bytes] = []
        self.tail: list[bytes] = []
        self.too_big = False

    def feed(self, chunk: bytes) -> None:
        if not self.stream:
            if len(self.body) + len(chunk) > KEPT_MAX_BYTES:
                self.too_big = True
            else:
                self.body += chunk
            return
        self.partial += chunk
        *lines, rest = self.partial.split(b"\n")
        self.partial = bytearray(rest[:KEPT_MAX_BYTES])
        for line in lines:
            self._line(bytes(line))

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:") or (b'"usage' not in line and b'"model"' not in line):
            return
        if len(line) > KEPT_MAX_BYTES // KEPT_EVENTS:
            return
        if len(self.head) < KEPT_EVENTS // 2:
            self.head.append(line)
        else:
            self.tail = [*self.tail[-(KEPT_EVENTS // 2 - 1) :], line]

    def text(self) -> str:
        if not self.stream:
            return "" if self.too_big else self.body.decode("utf-8", "replace")
        if self.partial:
            self._line(bytes(self.partial))
            self.partial = bytearray()
        return b"\n".join(self.head + self.tail).decode("utf-8", "replace")


class Gateway:
    """The run's gateway: started once by the run's controller, stopped when the run ends."""

    def __init__(
        self,
        upstreams: Mapping[str, Upstream],
        *,
        prices: PriceBook,
        run_folder: Path,
        bind_host: str = "127.0.0.1",
        run_cap: float | None = None,
        spent_before: float = 0.0,
        ca_bundle: Path | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self.upstreams = dict(upstreams)
        self.pacer = pacer
        """The run's pacer (:mod:`~pytest_gaia2.run.pacer`), told of a 429 or 5xx as it happens."""
        self.prices = prices
        self.run_folder = run_folder
        self.bind_host = bind_host
        self.run_cap = run_cap
        self.spent_before = spent_before
        self.session_spent = 0.0
        self.ca_bundle = ca_bundle
        self.secret = secrets.token_urlsafe(32)
        self.grants: dict[str, Grant] = {}
        self.port = 0
        self.admin_port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runners: list[web.AppRunner] = []
        self._session: ClientSession | None = None
        self._lock = threading.Lock()

    # -- life ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Bind both listeners and serve on a daemon thread; GatewayError if a port cannot be bound."""
        import asyncio

        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start())
            except BaseException as exc:  # handed to the starting thread
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="gaia2-gateway", daemon=True)
        self._thread.start()
        started.wait(30)
        if failure or not self.port:
            cause = failure[0] if failure else TimeoutError("did not start within 30 s")
            raise GatewayError(f"the model gateway could not listen on {self.bind_host}: {cause}")

    async def _start(self) -> None:
        import ssl

        from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

        public = web.Application(client_max_size=REQUEST_MAX_BYTES)
        public.router.add_post("/{route}/{tail:.+}", self._forward)
        admin = web.Application(client_max_size=1 << 20)
        for name, handler in (("grant", self._grant), ("status", self._status), ("revoke", self._revoke)):
            admin.router.add_post(f"/{name}", handler)
        context = ssl.create_default_context(cafile=str(self.ca_bundle) if self.ca_bundle else None)
        self._session = ClientSession(
            connector=TCPConnector(ssl=context, limit=0),
            timeout=ClientTimeout(total=UPSTREAM_SECONDS),
            trust_env=False,
        )
        for app, host in ((public, self.bind_host), (admin, "127.0.0.1")):
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            site = web.TCPSite(runner, host, 0, reuse_address=False)
            await site.start()
            self._runners.append(runner)
        self.port = _bound_port(self._runners[0])
        self.admin_port = _bound_port(self._runners[1])

    def stop(self) -> None:
        """Stop serving: every token is revoked with it."""
        import asyncio

        loop = self._loop
        if loop is None:
            return
        self._loop = None

        async def close() -> None:
            for runner in self._runners:
                await runner.cleanup()
            if self._session is not None:
                await self._session.close()

        try:
            asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        except Exception:  # noqa: BLE001 - stopping is best effort: the thread is a daemon
            pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self.grants.clear()

    def access(self, container_host: str = HOST_ALIAS) -> dict[str, Any]:
        """What a run process needs to use the gateway (handed to xdist workers)."""
        return {
            "admin": f"http://127.0.0.1:{self.admin_port}",
            "secret": self.secret,
            "urls": {route: f"http://{container_host}:{self.port}/{route}" for route in self.upstreams},
        }

    # -- admin --------------------------------------------------------------------------------

    def _admitted(self, request: web.Request) -> bool:
        return hmac.compare_digest(request.headers.get(SECRET_HEADER, ""), self.secret)

    async def _admin_body(self, request: web.Request) -> dict[str, Any] | None:
        if not self._admitted(request):
            return None
        try:
            body = await request.json()
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    async def _grant(self, request: web.Request) -> web.Response:
        from aiohttp import web

        body = await self._admin_body(request)
        folder = Path(str((body or {}).get("folder") or ""))
        cap = (body or {}).get("scenario_cap")
        tokens = (body or {}).get("token_cap")
        if body is None or not isinstance(body.get("entry"), str) or not self._in_run(folder):
            return web.json_response({"error": "refused"}, status=403)
        token = TOKEN_PREFIX + secrets.token_urlsafe(24)
        with self._lock:
            self.grants[token] = Grant(
                body["entry"],
                folder,
                float(cap) if isinstance(cap, (int, float)) else None,
                tokens if isinstance(tokens, int) and tokens > 0 else None,
            )
        return web.json_response({"token": token})

    def _in_run(self, folder: Path) -> bool:
        try:
            return folder.is_absolute() and folder.resolve().is_relative_to(self.run_folder.resolve())
        except (OSError, RuntimeError):
            return False

    async def _status(self, request: web.Request) -> web.Response:
        from aiohttp import web

        body = await self._admin_body(request)
        grant = self.grants.get(str((body or {}).get("token")))
        if body is None or grant is None:
            return web.json_response({"error": "refused"}, status=403)
        return web.json_response({"stopped": list(grant.stopped) if grant.stopped else None})

    async def _revoke(self, request: web.Request) -> web.Response:
        from aiohttp import web

        body = await self._admin_body(request)
        with self._lock:
            grant = self.grants.pop(str((body or {}).get("token")), None) if body is not None else None
        if grant is None:
            return web.json_response({"error": "refused"}, status=403)
        return web.json_response(grant.summary())

    # -- the calls ----------------------------------------------------------------------------

    def _refusal(self, grant: Grant) -> tuple[str, str] | None:
        """Why a call may not go out now: a cap already reached (the scenario ends on it)."""
        if grant.stopped:
            return grant.stopped
        if grant.scenario_cap is not None and grant.spent >= grant.scenario_cap:
            return SCENARIO_CAP, (
                f"the scenario's model spend {usd_text(grant.spent)} reached --gaia2-scenario-cap "
                f"{usd_text(grant.scenario_cap)}; the gateway refuses its further calls"
            )
        used = grant.usage.input_tokens + grant.usage.output_tokens
        if grant.token_cap is not None and used >= grant.token_cap:
            return SCENARIO_CAP, (
                f"the scenario's model calls used {used:,} tokens, reaching --gaia2-scenario-token-cap "
                f"{grant.token_cap:,}; the gateway refuses its further calls"
            )
        total = self.spent_before + self.session_spent
        if self.run_cap is not None and total >= self.run_cap:
            return BUDGET_CAP, (
                f"the run's spend {usd_text(total)} reached --gaia2-budget-cap {usd_text(self.run_cap)}; "
                "the gateway refuses further model calls"
            )
        return None

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        import asyncio

        from aiohttp import web

        route, tail = request.match_info["route"], request.match_info["tail"]
        upstream = self.upstreams.get(route)
        url = upstream_url(upstream, tail) if upstream is not None else None
        if upstream is None or url is None:
            return _error(
                404, "not_found", "the gateway forwards only model calls (…/chat/completions, …/responses, …/messages)"
            )
        grant = self.grants.get(token_of(request.headers))
        if grant is None:
            return _error(401, "invalid_api_key", "unknown or revoked gateway token")
        started = time.monotonic()
        call: dict[str, Any] = {"time": now_iso(), "route": route, "endpoint": tail.rsplit("/", 2)[-1]}
        refusal = self._refusal(grant)
        if refusal is not None:
            grant.stopped = refusal
            grant.refused_calls += 1
            self._log(grant, {**call, "status": REFUSED_STATUS, "refused": refusal[0], "latency_ms": 0})
            return _error(REFUSED_STATUS, refusal[0], refusal[1])
        try:
            raw = await request.read()  # the whole body, at most the application's client_max_size
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "request_too_large", f"a request body is at most {REQUEST_MAX_BYTES} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nesting past Python's stack
            body = None
        if not isinstance(body, dict):
            return _error(
                400, "invalid_request", f"the body must be one JSON object of at most {REQUEST_MAX_BYTES} bytes"
            )
        model = body.get("model") if isinstance(body.get("model"), str) else None
        stream = body.get("stream") is True
        if stream and tail.endswith("chat/completions"):
            options = body.get("stream_options")
            body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        call.update(model=model if model and _PLAIN_MODEL.fullmatch(model) else None, stream=stream)
        if grant.failing:
            call["retry"] = True
        headers = {name: request.headers[name] for name in FORWARDED_HEADERS if name in request.headers}
        headers["content-type"] = "application/json"
        headers["accept-encoding"] = "identity"  # the answer is relayed and read as it comes, never compressed
        if "x-api-key" in request.headers or "anthropic-version" in request.headers:
            headers["x-api-key"] = upstream.key
        else:
            headers["authorization"] = f"Bearer {upstream.key}"
        status, cut = 502, False
        keeper = _UsageKeeper(stream)
        response: web.StreamResponse | None = None
        try:
            assert self._session is not None
            async with self._session.post(
                url, data=json.dumps(body).encode(), headers=headers, allow_redirects=False, proxy=upstream.proxy
            ) as answer:
                status = answer.status
                if 300 <= status < 400:
                    self._tally(grant, call, status, started, keeper, cut, note="redirect not followed")
                    return _error(
                        502, "upstream_redirect", f"the provider answered HTTP {status}, a redirect; not followed"
                    )
                response = web.StreamResponse(status=status)
                response.content_type = answer.content_type or "application/json"
                stream = answer.content_type == "text/event-stream"
                keeper.stream = stream
                await response.prepare(request)
                relayed = 0
                async for chunk in answer.content.iter_any():
                    relayed += len(chunk)
                    if relayed > RESPONSE_MAX_BYTES:
                        cut = True
                        break
                    keeper.feed(chunk)
                    await response.write(chunk)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            self._tally(grant, call, 0, started, keeper, cut, note=type(exc).__name__)
            if response is None:
                return _error(502, "upstream_unreachable", f"the provider could not be reached ({type(exc).__name__})")
            return response
        except Exception as exc:  # noqa: BLE001 - aiohttp's client errors: the agent sees a 502
            self._tally(grant, call, 0, started, keeper, cut, note=type(exc).__name__)
            if response is None:
                return _error(502, "upstream_error", f"the call to the provider failed ({type(exc).__name__})")
            return response
        self._tally(grant, call, status, started, keeper, cut)
        if self.pacer is not None and (status == 429 or status >= 500):
            asyncio.get_running_loop().run_in_executor(None, self.pacer.trouble_seen)  # it waits on a file lock
        with _quietly():
            await response.write_eof()
        return response

    def _tally(
        self,
        grant: Grant,
        call: dict[str, Any],
        status: int,
        started: float,
        keeper: _UsageKeeper,
        cut: bool,
        note: str | None = None,
    ) -> None:
        """One call's usage and cost added to its grant and the run, its line written, and the
        scenario stopped once a cap is reached."""
        usage = (
            response_usage(keeper.text(), call.get("model"), f"{WIRE_LOG}, call {grant.calls + 1}", KEPT_MAX_BYTES)
            if status
            else Usage(calls=1)
        )
        cost = self.prices.cost(usage) if usage.usage_calls else None
        with self._lock:
            grant.calls += 1
            grant.usage = grant.usage + usage
            if cost is not None and cost.usd is not None and math.isfinite(cost.usd):
                grant.spent += cost.usd
                grant.sources.add(cost.source)
                self.session_spent += cost.usd
            elif cost is not None and grant.unpriced is None:
                grant.unpriced = cost.source
            grant.rate_limited += status == 429
            grant.server_errors += status >= 500
            grant.retried += bool(call.get("retry"))
            grant.failing = status == 429 or status >= 500 or not status
        line = {
            **call,
            "status": status or None,
            "latency_ms": round((time.monotonic() - started) * 1000),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "usage_reported": bool(usage.usage_calls),
            "cost_usd": cost.usd if cost else None,
            "cost_source": cost.source if cost else None,
            **({"cut": True} if cut else {}),
            **({"note": note} if note else {}),
        }
        self._log(grant, line)
        if grant.stopped is None and (refusal := self._refusal(grant)) is not None:
            grant.stopped = refusal

    def _log(self, grant: Grant, line: dict[str, Any]) -> None:
        try:
            store.append_jsonl(grant.folder / WIRE_LOG, line)
        except (OSError, store.StoreError):
            pass  # the call's money is in the grant; only its line is lost


class _quietly:
    """A client that went away before the end of its answer is not the gateway's failure."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], (OSError, RuntimeError))  # type: ignore[arg-type]


def _error(status: int, kind: str, message: str) -> web.Response:
    from aiohttp import web

    return web.Response(status=status, body=_error_body(kind, message), content_type="application/json")


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise GatewayError("the model gateway has no bound port")


def listen_host(candidate: str | None) -> str:
    """Where the gateway listens: the engine's host-gateway address (what ``host.docker.internal``
    is on a local Linux engine) when it is an address of this host, else 127.0.0.1 (Docker Desktop
    and Podman machines forward that name to the host's loopback); never every interface."""
    if candidate:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((candidate, 0))
            return candidate
        except OSError:
            pass
    return "127.0.0.1"


# -- the run processes' side ----------------------------------------------------------------------


@dataclass(frozen=True)
class GatewayClient:
    """A run process's handle on the gateway (the controller's, or one an xdist worker was given)."""

    admin: str
    secret: str
    urls: Mapping[str, str]

    @classmethod
    def of(cls, access: Mapping[str, Any]) -> GatewayClient:
        return cls(str(access["admin"]), str(access["secret"]), dict(access["urls"]))

    def _call(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            f"{self.admin}/{name}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", SECRET_HEADER: self.secret},
            method="POST",
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=ADMIN_SECONDS) as response:
                data = json.loads(response.read(1 << 20))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise GatewayError(f"the model gateway did not answer {name} ({type(exc).__name__})") from None
        if not isinstance(data, dict):
            raise GatewayError(f"the model gateway answered {name} with no object")
        return data

    def grant(self, entry: str, folder: Path, scenario_cap: float | None, token_cap: int | None = None) -> str:
        body = {"entry": entry, "folder": str(folder), "scenario_cap": scenario_cap, "token_cap": token_cap}
        return str(self._call("grant", body)["token"])

    def stopped(self, token: str) -> tuple[str, str] | None:
        value = self._call("status", {"token": token}).get("stopped")
        return (str(value[0]), str(value[1])) if isinstance(value, list) and len(value) == 2 else None

    def revoke(self, token: str) -> dict[str, Any]:
        return self._call("revoke", {"token": token})
