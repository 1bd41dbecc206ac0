"""Allure results for Gaia2 scenarios, with ``--alluredir`` (the ``pytest-gaia2[allure]`` extra).

allure-pytest is optional: this module imports it only inside :class:`AllureGaia2`'s
methods, so :func:`alluredir_fallback` works without it and the pure parts test alone.

Per test, in the process that ran it (each xdist worker writes its own Allure results):
labels from marks added at collection (:func:`marks`: parent suite ``Gaia2``, suite and
feature = split, sub-suite and story = universe, the scenario's tags); the scenario id as
title; the task and the oracle's expected answer as description; the run's image, model,
provider and judge as parameters; the attempt's files as attachments, each cut to
``ATTACHMENT_CAP`` and masked, and its trace.html (:mod:`~pytest_gaia2.report.trace_page`) whole, as HTML.

Per run, on the controller at the very end (``--clean-alluredir`` empties the folder at
start-up, so both files survive it): ``categories.json`` (:mod:`~pytest_gaia2.report.allure_categories`)
and ``environment.properties``, merged with what earlier runs wrote there
(:mod:`~pytest_gaia2.report.allure_environment`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Generator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.plan.items import ITEM_PARAMETER, PlannedItem
from pytest_gaia2.plan.scenarios import MAX_SCENARIO_BYTES, Scenario, arg_value
from pytest_gaia2.plugin import private_api
from pytest_gaia2.plugin.item import planned_item
from pytest_gaia2.report.allure_categories import CATEGORIES_FILE, categories
from pytest_gaia2.report.allure_environment import judge_text, write_environment
from pytest_gaia2.report.allure_flaky import RUN_PARAMETER, disagreeing, mark_flaky
from pytest_gaia2.report.trace_page import TRACE_FILE
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.redact import MASK
from pytest_gaia2.store.safejson import JsonReadError, read_json_file

if TYPE_CHECKING:
    from pytest_gaia2.run.context import RunContext

ATTACHMENT_CAP = 256 * 1024
"""Bytes kept of each attached file: a runaway log must not bloat the report."""

FILES: tuple[str, ...] = (
    "agent_response.txt",
    "events.jsonl",
    "daemon_status.json",
    "daemon_judgments.jsonl",
    "entrypoint.log",
    "eventd.log",
    "adapter.log",
    "openclaw.log",
    "container.log",
    "trace.jsonl",
)
"""The attempt's files in reading order; the record itself is attached as result.json."""
TRACE_ATTACHMENT_CAP = 16 * 2**20
"""trace.html is attached whole (a cut page would not render); it is bounded when written,
so only a page someone else put there can pass this."""

PLUGIN_NAME = "gaia2-allure"
NO_UNIVERSE = "no universe"
ALLURE_MISSING = "--alluredir needs allure-pytest: pip install 'pytest-gaia2[allure]'"

_SETUP_STARTED = pytest.StashKey[float]()

# -- labels, title, description, parameters ----------------------------------------------------


def marks(item: PlannedItem) -> list[pytest.MarkDecorator]:
    """Allure labels as ``allure_label`` marks, added at collection: suites, behaviours, tags."""
    universe = item.universe or NO_UNIVERSE
    labels = [
        ("parentSuite", "Gaia2"),
        ("suite", item.split),
        ("subSuite", universe),
        ("feature", item.split),
        ("story", universe),
    ]
    found = [pytest.mark.allure_label(value, label_type=kind) for kind, value in labels]
    if item.scenario and item.scenario.tags:
        found.append(pytest.mark.allure_label(*item.scenario.tags, label_type="tag"))
    return found


def title(item: PlannedItem, function: str) -> str:
    """The scenario id, with the repeat when repeated; a user's test also shows its name."""
    name = f"{item.name} (run {item.repeat})" if item.repeats > 1 else item.name
    return name if function == "test_scenario" else f"{function}: {name}"


def oracle_answer(scenario: Mapping[str, Any]) -> str | None:
    """The content of the oracle's last ``send_message_to_user`` (an AGENT event of the
    AgentUserInterface app): the answer the judge expects, found as upstream's runner finds
    the task."""
    answer = None
    events = scenario.get("events")
    for event in events if isinstance(events, list) else ():
        action = event.get("action") if isinstance(event, dict) else None
        if not isinstance(action, dict) or event.get("event_type", "AGENT") != "AGENT":
            continue
        function = action.get("function") or action.get("function_name")
        if action.get("app") == "AgentUserInterface" and function == "send_message_to_user":
            content = arg_value(action.get("args"), "content")
            answer = str(content) if content is not None else answer
    return answer


def read_oracle_answer(path: Path) -> str | None:
    """The expected answer from a scenario file, read with collection's bounds; None when it
    cannot be read any more (it parsed at collection)."""
    try:
        data = read_json_file(path, max_bytes=MAX_SCENARIO_BYTES)
    except JsonReadError:
        return None
    return oracle_answer(data) if isinstance(data, dict) else None


