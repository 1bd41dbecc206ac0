"""Checks before the first container: engine, orphans, settings, URLs, image, line endings, endpoint.

Run once per run on the controller. A check that makes every scenario fail stops the run
with one message; a check that only might matter (the model endpoint) warns. Checks that
only depend on the image's content are remembered per image id, so an unchanged image
costs no helper container on the next run.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pytest_gaia2.config import container_env
from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.engine.errors import EngineError
from pytest_gaia2.engine.spec import plain_host
from pytest_gaia2.run.endpoints import HOST_ALIAS, Endpoint, ping

if TYPE_CHECKING:
    from pytest_gaia2.config.settings import RunSettings
    from pytest_gaia2.engine.client import Engine
    from pytest_gaia2.engine.pool import EnginePool
    from pytest_gaia2.report.run_facts import Isolation

ENDPOINT_CHECK_SECONDS = 5
REAPED_SHOWN = 5  # container names in the one-line reaping report
IMAGE_BUILD_LOCK = Path(tempfile.gettempdir()) / "pytest-gaia2-image-build.lock"
"""Serialises builds of the reference image (and images derived from it) on this machine."""
SCRIPTS_DIR = "/opt"
SCRIPTS_MAX_BYTES = 16 << 20
"""The image's shell scripts read for the line-ending check, at most (a cap, not a size seen)."""
IMAGE_CHECKS_FILE = "image-checks-v1.json"
"""Per image id, the result of the checks on its content; the version changes with the checks."""
IMAGE_CHECKS_KEPT = 32


class PreflightError(Exception):
    """A problem that would make every scenario fail; the message says how to fix it."""


class IsolationRequired(PreflightError):
    """``--gaia2-require-isolation`` and an image whose agent can reach its judge: a usage error."""


