"""The run's settings: image profile, agent and judge configuration, keys, from options and .env.

Resolution follows gaia2-cli's runner (``cli.py``, ``runner.py``, ``launcher.py``,
``envfile.py``) so that real gaia2-cli images (gaia2-hermes, gaia2-oc, gaia2-oracle and
teams' own images) get the values they expect; how those values become a container's
environment is :mod:`~pytest_gaia2.config.container_env`'s. Secret values live in :class:`Secrets`
and never reach ``repr()`` or :func:`public_dict`.

Not supported: upstream's host proxy *relay* (``GAIA2_PROXY_RELAY_URL``); proxy variables are
passed through as they are set, and the relay variable only produces a warning.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_gaia2.config import envfile, options
from pytest_gaia2.config.container_env import (
    CA_BUNDLE_VAR,
    CONTAINER_CA_BUNDLE,
    CONTAINER_TRACE_FILE,
    HOST_ONLY_VARS,
    ORACLE,
    PROVIDER_EXPORT_VARS,
    PROVIDER_KEY_VARS,
    PROXY_RELAY_VAR,
    PROXY_VARS,
    REFERENCE_LLM,
    GatewayEnv,
    Profile,
    faketime,
    profile_for,
)
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.store.limits import Limits
from pytest_gaia2.store.redact import MASK, Redactor, looks_secret, secret_values

REFERENCE_JUDGE_PLACEHOLDER = "none"
"""Judge provider/model for the reference image when none is configured: its replay matches
the oracle exactly, so no model is ever called, but the contract wants non-empty values."""

DOTENV_IGNORED = frozenset({"GAIA2_JUDGE_PROVIDER", "GAIA2_JUDGE_MODEL", "GAIA2_JUDGE_BASE_URL", "GAIA2_JUDGE_API_KEY"})
"""Judge settings belong to options or the real environment, never to a shared .env (upstream)."""


@dataclass(frozen=True)
class Secrets:
    """The resolved keys and every secret value seen; shown only as set/unset."""

    agent_key: str = ""
    agent_key_source: str | None = None
    judge_key: str = ""
    judge_key_source: str | None = None
    values: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return (
            f"Secrets(agent_key={'set' if self.agent_key else 'unset'}, "
            f"agent_key_source={self.agent_key_source!r}, "
            f"judge_key={'set' if self.judge_key else 'unset'}, "
            f"judge_key_source={self.judge_key_source!r}, values={len(self.values)})"
        )


@dataclass(frozen=True, repr=False)
class RunSettings:
    """Everything about the run that does not depend on one scenario."""

    image: str
    reference_image: str
    profile: Profile
    provider: str | None
    model: str | None
    base_url: str | None
    thinking: str
    notification_mode: str
    time_speed: float | None
    judge_provider: str
    judge_model: str
    judge_base_url: str | None
    api_key_env: str | None
    judge_api_key_env: str | None
    network: str
    port_range: tuple[int, int]
    limits: Limits
    output: Path
    env_file: Path | None
    extra_env: tuple[tuple[str, str], ...] = ()
    copy_in: tuple[tuple[Path, str], ...] = ()
    host_base_url: str | None = None
    proxy_env: tuple[tuple[str, str], ...] = ()
    ca_bundle: Path | None = None
    secrets: Secrets = field(default_factory=Secrets)
    warnings: tuple[str, ...] = ()

    @property
    def is_reference(self) -> bool:
        return self.image == self.reference_image

    @property
    def agent_provider(self) -> str:
        """The ``PROVIDER`` an agent container gets: the option, else the profile default."""
        return self.provider or self.profile.default_provider

    def files_to_copy(self) -> list[tuple[Path, str]]:
        """Host files the engine copies into every container before it starts."""
        files = list(self.copy_in)
        if self.ca_bundle is not None:
            files.append((self.ca_bundle, CONTAINER_CA_BUNDLE))
        return files

    def secret_values(self) -> frozenset[str]:
        """Every value the run's :class:`~pytest_gaia2.store.redact.Redactor` must mask."""
        return self.secrets.values

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in public_dict(self).items())
        return f"RunSettings({fields})"

    @classmethod
    def from_options(
        cls,
        values: options.Options,
        *,
        rootdir: Path,
        environ: Mapping[str, str],
        reference_image: str,
    ) -> RunSettings:
        """Resolve the settings from the run's option values, the environment and the .env file."""
        notes: list[str] = []
        image = values.image or reference_image
        # The reference image is an oracle replay whatever it is called; given a model, its agent
        # also asks that model once per action.
        if image == reference_image:
            profile = REFERENCE_LLM if _clean(values.model) else ORACLE
        else:
            profile = profile_for(image)

        env_file = _env_file(values.env_file, rootdir)
        dotenv = envfile.DotEnv()
        if env_file is not None and env_file.is_file():
            dotenv = envfile.load(env_file)
        host = _merge_dotenv(environ, dotenv, env_file, notes)
        extra = dict(values.env)

        def lookup(name: str) -> str:
            """A variable's value: the user's extra env first, then the host environment."""
            return (extra.get(name) or host.get(name) or "").strip()

        provider = _clean(values.provider)
        agent_key, agent_source = "", None
        if profile.needs_llm:
            agent_key, agent_source = _resolve_key(values.api_key_env, provider or profile.default_provider, lookup)

        judge_provider = _clean(values.judge_provider) or lookup("GAIA2_JUDGE_PROVIDER")
        judge_model = _clean(values.judge_model) or lookup("GAIA2_JUDGE_MODEL")
        placeholder_judge = image == reference_image and not (judge_provider or judge_model)
        if placeholder_judge:
            judge_provider = judge_model = REFERENCE_JUDGE_PLACEHOLDER
        judge_key, judge_source = resolve_judge_key(
            values.judge_api_key_env,
            judge_provider,
            lookup,
            agent_key,
            agent_source,
            named_only=placeholder_judge,
        )

        if lookup(PROXY_RELAY_VAR):
            notes.append(
                f"{PROXY_RELAY_VAR} is not supported by pytest-gaia2 (there is no host proxy "
                "relay); proxy variables are passed into containers as they are set"
            )
        proxy_env = tuple((name, lookup(name)) for name in PROXY_VARS if lookup(name))
        ca_bundle = _ca_bundle(lookup(CA_BUNDLE_VAR), rootdir, notes)

        secret_set = secret_values(host) | secret_values(dotenv.values) | secret_values(extra)
        secret_set |= {key for key in (agent_key, judge_key) if key}
        secret_set |= {password for _, value in proxy_env if (password := _url_password(value))}

        return cls(
            image=image,
            reference_image=reference_image,
            profile=profile,
            provider=provider,
            model=_clean(values.model),
            base_url=_clean(values.base_url),
            thinking=values.thinking,
            notification_mode=values.notification_mode,
            time_speed=values.time_speed,
            judge_provider=judge_provider,
            judge_model=judge_model,
            judge_base_url=_clean(values.judge_base_url) or lookup("GAIA2_JUDGE_BASE_URL") or None,
            api_key_env=values.api_key_env,
            judge_api_key_env=values.judge_api_key_env,
            network=values.network,
            port_range=values.port_range,
            limits=limits_of(values),
            output=_path(values.output, rootdir),
            env_file=env_file,
            extra_env=tuple(extra.items()),
            copy_in=tuple((_path(src, rootdir), dest) for src, dest in values.copy_in),
            host_base_url=(host.get("BASE_URL") or "").strip() or None,
            proxy_env=proxy_env,
            ca_bundle=ca_bundle,
            secrets=Secrets(agent_key, agent_source, judge_key, judge_source, frozenset(secret_set)),
            warnings=tuple(notes),
        )


