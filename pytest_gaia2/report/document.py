"""``pytest-gaia2 report RUN [RUN...]``: report.md and report.html, with plots, in each run folder.

Every number comes from :func:`stats.summarise` over the folder's records and planned keys
(so the report and summary.json cannot disagree), cost from :mod:`spend`, plots from
:mod:`plots`; this module only gathers what the templates show: the breakdown per app (from
each record's ``apps``, and summary.json's for what did not run), the slowest scenarios, and the
run's details, every failure and error with the judge's reason or the error's category and a link
to its trace.html, each re-judge's agreement and kappa, and what the money bought (cost per passed scenario, spend wasted on errors
and re-runs). ``write_report`` is also what ``pytest --gaia2-report`` calls at the end of a
run; with an Allure results folder the plots and report.html become one Allure result of
their own.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pytest_gaia2.cost import spend
from pytest_gaia2.cost.budget import Ledger
from pytest_gaia2.report import plots, rejudged, run_facts, stats, wire_figures
from pytest_gaia2.report.allure_environment import environment
from pytest_gaia2.report.markdown import code_span, plain
from pytest_gaia2.report.plots import MissingLibrary, Plot
from pytest_gaia2.report.rates import Rate, percent, percent_number
from pytest_gaia2.report.rows import natural_key
from pytest_gaia2.report.run_facts import Plan, RunFacts
from pytest_gaia2.report.summary import coverage
from pytest_gaia2.report.trace_page import TRACE_FILE
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import Redactor, secret_values

if TYPE_CHECKING:
    import jinja2

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
PLOTS_DIR = "report"
SLOWEST = 10
"""Scenario runs listed as the slowest."""
MAX_PROBLEMS = 500
"""Failures and errors listed by name; more are counted."""
REASON_CHARS = 300
"""The judge's reason or the error, cut to this many characters in the table."""
SESSION_LINE_BYTES = 64 * 1024
"""A sessions.jsonl line is read up to this size (a command line and a session's provenance)."""
APPS_UNKNOWN = "apps unknown"
"""The app row of scenarios whose apps are not on record (a record or summary.json of an earlier
version, a scenario file that could not be parsed)."""
ALLURE_MISSING = "--alluredir needs allure-python-commons: pip install 'pytest-gaia2[allure]'"
ALLURE_NAME = "gaia2 run report"


@dataclass(frozen=True)
class Problem:
    """One failed or errored scenario run: what the judge said or what broke, and where to look."""

    key: str
    outcome: str
    category: str
    reason: str
    trace: str | None
    """trace.html relative to the run folder, only when that file exists inside it."""
    runs: str | None
    """The scenario's runs as a pattern (``PFP``) when it ran more than once: flaky when mixed."""


@dataclass(frozen=True)
class Money:
    """What the run's money bought."""

    per_passed_usd: float | None
    wasted_usd: float
    errors_usd: float
    reruns_usd: float | None


@dataclass(frozen=True)
class RunReport:
    """What the templates show about one run folder."""

    name: str
    details: dict[str, str]
    command: str
    """The latest session's command (a resumed or grown run's last)."""
    summary: stats.Summary
    apps: tuple[stats.GroupStats, ...]
    cost: dict[str, Any] | None
    ledger_usd: float | None
    slowest: tuple[AttemptRecord, ...]
    plots: tuple[Plot, ...]
    problems: tuple[Problem, ...] = ()
    problems_left_out: int = 0
    money: Money | None = None
    rejudges: tuple[rejudged.JudgeResult, ...] = ()
    # the run's name and tags, why it stopped (summary.json) and what ran per stratum: a reader
    # of a run stopped early sees what is missing and why before any rate
    facts: RunFacts | None = None
    coverage: dict[str, Any] | None = None
    plan: Plan | None = None
    first_command: str = ""
    """The first session's command, when the latest session's differs."""
    """Where the planned keys came from (summary.json's plan, or why not)."""
    wire: dict[str, Any] | None = None
    """The model gateway's figures (:func:`wire_figures.run_page`), or that it was off."""


