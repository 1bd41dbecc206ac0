"""Finding scenario files and reading the little metadata a test item needs.

Validation happens here, at collection, so a broken file is reported once with its path
and field, before any container starts. Every way a file can fail (unreadable, not a
regular file, too large, too deep, not UTF-8, not JSON, a bad field) is a
:class:`ScenarioError` for that file only; the others still load.

Real Gaia2 exports weigh 2.4-2.7 MB, mostly the universe's app states, so with an index
path the metadata is kept in a JSON sidecar keyed by each file's stat: a warm discovery
stats the files and parses none.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_gaia2.config.splits import SPLITS, split_marker, universe_of
from pytest_gaia2.store import names
from pytest_gaia2.store.folder import StoreError, write_text
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded, read_json_file, read_regular_file
from pytest_gaia2.store.user_cache import cache_dir

# Generous: real exports are under 3 MB; the bound keeps a stray huge file from exhausting memory.
MAX_SCENARIO_BYTES = 64 * 1024 * 1024
# Ids and split names are path components: <output>/<run folder>/[run_k/]<split>/<id>/attempt_k/state/<file>.
# 128 + 64 characters keep each component far under NAME_MAX (255 bytes) and the whole path
# under PATH_MAX (4096 bytes on Linux, 1024 on macOS) for any reasonable output folder; the
# rest of the rules (valid on Windows too, told apart without case) are in names.py.
MAX_ID_LENGTH = names.MAX_PART
MAX_SPLIT_LENGTH = 64

_INDEX_VERSION = 1
_INDEX_MAX_BYTES = 512 * 1024 * 1024
# A file rewritten within one timestamp tick keeps its size and times; an entry is only
# trusted once the file has been left alone this long (git's "racily clean" problem).
_SETTLED_NS = 2_000_000_000

log = logging.getLogger(__name__)


def index_path() -> Path:
    """The scenario metadata index runs keep warm, so real 2.5 MB exports are parsed once."""
    return cache_dir() / "scenario-index.json"


class ScenarioError(Exception):
    """A scenario file that cannot run; the message names the file and the field."""

    def __init__(self, path: Path, field_name: str, problem: str) -> None:
        self.path = path
        self.field = field_name
        self.problem = problem
        super().__init__(f"{path}: {field_name}: {problem}")


@dataclass(frozen=True)
class Scenario:
    """What the plugin needs to know about a scenario without running it."""

    scenario_id: str
    split: str
    path: Path
    duration: float | None = None
    start_time: float | None = None
    task: str = ""
    apps: tuple[str, ...] = ()
    has_events: bool = True
    tags: tuple[str, ...] = field(default=())
    sha256: str | None = None  # of the file as parsed, recorded with each run as provenance

    @property
    def universe(self) -> str | None:
        return universe_of(self.scenario_id)

    @property
    def test_id(self) -> str:
        return f"{self.split}/{self.scenario_id}"

    @property
    def marker(self) -> str:
        """The split marker, ``search_split``; any directory name becomes a valid marker name."""
        return split_marker(self.split)


def _shown(value: object) -> str:
    """A repr short enough for a one-line message."""
    text = repr(value)
    return text if len(text) <= 50 else f"{text[:50]}..."


def _definition_value(data: dict[str, Any], key: str) -> Any:
    metadata = data.get("metadata")
    definition = metadata.get("definition") if isinstance(metadata, dict) else None
    if isinstance(definition, dict) and definition.get(key) is not None:
        return definition[key]
    return data.get(key)


def arg_value(args: object, name: str) -> Any:
    """Arguments are a list of {name, value} in exports, or a dict in the legacy form."""
    if isinstance(args, dict):
        return args.get(name)
    if isinstance(args, list):
        for arg in args:
            if isinstance(arg, dict) and arg.get("name") == name:
                return arg.get("value")
    return None


def find_task(data: dict[str, Any]) -> str:
    """The first ``send_message_to_agent`` content, looked up the way upstream's runner does."""
    for key in ("events", "completed_events"):
        events = data.get(key)
        for event in events if isinstance(events, list) else ():
            action = event.get("action") if isinstance(event, dict) else None
            if not isinstance(action, dict):
                continue
            function = action.get("function") or action.get("function_name")
            if function == "send_message_to_agent":
                content = arg_value(action.get("args"), "content")
                if content:
                    return str(content)
    return ""


