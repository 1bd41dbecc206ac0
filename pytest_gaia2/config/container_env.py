"""How one scenario's container environment is built, as gaia2-cli's ``container_env.py`` builds it.

The runtime profiles (what each kind of image expects: OpenClaw, Hermes, the oracle), the
provider key variables read on the host and mirrored in the container, the variables that
never leave the host, and :func:`container_env` itself. Which values go in (keys, models,
proxies) is :class:`~pytest_gaia2.config.settings.RunSettings`'s to resolve.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from pytest_gaia2.store.folder import LOG_DIR, TRACE_FILE

CONTAINER_TRACE_FILE = f"{LOG_DIR}/{TRACE_FILE}"
CONTAINER_CA_BUNDLE = "/etc/ssl/certs/gaia2-host-ca-bundle.crt"

CA_BUNDLE_VAR = "GAIA2_CA_BUNDLE"
PROXY_RELAY_VAR = "GAIA2_PROXY_RELAY_URL"
HOST_ONLY_VARS = frozenset({CA_BUNDLE_VAR, PROXY_RELAY_VAR})
"""Variables that steer the host side and are never passed into a container."""

PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")
"""Passed into containers as the host has them (upstream's proxy relay is not supported)."""

_OPENAI_COMPAT_READ = ("OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY", "OPENAI_API_KEY")
_OPENAI_COMPAT_EXPORT = ("OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY")

PROVIDER_KEY_VARS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "openai-codex": ("OPENAI_API_KEY",),
    "openai-compat": _OPENAI_COMPAT_READ,
    "openai-completions": _OPENAI_COMPAT_READ,
    "openrouter": ("OPENROUTER_API_KEY",),
}
"""Variables read for a provider's key, first non-empty wins; ``API_KEY`` is the fallback."""

PROVIDER_EXPORT_VARS: dict[str, tuple[str, ...]] = {
    **PROVIDER_KEY_VARS,
    "openai-compat": _OPENAI_COMPAT_EXPORT,
    "openai-completions": _OPENAI_COMPAT_EXPORT,
}
"""Variables set in an agent container to mirror ``API_KEY``, per provider."""


@dataclass(frozen=True)
class Profile:
    """How a runtime image expects its agent configuration (gaia2-cli's container profiles)."""

    name: str
    needs_llm: bool
    default_provider: str
    extra_env: tuple[tuple[str, str], ...] = ()
    base_url_keys: tuple[str, ...] = ()


OPENCLAW = Profile(
    "openclaw", True, "anthropic", (("OPENCLAW_FORCE_RECONFIG", "1"),), ("BASE_URL", "OPENROUTER_BASE_URL")
)
HERMES = Profile("hermes", True, "anthropic", (), ("BASE_URL",))
ORACLE = Profile("oracle", False, "")
REFERENCE_LLM = Profile("reference-llm", True, "openai-compat", (("GAIA2_REF_AGENT_LLM", "1"),), ("BASE_URL",))
"""The reference image given a model (``--gaia2-model``): its agent asks the model once per action."""
DEFAULT = Profile("default", True, "anthropic", (), ("BASE_URL",))

_PROFILE_MARKERS: tuple[tuple[tuple[str, ...], Profile], ...] = (
    (("gaia2-oc", "openclaw"), OPENCLAW),
    (("gaia2-hermes", "hermes"), HERMES),
    (("gaia2-oracle", "oracle"), ORACLE),
)


@dataclass(frozen=True)
class GatewayEnv:
    """What a container gets with the model gateway on: the gateway's URL for each route it
    serves and the scenario's token, in place of the provider keys."""

    token: str
    agent_url: str | None = None
    judge_url: str | None = None

    def __repr__(self) -> str:
        return f"GatewayEnv(agent_url={self.agent_url!r}, judge_url={self.judge_url!r})"


def profile_for(image: str) -> Profile:
    """The profile of an image, from its lower-cased name; OpenClaw is checked first."""
    name = image.lower()
    for markers, profile in _PROFILE_MARKERS:
        if any(marker in name for marker in markers):
            return profile
    return DEFAULT


def extra_hosts() -> dict[str, str]:
    """Host mapping for every container (bridge or host network), so ``host.docker.internal``
    reaches host services on Linux engines too (Docker Desktop has it built in)."""
    return {"host.docker.internal": "host-gateway"}


def faketime(start_time: float | None) -> str | None:
    """``FAKETIME`` for a scenario start time: UTC ``YYYY-MM-DD HH:MM:SS``, or None if unset."""
    if not start_time:
        return None
    return datetime.fromtimestamp(float(start_time), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