def limits_of(values: options.Options) -> Limits:
    """The container and time limits among the run's option values."""
    return Limits(
        timeout=values.timeout,
        duration_slack=values.duration_slack,
        health_timeout=values.health_timeout,
        judge_grace=values.judge_grace,
        stop_timeout=values.stop_timeout,
        reap_grace=values.reap_grace,
        max_file_size=values.max_file_size,
        max_collect_size=values.max_collect_size,
        memory=values.memory,
        pids_limit=values.pids_limit,
        keep=values.keep,
        idle_timeout=values.idle_timeout,
        stuck_loop_min_calls=values.stuck_loop_min_calls,
    )


def _clean(value: object) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


def _path(raw: str | Path, rootdir: Path) -> Path:
    """A path from an option; relative paths are taken from the rootdir, like ini paths."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else rootdir / path


def _env_file(raw: str | None, rootdir: Path) -> Path | None:
    """The dotenv file to read: the option's file (which must exist), else ``<rootdir>/.env``."""
    if raw:
        return _path(raw, rootdir)
    default = rootdir / ".env"
    return default if default.is_file() else None


def _merge_dotenv(
    environ: Mapping[str, str], dotenv: envfile.DotEnv, env_file: Path | None, notes: list[str]
) -> dict[str, str]:
    """The host environment plus the dotenv values it lacks (set-but-empty counts as lacking)."""
    merged = dict(environ)
    ignored = sorted(key for key in dotenv.values if key in DOTENV_IGNORED)
    for key, value in dotenv.values.items():
        if key not in DOTENV_IGNORED and not merged.get(key):
            merged[key] = value
    if ignored:
        notes.append(
            f"Ignoring judge settings in {env_file}; set them with options or in the environment: {', '.join(ignored)}"
        )
    if dotenv.bad_lines:
        lines = ", ".join(str(line) for line in dotenv.bad_lines)
        notes.append(f"Skipped unreadable lines in {env_file}: {lines}")
    return merged