def _number(path: Path, name: str, value: object) -> float | None:
    """A finite float: an infinite duration would make every timeout infinite."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float's range
            number = math.inf
        if math.isfinite(number):
            return number
    raise ScenarioError(path, f"metadata.definition.{name}", f"expected a finite number, got {_shown(value)}")


def _check_split(path: Path, split: str) -> None:
    """The split comes from a folder name and names an output folder, so it obeys the id rules."""
    problem = names.problem(split, MAX_SPLIT_LENGTH)
    if problem:
        raise ScenarioError(path, "split (folder name)", problem)


def _parse(path: Path, split: str) -> Scenario:
    """Read, hash and validate one file; the hash and the parse share one bounded read."""
    try:
        raw = read_regular_file(path, max_bytes=MAX_SCENARIO_BYTES)
        data = loads_bounded(raw, max_bytes=MAX_SCENARIO_BYTES, max_depth=None)  # nothing recurses into it
    except JsonReadError as exc:
        raise ScenarioError(path, "file", str(exc)) from None
    if not isinstance(data, dict):
        raise ScenarioError(path, "file", f"expected a JSON object, got {type(data).__name__}")
    scenario_id = _definition_value(data, "scenario_id")
    if not isinstance(scenario_id, str) or not scenario_id.strip():
        raise ScenarioError(path, "metadata.definition.scenario_id", "missing or empty")
    problem = names.problem(scenario_id, MAX_ID_LENGTH)
    if problem:
        raise ScenarioError(path, "metadata.definition.scenario_id", problem)
    events = data.get("events", [])
    if not isinstance(events, list):
        raise ScenarioError(path, "events", f"expected a list, got {type(events).__name__}")
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise ScenarioError(path, f"events[{index}]", "expected an object")
        action = event.get("action")
        if action is None:
            continue  # condition-check events carry no action
        if not isinstance(action, dict):
            raise ScenarioError(path, f"events[{index}].action", "expected an object")
        for key in ("app", "function"):
            if not action.get(key) and not (key == "function" and action.get("function_name")):
                raise ScenarioError(path, f"events[{index}].action.{key}", "missing or empty")
    apps = data.get("apps") or []
    if not isinstance(apps, list):
        raise ScenarioError(path, "apps", f"expected a list, got {type(apps).__name__}")
    app_names = tuple(str(app.get("name") or app.get("class_name")) for app in apps if isinstance(app, dict))
    tags = _definition_value(data, "tags") or ()
    return Scenario(
        scenario_id=scenario_id,
        split=split,
        path=path.resolve(),
        duration=_number(path, "duration", _definition_value(data, "duration")),
        start_time=_number(path, "start_time", _definition_value(data, "start_time")),
        task=find_task(data),
        apps=app_names,
        has_events=bool(events),
        tags=tuple(str(tag) for tag in tags) if isinstance(tags, (list, tuple)) else (),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def load_scenario(path: Path, split: str) -> Scenario:
    """Read and validate one scenario file; raise :class:`ScenarioError` naming the field."""
    _check_split(path, split)
    return _parse(path, split)


# What an index entry holds besides the stat, with the JSON type each value must have. The
# path is not kept: it is the file just found, resolved again, so the run copies that file.
_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "scenario_id": str,
    "duration": (float, type(None)),
    "start_time": (float, type(None)),
    "task": str,
    "apps": list,
    "has_events": bool,
    "tags": list,
    "sha256": str,
}


def _stat_key(info: os.stat_result) -> list[int]:
    """Any rewrite, replacement or re-pointed symlink changes one of these."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def _entry(scenario: Scenario, info: os.stat_result) -> dict[str, Any]:
    return {**{name: getattr(scenario, name) for name in _ENTRY_TYPES}, "stat": _stat_key(info)}


