"""Writes Gaia2 scenarios in ARE's exported-trace JSON format, deterministically.

One builder for every scenario file the project makes: the shipped scenarios and test variants
(``scripts/scenarios/make_scenarios.py``), the ``many/search`` bulk set (``make_many.py``) and
the rehearsal pool (:mod:`pytest_gaia2.plan.rehearsal`). Identifiers come from a random generator
seeded with the scenario id, so writing a scenario again gives byte-identical files.

Format notes (ARE ``ExportedTrace``):
- top level: ``world_logs``, ``apps``, ``events``, ``completed_events``,
  ``version``, ``context``, ``augmentation``, ``metadata``;
- an event: ``class_name`` (``Event`` for USER/ENV, ``OracleEvent`` for
  AGENT), ``event_type``, ``event_time``, ``event_id``, ``dependencies``,
  ``event_relative_time``, ``action``; oracle events also carry
  ``event_time_comparator``;
- an action: ``action_id`` (``<AppClass>.<function>-<uuid>``), ``app`` (the
  app *instance* name, e.g. ``Chats``), ``function``, ``operation_type``,
  ``args`` (a list of ``{name, value, value_type}``, values stringified the
  way ARE's exporter does it: lists and dicts as JSON, ``None`` as null).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

TRACE_VERSION = "are_simulation_v1"

DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DISPLAY_FORMAT = "%A, %Y-%m-%d %H:%M:%S"

# App instance name -> ARE class name, as in the public Gaia2 exports.
APP_CLASSES = {
    "AgentUserInterface": "AgentUserInterface",
    "SystemApp": "SystemApp",
    "Contacts": "ContactsApp",
    "Calendar": "CalendarApp",
    "EmailClientV2": "EmailClientV2",
    "Chats": "MessagingAppV2",
    "Messages": "MessagingAppV2",
}


def ts(text: str) -> float:
    """'YYYY-MM-DD HH:MM:SS' (UTC) -> epoch float."""
    return datetime.strptime(text, DATETIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()


def display(epoch: float) -> str:
    """Epoch -> the weekday form ARE shows in calendar events."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime(DISPLAY_FORMAT)


def _arg(name: str, value: object) -> dict[str, Any]:
    """Stringify one argument the way ARE's JsonScenarioExporter does."""
    if value is None:
        return {"name": name, "value": None, "value_type": None}
    if isinstance(value, (list, dict)):
        return {"name": name, "value": json.dumps(value), "value_type": type(value).__name__}
    return {"name": name, "value": str(value), "value_type": type(value).__name__}


