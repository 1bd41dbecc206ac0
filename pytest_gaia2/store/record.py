"""The one record of a scenario attempt, and its JSON form.

result.json, results.jsonl, summary.json, the terminal summary, JUnit properties and Allure
are all written from :class:`AttemptRecord`, so they cannot disagree. The first keys carry
gaia2-runner's names and meanings (contract section 5.3), so tools written for its output
read ours; the rest is pytest-gaia2's: identity, provenance and what the harness saw.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, get_args

Outcome = Literal["passed", "failed", "error"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
MAX_COUNT = 10**9
"""The largest count, repeat, attempt or number of seconds or dollars a record may hold."""
TASK_MAX_CHARS = 64 * 1024
"""Characters of the scenario's task a record keeps: a results.jsonl line stays far below what
its readers accept, whatever size of scenario file it names."""

RUNNER_KEYS = (
    "scenario_id",
    "success",
    "reward",
    "num_agent_events",
    "num_oracle_events",
    "agent_response",
    "judged_in_container",
    "timed_out",
    "timeout_seconds",
    "daemon_status",
    "scenario_file",
    "failure_reasons",
    "error",
)
"""Keys gaia2-runner writes in result.json, in its order (contract 5.3)."""

PROVENANCE_KEYS = (
    "run_id",
    "session_id",
    "plugin_version",
    "image",
    "image_id",
    "provider",
    "model",
    "judge_provider",
    "judge_model",
    "base_url_host",
    "judge_base_url_host",
    "env_digest",
    "shard",
)
"""What made a verdict: the same in every record of one session, compared on resume."""


class RecordError(ValueError):
    """A record that is no JSON object, or has a field of the wrong type or out of range
    (``field`` names it)."""

    def __init__(self, name: str | None, message: str) -> None:
        super().__init__(f"field {name!r}: {message}" if name else message)
        self.field = name


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "str": ("a string", lambda v: isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "int": ("an integer", _integer),
    "float": ("a finite number", _number),
    "dict[str, Any]": ("an object", lambda v: isinstance(v, dict)),
    "list[str]": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v)),
    "list[dict[str, Any]]": (
        "a list of objects",
        lambda v: isinstance(v, list) and all(isinstance(i, dict) for i in v),
    ),
    "Outcome": (f"one of {', '.join(OUTCOMES)}", lambda v: v in OUTCOMES),
}
"""Each field annotation's JSON form: what a person is told, and the check."""
_RANGES: dict[str, tuple[float, float]] = {
    **dict.fromkeys(("repeat", "repeats", "attempt"), (1, MAX_COUNT)),
    **dict.fromkeys(
        ("num_agent_events", "num_oracle_events", "timeout_seconds", "wall_time_s", "cost_usd"), (0, MAX_COUNT)
    ),
    **dict.fromkeys(("adapter_port", "host_port"), (0, 65535)),
    "universe_position": (0, MAX_COUNT),
}
_NULL_IS_DEFAULT = {
    "num_agent_events",
    "agent_response",
    "judged_in_container",
    "timed_out",
    "timeout_seconds",
    "scenario_file",
    "failure_reasons",
    "num_oracle_events",
}
"""gaia2-runner's keys that its files may hold as null: they read as the default."""


USAGE_COUNT_MAX = 10**18
"""A usage count of a record (a sum over every call of an attempt) past this is not believed."""
USAGE_USD_MAX = 1e12
USAGE_COUNTS = (
    "calls",
    "usage_calls",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "reported_cost_calls",
    "other_models",
)
"""The counts of a record's ``usage`` (its cost room sums them per attempt)."""


