"""Several Docker engines from one controller: their URLs and which xdist worker uses which.

``--gaia2-engine URL[#N[,api|ports]]`` names an engine (``unix:///path``, ``tcp://host:port``,
``ssh://[user@]host[:port]``) with a capacity N (concurrent scenarios, default 1). The
controller decides each worker's engine by capacity and hands it over through ``workerinput``;
a worker then talks to its engine only. The controller keeps a pool of every engine in use: it
runs pre-flight on each and sweeps each one's leftovers of the run. Without the option the
engine is the environment's (``DOCKER_HOST`` or the default socket), as before.

How the adapter is reached is per engine: ``ports`` (the 127.0.0.1 port the engine publishes,
reachable only when the engine runs on this host) or ``api`` (curl run inside the container by
exec through the engine API, for a remote engine: nothing is published beyond the engine
host's loopback). A unix socket or a loopback host is local (``ports``); anything else ``api``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pytest_gaia2.store.redact import mask_userinfo

REACHES = ("ports", "api")
DEFAULT_CAPACITY = 1
"""One scenario at a time per engine unless told: known without asking the engine (the
assignment is made before any engine is contacted), and never more load than was asked for."""
SCHEMES = ("unix", "tcp", "ssh")
_PLAIN_HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}|[0-9A-Fa-f:.]{2,45}")
_USER = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def plain_host(host: str) -> bool:
    """Whether ``host`` is a plain DNS name or IP address: nothing a shell or URL would read
    as more (quotes, ``$``, spaces, backticks, slashes)."""
    return bool(_PLAIN_HOST.fullmatch(host))


@dataclass(frozen=True)
class EngineSpec:
    """One engine as the user named it. ``url`` "" is the environment's engine."""

    url: str = ""
    capacity: int = DEFAULT_CAPACITY
    forced_reach: str | None = None

    @property
    def local(self) -> bool:
        """Whether a port the engine publishes on 127.0.0.1 is this host's 127.0.0.1."""
        parts = urlsplit(self.url)
        if not self.url or parts.scheme == "unix":
            return True
        host = parts.hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    @property
    def reach(self) -> str:
        return self.forced_reach or ("ports" if self.local else "api")

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "capacity": self.capacity, "reach": self.forced_reach}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngineSpec:
        return cls(str(data.get("url") or ""), int(data.get("capacity") or DEFAULT_CAPACITY), data.get("reach"))


def parse(raw: str) -> EngineSpec:
    """``URL[#N[,api|ports]]`` checked without contacting anything; ValueError says what is wrong."""
    url, hashed, suffix = raw.strip().partition("#")
    capacity: int | None = None
    reach: str | None = None
    for part in (p.strip() for p in suffix.split(",")) if hashed else ():
        if part in REACHES and reach is None:
            reach = part
        elif part.isdigit() and int(part) > 0 and capacity is None:
            capacity = int(part)
        else:
            raise ValueError(
                f"after '#' expected a capacity (a whole number >= 1) and optionally ',api' or ',ports', got {suffix!r}"
            )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("the port is not a number from 0 to 65535") from None
    if parts.scheme not in SCHEMES:
        raise ValueError("expected unix:///path.sock, tcp://host:port or ssh://[user@]host[:port]")
    if parts.query or parts.fragment or parts.password:
        raise ValueError("a query, a fragment or a password in the URL is refused (ssh: use keys)")
    if parts.scheme == "unix":
        if parts.netloc or not parts.path.startswith("/"):
            raise ValueError("expected unix:///absolute/path.sock (three slashes)")
        return EngineSpec(url, capacity or DEFAULT_CAPACITY, reach)
    if not plain_host(parts.hostname or "") or parts.path not in ("", "/"):
        raise ValueError(f"expected {parts.scheme}://host[:port] with a plain host name or address and no path")
    if parts.scheme == "tcp" and (not port or parts.username):
        raise ValueError("tcp:// needs a port (2375, or 2376 with TLS) and no user")
    if parts.username and not _USER.fullmatch(parts.username):
        raise ValueError("the ssh user must be a plain name")
    return EngineSpec(url.rstrip("/"), capacity or DEFAULT_CAPACITY, reach)


def shown(raw: str) -> str:
    """A value as messages may repeat it: a password in it is masked."""
    return re.sub(r"//([^/@:]*):[^/@]*@", r"//\1:***@", raw.strip())


def slots(specs: Sequence[EngineSpec]) -> list[int]:
    """Engine indices, one per unit of capacity, interleaved by smooth weighted round robin: any
    prefix is spread in proportion to capacity, so -n below the total still uses every engine."""
    total = sum(spec.capacity for spec in specs)
    current = [0] * len(specs)
    order: list[int] = []
    for _ in range(total):
        for index, spec in enumerate(specs):
            current[index] += spec.capacity
        best = max(range(len(specs)), key=lambda index: (current[index], -index))
        current[best] -= total
        order.append(best)
    return order


def worker_index(worker: str) -> int | None:
    """``gw3`` -> 3; None for the only process of a serial run."""
    return int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else None


def spec_for(specs: Sequence[EngineSpec], worker: str) -> EngineSpec:
    """Worker gwK's engine: slot K mod the total capacity (deterministic); a serial run uses the first."""
    index = worker_index(worker)
    if index is None:
        return specs[0]
    order = slots(specs)
    return specs[order[index % len(order)]]


def in_use(specs: Sequence[EngineSpec], workers: int, distributed: bool) -> list[EngineSpec]:
    """The engines some process of this run uses, in the given order."""
    if not distributed:
        return list(specs[:1])
    chosen = {spec_for(specs, f"gw{k}") for k in range(workers)}
    return [spec for spec in dict.fromkeys(specs) if spec in chosen]


def notes(specs: Sequence[EngineSpec], workers: int, distributed: bool) -> list[str]:
    """The warnings a user should see once, in the header."""
    if len(specs) < 2:
        return []
    if not distributed:
        return [
            f"warning: {len(specs)} engines given to a serial run (no -n): only the first, "
            f"{mask_userinfo(specs[0].url)}, is used"
        ]
    total = sum(spec.capacity for spec in specs)
    if workers > total:
        return [
            f"warning: -n {workers} is more than the engines' total capacity {total}: "
            "engines get workers beyond their capacity, in the same round robin"
        ]
    return []


def facts(specs: Sequence[EngineSpec], workers: int, distributed: bool) -> list[dict[str, Any]]:
    """For run_config.json: each engine in use, its capacity, reach and workers (records name the worker)."""
    names = [f"gw{k}" for k in range(workers)] if distributed else ["main"]
    return [
        {
            "address": mask_userinfo(spec.url) or None,
            "capacity": spec.capacity,
            "reach": spec.reach,
            "workers": [name for name in names if spec_for(specs, name) == spec],
        }
        for spec in in_use(specs, workers, distributed)
    ]