def _from_entry(entry: dict[str, Any], file: Path, split: str) -> Scenario | None:
    """The scenario an entry describes, or None when the entry is damaged (the file is parsed again)."""
    if not all(name in entry and isinstance(entry[name], kind) for name, kind in _ENTRY_TYPES.items()):
        return None
    if not all(isinstance(item, str) for item in entry["apps"] + entry["tags"]):
        return None
    if names.problem(entry["scenario_id"], MAX_ID_LENGTH):
        return None  # the id names a folder: never trust one the parser would refuse
    values = {name: entry[name] for name in _ENTRY_TYPES}
    return Scenario(
        **{**values, "split": split, "path": file.resolve(), "apps": tuple(entry["apps"]), "tags": tuple(entry["tags"])}
    )


def shipped(scenarios: Sequence[Scenario], errors: Sequence[ScenarioError]) -> dict[str, Any]:
    """Discovery's result as plain data: the xdist controller discovers once and hands it to its
    workers through ``workerinput``, so no worker stats or reads a scenario file to collect."""
    return {
        "scenarios": [
            {
                **{name: getattr(scenario, name) for name in _ENTRY_TYPES},
                "split": scenario.split,
                "path": str(scenario.path),
                "apps": list(scenario.apps),
                "tags": list(scenario.tags),
            }
            for scenario in scenarios
        ],
        "errors": [[str(error.path), error.field, error.problem] for error in errors],
    }


def unshipped(data: dict[str, Any]) -> tuple[list[Scenario], list[ScenarioError]]:
    """What :func:`shipped` carried, back as scenarios and errors."""
    scenarios = [
        Scenario(
            **{
                **{name: entry[name] for name in _ENTRY_TYPES},
                "split": entry["split"],
                "path": Path(entry["path"]),
                "apps": tuple(entry["apps"]),
                "tags": tuple(entry["tags"]),
            }
        )
        for entry in data["scenarios"]
    ]
    return scenarios, [ScenarioError(Path(path), field, problem) for path, field, problem in data["errors"]]


class _Index:
    """Parsed metadata of scenario files in a JSON sidecar, keyed by absolute path and stat.

    A missing, corrupt or foreign index is ignored and rebuilt. Errors are never stored, so
    a fixed file is picked up. Writes are atomic with a per-process temporary, so xdist
    workers writing at once leave one whole index (the last writer's).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.old: dict[str, Any] = self._load(path) if path else {}
        self.new: dict[str, Any] = {}

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            document = read_json_file(path, max_bytes=_INDEX_MAX_BYTES)
        except JsonReadError:
            return {}
        valid = isinstance(document, dict) and document.get("version") == _INDEX_VERSION
        files = document.get("files") if valid else None
        return files if isinstance(files, dict) else {}

    def load(self, file: Path, split: str) -> Scenario:
        """The file's scenario: from the index when its stat matches, else parsed (and remembered)."""
        name = os.path.abspath(file)
        try:
            info = os.stat(file)
        except OSError:
            return _parse(file, split)  # the read says why
        entry = self.old.get(name)
        if isinstance(entry, dict) and entry.get("stat") == _stat_key(info):
            cached = _from_entry(entry, file, split)
            if cached is not None:
                self.new[name] = entry
                return cached
        scenario = _parse(file, split)
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) >= _SETTLED_NS:
            self.new[name] = _entry(scenario, info)
        return scenario

    def save(self, roots: Sequence[Path]) -> None:
        """Write this discovery's entries, plus those of files outside its roots that still exist,
        when anything changed: every run reads the whole index, so the files of folders since
        deleted (a test's temporary folder) do not stay in it."""
        if self.path is None:
            return
        prefixes = [os.path.abspath(root) for root in roots]
        files = {
            name: entry
            for name, entry in self.old.items()
            if not any(name == prefix or name.startswith(os.path.join(prefix, "")) for prefix in prefixes)
        }
        files.update(self.new)
        if files == self.old:
            return
        files = {name: entry for name, entry in files.items() if name in self.new or os.path.lexists(name)}
        try:
            # ASCII escapes: a task may hold a lone surrogate, which UTF-8 cannot encode.
            write_text(self.path, json.dumps({"version": _INDEX_VERSION, "files": files}, separators=(",", ":")))
        except (StoreError, OSError) as exc:  # the index only saves time: it never stops a discovery
            log.warning("scenario index not saved (%s); the next discovery parses the scenario files again", exc)


