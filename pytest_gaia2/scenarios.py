"""Finding scenario files and reading the little metadata a test item needs.

Validation happens here, at collection, so a broken file is reported once with its path
and field, before any container starts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

SPLITS: tuple[str, ...] = ("execution", "search", "adaptability", "time", "ambiguity")

_UNIVERSE = re.compile(r"universe_(\d+)")
_MARKER_SAFE = re.compile(r"[^A-Za-z0-9_]")


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

    @property
    def universe(self) -> str | None:
        """``universe_21`` for ``scenario_universe_21_5bftlu``; Gaia2 ids carry their universe."""
        match = _UNIVERSE.search(self.scenario_id)
        return f"universe_{match.group(1)}" if match else None

    @property
    def test_id(self) -> str:
        return f"{self.split}/{self.scenario_id}"

    @property
    def marker(self) -> str:
        """The split marker, ``search_split``; any directory name becomes a valid marker name."""
        return f"{_MARKER_SAFE.sub('_', self.split)}_split"


def _definition_value(data: dict[str, Any], key: str) -> Any:
    definition = (data.get("metadata") or {}).get("definition") or {}
    if isinstance(definition, dict) and definition.get(key) is not None:
        return definition.get(key)
    return data.get(key)


def _arg_value(args: Any, name: str) -> Any:
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
        for event in data.get(key) or []:
            if not isinstance(event, dict):
                continue
            action = event.get("action") or {}
            function = action.get("function") or action.get("function_name")
            if function == "send_message_to_agent":
                content = _arg_value(action.get("args"), "content")
                if content:
                    return str(content)
    return ""


def _number(path: Path, name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"metadata.definition.{name}", f"expected a number, got {value!r}")
    return float(value)


def load_scenario(path: Path, split: str) -> Scenario:
    """Read and validate one scenario file; raise :class:`ScenarioError` naming the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(path, "file", f"cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(path, "file", f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ScenarioError(path, "file", f"expected a JSON object, got {type(data).__name__}")
    scenario_id = _definition_value(data, "scenario_id")
    if not isinstance(scenario_id, str) or not scenario_id.strip():
        raise ScenarioError(path, "metadata.definition.scenario_id", "missing or empty")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", scenario_id):
        raise ScenarioError(
            path, "metadata.definition.scenario_id",
            f"{scenario_id!r} may only hold letters, digits, '_', '.' and '-'",
        )
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
    app_names = tuple(
        str(app.get("name") or app.get("class_name")) for app in apps if isinstance(app, dict)
    )
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
    )


def _split_of(file: Path, root: Path) -> str:
    """``<root>/<split>/<id>.json`` gives ``split``; a file given directly uses its folder name."""
    if file == root:
        return file.parent.name or "scenarios"
    relative = file.relative_to(root)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return root.name if root.name in SPLITS else "scenarios"


def _scenario_files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    for file in sorted(root.rglob("*.json")):
        if any(part.startswith(".") for part in file.relative_to(root).parts):
            continue
        yield file


def discover(roots: Sequence[Path]) -> tuple[list[Scenario], list[ScenarioError]]:
    """All scenarios under ``roots`` in a stable order, and one error per unusable file.

    Two files with the same scenario id are both reported: neither can own the id's
    output folder.
    """
    scenarios: list[Scenario] = []
    errors: list[ScenarioError] = []
    for root in roots:
        if not root.exists():
            errors.append(ScenarioError(root, "--gaia2-scenarios", "no such file or directory"))
            continue
        for file in _scenario_files(root):
            try:
                scenarios.append(load_scenario(file, _split_of(file, root)))
            except ScenarioError as exc:
                errors.append(exc)
    by_id: dict[str, list[Scenario]] = {}
    for scenario in scenarios:
        by_id.setdefault(scenario.scenario_id, []).append(scenario)
    duplicated = {sid for sid, group in by_id.items() if len(group) > 1}
    for sid in sorted(duplicated):
        paths = ", ".join(str(s.path) for s in by_id[sid])
        for scenario in by_id[sid]:
            errors.append(ScenarioError(
                scenario.path, "metadata.definition.scenario_id",
                f"duplicate id {sid!r} (also in: {paths})",
            ))
    unique = [s for s in scenarios if s.scenario_id not in duplicated]
    unique.sort(key=lambda s: (s.split, s.scenario_id))
    return unique, errors