@dataclass
class PreflightOutcome:
    """What pre-flight found: the report lines, the warnings and notes, and the facts the run keeps."""

    ok: bool = True
    image_id: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str, *fixes: str) -> None:
        """One report line; a failed check gets one ``fix:`` line per thing to fix."""
        self.ok &= ok
        self.lines.append(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            self.lines.extend(f"         fix: {fix}" for fix in fixes)

    def note(self, what: str) -> None:
        """Something the run did that the user should hear about in every run, not only pre-flight."""
        self.notes.append(what)
        self.lines.append(f"  [ok] {what}")

    def warn(self, what: str) -> None:
        self.warnings.append(what)
        self.lines.append(f"  [warn] {what}")


def _endpoint(option: str, url: str) -> tuple[str, int]:
    """``(host, port)`` of a model base URL, or a PreflightError naming the option.

    The host is passed to a probe container and into every scenario container, so only
    plain names and addresses pass (no quotes, ``$``, spaces or backticks). Messages never
    repeat the whole URL: it may carry a key in its query or user part.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise PreflightError(f"{option}: not a URL with a host and a port from 0 to 65535") from None
    if parts.scheme not in ("http", "https"):
        raise PreflightError(f"{option}: the scheme must be http or https, not {parts.scheme!r}")
    host = parts.hostname or ""
    if not host:
        raise PreflightError(f"{option}: the URL has no host")
    if not plain_host(host):
        raise PreflightError(f"{option}: {host!r} is not a host name or IP address")
    return host, port or (443 if parts.scheme == "https" else 80)


def model_urls(settings: RunSettings) -> list[tuple[str, str]]:
    """(option, URL) of each model base URL given."""
    given = (("--gaia2-base-url", settings.base_url), ("--gaia2-judge-base-url", settings.judge_base_url))
    return [(option, url) for option, url in given if url]


def check_urls(settings: RunSettings) -> None:
    """Every model base URL is a plain http(s) URL, checked at start-up (a usage error naming
    the option), before the engine is asked anything."""
    for option, url in model_urls(settings):
        _endpoint(option, url)


def model_endpoints(settings: RunSettings) -> list[Endpoint]:
    """The endpoints the run's containers will call: the agent's (when the image's profile
    needs a model) and the judge's (unless it is the reference image's placeholder)."""
    found = []
    if settings.profile.needs_llm and settings.base_url and settings.model:
        found.append(
            Endpoint(
                "agent",
                settings.base_url,
                settings.model,
                settings.secrets.agent_key,
                "--gaia2-base-url",
                "--gaia2-model",
                settings.secrets.agent_key_source or "--gaia2-api-key-env",
                settings.agent_provider,
            )
        )
    if (
        settings.judge_base_url
        and settings.judge_model
        and settings.judge_model != settings_mod.REFERENCE_JUDGE_PLACEHOLDER
    ):
        found.append(
            Endpoint(
                "judge",
                settings.judge_base_url,
                settings.judge_model,
                settings.secrets.judge_key,
                "--gaia2-judge-base-url",
                "--gaia2-judge-model",
                settings.secrets.judge_key_source or "--gaia2-judge-api-key-env",
                settings.judge_provider,
            )
        )
    return found


def _ping_endpoints(settings: RunSettings, outcome: PreflightOutcome) -> list[str]:
    """One real completion per endpoint, model and key (asked once when agent and judge share
    them); the lines of the fatal failures, each already in ``outcome``."""
    answers: dict[tuple[str, str, str], bool] = {}
    fatal = []
    for endpoint in model_endpoints(settings):
        if endpoint.cache_key in answers:
            continue
        answer = ping(endpoint, proxy_env=dict(settings.proxy_env), ca_bundle=settings.ca_bundle)
        answers[endpoint.cache_key] = answer.ok
        if answer.ok:
            outcome.check(True, answer.line)
        elif answer.fatal:
            outcome.check(False, answer.line)
            fatal.append(answer.line)
        else:
            outcome.warn(answer.line)
    return fatal


def _image(engine: Engine, settings: RunSettings) -> str:
    """The image id; the reference image is built once per machine under a file lock."""
    if settings.is_reference:
        from filelock import FileLock

        from pytest_gaia2.reference import build

        with FileLock(str(IMAGE_BUILD_LOCK)):
            try:
                return build.ensure_image(engine.client, settings.image, log=lambda line: None)
            except build.ImageBuildError as exc:
                raise PreflightError(f"the reference image {settings.image} could not be built: {exc}") from None
    image_id = engine.image_id(settings.image)
    if image_id is None:
        raise PreflightError(
            f"image {settings.image!r} is not on the engine at {engine.address}; build or pull it "
            f"(e.g. `make -C gaia2-cli build` upstream, or `docker pull {settings.image}`)"
        )
    return image_id


def _cached_checks(cache_dir: Path) -> dict[str, Any]:
    """Every image's remembered checks (the user's own cache; anything unreadable is no cache)."""
    try:
        cached = json.loads((cache_dir / IMAGE_CHECKS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cached if isinstance(cached, dict) else {}


def _remember(cache_dir: Path, image_id: str, found: dict[str, Any]) -> None:
    """Add ``found`` to the image's remembered checks; the oldest images are forgotten."""
    cached = _cached_checks(cache_dir)
    entry = cached.pop(image_id, None)
    kept = dict(list(cached.items())[-(IMAGE_CHECKS_KEPT - 1) :])
    kept[image_id] = {**(entry if isinstance(entry, dict) else {}), **found}
    path = cache_dir / IMAGE_CHECKS_FILE
    try:  # a cache that cannot be written only costs the next run a helper container
        cache_dir.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(kept, indent=1), encoding="utf-8")
        os.replace(temp, path)
    except OSError:
        pass


def _image_checks(engine: Engine, image_id: str, cache_dir: Path) -> dict[str, Any]:
    """What the image's content says (today: shell scripts under /opt with CRLF line endings,
    which break the entrypoint), from the cache or from one helper container of that very id."""
    entry = _cached_checks(cache_dir).get(image_id)
    if isinstance(entry, dict) and isinstance(entry.get("crlf_scripts"), list):
        return entry
    scripts = engine.image_files(
        image_id, SCRIPTS_DIR, max_total_bytes=SCRIPTS_MAX_BYTES, select=lambda name: name.endswith(".sh")
    )
    found = {"crlf_scripts": sorted(name for name, content in scripts.items() if b"\r\n" in content)}
    _remember(cache_dir, image_id, found)
    return found