def _usage_problem(usage: dict[str, Any]) -> str | None:
    """Why a record's ``usage`` object cannot be what the harness wrote (a count that is not an
    integer in range, a cost that is not a finite amount, names that are not strings), or None.
    Every reader of records (report, compare, plan, list, merge, export) adds these numbers."""
    for key in USAGE_COUNTS:
        value = usage.get(key, 0)
        if not _integer(value) or not 0 <= value <= USAGE_COUNT_MAX:
            return f"usage.{key} is {ascii(value)[:40]}, not a count from 0 to {USAGE_COUNT_MAX:.0e}"
    cost = usage.get("reported_cost_usd", 0.0)
    if not _number(cost) or not 0 <= cost <= USAGE_USD_MAX:
        return f"usage.reported_cost_usd is {ascii(cost)[:40]}, not an amount from 0 to {USAGE_USD_MAX:.0e}"
    for key in ("models", "refused"):
        names = usage.get(key, [])
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            return f"usage.{key} is not a list of strings"
    return None


def checked(name: str, annotation: str, value: Any) -> Any:
    """``value`` if it fits the field's annotation and range, else a :class:`RecordError`."""
    kind, optional = annotation.removesuffix(" | None"), annotation.endswith(" | None")
    if value is None and optional:
        return None
    described, fits = _TYPES[kind]
    if not fits(value):
        raise RecordError(name, f"expected {described}{' or null' if optional else ''}, got {ascii(value)[:60]}")
    low, high = _RANGES.get(name, (-math.inf, math.inf))
    if name in _RANGES and not low <= value <= high:
        raise RecordError(name, f"{value!r} is outside {low:g}..{high:g}")
    if name == "usage" and (problem := _usage_problem(value)) is not None:
        raise RecordError(name, problem)
    return value


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt at one scenario (one repeat), however it ended."""

    # gaia2-runner's keys
    scenario_id: str
    success: bool | None
    reward: float | None
    num_agent_events: int
    agent_response: str
    judged_in_container: bool
    timed_out: bool
    timeout_seconds: float
    daemon_status: dict[str, Any] | None
    scenario_file: str
    failure_reasons: list[str]
    error: str | None
    num_oracle_events: int = 0
    # identity and outcome
    split: str = ""
    universe: str | None = None
    universe_position: int | None = None
    """With --gaia2-sequence: the scenario's place in its chain, from 0."""
    repeat: int = 1
    repeats: int = 1
    attempt: int = 1
    outcome: Outcome = "error"
    error_category: str | None = None
    reused: bool = False
    folder: str = ""
    scenario_sha256: str | None = None
    apps: list[str] | None = None
    """The scenario's apps, from its file as planned; None in records of versions that did not keep them."""
    task: str | None = None
    """The user's task (the first message to the agent) from the scenario file, masked and cut to
    :data:`TASK_MAX_CHARS`; None in records of versions that did not keep it."""
    # provenance (the session's, see PROVENANCE_KEYS)
    run_id: str = ""
    session_id: str = ""
    plugin_version: str = ""
    image: str | None = None
    image_id: str | None = None
    provider: str | None = None
    model: str | None = None
    judge_provider: str | None = None
    judge_model: str | None = None
    base_url_host: str | None = None
    judge_base_url_host: str | None = None
    env_digest: str | None = None
    shard: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_time_s: float | None = None
    # what the harness saw
    container: str | None = None
    worker: str | None = None
    engine: str | None = None
    adapter_port: int | None = None
    host_port: int | None = None
    verdict_sources: dict[str, Any] | None = None
    skipped_files: list[dict[str, Any]] = field(default_factory=list)
    # what it cost (measured by the model gateway, else from the attempt's trace.jsonl, and the prices)
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None
    cost_source: str | None = None
    wire: dict[str, Any] | None = None
    """With the model gateway on: its counts of the attempt's calls and the trace's cross-check."""

    @property
    def key(self) -> str:
        """``<split>/<scenario_id>``, with ``/run_<k>`` when repeated: the scenario's
        identity in a run, one results.jsonl line each."""
        return scenario_key(self.split, self.scenario_id, self.repeat, self.repeats)

    @property
    def message(self) -> str:
        """What a person reads first: the judge's reason, the error, or the pass."""
        if self.outcome == "failed":
            return "; ".join(self.failure_reasons) or "judge rejected the run"
        if self.outcome == "error":
            return self.error or "error"
        return "judge: success"

    def to_json(self) -> dict[str, Any]:
        """gaia2-runner's keys first, in its order, then ours."""
        data = asdict(self)
        ordered = {key: data.pop(key) for key in RUNNER_KEYS}
        return {**ordered, **data}

    @classmethod
    def from_json(cls, data: object) -> AttemptRecord:
        """A record read back (result.json, results.jsonl), every field type- and range-checked
        (a :class:`RecordError` names the first bad one); unknown keys are ignored and missing
        ones take their defaults, so files of earlier versions still read."""
        if not isinstance(data, Mapping):
            raise RecordError(None, f"expected a JSON object, got {type(data).__name__}")
        values: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name not in data or (data[spec.name] is None and spec.name in _NULL_IS_DEFAULT):
                continue
            values[spec.name] = checked(spec.name, str(spec.type), data[spec.name])
        if values.setdefault("scenario_id", "unknown") == "":
            raise RecordError("scenario_id", "must not be empty")
        for key in RUNNER_KEYS:
            values.setdefault(key, None)
        defaults = {
            "num_agent_events": 0,
            "agent_response": "",
            "judged_in_container": False,
            "timed_out": False,
            "timeout_seconds": 0.0,
            "scenario_file": "",
            "failure_reasons": [],
        }
        values.update({key: default for key, default in defaults.items() if values[key] is None})
        if "repeat" not in data and _integer(data.get("run")):  # files of version 0.1
            values["repeat"] = checked("run", "int", data["run"])
        if "outcome" not in data:
            values["outcome"] = outcome_of(values.get("success"))
        return cls(**values)

    def reused_by(self, session_id: str) -> AttemptRecord:
        """The record as a later session reports it: the same verdict, marked reused."""
        return replace(self, reused=self.session_id != session_id)

    def made_from(self, scenario_sha256: str | None) -> bool:
        """Whether the record may stand for the scenario file of hash ``scenario_sha256``: yes
        unless both hashes are known and differ (the file changed since, so a resume runs it again)."""
        return not (self.scenario_sha256 and scenario_sha256 and self.scenario_sha256 != scenario_sha256)


