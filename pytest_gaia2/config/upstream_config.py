"""gaia2-runner's TOML run config (``--gaia2-config FILE.toml``) as plugin option values.

Teams already keep their Gaia2 runs in gaia2-runner's ``run-config`` files (``[target]``,
``[agent]``, ``[judge]``, ``[run]``); reading them unchanged lets the same file drive
pytest-gaia2. Every key gaia2-runner knows is handled one of three ways:

- mapped to a plugin option (values kept as the strings and lists a command line gives,
  ready for ``options.resolve``; paths resolved against the TOML file's folder after
  ``$VAR``/``${VAR}``/``~`` expansion, as upstream does);
- accepted with a note, when it concerns only upstream's own machinery (``runtime``,
  ``concurrency``, ``log_level``, ...);
- replaced, when upstream's own machinery cannot be had (``runtime = "apptainer"``,
  ``image_sif``): the run uses the container engine's API instead, and the replacement is
  recorded (:attr:`UpstreamConfig.replaced`), not only noted.

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
from pytest_gaia2.config.splits import split_names
from pytest_gaia2.config.upstream_reader import RunConfigReader, Secret
from pytest_gaia2.config.values import OptionError

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
    replaced: list[dict[str, str]] = field(default_factory=list)
    """Keys whose setting could not be honoured as written and what stands in for it (run_config.json)."""

    def secret_environ(self) -> dict[str, str]:
        """The literal keys as variables, to be layered over the environment the plugin reads keys from."""
        return {name: secret.reveal() for name, secret in self.secrets.items()}


Handler = Callable[[RunConfigReader, str, object, dict[str, Any]], None]


def _to(key: str, kind: str = "text") -> Handler:
    """A key that maps one-to-one onto a plugin option; numbers are passed on as text."""

    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
        parsed = getattr(reader, kind)(where, value)
        if parsed != "":
            reader.set(where, key, parsed if isinstance(parsed, str) else str(parsed))

    return handle


def _path_to(key: str, must_exist: Literal["file", "dir"] | None = None, *, target: bool = False) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
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

    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
        reader.note(where, f"= {getattr(reader, kind)(where, value)!r} is ignored: {why}")

    return handle


def _renamed(new: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
        reader.fail(where, f"has been removed from gaia2-runner; use {new}")

    return handle


def _dataset(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    dataset_id = reader.text(where, value)
    if dataset_id:
        reader.target(where, "dataset", dataset_id)


def _splits(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    items = [reader.text(where, value)] if isinstance(value, str) else reader.strings(where, value)
    names = split_names(items, source=f"{reader.file}: {where}")
    reader.set(where, "splits", "all" if [i.lower() for i in items] == ["all"] else ",".join(names))


def _limit(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    limit = reader.integer(where, value)
    reader.set(where, "first_n", str(limit))
    reader.note(where, f"= {limit} becomes --gaia2-first-n {limit}: a plain prefix, as in gaia2-runner")


def _recursive(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    if not reader.boolean(where, value):
        reader.note(where, "= false is ignored: scenario folders are always searched recursively")


def _retry(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    reader.set(where, "resume", "true" if reader.boolean(where, value) else "false")


def _output(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    reader.note(
        where,
        f"= {reader.path(where, value)!r} is ignored: results.jsonl is always "
        "written into the output folder ([run].output_dir)",
    )


def _api_key(variable: str, option: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
        reader.secret(where, section, variable, option)

    return handle


def _container_env(name: str, kind: str) -> Handler:
    def handle(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
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


def _shard_part(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    """``shard_id`` and ``num_shards`` are read here and joined into one ``--gaia2-shard`` by :func:`_shard`."""
    reader.integer(where, value)


def _shard(reader: RunConfigReader, run: dict[str, Any]) -> None:
    """Upstream's 0-based ``shard_id`` of ``num_shards`` as ``--gaia2-shard K/N`` (1-based)."""
    if "num_shards" not in run and "shard_id" not in run:
        return
    count = run.get("num_shards", 1)
    index = run.get("shard_id", 0)
    if count < 1:
        reader.fail("[run].num_shards", f"must be at least 1, got {count}")
    if not 0 <= index < count:
        reader.fail("[run].shard_id", f"must be from 0 to num_shards - 1 ({count - 1}), got {index}")
    if count > 1:
        reader.set("[run].shard_id", "shard", f"{index + 1}/{count}")
        reader.note(
            "[run].shard_id",
            f"= {index} of num_shards = {count} becomes --gaia2-shard {index + 1}/{count}: pytest-gaia2's "
            "partition is stratified by split and universe, not gaia2-runner's round robin, so merge only "
            "shards run by pytest-gaia2",
        )