def _resolve_key(
    explicit_var: str | None, provider: str | None, lookup: Callable[[str], str]
) -> tuple[str, str | None]:
    """A key and the variable it came from: the named variable only, else the provider's
    variables, else ``API_KEY`` (gaia2-cli's ``resolve_api_key_details``)."""
    if explicit_var:
        return lookup(explicit_var), explicit_var
    for name in (*PROVIDER_KEY_VARS.get((provider or "").lower(), ()), "API_KEY"):
        value = lookup(name)
        if value:
            return value, name
    return "", None


def resolve_judge_key(
    explicit_var: str | None,
    judge_provider: str | None,
    lookup: Callable[[str], str],
    agent_key: str,
    agent_source: str | None,
    *,
    named_only: bool = False,
) -> tuple[str, str | None]:
    """The judge key: the named variable, else ``GAIA2_JUDGE_API_KEY``, else the judge
    provider's variables or ``API_KEY``, else the agent's key (e.g. from --gaia2-api-key-env).

    ``named_only`` is for the reference image's placeholder judge, which calls no model and
    so gets a key only when one is named explicitly.
    """
    if explicit_var:
        return _resolve_key(explicit_var, None, lookup)
    if named_only:
        return "", None
    explicit_judge = lookup("GAIA2_JUDGE_API_KEY")
    if explicit_judge:
        return explicit_judge, "GAIA2_JUDGE_API_KEY"
    value, source = _resolve_key(None, judge_provider, lookup)
    if value:
        return value, source
    if agent_key:
        return agent_key, f"agent key ({agent_source})"
    return "", None


def _ca_bundle(raw: str, rootdir: Path, notes: list[str]) -> Path | None:
    if not raw:
        return None
    path = _path(raw, rootdir)
    if path.is_file():
        return path
    notes.append(f"{CA_BUNDLE_VAR}={raw} does not exist; containers get no host CA bundle")
    return None


def _url_password(url: str) -> str | None:
    """The password in a proxy URL such as ``http://user:pass@proxy:3128``."""
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _missing(what: str, image: str, named: tuple[tuple[str, str | None], ...]) -> list[str]:
    """One problem naming every unset option of a configuration the image needs."""
    missing = [option for option, value in named if not value]
    return [f"{what} configuration is required for image {image}. Missing: {', '.join(missing)}"] if missing else []


def _unset_key(option: str, variable: str | None, key: str) -> list[str]:
    """A key variable named by an option but empty in the environment."""
    return [f"{option}: the variable {variable} is not set or empty"] if variable and not key else []


