"""gaia2-runner's TOML run config (``--gaia2-config FILE.toml``) as plugin option values.

Teams already keep their Gaia2 runs in gaia2-runner's ``run-config`` files (``[target]``,
``[agent]``, ``[judge]``, ``[run]``); reading them unchanged lets the same file drive
pytest-gaia2. Every key gaia2-runner knows is handled one of three ways:

- mapped to a plugin option (values kept as the strings and lists a command line gives,
  ready for ``options.resolve``; paths resolved against the TOML file's folder after
  ``$VAR``/``${VAR}``/``~`` expansion, as upstream does);
- accepted with a note, when it concerns only upstream's own machinery (``runtime``,
  ``concurrency``, ``log_level``, ...);
- refused, when ignoring it would silently change what is measured (``language``,
  ``num_shards`` > 1).

A key gaia2-runner does not know is refused by name, as upstream refuses it.

A literal ``api_key`` never enters the options (which are printed and written to
``run_config.json``): it is returned in :attr:`UpstreamConfig.secrets` under a variable
name that the options point to with ``api_key_env``, so the key travels the same road as a
key from the environment (looked up by name, masked by the redactor, never written).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_gaia2.config import options
from pytest_gaia2.config.options import OptionError
from pytest_gaia2.config.splits import split_names
from pytest_gaia2.config.upstream_reader import RunConfigReader, Secret

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

AGENT_KEY_VAR = "GAIA2_CONFIG_AGENT_API_KEY"
JUDGE_KEY_VAR = "GAIA2_CONFIG_JUDGE_API_KEY"
"""Where a literal ``[agent].api_key`` / ``[judge].api_key`` is handed over (see the module doc)."""


@dataclass(frozen=True)
class UpstreamConfig:
    """Option values (keyed by ``Option.key``), notes for the user, and literal keys kept apart."""

    path: Path
    options: dict[str, Any]
    notes: list[str]
    secrets: dict[str, Secret] = field(default_factory=dict, repr=False)

    def secret_environ(self) -> dict[str, str]:
        """The literal keys as variables, to be layered over the environment the plugin reads keys from."""
        return {name: secret.reveal() for name, secret in self.secrets.items()}


Handler = Callable[[RunConfigReader, str, Any, dict[str, Any]], None]


def _to(key: str, kind: str = "text") -> Handler:
    """A key that maps one-to-one onto a plugin option; numbers are passed on as text."""

    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        parsed = getattr(reader, kind)(where, value)
        if parsed != "":
            reader.set(where, key, parsed if isinstance(parsed, str) else str(parsed))

    return handle


def _path_to(key: str, must_exist: Literal["file", "dir"] | None = None, *, target: bool = False) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        if not reader.text(where, value):
            return
        path = reader.path(where, value, must_exist=must_exist)
        if target:
            reader.target(where, key, [path])
        else:
            reader.set(where, key, path)

    return handle


def _ignored(kind: str, why: str) -> Handler:
    """A key that only concerns gaia2-runner's own machinery: checked, then reported."""

    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        reader.note(where, f"= {getattr(reader, kind)(where, value)!r} is ignored: {why}")

    return handle


def _refused(kind: str, why: str, *, unless: Any = None) -> Handler:
    """A key whose absence would change what is measured: refused unless it is harmless."""

    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        if getattr(reader, kind)(where, value) != unless:
            reader.fail(where, f"is not supported by pytest-gaia2: {why}")

    return handle


