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

from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.config.options import Options
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


def command(args: Sequence[str]) -> str:
    """The command line that started this session, from the arguments pytest was given."""
    return shlex.join([Path(sys.argv[0]).name, *args])


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


SETTING_WORDS = {
    "plugin_version": "the pytest-gaia2 version",
    "image": "--gaia2-image",
    "image_id": "the image's content (its id; the image was rebuilt or pulled again)",
    "provider": "--gaia2-provider",
    "model": "--gaia2-model",
    "judge_provider": "--gaia2-judge-provider",
    "judge_model": "--gaia2-judge-model",
    "base_url_host": "--gaia2-base-url (its host)",
    "judge_base_url_host": "--gaia2-judge-base-url (its host)",
    "shard": "--gaia2-shard",
}
"""Each compared provenance key as a person knows the setting; ``env_digest`` is told by name."""


def _env(config: Mapping[str, Any]) -> dict[str, str] | None:
    """--gaia2-env of a run, from its public settings (a secret's value is masked there)."""
    settings = config.get("settings")
    found = settings.get("extra_env") if isinstance(settings, Mapping) else None
    return {str(key): str(value) for key, value in found.items()} if isinstance(found, Mapping) else None


def env_changes(before: Mapping[str, str] | None, now: Mapping[str, str] | None) -> str:
    """How --gaia2-env differs, in variable names only (a value may be a secret)."""
    if before is None or now is None:
        return "--gaia2-env: the variables or their values differ"
    changes = [
        *(f"{name} set by the run, not now" for name in sorted(set(before) - set(now))),
        *(f"{name} set now, not by the run" for name in sorted(set(now) - set(before))),
        *(f"{name} has another value" for name in sorted(set(before) & set(now)) if before[name] != now[name]),
    ]
    return f"--gaia2-env: {'; '.join(changes) or 'a value differs'}"


def differences(
    stored_config: Mapping[str, Any],
    now: Mapping[str, Any],
    records: Iterable[AttemptRecord],
    hashes: Mapping[str, str | None],
) -> list[str]:
    """Each way the resumed run differs, in words: the settings of its provenance (``now``'s
    ``provenance`` and ``settings``, as run_config.json holds them), then the scenario files
    changed since their verdict. --gaia2-env is told by variable names, never values.

    A run folder of version 0.1 has no provenance block: only its image is compared.
    """
    before = stored_config.get("provenance") or (
        {"image": stored_config["settings"].get("image")} if isinstance(stored_config.get("settings"), dict) else {}
    )
    current = now.get("provenance") or {}
    found = [
        env_changes(_env(stored_config), _env(now))
        if key == "env_digest"
        else f"{SETTING_WORDS.get(key, key)}: {before.get(key)!r} then, {current.get(key)!r} now"
        for key in COMPARED
        if key in before and before.get(key) != current.get(key)
    ]
    found += [
        f"scenario file changed since its verdict: {record.key}"
        for record in records
        if record.scenario_sha256 and hashes.get(record.key) not in (None, record.scenario_sha256)
    ]
    return found


def resume_command(command: str, folder: Path) -> str:
    """``command`` (an earlier session's) continuing ``folder``: any --gaia2-resume in it
    replaced by ``--gaia2-resume=FOLDER``, so it cannot pick another run folder."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    kept: list[str] = []
    bare = False
    for word in words:
        if bare and not word.startswith("-"):  # the value of a bare --gaia2-resume VALUE
            bare = False
            continue
        bare = word == "--gaia2-resume"
        if not (bare or word.startswith("--gaia2-resume=")):
            kept.append(word)
    return shlex.join([*kept, f"--gaia2-resume={folder}"])


def run_config(
    settings: settings_mod.RunSettings,
    values: Options,
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
        "limit": values.first_n,
        "dataset": dataset,
        "splits": values.splits,
        "subset": values.subset,
        "num_scenarios": len({key.split("/run_")[0] for key in planned}),
        "total_runs": values.repeat,
        "plugin_version": PLUGIN_VERSION,
        "run_id": session["run_id"],
        "session_id": session["session_id"],
        "workers": workers,
        "name": values.name,
        "tags": list(values.tag),
        "planned": list(planned),
        "provenance": dict(session),
        "settings": settings_mod.public_dict(settings),
        "selection": {
            "scenarios": values.scenarios,
            "dataset": values.dataset,
            "language": values.language,
            "dataset_revision": values.dataset_revision,
            "splits": values.splits,
            "subset": values.subset,
            "ids_file": values.ids_file,
            "sample": values.sample,
            "seed": values.seed,
            "first_n": values.first_n,
            "order": values.order,
            "shard": values.shard,
            "repeat": values.repeat,
            "retries": values.retries,
        },
        "markexpr": markexpr,
        "keyword": keyword,
    }