def _language(reader: RunConfigReader, target: dict[str, Any]) -> None:
    """``language`` selects per-language configs of a Hugging Face dataset, so it needs one (as upstream)."""
    if not reader.options.get("language"):
        return
    for other in ("scenario", "dataset_root"):
        if other in target:
            reader.fail(
                "[target].language",
                f"cannot be used with [target].{other}: it selects a Hugging Face config of [target].dataset "
                "(for a local copy of one language, point [target].dataset_root at it and drop language)",
            )
    names = split_names(
        reader.options.get("splits"), source=f"{reader.file}: [target].splits", language=reader.options["language"]
    )
    reader.set(reader.origin.get("splits", "[target].language"), "splits", ",".join(names))


def _runtime(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    runtime = reader.text(where, value)
    if runtime.lower() in ("", "docker", "podman"):
        reader.note(
            where,
            f"= {runtime!r} is ignored: pytest-gaia2 drives containers through the Docker API "
            "(for podman, point DOCKER_HOST at its socket)",
        )
    else:
        reader.replace(where, runtime, "the container engine's API (Docker or Podman)")


def _image_sif(reader: RunConfigReader, where: str, value: object, section: dict[str, Any]) -> None:
    sif = reader.text(where, value)
    if sif:
        reader.replace(where, sif, "[agent].image run through the container engine's API")


@dataclass(frozen=True)
class UpstreamKey:
    """One key of gaia2-runner's TOML: how it is read, and what pytest-gaia2 does with it (for the docs)."""

    handle: Handler
    does: str


# Every key gaia2-runner's run-config accepts (its main branch, plus the keys of its newer
# branches and example configs: sequences, language, image_sif, prompt_version, extra_body,
# idle_timeout, stuck_loop_min_tool_calls, shard_id, num_shards). The ``does`` texts are the
# "Coming from gaia2-runner" table of the docs (scripts/gen_docs.py).
_SECTIONS: dict[str, dict[str, UpstreamKey]] = {
    "target": {
        "scenario": UpstreamKey(_path_to("scenarios", "file", target=True), "`--gaia2-scenarios FILE`"),
        "dataset_root": UpstreamKey(_path_to("scenarios", "dir", target=True), "`--gaia2-scenarios DIR`"),
        "dataset": UpstreamKey(_dataset, "`--gaia2-dataset ORG/NAME` (the `dataset` extra; upstream's cache layout)"),
        "language": UpstreamKey(
            _to("language"),
            "`--gaia2-language` (with `[target].dataset` only, as upstream): loads the dataset's "
            "`<language>_<split>` configs; the translated splits are execution, search, adaptability, ambiguity",
        ),
        "splits": UpstreamKey(_splits, "`--gaia2-splits` (`all`, a name or a list)"),
        "subset_manifest": UpstreamKey(_path_to("subset", "file"), "`--gaia2-subset`"),
        "sequences": UpstreamKey(
            _path_to("sequence", "file"),
            "`--gaia2-sequence`: each chain in order on one worker, the agent's home and app state carried on",
        ),
        "limit": UpstreamKey(_limit, "`--gaia2-first-n` (a plain prefix, as upstream), with a note"),
        "recursive": UpstreamKey(_recursive, "`true` only: folders are always searched recursively (`false` is noted)"),
    },
    "agent": {
        "image": UpstreamKey(_to("image"), "`--gaia2-image`"),
        "runtime": UpstreamKey(
            _runtime,
            "`docker`/`podman`: noted (containers are driven through the engine API; for Podman point "
            "`DOCKER_HOST` at its socket); `apptainer` or any other: replaced by the engine API, recorded in "
            "run_config.json (`upstream_config.replaced`), the summary and the pages",
        ),
        "image_sif": UpstreamKey(
            _image_sif,
            "replaced by `[agent].image` run through the engine API, recorded like `runtime`",
        ),
        "provider": UpstreamKey(_to("provider"), "`--gaia2-provider`"),
        "model": UpstreamKey(_to("model"), "`--gaia2-model`"),
        "api_key": UpstreamKey(
            _api_key(AGENT_KEY_VAR, "api_key_env"),
            f"kept apart from every option and file, handed to containers through `{AGENT_KEY_VAR}`",
        ),
        "api_key_env": UpstreamKey(_to("api_key_env"), "`--gaia2-api-key-env`"),
        "base_url": UpstreamKey(_to("base_url"), "`--gaia2-base-url`"),
        "thinking": UpstreamKey(_to("thinking"), "`--gaia2-thinking`"),
        "volumes": UpstreamKey(
            lambda r, w, v, s: r.volumes(w, v),
            "`--gaia2-copy-in`: copied into each container before it starts (not mounted)",
        ),
    },
    "judge": {
        "model": UpstreamKey(_to("judge_model"), "`--gaia2-judge-model`"),
        "provider": UpstreamKey(_to("judge_provider"), "`--gaia2-judge-provider`"),
        "base_url": UpstreamKey(_to("judge_base_url"), "`--gaia2-judge-base-url`"),
        "api_key": UpstreamKey(
            _api_key(JUDGE_KEY_VAR, "judge_api_key_env"),
            f"kept apart like `[agent].api_key`, through `{JUDGE_KEY_VAR}`",
        ),
        "api_key_env": UpstreamKey(_to("judge_api_key_env"), "`--gaia2-judge-api-key-env`"),
        "prompt_version": UpstreamKey(
            _container_env("GAIA2_JUDGE_PROMPT_VERSION", "text"),
            "passed to containers as `GAIA2_JUDGE_PROMPT_VERSION`; `pytest-gaia2 rejudge --judge-prompt-version`",
        ),
        "extra_body": UpstreamKey(
            _container_env("GAIA2_JUDGE_EXTRA_BODY", "table"),
            "passed to containers as `GAIA2_JUDGE_EXTRA_BODY` (JSON); `pytest-gaia2 rejudge --judge-extra-body`",
        ),
        "endpoint": UpstreamKey(_renamed("[judge].base_url"), "refused: renamed upstream to `[judge].base_url`"),
    },
    "run": {
        "timeout": UpstreamKey(_to("timeout", "number"), "`--gaia2-timeout`"),
        "health_timeout": UpstreamKey(_to("health_timeout", "number"), "`--gaia2-health-timeout`"),
        "adapter_port": UpstreamKey(
            _ignored("integer", "pytest-gaia2 assigns ports itself"), "noted: the engine assigns each container's port"
        ),
        "concurrency": UpstreamKey(
            _ignored("integer", "run scenarios in parallel with pytest-xdist (-n N)"),
            "noted: use `pytest -n N`, or one process with `--gaia2-in-flight N`",
        ),
        "pass_at": UpstreamKey(_to("repeat", "integer"), "`--gaia2-repeat`"),
        "retry": UpstreamKey(_retry, "`--gaia2-resume` (only what has no verdict runs again)"),
        "output_dir": UpstreamKey(_path_to("output"), "`--gaia2-output`"),
        "output": UpstreamKey(_output, "noted: results.jsonl is always written into the run folder"),
        "log_level": UpstreamKey(
            _ignored("text", "use pytest's --log-level / --log-cli-level"), "noted: use pytest's `--log-level`"
        ),
        "notification_mode": UpstreamKey(_to("notification_mode"), "`--gaia2-notification-mode`"),
        "time_speed": UpstreamKey(_to("time_speed", "number"), "`--gaia2-time-speed`"),
        # The runner's own watch, not eventd's: seconds without a new daemon event, seen from the host.
        "idle_timeout": UpstreamKey(_to("idle_timeout", "number"), "`--gaia2-idle-timeout`"),
        "stuck_loop_min_tool_calls": UpstreamKey(
            _to("stuck_loop_min_calls", "integer"), "`--gaia2-stuck-loop-min-calls`"
        ),
        "shard_id": UpstreamKey(
            _shard_part,
            "with `num_shards`: `--gaia2-shard <shard_id + 1>/<num_shards>` (upstream counts from 0)",
        ),
        "num_shards": UpstreamKey(
            _shard_part,
            "with `shard_id`: `--gaia2-shard`; pytest-gaia2's partition is stratified by split and universe, "
            "not upstream's round robin, so shards of the two tools never mix in one merge",
        ),
        "smart_pass_at": UpstreamKey(_renamed("[run].pass_at"), "refused: removed upstream, use `[run].pass_at`"),
    },
}
_RENAMED = {("judge", "endpoint"), ("run", "smart_pass_at")}


def documented_keys() -> list[tuple[str, str]]:
    """Every gaia2-runner TOML key (``[section].key``) and what pytest-gaia2 does with it: the docs' table."""
    return [(f"[{name}].{key}", entry.does) for name, keys in _SECTIONS.items() for key, entry in keys.items()]


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
            handlers[key].handle(reader, f"[{name}].{key}", value, raw[name])
    _shard(reader, raw.get("run", {}))
    _language(reader, raw.get("target", {}))
    if len(reader.targets) > 1:
        reader.fail(" and ".join(reader.targets), "set only one of [target].scenario, dataset_root and dataset")
    for key, value in reader.options.items():
        try:
            options.resolve({}, {key: value}, {})
        except OptionError as exc:
            reader.fail(reader.origin[key], str(exc))
    return UpstreamConfig(path, reader.options, reader.notes, reader.secrets, reader.replaced)