def problems(settings: RunSettings) -> list[str]:
    """Every configuration mistake that makes the run pointless, each naming its option."""
    found: list[str] = []
    if settings.profile.needs_llm:
        found += _missing(
            "Agent model", settings.image, (("--gaia2-provider", settings.provider), ("--gaia2-model", settings.model))
        )
        found += _unset_key("--gaia2-api-key-env", settings.api_key_env, settings.secrets.agent_key)
    found += _missing(
        "In-container judge",
        settings.image,
        (
            ("--gaia2-judge-model / GAIA2_JUDGE_MODEL", settings.judge_model),
            ("--gaia2-judge-provider / GAIA2_JUDGE_PROVIDER", settings.judge_provider),
        ),
    )
    found += _unset_key("--gaia2-judge-api-key-env", settings.judge_api_key_env, settings.secrets.judge_key)
    if settings.env_file is not None and not settings.env_file.is_file():
        found.append(f"--gaia2-env-file: {settings.env_file} does not exist")
    for src, dest in settings.copy_in:
        problem = copy_in_problem(src, settings.limits.max_file_size)
        if problem:
            found.append(f"--gaia2-copy-in: {src} {problem} (for {dest})")
    return found


def copy_in_problem(src: Path, max_bytes: int) -> str | None:
    """Why ``src`` cannot be copied into containers, or None: only a regular file within
    --gaia2-max-file-size is (a device, FIFO or socket would never end or block the run)."""
    try:
        info = src.stat()
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_size > max_bytes:
        return f"is {info.st_size} bytes, over the --gaia2-max-file-size of {max_bytes}"
    return None


def validate(settings: RunSettings) -> None:
    """Raise one :class:`OptionError` listing every problem, so users fix them in one go."""
    found = problems(settings)
    if found:
        raise OptionError("pytest-gaia2 configuration:\n  - " + "\n  - ".join(found))


def public_dict(settings: RunSettings) -> dict[str, Any]:
    """The settings as shown in run_config.json and Allure: key variable names and whether
    each key is set, never a key; secret-looking extra env values masked."""
    secrets = settings.secrets
    data: dict[str, Any] = {
        "image": settings.image,
        "reference_image": settings.is_reference,
        "profile": settings.profile.name,
        "provider": settings.agent_provider if settings.profile.needs_llm else None,
        "model": settings.model,
        "base_url": settings.base_url,
        "thinking": settings.thinking,
        "notification_mode": settings.notification_mode,
        "time_speed": settings.time_speed,
        "judge_provider": settings.judge_provider,
        "judge_model": settings.judge_model,
        "judge_base_url": settings.judge_base_url,
        "api_key_env": settings.api_key_env,
        "api_key_source": secrets.agent_key_source if secrets.agent_key else None,
        "api_key_set": bool(secrets.agent_key),
        "judge_api_key_env": settings.judge_api_key_env,
        "judge_api_key_source": secrets.judge_key_source if secrets.judge_key else None,
        "judge_api_key_set": bool(secrets.judge_key),
        "network": settings.network,
        "port_range": list(settings.port_range),
        **settings.limits.to_dict(),
        "output": str(settings.output),
        "env_file": str(settings.env_file) if settings.env_file else None,
        "extra_env": {key: MASK if looks_secret(key) else value for key, value in settings.extra_env},
        "copy_in": [[str(src), dest] for src, dest in settings.files_to_copy()],
    }
    return Redactor(secrets.values).redact_obj(data)


