"""What a run folder says about itself beyond its records: its name, tags and start
(run_config.json), why it stopped (summary.json's ``stop`` block) and what it planned
(:meth:`RunFacts.plan`), for the pages and the ``list`` command.

Both files may come from anywhere (a copied, edited or hostile folder): they are read bounded
(a regular file, no link, size- and depth-limited) and every value is checked: text is a string
cut to a length and made printable, amounts are finite and in range, lists are cut to a count.
A value that fails its check is left out, never shown as it is.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.budget import usd_text
from pytest_gaia2.cost.projection import Projection
from pytest_gaia2.cost.usage import usd_amount
from pytest_gaia2.report.rows import is_key, natural_key
from pytest_gaia2.report.summary import PROBE_ONLY, Stop
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import printable

CONFIG_MAX_BYTES = 16 * 2**20
"""run_config.json (its plan lists every key) and summary.json are read up to this size."""
NAME_CHARS = 200
TAG_CHARS = 100
MAX_TAGS = 50
KEY_CHARS = 300
REASON_CHARS = 500
MAX_APPS = 1000
"""App names of one scenario past this are not believed."""
MAX_NOT_STARTED = 100_000
USD_MAX = 1e9
"""An amount of a run's budget or spend past this is not believed."""
COUNT_MAX = 10**7
"""A count of planned or probed scenarios past this is not believed."""
HOURS_MAX = 1e6


def text(value: object, chars: int) -> str | None:
    """A string from an untrusted file, printable and at most ``chars`` long; None for anything else."""
    if not isinstance(value, str):
        return None
    shown = printable(value)
    return shown if len(shown) <= chars else shown[: chars - 1] + "…"


def amount(value: float | None) -> str:
    """An amount of the stop block with its digits (``$0.0060``), ``none`` when unset."""
    return "none" if value is None else usd_text(value)


def started_at(value: object) -> _dt.datetime | None:
    """run_config.json's ``started_at`` (ISO 8601 with its offset) in UTC, None when it is not one
    or lies outside what a date holds in UTC (year 1 at +01:00 has no UTC date)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        started = _dt.datetime.fromisoformat(value)
        return started.replace(tzinfo=started.tzinfo or _dt.timezone.utc).astimezone(_dt.timezone.utc)
    except (ValueError, OverflowError):
        return None


def stop_of(document: Mapping[str, Any]) -> Stop | None:
    """summary.json's ``stop`` block, checked; None when it has none or it is not an object."""
    block = document.get("stop")
    if not isinstance(block, dict):
        return None
    items = block.get("not_started")
    not_started = []
    for item in items[:MAX_NOT_STARTED] if isinstance(items, list) else ():
        key = text(item.get("key"), KEY_CHARS) if isinstance(item, dict) else None
        if key is not None:
            not_started.append((key, text(item.get("why"), REASON_CHARS) or "unknown"))
    reason = text(block.get("reason"), REASON_CHARS)
    return Stop(
        reason=reason or ("unknown" if block.get("stopped") is True else None),
        halt=usd_amount(block.get("halt_usd"), USD_MAX),
        cap=usd_amount(block.get("cap_usd"), USD_MAX),
        spent=usd_amount(block.get("spent_usd"), USD_MAX),
        spent_at_stop=usd_amount(block.get("spent_at_stop_usd"), USD_MAX),
        not_started=tuple(not_started),
    )