_ANNOTATIONS = {spec.name: str(spec.type) for spec in fields(AttemptRecord)}


def verdict_of(data: object) -> tuple[tuple[str, str, int], str]:
    """A record's (split, scenario id, repeat) and outcome from its JSON form, each checked and
    defaulted as :meth:`AttemptRecord.from_json` does (a :class:`RecordError` names a bad one);
    the other fields are left unread. What a comparison keeps of a record, at a fraction of the
    whole record's cost in time and memory (split and outcome are interned)."""
    if not isinstance(data, Mapping):
        raise RecordError(None, f"expected a JSON object, got {type(data).__name__}")

    def kept(name: str, default: object) -> Any:
        return checked(name, _ANNOTATIONS[name], data[name]) if name in data else default

    scenario_id = kept("scenario_id", "unknown")
    if scenario_id == "":
        raise RecordError("scenario_id", "must not be empty")
    legacy_run = checked("run", "int", data["run"]) if "repeat" not in data and _integer(data.get("run")) else 1
    outcome = kept("outcome", None) or outcome_of(kept("success", None))
    return (sys.intern(kept("split", "")), scenario_id, kept("repeat", legacy_run)), sys.intern(outcome)


def kept_task(task: str) -> str:
    """A scenario's task as a record keeps it: cut to :data:`TASK_MAX_CHARS`."""
    return task if len(task) <= TASK_MAX_CHARS else task[: TASK_MAX_CHARS - 1] + "…"


def outcome_of(success: bool | None) -> Outcome:
    return "passed" if success is True else "failed" if success is False else "error"


def scenario_key(split: str, scenario_id: str, repeat: int, repeats: int) -> str:
    """The one spelling of a planned item's identity: test ids, records, not-run lists."""
    base = f"{split}/{scenario_id}"
    return f"{base}/run_{repeat}" if repeats > 1 else base


def is_judged(record: AttemptRecord | None) -> bool:
    """A judge's verdict (pass or fail): final within a run folder, never re-run."""
    return record is not None and record.success in (True, False)


