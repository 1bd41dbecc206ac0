"""Deterministic per-turn judge of the reference image (no model involved).

Mirrors the hard part of Gaia2's in-container judge so that a verdict from the
reference image means the same thing as one from Meta's oracle image: only the
agent's write actions count, tool counts must match the oracle (one extra
``send_message_to_user`` allowed), and every oracle event must be matched by a
distinct agent event with equal arguments, in causal order and, for timed
events, within ``[rel - 10 s, rel + 25 s]`` of its latest parent (sim time).
Where Gaia2 would ask an LLM, this judge compares normalised values; given a
``soft_check`` (``gaia2_ref_llm``: an OpenAI-compatible model, used only by the
offline re-judge), a text argument that differs is then put to the model, as
Gaia2's soft checkers do. ``exact`` is a stricter setting for measuring judge
drift: the message to the user must equal the oracle's to the character.
Pure: it never touches files; the daemon persists the records it returns.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from gaia2_ref_scenario import (
    AUI,
    SMU,
    Scenario,
    ScenarioEvent,
    line_kind,
    line_time,
    resolve_placeholders,
)

SMU_TOOL = f"{AUI}__{SMU}"
SOFT_ARGS = frozenset({"content", "subject", "message"})
"""Text arguments a model may judge when they differ (Gaia2's soft-checked texts)."""

SoftCheck = Callable[[str, str, Any], tuple[bool | None, str]]
"""(tool, oracle text, agent value) -> (verdict, None when inconclusive; the model's reply)."""


class LoggedEvent(NamedTuple):
    """One events.jsonl line as the judge sees it."""

    event_id: str
    kind: str
    app: str
    fn: str
    args: dict[str, Any]
    write: bool
    ret: Any
    time: float
    seq: int

    @classmethod
    def from_line(cls, line: dict[str, Any], seq: int) -> LoggedEvent:
        """Build from a parsed line; agent lines get a stable synthetic id."""
        app = str(line.get("app") or "")
        fn = str(line.get("fn") or "")
        event_id = str(line.get("event_id") or "")
        if not event_id:
            digest = hashlib.sha256(f"{seq}:{json.dumps(line, sort_keys=True, default=str)}".encode()).hexdigest()
            event_id = f"AGENT-{app}.{fn}-{digest[:8]}"
        args = line.get("args")
        return cls(
            event_id=event_id,
            kind=line_kind(line),
            app=app,
            fn=fn,
            args=dict(args) if isinstance(args, dict) else {},
            write=bool(line.get("w")),
            ret=line.get("ret"),
            time=line_time(line),
            seq=seq,
        )


class Judgment(NamedTuple):
    """Outcome of one turn plus the judgments.jsonl record describing it."""

    success: bool
    failure_reason: str
    record: dict[str, Any]


def _is_empty(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, (str, list, dict, tuple)) and len(value) == 0)
        or (isinstance(value, str) and not value.strip())
    )


def _coerce_like(agent: Any, oracle: Any) -> Any:
    """Read an agent value in the oracle's type (CLI args may arrive as strings)."""
    if not isinstance(agent, str) or isinstance(oracle, str):
        return agent
    text = agent.strip()
    try:
        if isinstance(oracle, bool):
            return text.lower() in ("true", "1", "t", "y", "yes")
        if isinstance(oracle, int):
            return int(text)
        if isinstance(oracle, float):
            return float(text)
        if isinstance(oracle, (list, dict)):
            return json.loads(text)
    except (ValueError, json.JSONDecodeError):
        return agent
    return agent