class ScenarioBuilder:
    """Collects apps and events for one scenario and renders the JSON dict."""

    def __init__(
        self,
        scenario_id: str,
        *,
        start_time: str,
        duration: float = 180.0,
        time_increment_in_seconds: int = 1,
        tags: list[str] | None = None,
        seed: int | None = None,
        op_case: str = "upper",
        context: str | None = None,
    ) -> None:
        self.scenario_id = scenario_id
        self.start_time = ts(start_time)
        self.duration = float(duration)
        self.time_increment = time_increment_in_seconds
        self.tags = tags or []
        self.seed = seed
        self.op_case = op_case
        self.context = context
        self._rng = random.Random(scenario_id)
        self.apps: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.completed_events: list[dict[str, Any]] = []
        self._offsets: dict[str, float] = {}

    # ------------------------------------------------------------------ ids
    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def hex_id(self) -> str:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4).hex

    # ----------------------------------------------------------------- apps
    def app(self, name: str, state: dict[str, Any], class_name: str | None = None) -> None:
        self.apps.append({"name": name, "class_name": class_name or APP_CLASSES.get(name, name), "app_state": state})

    def standard_apps(self) -> None:
        """The two apps every Gaia2 scenario carries."""
        self.app("AgentUserInterface", {"messages": []})
        self.app("SystemApp", {})

    # --------------------------------------------------------------- events
    def _op(self, op: str) -> str:
        return op.upper() if self.op_case == "upper" else op.lower()

    def _event(
        self,
        event_type: str,
        app: str,
        function: str,
        args: dict[str, Any],
        op: str,
        deps: list[str],
        rel: float,
    ) -> str:
        event_id = f"Event-{event_type}-{self.uuid()}"
        offset = max((self._offsets.get(d, 0.0) for d in deps), default=0.0) + rel
        self._offsets[event_id] = offset
        class_name = "OracleEvent" if event_type == "AGENT" else "Event"
        app_class = APP_CLASSES.get(app, app)
        event: dict[str, Any] = {
            "class_name": class_name,
            "event_type": event_type,
            "event_time": self.start_time + offset,
            "event_id": event_id,
            "dependencies": list(deps),
            "event_relative_time": float(rel),
            "action": {
                "action_id": f"{app_class}.{function}-{self.uuid()}",
                "app": app,
                "function": function,
                "operation_type": self._op(op),
                "args": [_arg(k, v) for k, v in args.items()],
            },
        }
        if class_name == "OracleEvent":
            event["event_time_comparator"] = None
        self.events.append(event)
        return event_id

    def user(self, content: str, deps: list[str] | None = None, rel: float = 0.0) -> str:
        """A USER message to the agent (the task, or a follow-up)."""
        return self._event(
            "USER", "AgentUserInterface", "send_message_to_agent", {"content": content}, "write", deps or [], rel
        )

    def env(self, app: str, function: str, args: dict[str, Any], deps: list[str], rel: float = 0.0) -> str:
        return self._event("ENV", app, function, args, "write", deps, rel)

    def oracle(
        self, app: str, function: str, args: dict[str, Any], deps: list[str], rel: float = 0.0, op: str = "write"
    ) -> str:
        return self._event("AGENT", app, function, args, op, deps, rel)

    def answer(self, content: str, deps: list[str], rel: float = 0.0) -> str:
        """The oracle's send_message_to_user (ends a turn)."""
        return self.oracle("AgentUserInterface", "send_message_to_user", {"content": content}, deps, rel)

    def completed_user_message(self, content: str) -> str:
        """A USER task recorded only in completed_events (ARE CompletedEvent)."""
        event_id = f"Event-USER-{self.uuid()}"
        self.completed_events.append(
            {
                "class_name": "CompletedEvent",
                "event_type": "USER",
                "event_time": self.start_time,
                "event_id": event_id,
                "dependencies": [],
                "event_relative_time": 0.0,
                "action": {
                    "action_id": f"AgentUserInterface.send_message_to_agent-{self.uuid()}",
                    "app": "AgentUserInterface",
                    "function": "send_message_to_agent",
                    "operation_type": self._op("write"),
                    "args": [_arg("content", content)],
                },
                "metadata": {
                    "return_value": self.hex_id(),
                    "return_value_type": "str",
                    "exception": None,
                    "exception_stack_trace": None,
                },
            }
        )
        return event_id

    # --------------------------------------------------------------- render
    def to_dict(self) -> dict[str, Any]:
        return {
            "world_logs": [],
            "apps": self.apps,
            "events": self.events,
            "completed_events": self.completed_events,
            "version": TRACE_VERSION,
            "context": self.context,
            "augmentation": None,
            "metadata": {
                "definition": {
                    "scenario_id": self.scenario_id,
                    "seed": self.seed,
                    "duration": self.duration,
                    "time_increment_in_seconds": self.time_increment,
                    "start_time": self.start_time,
                    "run_number": None,
                    "hints": [],
                    "config": None,
                    "has_a2a_augmentation": False,
                    "has_tool_augmentation": False,
                    "has_env_events_augmentation": False,
                    "has_exception": False,
                    "exception_type": None,
                    "exception_message": None,
                    "tags": self.tags,
                    "hf_metadata": None,
                },
                "simulation": None,
                "annotation": None,
                "execution": None,
                "runner_config": None,
            },
        }

    def write(self, path: Path) -> Path:
        write_json(path, self.to_dict())
        return path


