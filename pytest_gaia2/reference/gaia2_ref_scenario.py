"""Gaia2 scenario model shared by the reference daemon, agent and judge.

Runs inside the reference image (standard library only, Python >= 3.11) and is
imported as a top-level module, so every program can live flat in ``/opt``.
It parses the exported-trace JSON once into plain named tuples and answers the
questions the other programs ask: which events belong to which turn, which
oracle events a turn expects, which user messages open the next turn.
"""

from __future__ import annotations

import json
import re
from collections import deque
from datetime import datetime, timezone
from typing import Any, NamedTuple

AUI = "AgentUserInterface"
SMU = "send_message_to_user"
SMA = "send_message_to_agent"

# Scenario app instance names (and CLI app names) mapped to the class names the
# oracle uses, so agent and oracle tools compare equal whatever name each side
# logged.
APP_ALIASES: dict[str, str] = {
    "Contacts": "ContactsApp",
    "EmailClientV2": "EmailClientApp",
    "Emails": "EmailClientApp",
    "Chats": "MessagingAppV2",
    "Messages": "MessagingAppV2",
    "Calendar": "CalendarApp",
    "RentAFlat": "ApartmentListingApp",
    "Shopping": "ShoppingApp",
    "Cabs": "CabApp",
    "Files": "SandboxLocalFileSystem",
}

_OPTIONAL_RE = re.compile(r"^Optional\[(.+)\]$")
_PLACEHOLDER_RE = re.compile(r"^\{\{(.*?)\}\}$")
_SIM_T_FORMAT = "%Y-%m-%d %H:%M:%S"


def parse_value(value: Any, value_type: str | None) -> Any:
    """Turn a scenario arg value into the typed value its ``value_type`` names.

    Placeholders (``{{...}}``) and unparseable values are kept as they are,
    because the judge and the agent resolve or report them later.
    """
    if value is None:
        return None
    if isinstance(value, str) and value.strip().startswith("{{"):
        return value
    vtype = (value_type or "").strip()
    if not vtype:
        if isinstance(value, str) and value[:1] in ("[", "{"):
            vtype = "list" if value.startswith("[") else "dict"
        else:
            return value
    match = _OPTIONAL_RE.match(vtype)
    base = re.sub(r"\[.*\]$", "", match.group(1) if match else vtype).strip().lower()
    try:
        if base == "int":
            return int(value)
        if base == "float":
            return float(value)
        if base == "bool":
            return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1", "t", "y", "yes")
        if base in ("list", "dict") and isinstance(value, str):
            return json.loads(value)
    except (ValueError, TypeError, json.JSONDecodeError):
        return value
    return value


def parse_args(raw: Any) -> dict[str, Any]:
    """Flatten an action's ``args`` (list of ``{name, value, value_type}`` or a dict)."""
    if isinstance(raw, dict):
        return dict(raw)
    result: dict[str, Any] = {}
    for arg in raw or []:
        if isinstance(arg, dict) and "name" in arg:
            result[str(arg["name"])] = parse_value(arg.get("value"), arg.get("value_type"))
    return result


def placeholder_ref(value: Any) -> tuple[str, list[str]] | None:
    """Split ``{{event_id.key}}`` into ``(event_id, [key])``; None if not a placeholder."""
    if not isinstance(value, str):
        return None
    match = _PLACEHOLDER_RE.match(value.strip())
    if not match:
        return None
    parts = match.group(1).split(".")
    return parts[0], parts[1:]