def _renamed(new: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        reader.fail(where, f"has been removed from gaia2-runner; use {new}")

    return handle


def _dataset(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    dataset_id = reader.text(where, value)
    if dataset_id:
        reader.target(where, "dataset", dataset_id)


def _splits(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    items = [reader.text(where, value)] if isinstance(value, str) else reader.strings(where, value)
    names = split_names(items, source=f"{reader.file}: {where}")
    reader.set(where, "splits", "all" if [i.lower() for i in items] == ["all"] else ",".join(names))


def _limit(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    limit = reader.integer(where, value)
    reader.set(where, "first_n", str(limit))
    reader.note(where, f"= {limit} becomes --gaia2-first-n {limit}: a plain prefix, as in gaia2-runner")


def _recursive(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    if not reader.boolean(where, value):
        reader.note(where, "= false is ignored: scenario folders are always searched recursively")


def _retry(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    reader.set(where, "resume", "true" if reader.boolean(where, value) else "false")


def _output(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    reader.note(
        where,
        f"= {reader.path(where, value)!r} is ignored: results.jsonl is always "
        "written into the output folder ([run].output_dir)",
    )


def _api_key(variable: str, option: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        reader.secret(where, section, variable, option)

    return handle


def _container_env(name: str, kind: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
        if kind == "table":
            if not isinstance(value, dict):
                reader.fail(where, f"must be a TOML table, got {value!r}")
            text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        elif kind == "number":
            number = reader.number(where, value)
            if number <= 0:
                reader.fail(where, f"must be greater than 0, got {value!r}")
            text = str(number)
        else:
            text = reader.text(where, value)
        reader.env(where, name, text)

    return handle


def _shard_id(reader: RunConfigReader, where: str, value: Any, section: dict[str, Any]) -> None:
    if reader.integer(where, value) != 0:
        reader.fail(
            where,
            "is not supported by pytest-gaia2: give each machine its own --gaia2-ids-file or subset manifest instead",
        )


# Every key gaia2-runner's run-config accepts (its main branch, plus the keys added on its
# newer branches: language, image_sif, prompt_version, extra_body, idle_timeout,
# stuck_loop_min_tool_calls, shard_id, num_shards).
_SECTIONS: dict[str, dict[str, Handler]] = {
    "target": {
        "scenario": _path_to("scenarios", "file", target=True),
        "dataset_root": _path_to("scenarios", "dir", target=True),
        "dataset": _dataset,
        "splits": _splits,
        "subset_manifest": _path_to("subset", "file"),
        "limit": _limit,
        "recursive": _recursive,
        "language": _refused(
            "text",
            "it selects a per-language dataset config; materialise "
            "that dataset into folders and use [target].dataset_root",
        ),
    },
    "agent": {
        "image": _to("image"),
        "runtime": _ignored(
            "text",
            "pytest-gaia2 drives containers through the Docker API (for podman, point DOCKER_HOST at its socket)",
        ),
        "image_sif": _ignored("text", "Apptainer is not supported; the image is run with Docker"),
        "provider": _to("provider"),
        "model": _to("model"),
        "api_key": _api_key(AGENT_KEY_VAR, "api_key_env"),
        "api_key_env": _to("api_key_env"),
        "base_url": _to("base_url"),
        "thinking": _to("thinking"),
        "volumes": lambda r, w, v, s: r.volumes(w, v),
    },
    "judge": {
        "model": _to("judge_model"),
        "provider": _to("judge_provider"),
        "base_url": _to("judge_base_url"),
        "api_key": _api_key(JUDGE_KEY_VAR, "judge_api_key_env"),
        "api_key_env": _to("judge_api_key_env"),
        "prompt_version": _container_env("GAIA2_JUDGE_PROMPT_VERSION", "text"),
        "extra_body": _container_env("GAIA2_JUDGE_EXTRA_BODY", "table"),
        "endpoint": _renamed("[judge].base_url"),
    },
    "run": {
        "timeout": _to("timeout", "number"),
        "health_timeout": _to("health_timeout", "number"),
        "adapter_port": _ignored("integer", "pytest-gaia2 assigns ports itself"),
        "concurrency": _ignored("integer", "run scenarios in parallel with pytest-xdist (-n N)"),
        "pass_at": _to("repeat", "integer"),
        "retry": _retry,
        "output_dir": _path_to("output"),
        "output": _output,
        "log_level": _ignored("text", "use pytest's --log-level / --log-cli-level"),
        "notification_mode": _to("notification_mode"),
        "time_speed": _to("time_speed", "number"),
        # The runner's own watch, not eventd's: seconds without a new daemon event, seen from the host.
        "idle_timeout": _to("idle_timeout", "number"),
        "stuck_loop_min_tool_calls": _to("stuck_loop_min_calls", "integer"),
        "shard_id": _shard_id,
        "num_shards": _refused(
            "integer",
            "a shard would silently run every scenario; split the "
            "work with pytest-xdist (-n N) or per-machine --gaia2-ids-file",
            unless=1,
        ),
        "smart_pass_at": _renamed("[run].pass_at"),
    },
}
_RENAMED = {("judge", "endpoint"), ("run", "smart_pass_at")}


def _unknown_keys(raw: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for name, section in raw.items():
        if name not in _SECTIONS:
            problems.append(f"[{name}]: unknown section (gaia2-runner has {', '.join(f'[{s}]' for s in _SECTIONS)})")
        elif not isinstance(section, dict):
            problems.append(f"[{name}]: must be a TOML table")
        else:
            known = [k for k in _SECTIONS[name] if (name, k) not in _RENAMED]
            problems += [
                f"[{name}].{key}: unknown key (gaia2-runner's [{name}] keys: {', '.join(known)})"
                for key in section
                if key not in _SECTIONS[name]
            ]
    return problems


def load(path: Path, environ: Mapping[str, str]) -> UpstreamConfig:
    """Read a gaia2-runner run-config file into option values, notes and secrets.

    ``environ`` expands ``$VAR`` in path values. Raises :class:`options.OptionError` naming
    the file and the key for anything that cannot be honoured.
    """
    path = Path(os.path.expanduser(str(path))).resolve()
    try:
        with path.open("rb") as handle:
            raw = tomllib.load(handle)
    except OSError as exc:
        raise OptionError(f"--gaia2-config: cannot read {path} ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"--gaia2-config: {path} is not valid TOML ({exc})") from None
    problems = _unknown_keys(raw)
    if problems:
        raise OptionError(f"{path}: " + "; ".join(problems))
    reader = RunConfigReader(path, environ)
    for name, handlers in _SECTIONS.items():
        for key, value in raw.get(name, {}).items():
            handlers[key](reader, f"[{name}].{key}", value, raw[name])
    if len(reader.targets) > 1:
        reader.fail(" and ".join(reader.targets), "set only one of [target].scenario, dataset_root and dataset")
    for key, value in reader.options.items():
        try:
            options.resolve({}, {key: value}, {})
        except OptionError as exc:
            reader.fail(reader.origin[key], str(exc))
    return UpstreamConfig(path, reader.options, reader.notes, reader.secrets)
