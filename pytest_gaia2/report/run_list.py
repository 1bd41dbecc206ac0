"""The runs of an output folder, one row each, for ``pytest-gaia2 list``: name, tags, start,
planned and done, the strict rate with its interval, the cost, and complete or why not.

Every run folder is read as hostile input: run_config.json and summary.json through
:mod:`run_facts` (bounded, checked), results.jsonl strictly (a bad line makes the row say so,
never a wrong rate), the ledger through :class:`Ledger`. Numbers come from
:func:`stats.summarise` over the records, as the report's do.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import stat
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from pytest_gaia2.cost import spend
from pytest_gaia2.cost.budget import Ledger, usd_text
from pytest_gaia2.report import run_facts, stats
from pytest_gaia2.report.rates import Rate, percent, percent_number
from pytest_gaia2.report.run_facts import RunFacts
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import enclosing_run
from pytest_gaia2.store.redact import printable

if TYPE_CHECKING:
    import jinja2

MAX_RUNS = 10_000
"""Entries of an output folder looked at; a larger folder is listed in part, and says so."""
MAX_SESSIONS = 10_000
PAGES = ("report.html", "index.html")
"""A run's own pages, linked from the list when they are regular files in the run folder."""

INDEX_FILE = "index.html"
MARKER = "<!-- pytest-gaia2 list: written by `pytest-gaia2 list`; the next `list` replaces it -->"
MARKER_BYTES = 4096
"""How much of an existing index.html is read to find the marker (it is on the second line)."""


@dataclass(frozen=True)
class RunRow:
    """One run folder as the list shows it."""

    folder: str
    facts: RunFacts
    sessions: int
    """Sessions that ran something: a verdict or error of theirs is still a scenario's latest
    record (all of them when results.jsonl cannot be read)."""
    planned: int | None
    done: int | None
    strict: Rate | None
    cost_usd: float | None
    status: str
    """``complete``, or ``incomplete: <why>``, or why the folder could not be read."""
    pages: tuple[tuple[str, str], ...] = ()
    """(name, href relative to the output folder) of the run's own pages."""
    plan_note: str | None = None
    """Where planned came from when not from summary.json, and why (:class:`run_facts.Plan`)."""
    idle_sessions: int = 0
    """Sessions that ran nothing still recorded (stopped at once: a halt, a crash, Ctrl-C)."""

    @property
    def sessions_text(self) -> str:
        """``3``, or ``3 (+2 ran nothing)``."""
        return f"{self.sessions}" + (f" (+{self.idle_sessions} ran nothing)" if self.idle_sessions else "")

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def age_key(self) -> tuple[float, str]:
        """By start (run_config.json), then by folder name (it starts with the UTC time); unknown starts oldest."""
        return (self.facts.started.timestamp() if self.facts.started else float("-inf"), self.folder)


def shown(name: str) -> str:
    """A file name or message for the terminal and the page: a byte of the name that is no UTF-8
    (a name made elsewhere) as its escape (``\\xff``), as every control character."""
    return printable(os.fsencode(name).decode("utf-8", "backslashreplace"))


def rate_text(rate: Rate | None) -> str:
    """``2/6 = 33.3% [9.7–70.0]``, ``n/a`` for a rate over nothing or unknown."""
    if rate is None or rate.value is None:
        return "n/a"
    return f"{rate.successes}/{rate.n} = {percent(rate.value)} [{percent_number(rate.low)}–{percent_number(rate.high)}]"


def _sessions(path: Path) -> list[str | None]:
    """The session ids of the run (a resumed run has more than one; a merged run's pieces have
    none), from sessions.jsonl, bounded."""
    lines = store.json_lines(path / store.SESSIONS_FILE, max_line_bytes=64 * 1024)
    return [
        str(line["session_id"]) if line.get("session_id") else None
        for line in islice(lines, MAX_SESSIONS)
        if isinstance(line, dict)
    ]


def _pages(output: Path, path: Path) -> tuple[tuple[str, str], ...]:
    found = []
    for name in PAGES:
        try:
            regular = (path / name).is_file() and not (path / name).is_symlink()
        except OSError:
            regular = False
        if regular:
            found.append((name, quote(os.fsencode(f"{path.name}/{name}"))))  # bytes: a name not UTF-8 quotes too
    return tuple(found)