def reusable(record: AttemptRecord | None, scenario_sha256: str | None) -> bool:
    """Whether a stored record is the item's final verdict: a judgment (pass or fail) is never
    re-run, unless both hashes are known and the scenario file changed since; an error is."""
    return record is not None and is_judged(record) and record.made_from(scenario_sha256)


# Error categories: what happened, and where to look. docs/reference/categories.md and the
# Allure categories are generated from this one table, so they cannot disagree.
CATEGORIES: dict[str, tuple[str, str]] = {
    "invalid_scenario": (
        "the scenario file cannot be run (bad JSON, missing field, duplicate id)",
        "the file and field named in the message",
    ),
    "container_start": (
        "the engine could not create or start the container",
        "the message (engine error), `docker logs` is empty",
    ),
    "container_exited": (
        "the container's main process exited before a verdict",
        "exit code and last log lines in the message; container.log",
    ),
    "health_timeout": ("the adapter never reported connected on /health", "container.log, entrypoint.log"),
    "port_unreachable": (
        "the adapter answers inside the container but not through the published port",
        "network mode, published port and engine in the message",
    ),
    "status_unreachable": (
        "/status stopped answering and no daemon_status.json was found",
        "container.log, entrypoint.log, eventd.log",
    ),
    "daemon_error": ("the in-container daemon ended with status error", "eventd.log, daemon_status.json"),
    "no_judgment": ("the daemon ended without a judgment", "daemon_status.json, eventd.log"),
    "timeout": ("no terminal status before the scenario timeout (no declared duration)", "eventd.log, events.jsonl"),
    "interrupted": (
        "the run was stopped before a verdict: Ctrl-C, SIGTERM, or pytest-timeout's hard bound",
        "what stopped it in the message; container.log, eventd.log",
    ),
    "verdict_conflict": (
        "the judge's record does not agree with itself or with /status: a pass needs "
        "daemon_status.json terminal with success and the last line of "
        "daemon_judgments.jsonl saying success too; /status claiming any other verdict "
        "than daemon_status.json is a conflict as well",
        "each source's verdict in the message and in result.json's verdict_sources",
    ),
    "budget_cap": (
        "the run's spend passed --gaia2-budget-cap while the scenario was running",
        "the summary's spend; the scenario's files are kept as far as it got",
    ),
    "scenario_cap": (
        "with the model gateway on, the scenario's model calls reached --gaia2-scenario-cap (USD) or "
        "--gaia2-scenario-token-cap (tokens): stopped at once and not retried (a runaway scenario)",
        "wire.jsonl (every call, the refused one last), trace.jsonl",
    ),
    "gateway_error": (
        "the run's model gateway did not answer when the attempt asked for its token",
        "the message; the run's first lines say where the gateway listens",
    ),
    "idle_timeout": (
        "no new daemon event (status, turn, event count) for --gaia2-idle-timeout seconds: the agent "
        "stopped acting, its model stalled, or it waited for an event scheduled later than the limit",
        "the last status in the message; eventd.log, events.jsonl, trace.jsonl",
    ),
    "agent_loop": (
        "a failure, not an error: the daemon ended in error after the agent made "
        "--gaia2-stuck-loop-min-calls or more model calls without answering the user",
        "trace.jsonl (the calls of the last turn), eventd.log",
    ),
    "provider_rate_limit": (
        "the agent's last model call was refused by its provider with a rate limit (HTTP 429, "
        "\"rate limit\"): the provider's trouble, never the agent's; retried with backoff and paced",
        "trace.jsonl (http_status of the last llm_call), adapter.log; progress.json's pacer",
    ),
    "provider_error": (
        'the agent\'s last model call failed at its provider (HTTP 5xx, "overloaded", a timeout): '
        "the provider's trouble, never the agent's; retried with backoff and paced",
        "trace.jsonl (http_status of the last llm_call), adapter.log; progress.json's pacer",
    ),
    "harness_error": (
        "pytest-gaia2 or the engine client raised an unexpected exception",
        "the traceback in the pytest report; container.log",
    ),
}