def container_env(
    settings: RunSettings,
    *,
    adapter_port: int,
    gateway_port: int | None,
    start_time: float | None,
    gateway: GatewayEnv | None = None,
) -> dict[str, str]:
    """The environment of one scenario's container, as gaia2-cli's runner builds it.

    The user's ``--gaia2-env`` entries win over everything except ``GAIA2_ADAPTER_PORT``,
    which must match the port the plugin polls, and, with the model gateway on, the base URLs
    and keys of the routes it serves: no real key ever enters the container then.
    """
    extra = dict(settings.extra_env)
    env: dict[str, str] = {"THINKING": settings.thinking}
    if settings.notification_mode == "native":
        env["GAIA2_NOTIFICATION_MODE"] = "native"
    if settings.time_speed is not None:
        env["GAIA2_TIME_SPEED"] = str(float(settings.time_speed))
    if settings.base_url:
        env.update({key: settings.base_url for key in settings.profile.base_url_keys})
    if "BASE_URL" not in env and settings.host_base_url:
        env["BASE_URL"] = settings.host_base_url
    env["GAIA2_TRACE_FILE"] = CONTAINER_TRACE_FILE
    fake = faketime(start_time)
    if fake and "FAKETIME" not in extra:
        env["FAKETIME"] = fake
    env["GAIA2_JUDGE_FINAL_TURN"] = "1"
    env["GAIA2_JUDGE_MODEL"] = settings.judge_model
    env["GAIA2_JUDGE_PROVIDER"] = settings.judge_provider
    if settings.secrets.judge_key:
        env["GAIA2_JUDGE_API_KEY"] = settings.secrets.judge_key
    if settings.judge_base_url:
        env["GAIA2_JUDGE_BASE_URL"] = settings.judge_base_url
    env["GAIA2_ADAPTER_PORT"] = str(adapter_port)
    if gateway_port is not None:
        env["OPENCLAW_GATEWAY_PORT"] = str(gateway_port)
        env["OPENCLAW_GATEWAY_URL"] = f"ws://127.0.0.1:{gateway_port}"
    env.update(_provider_env(settings))
    env.update(settings.proxy_env)
    if settings.ca_bundle is not None:
        env.update(
            {name: CONTAINER_CA_BUNDLE for name in ("NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")}
        )
    env.update({key: value for key, value in extra.items() if key not in HOST_ONLY_VARS})
    if gateway is not None:
        env = _through_gateway(settings, env, gateway)  # before no_proxy: the gateway is what they call
    env.update(no_proxy_for_models(env, explicit=extra.keys()))
    env["GAIA2_ADAPTER_PORT"] = str(adapter_port)
    return env


def _through_gateway(settings: RunSettings, env: dict[str, str], gateway: GatewayEnv) -> dict[str, str]:
    """The gateway's URLs and the scenario's token where the real base URLs and keys were, and
    every value that still holds a real key (a ``--gaia2-env`` entry) with the token instead."""
    env = dict(env)
    if gateway.agent_url:
        env.update({key: gateway.agent_url for key in settings.profile.base_url_keys or ("BASE_URL",)})
        env["API_KEY"] = gateway.token
        mirrors = PROVIDER_EXPORT_VARS.get(settings.agent_provider.lower(), ()) if settings.profile.needs_llm else ()
        env.update({name: gateway.token for name in mirrors})
    if gateway.judge_url:
        env["GAIA2_JUDGE_BASE_URL"] = gateway.judge_url
        env["GAIA2_JUDGE_API_KEY"] = gateway.token
    keys = [key for key in (settings.secrets.agent_key, settings.secrets.judge_key) if key]
    for name, value in env.items():
        for key in keys:
            value = value.replace(key, gateway.token)
        env[name] = value
    return env


MODEL_URL_VARS = ("BASE_URL", "OPENROUTER_BASE_URL", "GAIA2_JUDGE_BASE_URL")
"""The container variables that name a model endpoint the agent or the judge calls."""


def no_proxy_for_models(env: Mapping[str, str], explicit: Iterable[str] = ()) -> dict[str, str]:
    """``no_proxy``/``NO_PROXY`` extended with the hosts of the agent's and judge's endpoints, as
    upstream's runner does: behind a proxy, a model server on the host or the cluster is reached
    directly, not through the proxy (which would refuse it or see its traffic). Only when a proxy
    is set, and never over a value the user gave with ``--gaia2-env``."""
    if not any(env.get(name) for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")):
        return {}
    hosts = [host for name in MODEL_URL_VARS if (host := urlsplit(env.get(name) or "").hostname)]
    if not hosts:
        return {}
    given = set(explicit)
    merged: dict[str, str] = {}
    for name in ("no_proxy", "NO_PROXY"):
        if name in given:
            continue
        present = [item.strip() for item in (env.get(name) or "").split(",") if item.strip()]
        merged[name] = ",".join(dict.fromkeys([*present, *hosts]))
    return merged


def _provider_env(settings: RunSettings) -> dict[str, str]:
    """PROVIDER, API_KEY, MODEL, the profile's flags and the provider's mirrored key variables."""
    profile = settings.profile
    if not profile.needs_llm:
        return {}
    key = settings.secrets.agent_key
    env = {"PROVIDER": settings.agent_provider}
    if key:
        env["API_KEY"] = key
    if settings.model:
        env["MODEL"] = settings.model
    env.update(profile.extra_env)
    if key:
        mirrors = PROVIDER_EXPORT_VARS.get(settings.agent_provider.lower(), ())
        env.update({name: key for name in mirrors})
    return env