def row(output: Path, path: Path) -> RunRow:
    """The row of the run folder at ``path``; never raises on what the folder holds."""
    facts = run_facts.read(path)
    sessions = _sessions(path)
    make = functools.partial(RunRow, folder=shown(path.name), facts=facts, pages=_pages(output, path))
    try:
        records = list(store.RunFolder(path).records(strict=True))
    except store.ResultsError as exc:
        reason = shown(str(exc).replace(str(path), path.name))[: run_facts.REASON_CHARS]
        return make(
            sessions=len(sessions), planned=None, done=None, strict=None, cost_usd=None, status=f"unreadable: {reason}"
        )
    ran = {record.session_id for record in records}
    idle = sum(1 for session in sessions if session is not None and session not in ran)
    make = functools.partial(make, sessions=len(sessions) - idle, idle_sessions=idle)
    plan = facts.plan(records)
    summary = stats.summarise([record.to_json() for record in records], plan.keys)
    ledger = Ledger(path)
    priced = spend.summary(records)
    spent = ledger.read() if ledger.present else None
    cost = (spent.total if spent.complete else None) if spent else (priced["usd"] if priced else None)
    if summary.complete:
        status = "complete"
    elif facts.stop is not None and facts.stop.reason:
        status = f"incomplete: {facts.stop.reason}"
    else:
        status = "incomplete: no summary.json (the run is still running, or was killed)"
    return make(
        planned=summary.planned,
        done=summary.done,
        strict=summary.overall.strict,
        cost_usd=cost,
        status=status,
        plan_note=plan.note,
    )


def run_folders(output: Path) -> tuple[list[Path], bool]:
    """The run folders directly in ``output`` (real folders holding run_config.json; ``latest``
    and other links are not followed), and whether the folder had more entries than are looked at."""
    try:
        entries = os.scandir(output)
    except OSError as exc:
        raise store.StoreError(f"cannot read {output}: {exc.strerror or exc}") from None
    with entries:
        seen = list(islice(entries, MAX_RUNS + 1))
    found = []
    for entry in seen[:MAX_RUNS]:
        try:
            if entry.is_dir(follow_symlinks=False) and os.path.isfile(os.path.join(entry.path, store.RUN_CONFIG_FILE)):
                found.append(Path(entry.path))
        except OSError:
            continue
    return found, len(seen) > MAX_RUNS


def rows(output: Path, folders: list[Path]) -> list[RunRow]:
    """The rows of run ``folders`` of ``output``, newest first."""
    return sorted((row(output, path) for path in folders), key=RunRow.age_key, reverse=True)


def started_text(started: _dt.datetime | None) -> str:
    return started.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if started else "unknown"


def cost_text(value: float | None) -> str:
    return "n/a" if value is None else usd_text(value)


def lines(found: list[RunRow]) -> list[str]:
    """The terminal's table: one line per run, then its status (and where its plan came from
    when not from summary.json)."""
    header = ["run", "name", "tags", "started", "sessions", "done/planned", "strict [95% interval]", "cost"]
    table = [
        [
            item.folder,
            item.facts.name or "-",
            ",".join(item.facts.tags) or "-",
            started_text(item.facts.started),
            item.sessions_text,
            "?" if item.planned is None else f"{item.done}/{item.planned}",
            rate_text(item.strict),
            cost_text(item.cost_usd),
        ]
        for item in found
    ]
    widths = [max(len(cells[column]) for cells in [header, *table]) for column in range(len(header))]
    out = ["  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)).rstrip()]
    for item, cells in zip(found, table, strict=True):
        out.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip())
        out.append(f"    {item.status}" + (f"; {item.plan_note}" if item.plan_note else ""))
    return out


@functools.cache
def _templates() -> jinja2.Environment:
    from pytest_gaia2.report import templating

    return templating.environment(templating.PAGE, {"rate": rate_text, "started": started_text, "cost": cost_text})


def render_html(found: list[RunRow], title: str, marker: str) -> str:
    """The output folder's index.html of runs (autoescaped; no script, nothing fetched)."""
    return _templates().get_template("runs.html.j2").render(rows=found, title=title, marker=marker)


def ours(path: Path) -> bool | None:
    """Whether ``path`` is an index.html this command wrote (None: there is no file there). Only
    a regular file that is no link counts, and only its head is read."""
    if not os.path.lexists(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return stat.S_ISREG(os.fstat(fd).st_mode) and MARKER.encode() in handle.read(MARKER_BYTES)


def write_index(output: Path, found: list[RunRow]) -> str:
    """Write OUTPUT/index.html when it is the command's to write; the line that says what happened."""
    output = output.resolve()
    run = enclosing_run(output)
    if run is not None:
        return f"{INDEX_FILE} not written: {output} is inside run folder {run}; list never writes into a run folder"
    target = output / INDEX_FILE
    if ours(target) is False:
        return f"{INDEX_FILE} not written: {target} exists and was not written by pytest-gaia2 list"
    html = render_html(found, f"Gaia2 runs in {shown(output.name)}", MARKER)
    store.write_text(target, html)
    return f"runs page: {target}"