def _canonical(value: Any) -> str:
    """Order-independent text form of a value, used to compare list elements."""
    if isinstance(value, str):
        return json.dumps(value.strip())
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(float(value))
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(str(k))}:{_canonical(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            )
            + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(sorted(_canonical(v) for v in value)) + "]"
    return json.dumps(str(value))


def values_equal(agent: Any, oracle: Any) -> bool:
    """Typed equality: strings stripped, numbers by value, lists unordered."""
    if _is_empty(agent) and _is_empty(oracle):
        return True
    agent = _coerce_like(agent, oracle)
    if isinstance(oracle, bool) or isinstance(agent, bool):
        return agent is oracle
    if isinstance(oracle, (int, float)) and isinstance(agent, (int, float)):
        return float(agent) == float(oracle)
    if isinstance(oracle, str) and isinstance(agent, str):
        return agent.strip() == oracle.strip()
    if isinstance(oracle, (list, tuple)) and isinstance(agent, (list, tuple)):
        return sorted(_canonical(v) for v in agent) == sorted(_canonical(v) for v in oracle)
    if isinstance(oracle, dict) and isinstance(agent, dict):
        keys = set(agent) | set(oracle)
        return all(values_equal(agent.get(k), oracle.get(k)) for k in keys)
    return bool(agent == oracle)


def _summary(args: dict[str, Any], limit: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        if not isinstance(value, (str, int, float, bool, type(None))):
            value = str(value)
        if limit is not None and isinstance(value, str):
            value = value[:limit]
        out[key] = value
    return out


class Judge:
    """Judges turns of one scenario; keeps matches across turns for placeholders."""

    def __init__(
        self,
        scenario: Scenario,
        start_time: float | None = None,
        extra_smu_allowed: int = 1,
        time_threshold: float = 1.0,
        pre_tolerance: float = 10.0,
        post_tolerance: float = 25.0,
        exact: bool = False,
        soft_check: SoftCheck | None = None,
    ) -> None:
        self.scenario = scenario
        self.start_time = scenario.start_time if start_time is None else start_time
        self.extra_smu_allowed = extra_smu_allowed
        self.time_threshold = time_threshold
        self.pre_tolerance = pre_tolerance
        self.post_tolerance = post_tolerance
        self.exact = exact
        self.soft_check = soft_check
        self._soft_outputs: list[str] = []
        details = scenario.user_details()
        self._user_name = f"{details['first_name']} {details['last_name']}".strip().casefold()
        self._matched: dict[str, LoggedEvent] = {}
        self._fired_times: dict[str, float] = {}
        self._returns: dict[str, Any] = {}

    @property
    def enabled(self) -> bool:
        """A judge only makes sense when the scenario has oracle events."""
        return bool(self.scenario.oracle_events())

    def tool(self, app: str, fn: str) -> str:
        return self.scenario.tool_of(app, fn)

    def observe(self, event: LoggedEvent) -> None:
        """Remember when an ENV/USER event fired and what it returned (timing, placeholders)."""
        if event.kind in ("ENV", "USER"):
            self._fired_times.setdefault(event.event_id, event.time)
            self._returns.setdefault(event.event_id, event.ret)

    def judge_turn(self, turn: int, events: list[LoggedEvent]) -> Judgment:
        """Judge ``turn`` given every events.jsonl line that belongs to it."""
        for logged in events:
            self.observe(logged)
        agent = [e for e in events if e.write and e.kind == "AGENT"]
        oracle = self.scenario.oracle_turn(turn) if turn < self.scenario.nb_turns else []
        if not oracle:
            return Judgment(True, "", self._record(turn, True, "", agent, [], [], None))

        reason = self._count_check(agent, oracle)
        if reason:
            unresolved = [(e, e.args) for e in oracle]
            return Judgment(False, reason, self._record(turn, False, reason, agent, unresolved, None, None))

        details: list[dict[str, Any]] = []
        first_failure = ""
        resolved_oracle: list[tuple[ScenarioEvent, dict[str, Any]]] = []
        for expected in oracle:
            args, _ = resolve_placeholders(expected.args, self._returns)
            resolved_oracle.append((expected, args))
            self._soft_outputs = []
            ok, why = self._match(expected, args, agent, turn)
            details.append(
                {
                    "oracle_id": expected.event_id,
                    "oracle_tool": self.tool(expected.app, expected.fn),
                    "matched": ok,
                    "reason": why,
                    "judge_output": "\n".join(self._soft_outputs),
                }
            )
            if not ok and not first_failure:
                first_failure = why
        success = not first_failure
        mapping = {m.event_id: oid for oid, m in self._matched.items()}
        record = self._record(turn, success, first_failure, agent, resolved_oracle, details, mapping or None)
        return Judgment(success, first_failure, record)

    def _count_check(self, agent: list[LoggedEvent], oracle: list[ScenarioEvent]) -> str:
        agent_counts = Counter(self.tool(e.app, e.fn) for e in agent)
        oracle_counts = Counter(self.tool(e.app, e.fn) for e in oracle)
        agent_smu, oracle_smu = agent_counts.pop(SMU_TOOL, 0), oracle_counts.pop(SMU_TOOL, 0)
        if not oracle_smu <= agent_smu <= oracle_smu + self.extra_smu_allowed:
            return f"SMU count mismatch: agent={agent_smu}, oracle={oracle_smu}, allowed_extra={self.extra_smu_allowed}"
        if agent_counts != oracle_counts:
            return f"Tool count mismatch: agent={dict(agent_counts)}, oracle={dict(oracle_counts)}"
        return ""

    def _match(
        self, oracle: ScenarioEvent, args: dict[str, Any], agent: list[LoggedEvent], turn: int
    ) -> tuple[bool, str]:
        tool = self.tool(oracle.app, oracle.fn)
        taken = {m.event_id for m in self._matched.values()}
        same_turn_parents = [
            d
            for d in oracle.dependencies
            if d in self.scenario.by_id
            and self.scenario.by_id[d].event_type == "AGENT"
            and self.scenario.turn_of.get(d) == turn
        ]
        failures: list[str] = []
        for candidate in agent:
            if candidate.event_id in taken or self.tool(candidate.app, candidate.fn) != tool:
                continue
            why = self._compare_args(oracle, args, candidate.args)
            if why:
                failures.append(f"{candidate.event_id}: {why}")
                continue
            late = [p for p in same_turn_parents if p not in self._matched or self._matched[p].seq >= candidate.seq]
            if late:
                failures.append(f"{candidate.event_id}: causality violation (parent {late[0]} not matched before it)")
                continue
            why = self._timing(oracle, candidate)
            if why:
                failures.append(f"{candidate.event_id}: {why}")
                continue
            self._matched[oracle.event_id] = candidate
            self._returns[oracle.event_id] = candidate.ret
            return True, ""
        return False, f"Cannot match {tool} ({oracle.event_id}): {'; '.join(failures) if failures else 'no candidates'}"

    def _compare_args(self, oracle: ScenarioEvent, oracle_args: dict[str, Any], agent_args: dict[str, Any]) -> str:
        for name, expected in oracle_args.items():
            actual = agent_args.get(name)
            if oracle.app == AUI and oracle.fn == SMU and name == "content":
                same = self._same_message(actual, expected)
            elif name == "attendees" and isinstance(expected, list) and self._user_name:
                same = values_equal(self._without_user(actual), self._without_user(expected))
            else:
                same = values_equal(actual, expected)
            if not same and name in SOFT_ARGS and isinstance(expected, str) and expected.strip():
                same = self._soft_same(self.tool(oracle.app, oracle.fn), name, expected, actual)
            if not same:
                return f"arg {name} differs (agent={actual!r}, oracle={expected!r})"
        return ""

    def _same_message(self, actual: Any, expected: Any) -> bool:
        """The message to the user: stripped and case-insensitive, or to the character when exact."""
        if self.exact:
            return str(actual or "") == str(expected or "")
        return str(actual or "").strip().casefold() == str(expected or "").strip().casefold()

    def _soft_same(self, tool: str, name: str, expected: str, actual: Any) -> bool:
        """Ask the model (when there is one); an inconclusive reply is no match, as in Gaia2."""
        if self.soft_check is None:
            return False
        verdict, output = self.soft_check(tool, expected, actual)
        self._soft_outputs.append(f"{name}: {output}")
        return verdict is True

    def _without_user(self, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [v for v in value if not (isinstance(v, str) and v.strip().casefold() == self._user_name)]

    def _timing(self, oracle: ScenarioEvent, candidate: LoggedEvent) -> str:
        rel = oracle.relative_time
        if rel <= self.time_threshold or not oracle.dependencies:
            return ""
        parent_time = self.parent_time(oracle)
        delay = candidate.time - parent_time
        if rel - self.pre_tolerance <= delay <= rel + self.post_tolerance:
            return ""
        return f"time check failed (agent_relative={delay:.0f}s, oracle_relative={rel:.0f}s)"

    def parent_time(self, oracle: ScenarioEvent) -> float:
        """Sim time of the latest parent; unknown parents count as scenario start."""
        times = [self.start_time]
        for dep in oracle.dependencies:
            if dep in self._matched:
                times.append(self._matched[dep].time)
            elif dep in self._fired_times:
                times.append(self._fired_times[dep])
        return max(times)

    def _record(
        self,
        turn: int,
        success: bool,
        reason: str,
        agent: list[LoggedEvent],
        oracle: list[tuple[ScenarioEvent, dict[str, Any]]],
        details: list[dict[str, Any]] | None,
        mapping: dict[str, str] | None,
    ) -> dict[str, Any]:
        oracle_rows = [
            {
                "id": event.event_id,
                "tool": self.tool(event.app, event.fn),
                "args": _summary(args, None),
                "args_summary": _summary(args, 80),
            }
            for event, args in oracle
        ]
        return {
            "turn": turn,
            "success": success,
            "failure_reason": reason or None,
            "agent_events": [
                {
                    "id": e.event_id,
                    "tool": self.tool(e.app, e.fn),
                    "args": _summary(e.args, None),
                    "args_summary": _summary(e.args, 80),
                }
                for e in agent
            ],
            "oracle_events": oracle_rows,
            "match_details": details,
            "id_mapping": mapping,
        }


def split_turns(events: list[LoggedEvent]) -> list[list[LoggedEvent]]:
    """Lines per turn: turn k runs after the k-th agent message to the user, up to and
    including the next one (the last list holds what follows the last boundary)."""
    turns: list[list[LoggedEvent]] = [[]]
    for event in events:
        turns[-1].append(event)
        if event.kind == "AGENT" and event.app == AUI and event.fn == SMU:
            turns.append([])
    return turns