def judge_isolation(engine: Engine, image_id: str, scenario: bytes, cache_dir: Path) -> Isolation:
    """:mod:`isolation`'s answer for the image, from the cache or one throwaway container of it.
    An answer that says the probe could not run is not remembered: the next run asks again."""
    from pytest_gaia2.report.run_facts import Isolation
    from pytest_gaia2.run import isolation

    entry = _cached_checks(cache_dir).get(image_id)
    known = Isolation.from_json(entry.get("isolation")) if isinstance(entry, dict) else None
    if known is not None:
        return known
    found = isolation.probe(engine, image_id, scenario)
    if not found.passing:
        _remember(cache_dir, image_id, {"isolation": found.to_json()})
    return found


def _spread_image(engines: list[Engine], settings: RunSettings, outcome: PreflightOutcome) -> str:
    """The image's id on the first engine (built there when it is the reference image; else taken
    from an engine that has it), copied to every engine where it is missing or, for the reference
    image, outdated. A user's image that differs between engines is refused: which would run?"""
    ids = [
        None if settings.is_reference and index else engine.image_id(settings.image)
        for index, engine in enumerate(engines)
    ]
    found = dict.fromkeys(image_id for image_id in ids if image_id)
    if settings.is_reference or not found:
        image_id = _image(engines[0], settings)  # builds the reference image; else names the first engine
    elif len(found) > 1:
        raise PreflightError(
            f"image {settings.image!r} differs between the engines: "
            + ", ".join(
                f"{engine.address} has {image_id[:19]}"
                for engine, image_id in zip(engines, ids, strict=False)
                if image_id
            )
        )
    else:
        image_id = next(iter(found))
    source = engines[ids.index(image_id)] if image_id in ids else engines[0]
    for engine in engines:
        if engine is source or engine.image_id(settings.image) == image_id:
            continue
        started = time.monotonic()
        try:
            copied = engine.load_from(source, settings.image)
        except EngineError as exc:
            raise PreflightError(str(exc)) from None
        if copied != image_id:
            raise PreflightError(
                f"{settings.image!r} copied to {engine.address} has id {copied[:19] or 'none'}, not {image_id[:19]}"
            )
        outcome.note(
            f"copied image {settings.image} from {source.address} to {engine.address} "
            f"({time.monotonic() - started:.1f} s)"
        )
    return image_id