def _split_of(file: Path, root: Path) -> str:
    """``<root>/<split>/<id>.json`` gives ``split``; a file given directly uses its folder name."""
    if file == root:
        return file.parent.name or "scenarios"
    relative = file.relative_to(root)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return root.name if root.name in SPLITS else "scenarios"


def _scenario_files(root: Path) -> Iterable[Path]:
    """Every ``*.json`` under a folder outside hidden ones; a root that is no folder is itself the file."""
    if not root.is_dir():
        yield root
        return
    for file in sorted(root.rglob("*.json")):
        if any(part.startswith(".") for part in file.relative_to(root).parts):
            continue
        yield file


def discover(roots: Sequence[Path], index_path: Path | None = None) -> tuple[list[Scenario], list[ScenarioError]]:
    """All scenarios under ``roots`` in a stable order, and one error per unusable file.

    With ``index_path``, unchanged files are read from that index instead of parsed. Two
    files with the same scenario id are both reported: neither can own the id's output folder.
    """
    index = _Index(index_path)
    scenarios: list[Scenario] = []
    errors: list[ScenarioError] = []
    for root in roots:
        if not root.exists():
            errors.append(ScenarioError(root, "--gaia2-scenarios", "no such file or directory"))
            continue
        for file in _scenario_files(root):
            split = _split_of(file, root)
            try:
                _check_split(file, split)
                scenarios.append(index.load(file, split))
            except ScenarioError as exc:
                errors.append(exc)
    index.save(roots)
    refused = _aliases(scenarios)
    errors.extend(refused.values())
    unique = [s for s in scenarios if s.path not in refused]
    unique.sort(key=lambda s: (s.split, s.scenario_id))
    return unique, errors


def _aliases(scenarios: Sequence[Scenario]) -> dict[Path, ScenarioError]:
    """One error per file whose output folder another file would share on some system: the
    same id in any spelling of case (NTFS and APFS fold it), or a split folder spelled in
    two cases. Every file involved is refused: none of them can own the folder."""
    by_id: dict[str, list[Scenario]] = {}
    spellings: dict[str, set[str]] = {}
    for scenario in scenarios:
        by_id.setdefault(names.folder_key(scenario.scenario_id), []).append(scenario)
        spellings.setdefault(names.folder_key(scenario.split), set()).add(scenario.split)
    refused: dict[Path, ScenarioError] = {}
    for scenario in scenarios:
        split_names = spellings[names.folder_key(scenario.split)]
        if len(split_names) > 1:
            refused[scenario.path] = ScenarioError(
                scenario.path,
                "split (folder name)",
                f"{', '.join(map(repr, sorted(split_names)))} differ only in case: they would share one folder "
                "on Windows and macOS",
            )
    for group in by_id.values():
        if len(group) < 2:
            continue
        paths = ", ".join(str(s.path) for s in group)
        ids = sorted({s.scenario_id for s in group})
        what = (
            f"duplicate id {ids[0]!r}"
            if len(ids) == 1
            else (f"ids {', '.join(map(repr, ids))} differ only in case (one folder on Windows and macOS)")
        )
        for scenario in group:
            refused.setdefault(
                scenario.path,
                ScenarioError(scenario.path, "metadata.definition.scenario_id", f"{what} (also in: {paths})"),
            )
    return refused
