"""``trace.html`` per attempt and ``index.html`` per run: the pages a person opens to see why.

Both are rendered by jinja2 (autoescape on) from files alone: an attempt's ``result.json`` and
what its container left, or a run's ``results.jsonl``. They are self-contained (inline CSS and
a few lines of JS; nothing is fetched) and bounded: every file is read with a cap, and every
value shown draws on one character budget per page, so a runaway trace cannot make a runaway
page; the rest is a link to the raw file. The files came from a container, so no content can
make rendering raise: a page that cannot be built becomes a short page saying so, and a page
that cannot be written is logged, never costing the scenario its result.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pytest_gaia2.cost.spend import WIRE_LOG
from pytest_gaia2.cost.usage import TraceUsage, Usage
from pytest_gaia2.report import run_facts, stats, wire_figures
from pytest_gaia2.report.rows import natural_key, split_order
from pytest_gaia2.report.summary import coverage
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.attempt_files import SHOWN_EVENTS, AttemptFiles
from pytest_gaia2.store.kept import CONTAINER_FILES, listing
from pytest_gaia2.store.names import spellings
from pytest_gaia2.store.record import AttemptRecord

if TYPE_CHECKING:
    import jinja2

log = logging.getLogger("pytest_gaia2")

TRACE_FILE = "trace.html"
INDEX_FILE = "index.html"
MAX_EVENTS = SHOWN_EVENTS
"""events.jsonl lines shown; a longer run is linked, not inlined."""
MAX_JUDGMENTS = 50
MAX_ROWS = 500
"""Rows shown of each list inside one judgment line (matches, agent and oracle events)."""
MAX_FILES = 200
ACTIVE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".mht", ".mhtml", ".pdf")
"""Files a browser would run script in when opened from the page: listed by name, never linked
(this page's content-security rule does not reach a page it links to)."""
TEXT_CAP = 4000
"""Characters shown of any one value (arguments, results, reasons)."""
PAGE_BUDGET = 2_000_000
"""Characters of file content one page may show in all."""
LINE_MAX_BYTES = 4 * 2**20
"""A longer JSONL line is skipped (the raw file has it)."""
MISSING = "(not in this attempt's files)"
AUDIT_FILES = ("state/judge_decisions.jsonl", "judge_decisions.jsonl")
"""Where a judge's own audit trail lands (gaia2-cli's TypeSafe judge writes judge_decisions.jsonl
into the state folder): one line per model call, with the verdict's probability and threshold."""
AUDIT_FIELDS = ("provider", "requested_model", "model", "probability", "threshold", "passed", "input_sha256")
MAX_AUDIT = 200

FALLBACK = (
    "<!doctype html><html lang=en><meta charset=utf-8><title>{{ title }}</title>"
    "<h1>{{ title }}</h1><p>This page could not be rendered ({{ problem }}); the raw files are "
    "next to it.</p></html>"
)
"""The page for one that could not be rendered (a template from a string: autoescaped)."""


@functools.cache
def _templates() -> jinja2.Environment:
    from pytest_gaia2.report import templating

    return templating.environment(templating.PAGE, {"amount": run_facts.amount})


class PageBudget:
    """What a page may still show: each value is cut to ``TEXT_CAP`` and to what is left."""

    def __init__(self, total: int = PAGE_BUDGET) -> None:
        self.left = total

    def text(self, value: object, cap: int = TEXT_CAP) -> str:
        """``value`` as shown text: strings as they are, None as nothing, the rest as JSON."""
        text = shown(value)
        keep = max(0, min(cap, self.left))
        self.left -= min(len(text), keep)
        if len(text) <= keep:
            return text
        return f"{text[:keep]}… [cut: {len(text) - keep} more characters in the raw file]"


def shown(value: object) -> str:
    """How any JSON value reads on a page; the judge-matching test compares against this."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _objects(path: Path, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """The first ``limit`` object lines of a JSONL file, and whether more follow."""
    lines = (value for value in store.json_lines(path, LINE_MAX_BYTES) if isinstance(value, dict))
    found = list(islice(lines, limit + 1))
    return found[:limit], len(found) > limit


def _items(value: object, limit: int = MAX_ROWS) -> list[dict[str, Any]]:
    return [item for item in value[:limit] if isinstance(item, dict)] if isinstance(value, list) else []


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# -- the events: turns and the timeline --------------------------------------------------------

KINDS = {"tool": "agent tool call", "reply": "agent → user", "user": "USER", "env": "ENV"}


def event_kind(event: Mapping[str, Any]) -> str:
    """ENV and USER by their event id prefix (as eventd tells them), the turn-ending message
    to the user, and everything else an agent tool call."""
    event_id = shown(event.get("event_id"))
    if event_id.startswith("Event-ENV-"):
        return "env"
    if event_id.startswith("Event-USER-") or event.get("fn") == "send_message_to_agent":
        return "user"
    if event.get("app") == "AgentUserInterface" and event.get("fn") == "send_message_to_user":
        return "reply"
    return "tool"


def turns(events: list[dict[str, Any]], budget: PageBudget) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Events grouped into turns (each ends with a message to the user), and timeline marks
    placed by wall-clock time between the first and last event."""
    times = [t for t in (_seconds(event.get("t")) for event in events) if t is not None]
    start, span = (min(times), max(times) - min(times)) if times else (0.0, 0.0)
    grouped: list[list[dict[str, Any]]] = [[]]
    marks = []
    for number, event in enumerate(events, 1):
        kind, t = event_kind(event), _seconds(event.get("t"))
        name = f"{shown(event.get('app'))}.{shown(event.get('fn'))}"
        row = {
            "number": number,
            "kind": kind,
            "label": KINDS[kind],
            "name": budget.text(name, 200),
            "args": budget.text(event.get("args")),
            "ret": budget.text(event.get("ret")),
            "write": event.get("w") is True,
            "event_id": budget.text(event.get("event_id"), 200),
            "offset": "" if t is None else f"+{t - start:.2f} s",
            "sim_t": budget.text(event.get("sim_t"), 40),
        }
        grouped[-1].append(row)
        if t is not None:
            position = 100.0 * (t - start) / span if span > 0 else 0.0
            marks.append({"kind": kind, "left": f"{position:.2f}", "title": f"#{number} {row['offset']} {row['name']}"})
        if kind == "reply":
            grouped.append([])
    return [turn for turn in grouped if turn], marks


# -- the judge ---------------------------------------------------------------------------------


def _verdict(value: object) -> str:
    return "PASS" if value is True else "FAIL" if value is False else "no verdict"


def _turn_number(turn: object, budget: PageBudget) -> str:
    """The judge counts turns from 0, the page (like eventd's log) from 1."""
    return str(turn + 1) if isinstance(turn, int) and not isinstance(turn, bool) else budget.text(turn, 20)


def judgment(line: Mapping[str, Any], budget: PageBudget) -> dict[str, Any]:
    """One daemon_judgments.jsonl line as shown: the per-oracle-event matching (with the agent
    event the judge mapped to it), both event lists, and the tool counts the judge compares."""
    mapping = line.get("id_mapping")
    agent_for = {shown(oracle): shown(agent) for agent, oracle in mapping.items()} if isinstance(mapping, dict) else {}
    oracle_events, agent_events = _items(line.get("oracle_events")), _items(line.get("agent_events"))
    oracle_args = {shown(event.get("id")): event.get("args_summary", event.get("args")) for event in oracle_events}
    details = line.get("match_details")
    matches = [
        {
            "oracle_id": budget.text(detail.get("oracle_id"), 300),
            "oracle_tool": budget.text(detail.get("oracle_tool"), 300),
            "oracle_args": budget.text(oracle_args.get(shown(detail.get("oracle_id")))),
            "agent_id": budget.text(agent_for.get(shown(detail.get("oracle_id")), ""), 300),
            "matched": detail.get("matched") is True,
            "reason": budget.text(detail.get("reason")),
            "judge_output": budget.text(detail.get("judge_output")),
        }
        for detail in _items(details)
    ]
    agent_tools = Counter(shown(event.get("tool")) for event in agent_events)
    oracle_tools = Counter(shown(event.get("tool")) for event in oracle_events)
    counts = [
        {"tool": budget.text(tool, 300), "agent": agent_tools[tool], "oracle": oracle_tools[tool]}
        for tool in sorted(agent_tools | oracle_tools)
    ]

    def listed(events: list[dict[str, Any]]) -> list[dict[str, str]]:
        return [
            {
                "id": budget.text(event.get("id"), 300),
                "tool": budget.text(event.get("tool"), 300),
                "args": budget.text(event.get("args_summary", event.get("args"))),
            }
            for event in events
        ]

    return {
        "turn": _turn_number(line.get("turn"), budget),
        "verdict": _verdict(line.get("success")),
        "failure_reason": budget.text(line.get("failure_reason")),
        "matches": matches,
        "has_matching": isinstance(details, list),
        "counts": counts,
        "agent_events": listed(agent_events),
        "oracle_events": listed(oracle_events),
    }


# -- the attempt -------------------------------------------------------------------------------


def task_of(events: Iterable[Mapping[str, Any]], folder: Path, record: AttemptRecord | None) -> str:
    """The user's task: the first message to the agent the attempt's files hold, else the one
    the record carries from the scenario file."""
    for event in events:
        args = event.get("args")
        if event_kind(event) == "user" and isinstance(args, dict) and args.get("content"):
            return shown(args["content"])
    for line in islice(store.json_lines(folder / "notifications.jsonl", LINE_MAX_BYTES), MAX_EVENTS):
        if isinstance(line, dict) and line.get("type") == "user_message" and line.get("content"):
            return shown(line["content"])
    return record.task or "" if record is not None else ""


def _usage(record: AttemptRecord | None, traced: Usage) -> dict[str, Any] | None:
    """Tokens from the record (priced by the run), else summed from the trace itself."""
    if record is not None and record.usage:
        return record.usage
    return traced.to_json() if traced.calls else None


def wire_row(call: Mapping[str, Any], budget: PageBudget) -> dict[str, str]:
    """One model call of wire.jsonl as a row: every cell a short text."""
    note = (
        " ".join(str(call[key]) for key in ("refused", "note") if call.get(key))
        + (" cut" if call.get("cut") else "")
        + (" retry" if call.get("retry") is True else "")
    )
    return {
        key: budget.text(call.get(key) if call.get(key) is not None else "", 80)
        for key in ("time", "route", "model", "status", "latency_ms", "input_tokens", "output_tokens", "cost_usd")
    } | {"note": budget.text(note.strip(), 80)}


def files(folder: Path) -> list[dict[str, Any]]:
    """The attempt's files and its state/ files, linked by relative path (trace.html aside; pages
    a browser would run script in only named)."""
    found = []
    for sub in ("", "state"):
        try:
            entries = sorted(os.scandir(folder / sub if sub else folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or (not sub and entry.name == TRACE_FILE):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            name = f"{sub}/{entry.name}" if sub else entry.name
            active = any(form.endswith(ACTIVE_SUFFIXES) for form in spellings(entry.name))
            found.append({"name": name, "href": "" if active else quote(name), "size": size})
    return found[:MAX_FILES]


def kept_files(folder: Path, budget: PageBudget) -> dict[str, Any] | None:
    """The members of the attempt's archive of its container's other files, when it has one:
    names and sizes, and short UTF-8 members' text drawn on the page's budget."""
    if not os.path.lexists(folder / CONTAINER_FILES):
        return None
    found = listing(folder / CONTAINER_FILES)
    members = [
        {"name": member.name, "size": member.size, "text": None if member.text is None else budget.text(member.text)}
        for member in found.members
    ]
    return {
        "name": CONTAINER_FILES,
        "href": quote(CONTAINER_FILES),
        "members": members,
        "more": found.more,
        "problem": found.problem,
    }


def judge_audit(folder: Path, budget: PageBudget) -> dict[str, Any] | None:
    """The judge's audit trail, when the attempt has one: its file, and its first lines' known fields."""
    for name in AUDIT_FILES:
        if (folder / name).is_file():
            lines, more = _objects(folder / name, MAX_AUDIT)
            rows = [{field: budget.text(line.get(field), 200) for field in AUDIT_FIELDS} for line in lines]
            return {"href": quote(name), "name": name, "rows": rows, "more": more, "fields": AUDIT_FIELDS}
    return None


def isolation_of(folder: Path) -> run_facts.Isolation | None:
    """Pre-flight's judge-isolation answer of the run that holds the attempt ``folder``."""
    return run_facts.Isolation.from_json(wire_figures.run_config_above(folder).get("judge_isolation"))


def trace_context(folder: Path, seen: AttemptFiles | None = None, traced: Usage | None = None) -> dict[str, Any]:
    """Everything trace.html shows, from the attempt folder's files: ``seen`` and ``traced`` (the
    trace's usage) from the pass that made the record, else read here in one pass."""
    if seen is None or traced is None:
        counted = TraceUsage()
        seen, traced = AttemptFiles.read(folder, counted), counted.usage()
    budget = PageBudget()
    record = store.RunFolder.read_record(folder)
    events, more_events = list(seen.events), seen.more_events
    lines, more_judgments = _objects(folder / store.JUDGMENTS_FILE, MAX_JUDGMENTS)
    status = seen.status_object
    grouped, marks = turns(events, budget)
    calls, more_wire = _objects(folder / WIRE_LOG, MAX_ROWS)
    facts = record.to_json() if record is not None else {}
    shown_facts = {
        key: budget.text(value, 400)
        for key, value in facts.items()
        if key not in ("daemon_status", "failure_reasons", "error", "agent_response", "usage")
    }
    if record is not None and record.cost_usd is not None:  # money as money: $0.11, never 0.105
        shown_facts["cost_usd"] = run_facts.amount(record.cost_usd)
    return {
        "title": shown(facts.get("scenario_id")) or folder.name,
        "record": shown_facts,
        "outcome": record.outcome if record is not None else "unknown",
        "message": budget.text(record.message) if record is not None else "no result.json in this folder",
        "task": budget.text(task_of(events, folder, record)) or MISSING,
        "response": budget.text(record.agent_response if record is not None else ""),
        "turns": grouped,
        "marks": marks,
        "more_events": more_events,
        "kinds": KINDS,
        "judgments": [judgment(line, budget) for line in lines],
        "more_judgments": more_judgments,
        "audit": judge_audit(folder, budget),
        "status": budget.text(json.dumps(status, indent=2, ensure_ascii=False)) if status is not None else "",
        "usage": _usage(record, traced),
        "wire_calls": [wire_row(call, budget) for call in calls],
        "more_wire": more_wire,
        "wire_check": wire_figures.trace_page(folder, record, traced),
        "files": files(folder),
        "kept": kept_files(folder, budget),
        "missing": MISSING,
        "isolation": isolation_of(folder),
    }


def _write(path: Path, template: jinja2.Template, context: Callable[[], dict[str, Any]], title: str) -> Path:
    """Render and write atomically; a bad file gives a short page, a failed write a warning.
    Nothing is written where the folder is gone: a page must not create one."""
    if not path.parent.is_dir():
        log.warning("gaia2: no %s written: %s is not a folder", path.name, path.parent)
        return path
    try:
        page = template.render(**context())
    except Exception as exc:  # noqa: BLE001 - no content may stop a run: the raw files stay
        log.warning("gaia2: %s could not be rendered: %s: %s", path, type(exc).__name__, exc)
        page = _templates().from_string(FALLBACK).render(title=title, problem=type(exc).__name__)
    try:
        # A lone surrogate from a JSON escape cannot be UTF-8: it becomes "?", never an error.
        store.write_bytes(path, page.encode("utf-8", "replace"))
    except store.StoreError as exc:
        log.warning("gaia2: %s", exc)
    return path


def write_trace(folder: Path, seen: AttemptFiles | None = None, traced: Usage | None = None) -> Path:
    """``<attempt folder>/trace.html``, from the attempt's pass over its files when given (see
    :func:`trace_context`)."""
    return _write(
        folder / TRACE_FILE,
        _templates().get_template("trace.html.j2"),
        lambda: trace_context(folder, seen, traced),
        f"trace of {folder.name}",
    )


# -- the run -----------------------------------------------------------------------------------


def _trace_href(run_folder: Path, record: AttemptRecord) -> str | None:
    """The record's trace.html, relative to the run folder, when it exists inside it."""
    if not record.folder:
        return None
    path = run_folder / record.folder / TRACE_FILE
    try:
        inside = path.resolve().is_relative_to(run_folder.resolve()) and path.is_file()
    except (OSError, ValueError):
        return None
    return quote(f"{record.folder}/{TRACE_FILE}") if inside else None


def _sorted(records: Iterable[AttemptRecord]) -> Iterator[AttemptRecord]:
    return iter(
        sorted(records, key=lambda record: (split_order(record.split), natural_key(record.scenario_id), record.repeat))
    )


def index_context(run_folder: Path) -> dict[str, Any]:
    """Everything index.html shows: one row per results.jsonl key (its last line)."""
    budget = PageBudget()
    records = list(_sorted(store.RunFolder(run_folder).records()))
    rows = []
    for record in records:
        usage = record.usage or {}
        rows.append(
            {
                "key": budget.text(record.key, 300),
                "scenario_id": budget.text(record.scenario_id, 300),
                "split": budget.text(record.split, 100),
                "universe": budget.text(record.universe or "", 100),
                "repeat": record.repeat,
                "attempt": record.attempt,
                "outcome": record.outcome,
                "category": budget.text(record.error_category or ("judge" if record.outcome == "failed" else ""), 100),
                "message": budget.text(record.message, 300),
                "wall_time_s": record.wall_time_s,
                "cost_usd": record.cost_usd,
                "has_usage": bool(usage),
                "tokens": (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0),
                "trace": _trace_href(run_folder, record),
            }
        )
    costs = [record.cost_usd for record in records if record.cost_usd is not None]
    return {
        "title": f"Gaia2 run {run_folder.name}",
        "rows": rows,
        "counts": Counter(row["outcome"] for row in rows),
        "cost": sum(costs) if costs else None,
        "image": budget.text(records[0].image if records else "", 300),
        "model": budget.text(records[0].model if records else "", 300),
        **stop_context(run_folder, records),
        "wire_page": wire_figures.run_page(
            run_facts.config_of(run_folder), records, wire_figures.earlier_attempts(run_folder, records)
        ),
    }


def stop_context(run_folder: Path, records: list[AttemptRecord]) -> dict[str, Any]:
    """What index.html shows of the plan: planned and done, the run's name and tags,
    why it stopped (summary.json, read checked) and ran vs planned per stratum."""
    facts = run_facts.read(run_folder)
    plan = facts.plan(records)
    summary = stats.summarise([record.to_json() for record in records], plan.keys)
    return {
        "summary": summary,
        "facts": facts,
        "plan": plan,
        "coverage": coverage(summary) if not summary.complete else None,
    }


def write_index(run_folder: Path) -> Path:
    """``<run folder>/index.html`` from its results.jsonl."""
    return _write(
        run_folder / INDEX_FILE,
        _templates().get_template("index.html.j2"),
        lambda: index_context(run_folder),
        f"Gaia2 run {run_folder.name}",
    )