def dumps(data: object) -> str:
    """A scenario file's text: indented JSON, non-ASCII kept, one final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(data), encoding="utf-8")


# ---------------------------------------------------------------------------
# App-state helpers (shapes follow the gaia2-cli app state files)
# ---------------------------------------------------------------------------


def contact(
    contact_id: str,
    first_name: str,
    last_name: str,
    *,
    is_user: bool = False,
    gender: str = "Unknown",
    age: int | None = None,
    nationality: str | None = None,
    city_living: str | None = None,
    country: str | None = None,
    status: str = "Unknown",
    job: str | None = None,
    description: str | None = None,
    phone: str | None = None,
    email: str | None = None,
    address: str | None = None,
) -> dict[str, Any]:
    if is_user and not address:
        # gaia2-cli builds UserDetails(first_name, last_name, address: str) from
        # this contact; a null address crashes its daemon at setup.
        raise ValueError("the is_user contact needs an address")
    return {
        "contact_id": contact_id,
        "first_name": first_name,
        "last_name": last_name,
        "is_user": is_user,
        "gender": gender,
        "age": age,
        "nationality": nationality,
        "city_living": city_living,
        "country": country,
        "status": status,
        "job": job,
        "description": description,
        "phone": phone,
        "email": email,
        "address": address,
    }


def contacts_state(*contacts: dict[str, Any]) -> dict[str, Any]:
    return {"contacts": {c["contact_id"]: c for c in contacts}, "view_limit": 10}


def calendar_event(
    event_id: str,
    title: str,
    start: str,
    end: str,
    *,
    tag: str | None = None,
    description: str | None = None,
    location: str | None = None,
    attendees: list[str] | None = None,
) -> dict[str, Any]:
    s, e = ts(start), ts(end)
    return {
        "event_id": event_id,
        "title": title,
        "start_datetime": s,
        "end_datetime": e,
        "tag": tag,
        "description": description,
        "location": location,
        "attendees": attendees or [],
        "start_strftime": display(s),
        "end_strftime": display(e),
    }


def calendar_state(*events: dict[str, Any]) -> dict[str, Any]:
    return {"events": {e["event_id"]: e for e in events}}


def email(
    email_id: str,
    sender: str,
    recipients: list[str],
    subject: str,
    content: str,
    when: str,
    *,
    is_read: bool = True,
    cc: list[str] | None = None,
    parent_id: str | None = None,
) -> dict[str, Any]:
    return {
        "sender": sender,
        "recipients": recipients,
        "subject": subject,
        "content": content,
        "email_id": email_id,
        "parent_id": parent_id,
        "cc": cc or [],
        "attachments": {},
        "timestamp": ts(when),
        "is_read": is_read,
    }


def email_state(
    user_email: str, inbox: Sequence[dict[str, Any]] = (), sent: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    def folder(name: str, emails: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "folder_name": name,
            "emails": sorted(emails, key=lambda e: e["timestamp"], reverse=True),
        }

    return {
        "user_email": user_email,
        "view_limit": 5,
        "folders": {
            "INBOX": folder("INBOX", list(inbox)),
            "SENT": folder("SENT", list(sent)),
            "DRAFT": folder("DRAFT", []),
            "TRASH": folder("TRASH", []),
        },
    }


def message(sender_id: str, message_id: str, when: str, content: str) -> dict[str, Any]:
    return {"sender_id": sender_id, "message_id": message_id, "timestamp": ts(when), "content": content}


def conversation(conv_id: str, title: str, participants: list[str], messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "conversation_id": conv_id,
        "title": title,
        "participant_ids": participants,
        "last_updated": max((m["timestamp"] for m in messages), default=0.0),
        "messages": messages,
    }


def messaging_state(
    current_user_id: str,
    people: dict[str, str],
    conversations: list[dict[str, Any]],
    *,
    mode: str,
) -> dict[str, Any]:
    """``people`` maps user id -> display name (the current user included).

    ``mode`` is ``PHONE_NUMBER`` for Chats (ids are phone numbers) and
    ``NAME`` for Messages.
    """
    return {
        "current_user_id": current_user_id,
        "name_to_id": {name: uid for uid, name in people.items() if uid != current_user_id},
        "id_to_name": dict(people),
        "conversations": {c["conversation_id"]: c for c in conversations},
        "conversation_view_limit": 5,
        "messages_view_limit": 10,
        "mode": mode,
    }