_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: str) -> str:
    """Plain text as Markdown that renders as itself: every ASCII punctuation escaped (no
    markup, links or raw HTML from a scenario file reaches the report), lines kept."""
    return "  \n".join(_PUNCTUATION.sub(r"\\\1", line.strip()) for line in text.splitlines())


def description(task: str, answer: str | None, intro: str = "") -> str:
    """The description (Markdown): the user's task and the oracle's answer, as plain text."""
    expected = markdown_text(answer) if answer else "_The oracle sends no message to the user._"
    parts = [markdown_text(intro)] if intro else []
    parts += [
        "**Task**",
        markdown_text(task) or "_none found_",
        "**Expected answer** (the oracle's last message to the user)",
        expected,
    ]
    return "\n\n".join(parts)


class Parameter(NamedTuple):
    name: str
    value: str
    masked: bool = False
    excluded: bool = False


def parameters(settings: Mapping[str, Any], image_id: str | None) -> list[Parameter]:
    """The run's parameters, from ``settings.public_dict`` (secret-looking env already masked).

    The image id changes with every rebuild, so it stays out of Allure's history id; a
    masked ``--gaia2-env`` value is marked so Allure hides it too.
    """
    shown = [
        Parameter("image", str(settings.get("image"))),
        Parameter("image id", image_id or "unknown", excluded=True),
        Parameter("model", str(settings.get("model") or "none")),
        Parameter("provider", str(settings.get("provider") or "none")),
        Parameter("judge", judge_text(settings)),
    ]
    shown += [
        Parameter(f"env {name}", str(value), masked=value == MASK)
        for name, value in (settings.get("extra_env") or {}).items()
    ]
    return shown


# -- attachments -----------------------------------------------------------------------------


def _size(count: int) -> str:
    if count >= 2**20:
        return f"{count / 2**20:.1f} MiB"
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} B"


def read_capped(path: Path, *, keep_end: bool, cap: int = ATTACHMENT_CAP) -> tuple[bytes, int]:
    """At most ``cap`` bytes of a file (its end or its start) and its size; the rest is never read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        if keep_end and size > cap:
            handle.seek(size - cap)
        return handle.read(cap), size


def capped_text(data: bytes, size: int, where: str, *, keep_end: bool, cap: int = ATTACHMENT_CAP) -> tuple[str, bool]:
    """At most ``cap`` bytes of a file of ``size`` bytes as text; when cut, a first line states
    the cap and where the whole file is, so a reader sees it before the text.

    Logs keep their end (where the error is), everything else its start.
    """
    kept = data[-cap:] if keep_end else data[:cap]
    text = kept.decode("utf-8", errors="replace")
    if size <= cap:
        return text, False
    part = "last" if keep_end else "first"
    note = (
        f"[pytest-gaia2: attachment cut to the {part} {_size(cap)} of {_size(size)} "
        f"({size} bytes); the whole file is {where}]"
    )
    return f"{note}\n{text}", True


# -- the run's files -------------------------------------------------------------------------


def write_run_files(alluredir: Path, run_config: Mapping[str, Any]) -> None:
    """categories.json, and environment.properties merged with what earlier runs wrote there."""
    write_environment(alluredir, run_config)
    store.write_json(alluredir / CATEGORIES_FILE, categories())


# -- the plugin ------------------------------------------------------------------------------


def cost_parameters(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the attempt cost, as Allure parameters (none when it left no trace)."""
    usage = record.get("usage") or {}
    if not usage:
        return []
    cost = record.get("cost_usd")
    return [
        ("cost", "unknown" if cost is None else f"${cost:.4f}"),
        (
            "tokens",
            f"{usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out, {usage.get('calls', 0)} calls",
        ),
    ]


