"""What made a run's verdicts: the session's provenance, run_config.json, and what resume compares.

Every record carries the session's provenance; run_config.json holds gaia2-runner's keys
(contract 5.4) and ours. A resumed session must share the provenance of the run it continues.
"""

from __future__ import annotations

import datetime as _dt
import getpass
import hashlib
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.store.record import PROVENANCE_KEYS, AttemptRecord
from pytest_gaia2.store.redact import looks_secret
from pytest_gaia2.store.version import PLUGIN_VERSION

COMPARED = tuple(key for key in PROVENANCE_KEYS if key not in {"run_id", "session_id"})
"""Provenance a resumed session must share with the run it continues."""


def host_of(url: str | None) -> str | None:
    """``host:port`` of a URL, never its credentials or path."""
    if not url:
        return None
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def command(config: pytest.Config) -> str:
    return shlex.join([Path(sys.argv[0]).name, *config.invocation_params.args])


def of_session(
    settings: settings_mod.RunSettings, *, run_id: str, session_id: str, image_id: str | None, shard: str | None = None
) -> dict[str, Any]:
    """What made this session's verdicts, as every record carries it (no secret: extra env
    values whose names look secret enter the digest as a placeholder)."""
    extra = sorted((key, "<secret>" if looks_secret(key) else value) for key, value in settings.extra_env)
    return {
        "run_id": run_id,
        "session_id": session_id,
        "plugin_version": PLUGIN_VERSION,
        "image": settings.image,
        "image_id": image_id,
        "provider": settings.agent_provider or None,
        "model": settings.model,
        "judge_provider": settings.judge_provider,
        "judge_model": settings.judge_model,
        "base_url_host": host_of(settings.base_url),
        "judge_base_url_host": host_of(settings.judge_base_url),
        "env_digest": hashlib.sha256(repr(extra).encode()).hexdigest()[:16] if extra else None,
        "shard": shard,
    }


def differences(
    stored_config: Mapping[str, Any],
    now: Mapping[str, Any],
    records: Iterable[AttemptRecord],
    hashes: Mapping[str, str | None],
) -> list[str]:
    """Each way the resumed run differs: provenance keys, then scenario files changed since their verdict.

    A run folder of version 0.1 has no provenance block: only its image is compared.
    """
    before = stored_config.get("provenance") or (
        {"image": stored_config["settings"].get("image")} if isinstance(stored_config.get("settings"), dict) else {}
    )
    found = [
        f"{key}: {before.get(key)!r} -> {now.get(key)!r}"
        for key in COMPARED
        if key in before and before.get(key) != now.get(key)
    ]
    found += [
        f"scenario file changed: {record.key}"
        for record in records
        if record.scenario_sha256 and hashes.get(record.key) not in (None, record.scenario_sha256)
    ]
    return found


def run_config(
    settings: settings_mod.RunSettings,
    values: Mapping[str, Any],
    *,
    command: str,
    started: _dt.datetime,
    workers: int,
    planned: Sequence[str],
    session: Mapping[str, Any],
    dataset: str | None,
    markexpr: str | None,
    keyword: str | None,
) -> dict[str, Any]:
    """run_config.json: gaia2-runner's keys first (same names and meanings), then ours."""
    limits = settings.limits
    return {
        "command": command,
        "started_at": started.isoformat(timespec="seconds"),
        "user": getpass.getuser(),
        "image": settings.image,
        "runtime": "docker",
        "provider": settings.agent_provider or None,
        "model": settings.model,
        "base_url": host_of(settings.base_url),
        "judge_model": settings.judge_model,
        "judge_provider": settings.judge_provider,
        "judge_base_url": host_of(settings.judge_base_url),
        "timeout": limits.timeout,
        "health_timeout": limits.health_timeout,
        "concurrency": workers,
        "limit": values["first_n"],
        "dataset": dataset,
        "splits": values["splits"],
        "subset": values["subset"],
        "num_scenarios": len({key.split("/run_")[0] for key in planned}),
        "total_runs": values["repeat"],
        "plugin_version": PLUGIN_VERSION,
        "run_id": session["run_id"],
        "session_id": session["session_id"],
        "workers": workers,
        "name": values["name"],
        "tags": list(values["tag"]),
        "planned": list(planned),
        "provenance": dict(session),
        "settings": settings_mod.public_dict(settings),
        "selection": {
            key: values[key]
            for key in (
                "scenarios",
                "dataset",
                "language",
                "dataset_revision",
                "splits",
                "subset",
                "ids_file",
                "sample",
                "seed",
                "first_n",
                "order",
                "shard",
                "repeat",
                "retries",
            )
        },
        "markexpr": markexpr,
        "keyword": keyword,
    }