def not_run_apps_of(document: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The apps summary.json's ``not_run_files`` gives each key that did not run, checked; a key
    without a list of app names (a summary.json of an earlier version) is left out."""
    block = document.get("not_run_files")
    found: dict[str, tuple[str, ...]] = {}
    for key, entry in list(block.items())[:MAX_NOT_STARTED] if isinstance(block, dict) else ():
        apps = entry.get("apps") if isinstance(entry, dict) else None
        if not isinstance(key, str) or len(key) > KEY_CHARS or not isinstance(apps, list) or len(apps) > MAX_APPS:
            continue
        names = [text(app, NAME_CHARS) for app in apps]
        if all(names):
            found[key] = tuple(dict.fromkeys(name for name in names if name))
    return found


def _count(value: object, low: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= COUNT_MAX else None


def probe_of(document: Mapping[str, Any]) -> Projection | None:
    """summary.json's ``probe`` block (the --gaia2-probe projection), checked; None when it has
    none or any value fails its check (a projection with a made-up figure is no projection)."""
    block = document.get("probe")
    if not isinstance(block, dict):
        return None
    planned, probed, workers, in_flight = (
        _count(block.get("planned"), 0),
        _count(block.get("probed"), 0),
        _count(block.get("workers"), 1),
        _count(block.get("in_flight", 1), 1),  # absent from an earlier version's summary
    )
    hours = usd_amount(block.get("hours"), HOURS_MAX)  # a finite, non-negative number like an amount
    money = {name: block.get(name) for name in ("usd", "low", "high", "halt", "cap")}
    checked = {name: usd_amount(value, USD_MAX) for name, value in money.items()}
    if (
        planned is None
        or probed is None
        or workers is None
        or in_flight is None
        or hours is None
        or any(value is not None and checked[name] is None for name, value in money.items())
        or (checked["low"] is None) != (checked["high"] is None)
        or (checked["usd"] is None and checked["low"] is not None)
        or (block.get("chosen") is not None and _count(block.get("chosen"), 1) is None)
    ):
        return None
    return Projection(
        planned,
        probed,
        checked["usd"],
        checked["low"],
        checked["high"],
        hours,
        workers,
        checked["halt"],
        checked["cap"],
        _count(block.get("chosen"), 1),
        in_flight,
    )


def keys_of(value: object) -> tuple[str, ...] | None:
    """A list of planned keys from a file, checked: None unless it is a list of at most
    MAX_NOT_STARTED distinct, well-formed keys of at most KEY_CHARS (one bad key and the list is
    not believed, as a record with a bad field is not)."""
    if not isinstance(value, list) or len(value) > MAX_NOT_STARTED:
        return None
    if not all(is_key(key) and len(key) <= KEY_CHARS for key in value) or len(set(value)) != len(value):
        return None
    return tuple(value)


@dataclass(frozen=True)
class Isolation:
    """What the agent's user could do in the image (pre-flight's probe, :mod:`pytest_gaia2.run.isolation`);
    ``problem`` says why no answer was had."""

    reads_scenario: bool | None = None
    writes_state: bool | None = None
    signals_judge: bool | None = None
    problem: str | None = None
    passing: bool = False
    """The problem may pass (the engine failed us): the answer is not remembered for the image."""

    @property
    def isolated(self) -> bool:
        """Only a full answer of three no's is isolation."""
        return self.problem is None and (self.reads_scenario, self.writes_state, self.signals_judge) == (
            False,
            False,
            False,
        )

    def reasons(self) -> list[str]:
        """What the agent could do, in words (empty when isolated)."""
        if self.problem is not None:
            return [self.problem]
        found = []
        if self.reads_scenario:
            found.append("the agent can read the scenario file (the answer key)")
        if self.writes_state:
            found.append("the agent can write the judge's state folder")
        if self.signals_judge:
            found.append("the agent can signal the judge's processes")
        return found

    def line(self) -> str:
        """``judge isolated: yes`` or ``judge isolated: no (why); its verdicts are not tamper-proof``."""
        if self.isolated:
            return "judge isolated: yes"
        return f"judge isolated: no ({'; '.join(self.reasons())}); its verdicts are not tamper-proof"

    def to_json(self) -> dict[str, Any]:
        return {
            "isolated": self.isolated,
            "reads_scenario": self.reads_scenario,
            "writes_state": self.writes_state,
            "signals_judge": self.signals_judge,
            "problem": self.problem,
        }

    @classmethod
    def from_json(cls, data: object) -> Isolation | None:
        """From run_config.json or the image-checks cache: None unless every field has its type."""
        if not isinstance(data, dict):
            return None
        read, write, signal = (data.get(name) for name in ("reads_scenario", "writes_state", "signals_judge"))
        problem = data.get("problem")
        flags = (read, write, signal)
        if not all(flag is None or isinstance(flag, bool) for flag in flags) or not (
            problem is None or isinstance(problem, str)
        ):
            return None
        if problem is None and None in flags:
            return None
        return cls(read, write, signal, problem=None if problem is None else text(problem, REASON_CHARS) or "unknown")


@dataclass(frozen=True)
class SummaryPlan:
    """summary.json's plan, checked: how many keys the session that wrote it planned and how many
    of them are done, and those not run."""

    planned: int
    done: int
    not_run: tuple[str, ...]


def summary_plan_of(document: Mapping[str, Any]) -> SummaryPlan | None:
    """summary.json's ``planned``, ``done`` and ``not_run``; None when any fails its check or
    they do not add up (planned = done + not run)."""
    planned, done = _count(document.get("planned"), 0), _count(document.get("done"), 0)
    not_run = keys_of(document.get("not_run"))
    if planned is None or done is None or not_run is None or planned != done + len(not_run):
        return None
    return SummaryPlan(planned, done, not_run)


@dataclass(frozen=True)
class Plan:
    """The keys a run planned, as every page and ``list`` count them."""

    keys: tuple[str, ...] | None
    """None: no plan on record at all (every result is then planned and done)."""
    note: str | None = None
    """Where the plan came from instead, and why, for the pages (None: from summary.json)."""