class AllureGaia2:
    """Registered by :func:`register` when ``--alluredir`` is given; one per process."""

    def __init__(self, context: RunContext) -> None:
        self.context = context

    @cached_property
    def _parameters(self) -> list[Parameter]:
        return parameters(settings_mod.public_dict(self.context.settings), self.context.image_id())

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Parameters before allure-pytest adds its own: it skips names already present, so
        the item parameter stays hidden instead of showing its repr."""
        import allure
        from allure_commons.types import ParameterMode

        planned = planned_item(item)
        if planned is None:
            return
        item.stash[_SETUP_STARTED] = time.time()
        allure.dynamic.parameter(ITEM_PARAMETER, planned.key, mode=ParameterMode.HIDDEN)
        allure.dynamic.parameter(RUN_PARAMETER, self.context.run_id, excluded=True, mode=ParameterMode.HIDDEN)
        for shown in self._parameters:
            allure.dynamic.parameter(
                shown.name,
                shown.value,
                excluded=shown.excluded or None,
                mode=ParameterMode.MASKED if shown.masked else None,
            )

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """On the report that carries the record (setup for errors, call otherwise): title,
        description, attachments and the test's real duration. tryfirst puts this wrapper
        outside the plugin's own, so the record is on the report after ``yield``; errors are
        raised in setup, so attaching here puts the files on broken tests too."""
        import allure

        report = yield
        record = getattr(report, "gaia2_record", None)
        planned = planned_item(item)
        if record is None or planned is None:
            return report
        function = getattr(item, "originalname", item.name)
        allure.dynamic.title(title(planned, function))
        if planned.scenario is not None:
            # allure-pytest set the test function's docstring; a user's test keeps it first.
            own = "" if function == "test_scenario" else getattr(getattr(item, "function", None), "__doc__", "")
            allure.dynamic.description(self._description(planned.scenario, own or ""))
        self._attach(record)
        for name, value in cost_parameters(record):
            allure.dynamic.parameter(name, value, excluded=True)  # spend differs run to run: not history
        self._set_duration(item)
        return report

    def _description(self, scenario: Scenario, intro: str) -> str:
        """The scenario file is read again only here, when Allure is on, and bounded."""
        redact = self.context.redactor.redact
        answer = read_oracle_answer(scenario.path)
        return description(redact(scenario.task), redact(answer) if answer else None, intro=redact(intro))

    def _attach(self, record: Mapping[str, Any]) -> None:
        """result.json (the record) and the attempt's files, each capped and masked."""
        import allure
        from allure_commons.types import AttachmentType

        run_folder = self.context.folder.path if self.context.folder is not None else None
        folder = run_folder / record["folder"] if run_folder is not None and record.get("folder") else None
        suffix = f" (attempt {record['attempt']})" if (record.get("attempt") or 1) > 1 else ""
        body = json.dumps(record, indent=2, ensure_ascii=False, default=str).encode("utf-8")
        where = str(folder / store.RESULT_FILE) if folder is not None else "in results.jsonl"
        files = [(store.RESULT_FILE, body, len(body), where)]
        if folder is not None:
            for name in FILES:
                path = folder / name
                if path.is_file():
                    files.append((name, *read_capped(path, keep_end=name.endswith(".log")), str(path)))
        for name, data, size, where in files:
            text, cut = capped_text(data, size, where, keep_end=name.endswith(".log"))
            kind = AttachmentType.JSON if name.endswith(".json") and not cut else AttachmentType.TEXT
            allure.attach(self.context.redactor.redact(text), name=f"{name}{suffix}", attachment_type=kind)
        if folder is not None:
            self._attach_trace(folder / TRACE_FILE, suffix)

    def _attach_trace(self, path: Path, suffix: str) -> None:
        """The attempt's trace.html as an HTML attachment, whole, when it was written."""
        import allure
        from allure_commons.types import AttachmentType

        try:
            if not path.is_file() or path.stat().st_size > TRACE_ATTACHMENT_CAP:
                return
            page = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        allure.attach(
            self.context.redactor.redact(page), name=f"{TRACE_FILE}{suffix}", attachment_type=AttachmentType.HTML
        )

    def _set_duration(self, item: pytest.Item) -> None:
        """allure-pytest times only the call phase, but a scenario runs in its setup fixtures;
        the test's span in the report should be the scenario's."""
        if _SETUP_STARTED in item.stash:
            private_api.set_allure_span(item.config, item.stash[_SETUP_STARTED], time.time())

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """categories.json and environment.properties, once per run, on the controller; the
        results of scenarios whose repeats disagree marked flaky."""
        context = self.context
        if context.is_worker or not context.prepared or context.folder is None:
            return
        run_config = store.read_json(context.folder.file(store.RUN_CONFIG_FILE))
        alluredir = session.config.invocation_params.dir / session.config.option.allure_report_dir
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        try:
            write_run_files(alluredir, run_config if isinstance(run_config, dict) else {})
            keys = disagreeing(context.folder.records())
            marked = mark_flaky(alluredir, context.run_id, keys, ITEM_PARAMETER)
        except store.StoreError as exc:
            if reporter is not None:
                reporter.write_line(f"gaia2: Allure: {exc}")
            return
        if marked and reporter is not None:
            reporter.write_line(f"gaia2: Allure: {marked} results of scenarios whose repeats disagree marked flaky")


def register(config: pytest.Config, context: RunContext) -> None:
    """Called from the plugin's ``pytest_configure`` when ``--alluredir`` is given."""
    config.pluginmanager.register(AllureGaia2(context), PLUGIN_NAME)


def _needs_allure(value: str) -> str:
    raise pytest.UsageError(ALLURE_MISSING)


def alluredir_fallback(parser: pytest.Parser) -> None:
    """``--alluredir`` when allure-pytest is not installed, so using it stops the run with the
    fix instead of argparse's "unrecognized arguments". Its value is checked as the command
    line is parsed, which raises the UsageError before any configure hook runs."""
    parser.getgroup("reporting").addoption(
        "--alluredir",
        dest="allure_report_dir",
        metavar="DIR",
        type=_needs_allure,
        help="Allure results folder (needs allure-pytest: pip install 'pytest-gaia2[allure]')",
    )