def scenario_apps(
    records: Sequence[AttemptRecord], not_run: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, tuple[str, ...] | None]:
    """Each record key's apps, as its record carries them, and each key that did not run's, as
    summary.json gives them (``not_run``); None for a record of a version that kept no apps."""
    apps: dict[str, tuple[str, ...] | None] = dict(not_run or {})
    apps.update({record.key: None if record.apps is None else tuple(record.apps) for record in records})
    return apps


def app_breakdown(
    records: Sequence[AttemptRecord], planned: Sequence[str] | None, apps: dict[str, tuple[str, ...] | None]
) -> tuple[stats.GroupStats, ...]:
    """Counts and rates per app over the scenarios that use it (a scenario counts for each of
    its apps), most used first; planned keys without a record and unreadable files go to
    ``apps unknown``."""
    groups: dict[str, list[str]] = {}
    for key in dict.fromkeys([*(planned or ()), *(record.key for record in records)]):
        for app in apps.get(key) or (APPS_UNKNOWN,):
            groups.setdefault(app, []).append(key)
    rows = []
    for app, keys in groups.items():
        chosen = set(keys)
        subset = [record.to_json() for record in records if record.key in chosen]
        plan = [key for key in planned or () if key in chosen]
        rows.append(replace(stats.summarise(subset, plan if planned is not None else None).overall, name=app))
    return tuple(
        sorted(rows, key=lambda row: (row.name == APPS_UNKNOWN, -(row.total + row.not_run), natural_key(row.name)))
    )


def trace_link(run: Path, record: AttemptRecord) -> str | None:
    """``<folder>/trace.html`` when the record's folder holds one as a regular file inside the run
    folder (the record comes from a results folder: its path is checked, never trusted)."""
    if not record.folder:
        return None
    try:
        path = store.inside(run, *Path(record.folder).parts, TRACE_FILE)
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
    except (store.StoreError, OSError, ValueError):
        return None
    return path.relative_to(run).as_posix()


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def problems(run: Path, records: Sequence[AttemptRecord], summary: stats.Summary) -> list[Problem]:
    """Every failed or errored scenario run (its latest attempt), in key order."""
    latest = {record.key: record for record in records}
    patterns = summary.repeats.patterns if summary.repeats else {}
    found = [
        Problem(
            key=record.key,
            outcome=record.outcome,
            category="judge" if record.outcome == "failed" else (record.error_category or "error"),
            reason=_cut(record.message),
            trace=trace_link(run, record),
            runs=patterns.get(record.scenario_id),
        )
        for record in latest.values()
        if record.outcome in ("failed", "error")
    ]
    return sorted(found, key=lambda problem: (problem.outcome != "failed", natural_key(problem.key)))


def money(records: Sequence[AttemptRecord], ledger_usd: float | None) -> Money | None:
    """Cost per passed scenario run, and spend that bought no verdict: errored attempts kept as the
    result, plus (from the ledger of every attempt) attempts a later attempt replaced."""
    latest = list({record.key: record for record in records}.values())
    priced = [record.cost_usd for record in latest if record.cost_usd is not None]
    if not priced and ledger_usd is None:
        return None
    passed = sum(record.outcome == "passed" for record in latest)
    kept = sum(priced)
    errors = sum(record.cost_usd or 0.0 for record in latest if record.outcome == "error")
    reruns = max(0.0, ledger_usd - kept) if ledger_usd is not None else None
    total = ledger_usd if ledger_usd is not None else kept
    return Money(
        per_passed_usd=total / passed if passed else None,
        wasted_usd=errors + (reruns or 0.0),
        errors_usd=errors,
        reruns_usd=reruns,
    )