@dataclass(frozen=True)
class RunFacts:
    """A run's name, tags and start from run_config.json, and its stop from summary.json
    (None when the run wrote no summary: it is running, or was killed)."""

    name: str | None
    tags: tuple[str, ...]
    started: _dt.datetime | None
    stop: Stop | None
    probe: Projection | None = None
    not_run_apps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each planned key that did not run: its scenario's apps (summary.json's ``not_run_files``)."""
    last_plan: SummaryPlan | None = None
    """summary.json's plan: the latest session's, when that session wrote its summary."""
    first_plan: tuple[str, ...] | None = None
    """run_config.json's ``planned``: the first session's plan (the only one that writes the file)."""
    summary_problem: str | None = "summary.json is missing"
    """Why summary.json has no plan to give (None when it has one)."""
    isolation: Isolation | None = None
    """run_config.json's ``judge_isolation``: pre-flight's answer (None: not asked, an older run)."""

    def plan(self, records: Sequence[AttemptRecord]) -> Plan:
        """What the run planned: the latest session's plan, the keys that run has a result for
        and those summary.json lists as not run, so every page and ``list`` count what
        summary.json counts. When summary.json is missing or damaged, or does not fit
        results.jsonl (a later session is running, or was killed), the first session's plan
        plus every key with a record, and why."""
        keys = {record.key for record in records}
        last = self.last_plan
        problem = self.summary_problem
        if last is not None and (len(keys) != last.done or not keys.isdisjoint(last.not_run)):
            last, problem = None, "summary.json does not fit results.jsonl (a later session is running, or was killed)"
        if last is not None:
            return Plan(tuple(sorted(keys | set(last.not_run), key=natural_key)))
        if self.first_plan is None:
            return Plan(None, f"planned: every result, no plan on record ({problem}, run_config.json has none)")
        return Plan(
            self.first_plan + tuple(sorted(keys - set(self.first_plan), key=natural_key)),
            f"planned: the first session's plan (run_config.json) and every result, as {problem}",
        )

    def probe_only(self, not_run: Sequence[str]) -> bool:
        """Whether the run was a --gaia2-probe-only run that ran its whole probe: every planned
        key that did not run was left out by it (as the terminal's ``PROBE ONLY`` line)."""
        why = dict(self.stop.not_started) if self.stop is not None else {}
        return (
            self.probe is not None and bool(not_run) and all(why.get(key, "").startswith(PROBE_ONLY) for key in not_run)
        )

    @property
    def label(self) -> str:
        """``name [tag, tag]`` for a line or a heading; empty for an unnamed, untagged run."""
        tags = f"[{', '.join(self.tags)}]" if self.tags else ""
        return " ".join(part for part in (self.name or "", tags) if part)


def config_of(path: Path) -> dict[str, Any]:
    """run_config.json of the run folder, bounded; empty when it is missing or not an object."""
    document = store.read_json(path / store.RUN_CONFIG_FILE, max_bytes=CONFIG_MAX_BYTES)
    return document if isinstance(document, dict) else {}


def _summary_problem(path: Path, summary: object) -> str | None:
    if not isinstance(summary, dict):
        there = os.path.lexists(path / store.SUMMARY_FILE)
        return "summary.json cannot be read" if there else "summary.json is missing"
    return None if summary_plan_of(summary) is not None else "summary.json's plan is damaged"


def read(path: Path, config: Mapping[str, Any] | None = None) -> RunFacts:
    """The facts of the run folder at ``path`` (``config``: its run_config.json, when already read)."""
    config = config_of(path) if config is None else config
    summary = store.read_json(path / store.SUMMARY_FILE, max_bytes=CONFIG_MAX_BYTES)
    tags = config.get("tags")
    return RunFacts(
        name=text(config.get("name"), NAME_CHARS) or None,
        tags=tuple(
            dict.fromkeys(
                tag
                for tag in (text(item, TAG_CHARS) for item in (tags[:MAX_TAGS] if isinstance(tags, list) else ()))
                if tag
            )
        ),
        started=started_at(config.get("started_at")),
        stop=stop_of(summary) if isinstance(summary, dict) else None,
        probe=probe_of(summary) if isinstance(summary, dict) else None,
        not_run_apps=not_run_apps_of(summary) if isinstance(summary, dict) else {},
        last_plan=summary_plan_of(summary) if isinstance(summary, dict) else None,
        first_plan=keys_of(config.get("planned")),
        summary_problem=_summary_problem(path, summary),
        isolation=Isolation.from_json(config.get("judge_isolation")),
    )