def resolve_placeholders(args: dict[str, Any], returns: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Replace placeholders with known return values; also list unresolved event ids."""
    resolved: dict[str, Any] = {}
    missing: list[str] = []
    for name, value in args.items():
        ref = placeholder_ref(value)
        if ref is None:
            resolved[name] = value
            continue
        event_id, keys = ref
        if event_id not in returns:
            missing.append(event_id)
            resolved[name] = value
            continue
        current = returns[event_id]
        for key in keys:
            if isinstance(current, dict) and key in current:
                current = current[key]
            else:
                current = value
                break
        resolved[name] = current
    return resolved, missing


def sim_time_to_str(epoch: float) -> str:
    """Format a sim epoch the way ``faketime.rc`` and ``sim_t`` hold it (UTC, 1 s)."""
    return datetime.fromtimestamp(int(epoch), tz=timezone.utc).strftime(_SIM_T_FORMAT)


def sim_str_to_time(text: str) -> float | None:
    """Parse a ``faketime.rc``/``sim_t`` string (UTC); None when empty or malformed."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return datetime.strptime(text, _SIM_T_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def line_time(line: dict[str, Any]) -> float:
    """Time of an events.jsonl line: its ``sim_t`` when present, else wall ``t``."""
    parsed = sim_str_to_time(str(line.get("sim_t") or ""))
    if parsed is not None:
        return parsed
    try:
        return float(line.get("t") or 0.0)
    except (TypeError, ValueError):
        return 0.0


def line_kind(line: dict[str, Any]) -> str:
    """Classify an events.jsonl line as ENV, USER or AGENT by its event_id prefix."""
    event_id = str(line.get("event_id") or "")
    if event_id.startswith("Event-ENV-"):
        return "ENV"
    if event_id.startswith("Event-USER-"):
        return "USER"
    return "AGENT"


def is_boundary_line(line: dict[str, Any]) -> bool:
    """True for a non-ENV ``AgentUserInterface.send_message_to_user`` line (a turn end)."""
    return line.get("app") == AUI and line.get("fn") == SMU and line_kind(line) != "ENV"


class ScenarioEvent(NamedTuple):
    """One entry of the scenario's ``events`` list, with typed args.

    A named tuple, not a dataclass: importing ``dataclasses`` (and with it ``inspect``) cost
    every program of the image more CPU at start than parsing the scenario."""

    event_id: str
    event_type: str
    relative_time: float
    dependencies: list[str]
    app: str
    fn: str
    write: bool
    args: dict[str, Any]
    successors: list[str]

    @property
    def is_oracle_smu(self) -> bool:
        return self.event_type == "AGENT" and self.app == AUI and self.fn == SMU

    @property
    def is_user_message(self) -> bool:
        return self.event_type != "AGENT" and self.app == AUI and self.fn == SMA


class Scenario:
    """A parsed Gaia2 scenario with its turn structure precomputed."""

    def __init__(self, data: dict[str, Any]) -> None:
        definition = (data.get("metadata") or {}).get("definition") or {}
        self.scenario_id: str = str(definition.get("scenario_id") or "unknown")
        self.start_time: float = float(definition.get("start_time") or data.get("start_time") or 0.0)
        self.time_increment: float = float(
            definition.get("time_increment_in_seconds") or data.get("time_increment_in_seconds") or 1.0
        )
        self.app_classes: dict[str, str] = {}
        self.apps: list[dict[str, Any]] = [a for a in data.get("apps") or [] if isinstance(a, dict)]
        for app in self.apps:
            name = str(app.get("name") or "")
            if name:
                self.app_classes[name] = str(app.get("class_name") or name)
        self.events: list[ScenarioEvent] = []
        self.by_id: dict[str, ScenarioEvent] = {}
        for raw in data.get("events") or []:
            event = self._parse_event(raw)
            if event is not None and event.event_id not in self.by_id:
                self.events.append(event)
                self.by_id[event.event_id] = event
        for event in self.events:
            for dep in event.dependencies:
                if dep in self.by_id:
                    self.by_id[dep].successors.append(event.event_id)
        self.turn_of: dict[str, int] = self._compute_turns()
        self.nb_turns: int = (max(self.turn_of.values()) + 1) if self.turn_of else 1
        self.task_event: ScenarioEvent | None = self._find_task_event()

    @classmethod
    def load(cls, path: str) -> Scenario:
        with open(path, encoding="utf-8") as handle:
            return cls(json.load(handle))

    def _parse_event(self, raw: Any) -> ScenarioEvent | None:
        if not isinstance(raw, dict) or not raw.get("event_id"):
            return None
        action = raw.get("action") or {}
        app = str(action.get("app") or action.get("class_name") or "")
        return ScenarioEvent(
            event_id=str(raw["event_id"]),
            event_type=str(raw.get("event_type") or "").upper(),
            relative_time=float(raw.get("event_relative_time") or 0.0),
            dependencies=[str(d) for d in raw.get("dependencies") or []],
            app=app,
            fn=str(action.get("function") or action.get("function_name") or ""),
            write=str(action.get("operation_type") or "read").lower() == "write",
            args=parse_args(action.get("args")),
            successors=[],
        )

    def _compute_turns(self) -> dict[str, int]:
        """Turn of an event = number of oracle send_message_to_user ancestors."""
        memo: dict[str, int] = {}

        def turn(event_id: str, stack: frozenset[str]) -> int:
            if event_id in memo:
                return memo[event_id]
            event = self.by_id[event_id]
            value = 0
            for dep in event.dependencies:
                parent = self.by_id.get(dep)
                if parent is None or dep in stack:
                    continue
                value = max(value, turn(dep, stack | {event_id}) + (1 if parent.is_oracle_smu else 0))
            memo[event_id] = value
            return value

        for event in self.events:
            turn(event.event_id, frozenset())
        return memo

    def _find_task_event(self) -> ScenarioEvent | None:
        candidates = [e for e in self.events if e.event_type == "USER" and e.fn == SMA]
        for event in candidates:
            if not event.dependencies:
                return event
        return candidates[0] if candidates else None

    @property
    def task(self) -> str | None:
        return str(self.task_event.args.get("content") or "") if self.task_event else None

    def class_of(self, app: str) -> str:
        """Canonical class for an app instance, CLI or class name."""
        cls = self.app_classes.get(app, app)
        return APP_ALIASES.get(cls, cls)

    def tool_of(self, app: str, fn: str) -> str:
        return f"{self.class_of(app)}__{fn}"

    def oracle_events(self) -> list[ScenarioEvent]:
        return [e for e in self.events if e.event_type == "AGENT"]

    def oracle_turn(self, turn: int) -> list[ScenarioEvent]:
        """Oracle (AGENT) events of one turn in stable topological order."""
        members = [e for e in self.oracle_events() if self.turn_of.get(e.event_id) == turn]
        ids = {e.event_id for e in members}
        indegree = {e.event_id: sum(1 for d in e.dependencies if d in ids) for e in members}
        queue = deque(e.event_id for e in members if indegree[e.event_id] == 0)
        ordered: list[ScenarioEvent] = []
        while queue:
            current = self.by_id[queue.popleft()]
            ordered.append(current)
            for succ in current.successors:
                if succ in indegree:
                    indegree[succ] -= 1
                    if indegree[succ] == 0:
                        queue.append(succ)
        if len(ordered) != len(members):
            raise ValueError(f"oracle events of turn {turn} contain a dependency cycle")
        return ordered

    def turn_end(self, turn: int) -> ScenarioEvent | None:
        """The oracle send_message_to_user that ends ``turn``, if any."""
        for event in self.oracle_turn(turn):
            if event.is_oracle_smu:
                return event
        return None

    def follow_ups(self, turn: int) -> list[ScenarioEvent]:
        """Non-AGENT successors of turn ``turn-1``'s end: they open ``turn``."""
        end = self.turn_end(turn - 1) if turn > 0 else None
        if end is None:
            return []
        return [self.by_id[s] for s in end.successors if self.by_id[s].event_type != "AGENT"]

    def user_details(self) -> dict[str, str]:
        """Name and address of the contact flagged ``is_user`` (empty strings if none)."""
        for app in self.apps:
            cls = str(app.get("class_name") or app.get("name") or "")
            if cls not in ("ContactsApp", "Contacts", "InternalContacts"):
                continue
            contacts = (app.get("app_state") or {}).get("contacts") or {}
            values = contacts.values() if isinstance(contacts, dict) else contacts
            for contact in values:
                if isinstance(contact, dict) and contact.get("is_user"):
                    return {
                        "first_name": str(contact.get("first_name") or ""),
                        "last_name": str(contact.get("last_name") or ""),
                        "address": str(contact.get("address") or ""),
                    }
        return {"first_name": "", "last_name": "", "address": ""}