def judged_verdicts(records: Sequence[AttemptRecord]) -> dict[str, bool]:
    """Each key's own verdict (its latest attempt), for the keys the run's judge judged."""
    latest = {record.key: record for record in records}
    return {key: record.outcome == "passed" for key, record in latest.items() if record.outcome in ("passed", "failed")}


def commands(folder: store.RunFolder, run_config: dict[str, Any]) -> tuple[str, str]:
    """The first session's command (run_config.json) and the latest's (sessions.jsonl)."""
    first = str(run_config.get("command") or "")
    sessions = store.read_jsonl(folder.file(store.SESSIONS_FILE), max_line_bytes=SESSION_LINE_BYTES)
    latest = next((str(line["command"]) for line in reversed(sessions) if line.get("command")), first)
    return first, latest


def build(folder: store.RunFolder) -> RunReport:
    """The report's content, plots included (matplotlib is checked first)."""
    plots.require()
    run_config = store.read_json(folder.file(store.RUN_CONFIG_FILE))
    run_config = run_config if isinstance(run_config, dict) else {}
    records = list(folder.records(strict=True))
    facts = run_facts.read(folder.path, run_config)
    plan = facts.plan(records)
    planned = plan.keys
    summary = stats.summarise([record.to_json() for record in records], planned)
    timed = sorted(
        (record for record in records if record.wall_time_s is not None),
        key=lambda record: -(record.wall_time_s or 0.0),
    )
    usd = [record.cost_usd for record in records if record.cost_usd is not None]
    ledger = Ledger(folder.path)
    ledger_usd = ledger.total() if ledger.present else None
    listed = problems(folder.path, records, summary)
    first, latest = commands(folder, run_config)
    return RunReport(
        name=folder.path.resolve().name,
        details=environment(run_config),
        command=latest,
        first_command=first if first != latest else "",
        summary=summary,
        apps=app_breakdown(records, planned, scenario_apps(records, facts.not_run_apps)),
        cost=spend.summary(records),
        ledger_usd=ledger_usd,
        slowest=tuple(timed[:SLOWEST]),
        plots=tuple(
            plots.report_plots(
                summary.overall,
                summary.splits,
                summary.error_groups,
                [record.wall_time_s or 0.0 for record in timed],
                usd,
            )
        ),
        problems=tuple(listed[:MAX_PROBLEMS]),
        problems_left_out=max(0, len(listed) - MAX_PROBLEMS),
        money=money(records, ledger_usd),
        rejudges=tuple(rejudged.read(folder.path, judged_verdicts(records))),
        facts=facts,
        coverage=coverage(summary),
        plan=plan,
        wire=wire_figures.run_page(run_config, records, wire_figures.earlier_attempts(folder.path, records)),
    )


# -- rendering ---------------------------------------------------------------------------------


def _rate(rate: Rate | None) -> str:
    """``83.8%``, or ``n/a`` for a rate over nothing."""
    return "n/a" if rate is None or rate.value is None else percent(rate.value)