def check(
    pool: EnginePool,
    settings: RunSettings,
    *,
    preflight_only: bool,
    cache_dir: Path,
    endpoint_check: bool = True,
    gateway_port: int | None = None,
    scenario: bytes | None = None,
    require_isolation: bool = False,
) -> PreflightOutcome:
    """Every check, in the order a user would fix them; raises on the first fatal one, except
    with ``preflight_only``, which reports a bad URL or a missing image like any failed check.
    The model endpoints are asked for a one-token completion before the image is built or any
    container started (``endpoint_check`` False: --gaia2-skip-endpoint-check).
    Per engine: it answers, its orphans are reaped, the image is there (copied when missing), the
    model endpoints are reachable from it, and so is the run's model gateway (``gateway_port``; a
    gateway no container reaches would fail every scenario); the rest is checked once. With
    ``scenario`` (the first planned one's bytes), whether the image keeps its judge from its
    agent (:mod:`isolation`): recorded as the fact ``judge_isolation``; ``require_isolation``
    makes a no fatal."""
    from pytest_gaia2.engine.client import pid_alive

    outcome = PreflightOutcome()
    outcome.lines.append("gaia2 pre-flight:")
    engines = pool.engines()  # raises EngineError with the fix
    for engine in engines:
        version = engine.version()
        outcome.facts.setdefault(
            "engine",
            {
                "address": engine.address,
                "version": version.get("Version"),
                "os": version.get("Os"),
                "arch": version.get("Arch"),
            },
        )
        outcome.check(
            True,
            f"engine answers: {engine.address} (version {version.get('Version')}, "
            f"adapter reached through {engine.reach})",
        )
        reaped = engine.reap_orphans(settings.limits.reap_grace, pid_alive)
        if reaped:
            shown = ", ".join(reaped[:REAPED_SHOWN]) + (", ..." if len(reaped) > REAPED_SHOWN else "")
            outcome.note(
                f"removed {len(reaped)} container(s) left by earlier runs whose process is gone"
                f"{f' on {engine.address}' if len(engines) > 1 else ''}: {shown}"
            )
    if len(pool.given) > 1:
        outcome.facts["engines"] = pool.facts()
    problems = settings_mod.problems(settings)
    outcome.check(not problems, f"settings complete for the image's profile ({settings.profile.name})", *problems)
    endpoints: list[tuple[str, int]] = []
    for option, url in model_urls(settings):
        try:
            endpoints.append(_endpoint(option, url))
        except PreflightError as exc:
            if not preflight_only:
                raise
            outcome.check(False, f"{option} is a valid http(s) URL", str(exc))
    if endpoint_check and outcome.ok:
        failed = _ping_endpoints(settings, outcome)
        if failed and not preflight_only:
            raise PreflightError("a model endpoint is not ready:\n" + "\n".join(f"  {line}" for line in failed))
    try:
        outcome.image_id = _spread_image(engines, settings, outcome)
    except PreflightError as exc:
        if not preflight_only:
            raise
        outcome.check(False, f"image {settings.image} present", str(exc))
        return outcome  # the remaining checks need the image
    outcome.check(True, f"image {settings.image} present ({outcome.image_id[:19]})")
    crlf = _image_checks(engines[0], outcome.image_id, cache_dir)["crlf_scripts"]
    outcome.check(
        not crlf, "entrypoint scripts have Unix line endings", f"convert to LF and rebuild the image: {', '.join(crlf)}"
    )
    if crlf and not preflight_only:
        raise PreflightError(
            f"scripts in {settings.image} have CRLF line endings: {', '.join(crlf)}; "
            "convert them to LF and rebuild the image"
        )
    if scenario is not None:
        found = judge_isolation(engines[0], outcome.image_id, scenario, cache_dir)
        outcome.facts["judge_isolation"] = found.to_json()
        if found.isolated:
            outcome.check(True, found.line())
        elif require_isolation:
            outcome.check(False, found.line(), "use an image whose agent runs as its own user (Meta's images do)")
            if not preflight_only:
                raise IsolationRequired(f"--gaia2-require-isolation: {settings.image}: {found.line()}")
        else:
            outcome.warn(found.line())
    for engine in engines:
        where = f" on {engine.address}" if len(engines) > 1 else ""
        for host, port in dict.fromkeys(endpoints):
            if _reachable(engine, settings, host, port):
                outcome.check(True, f"model endpoint {host}:{port} reachable from a container{where}")
            else:
                outcome.warn(
                    f"model endpoint {host}:{port} did not accept a TCP connection from a container{where} "
                    "(is the server up? on the host, use host.docker.internal)"
                )
        if gateway_port is not None:
            _check_gateway(engine, settings, gateway_port, where, outcome)
    return outcome


def _reachable(engine: Engine, settings: RunSettings, host: str, port: int) -> bool:
    """Whether a container of the run's image, on the run's network, can open ``host:port``."""
    return engine.probe_tcp(
        settings.image,
        host,
        port,
        network=settings.network,
        extra_hosts=container_env.extra_hosts(),
        timeout_s=ENDPOINT_CHECK_SECONDS,
    )


def _check_gateway(engine: Engine, settings: RunSettings, port: int, where: str, outcome: PreflightOutcome) -> None:
    """The model gateway must be reachable from a container as ``host.docker.internal``."""
    what = f"model gateway {HOST_ALIAS}:{port} reachable from a container{where}"
    if _reachable(engine, settings, HOST_ALIAS, port):
        outcome.check(True, what)
        return
    fix = (
        "a firewall on this host may drop connections from the engine's bridge, or the engine is remote; "
        "allow the port, or run with --gaia2-gateway=off"
    )
    outcome.check(False, what, fix)
    raise PreflightError(f"the model gateway at {HOST_ALIAS}:{port} is not reachable from a container{where}: {fix}")