def _interval(rate: Rate) -> str:
    """``[77.3–88.7]`` (percent), empty for a rate over nothing."""
    return "" if rate.value is None else f"[{percent_number(rate.low)}–{percent_number(rate.high)}]"


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else percent(value)


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _design(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _kappa(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@functools.cache
def _templates() -> jinja2.Environment:
    from pytest_gaia2.report import templating

    return templating.environment(
        templating.DOCUMENT,
        {
            "rate": _rate,
            "interval": _interval,
            "fraction": _fraction,
            "seconds": _seconds,
            "code": code_span,
            "usd": _usd,
            "design": _design,
            "kappa": _kappa,
            "cell": plain,
            "href": quote,
            "percent_number": percent_number,
            "amount": run_facts.amount,
        },
    )


def render(report: RunReport, uris: dict[str, str], files: dict[str, str]) -> tuple[str, str]:
    """(report.md, report.html): ``uris`` embed the plots in the HTML, ``files`` link them from
    the Markdown. Autoescaping is on for the HTML; the Markdown puts free text in code spans."""
    env = _templates()
    values = {"report": report, "summary": report.summary, "uris": uris, "files": files, "apps_unknown": APPS_UNKNOWN}
    return (env.get_template("report.md.j2").render(values), env.get_template("report.html.j2").render(values))


# -- writing -----------------------------------------------------------------------------------


def attach_to_allure(alluredir: Path, report: RunReport, html: Path, pngs: Sequence[tuple[Plot, Path]]) -> None:
    """One Allure result named ``gaia2 run report <run>`` carrying report.html and the plots.

    Its status is ``unknown``: it is not a scenario, so it adds to no pass or fail count; a
    report written again for the same run replaces the earlier one in Allure (same history id).
    """
    try:
        from allure_commons.logger import AllureFileLogger
        from allure_commons.model2 import (
            ATTACHMENT_PATTERN,
            Attachment,
            Label,
            Status,
            StatusDetails,
            TestResult,
        )
        from allure_commons.types import AttachmentType
        from allure_commons.utils import md5, now, uuid4
    except ImportError:
        raise MissingLibrary(ALLURE_MISSING) from None
    logger = AllureFileLogger(alluredir)
    attachments = []
    for name, path, kind in [
        ("report.html", html, AttachmentType.HTML),
        *((f"{plot.title}.png", file, AttachmentType.PNG) for plot, file in pngs),
    ]:
        source = ATTACHMENT_PATTERN.format(prefix=uuid4(), ext=kind.extension)
        logger.report_attached_file(path, source)
        attachments.append(Attachment(name=name, source=source, type=kind.mime_type))
    summary = report.summary
    message = (
        f"not a scenario: the report of run {report.name}: strict {_rate(summary.overall.strict)}, "
        f"judged-only {_rate(summary.overall.judged)}, {summary.done} of {summary.planned} done"
    )
    stamp = now()
    logger.report_result(
        TestResult(
            uuid=uuid4(),
            name=f"{ALLURE_NAME} {report.name}",
            fullName=f"gaia2.report.{report.name}",
            historyId=md5(ALLURE_NAME, report.details.get("run.id", report.name)),
            status=Status.UNKNOWN,
            statusDetails=StatusDetails(message=message),
            attachments=attachments,
            start=stamp,
            stop=stamp,
            labels=[Label(name="parentSuite", value="Gaia2"), Label(name="suite", value="run report")],
        )
    )


def write_report(folder: Path, alluredir: Path | None = None) -> list[Path]:
    """Write ``report.md``, ``report.html`` and ``report/<plot>.png`` into the run folder (or the
    output folder's latest run); the paths written. With ``alluredir``, also one Allure result
    (see :func:`attach_to_allure`).

    Raises :class:`store.StoreError` (not a run folder, cannot write) or
    :class:`plots.MissingLibrary` (matplotlib, or allure-python-commons with ``alluredir``),
    before anything is written.
    """
    run = store.RunFolder.existing(folder)
    report = build(run)
    pngs = [(plot, store.inside(run.path, PLOTS_DIR, f"{plot.name}.png")) for plot in report.plots]
    for plot, path in pngs:
        store.write_bytes(path, plot.png)
    redactor = Redactor(secret_values(os.environ))  # run_config is masked already; a key in this shell too
    markdown, html = render(
        report,
        {plot.name: plots.data_uri(plot) for plot in report.plots},
        {plot.name: path.relative_to(run.path).as_posix() for plot, path in pngs},
    )
    written = [run.file(REPORT_MD), run.file(REPORT_HTML)]
    store.write_text(written[0], redactor.redact(markdown))
    store.write_text(written[1], redactor.redact(html))
    if alluredir is not None:
        attach_to_allure(alluredir, report, written[1], pngs)
    return written + [path for _, path in pngs]
