"""pytest hooks and fixtures for pytest-gaia2: they only wire; the run context does the work.

Options live in ``config.options`` (read from pytest in ``plugin.pytest_options``), the run in
``run.context.RunContext`` (its pytest half in ``plugin.controller.Controller``), each item's attempts
in ``run.scenario_runs``, one attempt's life in ``run.attempt``, the records and the summary in
``report.book``, Allure in ``plugin.allure``; the hooks this plugin declares in ``plugin.newhooks``.
An ``OptionError`` from below becomes pytest's usage error here (``ERROR: ...``, exit status 4).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_gaia2.config.splits import SPLITS
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plugin import joined_values, private_api, pytest_options

if TYPE_CHECKING:
    from pytest_gaia2.plan.items import PlannedItem
    from pytest_gaia2.plan.scenarios import Scenario
    from pytest_gaia2.plugin.controller import Controller
    from pytest_gaia2.run.attempt import ScenarioAttempt
    from pytest_gaia2.run.evidence import ScenarioResult
    from pytest_gaia2.run.interrupts import WindDown

# Only what every pytest run needs is imported above: a project that never uses the plugin
# pays for its options and markers, not for the run's modules (imported in pytest_configure).
CONTEXT_KEY = pytest.StashKey["Controller | None"]()
ITEM_KEY = pytest.StashKey["PlannedItem"]()
WIND_DOWN_KEY: pytest.StashKey[WindDown] = pytest.StashKey()
RESULT_KEY = pytest.StashKey[Any]()
EXIT_STATUS_KEY = pytest.StashKey[int]()
RUN_FOLDER_KEY = pytest.StashKey[dict[Path, bool]]()
ATTEMPT_KEY = pytest.StashKey[Any]()
COLLECTED_KEY = pytest.StashKey[bool]()
USAGE_ERROR_OUTPUT = "gaia2_usage_error"
"""The ``workeroutput`` key an xdist worker hands a selection's usage error over in."""
NODE_PREFIX = "gaia2"


@contextmanager
def _usage_errors() -> Iterator[None]:
    """A value that can never work stops the run as pytest's usage error, with the same words
    (escaped: they may name a folder or quote a file from anywhere)."""
    try:
        yield
    except OptionError as exc:
        from pytest_gaia2.store.redact import printable

        raise pytest.UsageError(printable(str(exc))) from None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The hooks users implement: :mod:`pytest_gaia2.plugin.newhooks`."""
    from pytest_gaia2.plugin import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    pytest_options.add_options(parser)
    if importlib.util.find_spec("allure_pytest") is None:
        from pytest_gaia2.plugin.allure import alluredir_fallback

        alluredir_fallback(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    """``--gaia2-output DIR`` must mean what ``--gaia2-output=DIR`` means (see joined_values)."""
    return joined_values.rerun_with_joined_values(config)


def _context(config: pytest.Config) -> Controller | None:
    """The run context, or None in a run that cannot collect a scenario (the plugin idles)."""
    return config.stash.get(CONTEXT_KEY, None)


@pytest.hookimpl(tryfirst=True)
@_usage_errors()
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gaia2: a Gaia2 scenario run in its own container")
    for split in SPLITS:
        config.addinivalue_line("markers", f"{split}_split: Gaia2 scenarios of the {split} split")
    if not pytest_options.may_collect(config):
        return
    from pytest_gaia2.plan.items import extra_split_markers, universe_markers
    from pytest_gaia2.plugin.controller import Controller

    context = Controller(config)
    dist = getattr(config.option, "dist", "no")
    if context.active and context.values.in_flight > 1 and context.invocation.processes and dist != "load":
        raise OptionError(
            f"--gaia2-in-flight {context.values.in_flight} needs xdist's --dist load (the default with -n), "
            f"not --dist {dist}: another mode may hand an item started ahead to another worker"
        )
    config.stash[CONTEXT_KEY] = context
    config.pluginmanager.register(context, "gaia2-run")
    for marker in extra_split_markers(context.plan.items()):
        config.addinivalue_line("markers", f"{marker}: Gaia2 scenarios from a folder of that name")
    for marker in universe_markers(context.plan.items()):
        config.addinivalue_line("markers", f"{marker}: Gaia2 scenarios of {marker}")
    if context.active:
        from pytest_gaia2.run.interrupts import FORWARD_ECHO, WindDown

        config.stash[WIND_DOWN_KEY] = WindDown.install(echo=FORWARD_ECHO if context.is_worker else 0.0)
    if context.active and getattr(config.option, "allure_report_dir", None):
        from pytest_gaia2.plugin import allure as allure_report

        allure_report.register(config, context)


@_usage_errors()
def pytest_report_header(config: pytest.Config) -> list[str]:
    context = _context(config)
    return context.header_lines() if context else []


@pytest.hookimpl(optionalhook=True)
@_usage_errors()
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker shares the session, the run and its folder."""
    context = _context(node.config)
    if context:
        node.workerinput.update(context.worker_input(node.gateway.id))


@pytest.hookimpl(tryfirst=True)
@_usage_errors()
def pytest_sessionstart(session: pytest.Session) -> None:
    context = _context(session.config)
    if context:
        context.begin()


class ScenarioModule(pytest.Module):
    """The plugin's own test module for one split, collected as ``gaia2/<split>`` (JUnit
    classname ``gaia2.<split>``)."""

    split: str = ""
    planned: list[PlannedItem] = []
    """The split's planned items -m can select: its items."""


@pytest.hookimpl(tryfirst=True)
@_usage_errors()
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the scenario items before -k/-m deselection runs, so both work on them."""
    context = _context(config)
    if not context:
        return
    from pytest_gaia2.plugin import item as scenario_item

    selectable = _selectable(config, context.plan.items())
    for split in dict.fromkeys(item.split for item in selectable):
        nodeid = f"{NODE_PREFIX}/{split}"
        module = ScenarioModule.from_parent(session, path=Path(scenario_item.__file__), nodeid=nodeid, name=nodeid)
        module.obj, module.split = scenario_item, split  # the module object given, not imported by path
        module.planned = [item for item in selectable if item.split == split]
        items.extend(item for item in session.genitems(module) if isinstance(item, pytest.Item))


def _selectable(config: pytest.Config, planned: list[PlannedItem]) -> list[PlannedItem]:
    """The planned items -m can select: ``-m search_split`` creates no item of another split, so
    none is collected only to be "deselected" (which reads as lost). pytest's -m still decides."""
    evaluate = private_api.mark_expression(config.option.markexpr) if config.option.markexpr else None
    if evaluate is None:
        return planned
    from pytest_gaia2.plan.selection import could_match

    owned = frozenset(name for item in planned for name in item.marker_names())
    return [item for item in planned if could_match(evaluate, owned, item.marker_names())]


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
@_usage_errors()
def pytest_narrow_after_deselection(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--gaia2-sample and --gaia2-first-n choose among what -k, -m and --deselect left."""
    context = _context(config)
    if not context:
        return
    from pytest_gaia2.plugin.item import planned_item

    planned = {id(item): found for item in items if (found := planned_item(item)) is not None}
    try:
        if not planned:
            _nothing_selected(config, items, context)
            return
        keep = context.plan.narrow(list(planned.values()))
    except OptionError as exc:
        _refuse_selection(config, context, items, exc)
        return
    dropped = [item for item in items if id(item) in planned and planned[id(item)].key not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]
    if context.values.order == "interleaved" and not context.values.sequence:  # chains keep their order
        from pytest_gaia2.plan.items import reorder

        items[:] = reorder(items, lambda item: planned.get(id(item)), context.values.seed)
    if context.values.probe:
        from pytest_gaia2.cost.projection import probe_first

        key_of = {id(item): planned[id(item)].key for item in items if id(item) in planned}
        keys = context.plan.choose_probe([planned[id(item)] for item in items if id(item) in planned])
        items[:] = probe_first(items, keys, key_of)


def _nothing_selected(config: pytest.Config, items: list[pytest.Item], context: Controller) -> None:
    """-m or -k that leaves no test at all of a run with scenarios is a usage error that says why."""
    from pytest_gaia2.plan.items import extra_split_markers, universe_markers
    from pytest_gaia2.plan.selection import nothing_selected

    planned = context.plan.items()
    if items or not planned:
        return
    markers = sorted({item.split_marker for item in planned}) + universe_markers(planned)
    names = sorted({item.split for item in planned} | set(extra_split_markers(planned)))
    for option, expression in (("-m", config.option.markexpr), ("-k", config.option.keyword)):
        if expression:
            raise OptionError(nothing_selected(option, expression, markers, names if option == "-k" else []))


def _refuse_selection(config: pytest.Config, context: Controller, items: list[pytest.Item], exc: OptionError) -> None:
    """A selection that cannot run stops the run as a usage error, with one message whatever
    the process layout: nothing is collected (so nothing is dealt out, and no pre-flight or run
    folder follows) and the message goes to the process that owns the run: it is that process
    serially; an xdist worker hands it over in ``workeroutput`` (:func:`pytest_testnodedown`),
    so pytest does not end the worker with an INTERNALERROR. Raising here would not stop
    pytest from calling pytest_collection_finish, nor xdist from dealing out what was collected."""
    from pytest_gaia2.run.terms import RunStopped
    from pytest_gaia2.store.redact import printable

    items.clear()
    message = printable(str(exc))
    worker_output = getattr(config, "workeroutput", None)
    if worker_output is not None:
        worker_output[USAGE_ERROR_OUTPUT] = message
    elif context.stopped is None:
        context.stopped = RunStopped([message], code=pytest.ExitCode.USAGE_ERROR)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Never collect in or below a run folder (run_config.json and results.jsonl), in any project and
    whatever the options, also when pytest is started there or given a path in it: what
    containers handed back lies there; and an output folder of many runs is tens of thousands
    of files that pytest (and each xdist worker) would walk at every start."""
    from pytest_gaia2.store.folder import holds_a_run

    known = config.stash.setdefault(RUN_FOLDER_KEY, {})  # per folder, for this session only
    unknown: list[Path] = []
    folder = collection_path
    while folder not in known:
        unknown.append(folder)
        is_run = holds_a_run(folder, both=True)
        if is_run or folder.parent == folder:
            known[folder] = is_run
            break
        folder = folder.parent
    for path in unknown:
        known[path] = known[folder]
    return True if known[collection_path] else None


@_usage_errors()
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Any test that asks for ``gaia2_scenario`` runs once per planned scenario (and repeat)."""
    if "gaia2_scenario" not in metafunc.fixturenames:
        return
    from pytest_gaia2.plan.items import ITEM_PARAMETER

    context = _context(metafunc.config)
    module = metafunc.definition.parent
    own = isinstance(module, ScenarioModule)
    items = module.planned if isinstance(module, ScenarioModule) else context.plan.items() if context else []
    extra = _allure_marks(metafunc.config)
    metafunc.parametrize(
        ITEM_PARAMETER,
        [pytest.param(item, id=item.param_id if own else item.key, marks=_marks(item) + extra(item)) for item in items],
    )


def _marks(item: PlannedItem) -> list[pytest.MarkDecorator]:
    """``gaia2``, the split marker, the universe marker, and pytest-timeout's bound."""
    from pytest_gaia2.store.limits import HARD_TIMEOUT_METHOD

    names = ["gaia2", item.split_marker, *([item.universe] if item.universe else [])]
    marks = [getattr(pytest.mark, name) for name in names]
    if item.hard_timeout:
        marks.append(pytest.mark.timeout(item.hard_timeout, method=HARD_TIMEOUT_METHOD))
    return marks


def _allure_marks(config: pytest.Config) -> Callable[[PlannedItem], list[pytest.MarkDecorator]]:
    if getattr(config.option, "allure_report_dir", None):
        from pytest_gaia2.plugin.allure import marks

        return marks
    return lambda item: []


@pytest.fixture
def gaia2_item(request: pytest.FixtureRequest) -> PlannedItem:  # pragma: no cover - always parametrized
    raise pytest.UsageError("gaia2_item is set by parametrization")


@pytest.fixture
def gaia2_scenario(request: pytest.FixtureRequest, gaia2_item: PlannedItem) -> Scenario:
    """The scenario of this item: id, split, path, duration, task, apps (bad files error here).
    Its type is public as ``pytest_gaia2.Scenario``."""
    from pytest_gaia2.run.verdict import Gaia2InfraError

    request.node.stash[ITEM_KEY] = gaia2_item
    if gaia2_item.error is not None:
        raise Gaia2InfraError("invalid_scenario", str(gaia2_item.error)) from None
    assert gaia2_item.scenario is not None  # a planned item holds its scenario or its error
    return gaia2_item.scenario


def _active(config: pytest.Config) -> Controller:
    """The context of a run that has scenario items (only those reach the fixtures below)."""
    context = _context(config)
    assert context is not None
    return context


@pytest.fixture
def gaia2_container(request: pytest.FixtureRequest, gaia2_scenario: Scenario) -> Iterator[ScenarioAttempt]:
    """One started, healthy attempt for this test (``.container``, ``.drive()``); always removed."""
    attempt = _active(request.config).runs.runner.new_attempt(request.node.stash[ITEM_KEY])
    request.node.stash[ATTEMPT_KEY] = attempt
    try:
        attempt.start()
        yield attempt
    finally:
        attempt.remove()


@pytest.fixture
def gaia2_result(request: pytest.FixtureRequest, gaia2_scenario: Scenario) -> ScenarioResult:
    """The scenario's verdict, record and files. Raises (as a setup error) on infrastructure errors.
    Its type is public as ``pytest_gaia2.ScenarioResult``."""
    from pytest_gaia2.run.scenario_runs import NotStarted
    from pytest_gaia2.run.verdict import Gaia2InfraError

    def keep(attempt: ScenarioAttempt) -> None:
        request.node.stash[ATTEMPT_KEY] = attempt

    context = _active(request.config)
    next_items = []
    if context.runs.ahead is not None:
        from pytest_gaia2.plugin.in_flight import upcoming

        next_items = upcoming(request, context.values.in_flight)
    try:
        result = context.runs.result_of(request.node.stash[ITEM_KEY], keep, next_items)
    except NotStarted as exc:
        pytest.skip(str(exc))
    request.node.stash[RESULT_KEY] = result
    if result.errored:
        raise Gaia2InfraError(result.record.error_category or "error", result.record.error or "error")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    context = _context(item.config)
    if context:
        from pytest_gaia2.plugin.reports import annotate

        annotate(
            context,
            item,
            call,
            report,
            item.stash.get(ITEM_KEY, None),
            item.stash.get(RESULT_KEY, None),
            item.stash.get(ATTEMPT_KEY, None),
        )
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    config: pytest.Config, report: pytest.CollectReport | pytest.TestReport
) -> Generator[None, dict[str, object] | None, dict[str, object] | None]:
    """On an xdist worker: the report's record (and why it did not start) under a key of the
    plugin's own, whatever pytest does with the report's other attributes."""
    from pytest_gaia2.plugin.reports import carry

    data = yield
    return carry(report, data)


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, object]
) -> Generator[None, pytest.CollectReport | pytest.TestReport | None, pytest.CollectReport | pytest.TestReport | None]:
    """On the xdist controller: the record a worker's report carried, back on the report."""
    from pytest_gaia2.plugin.reports import unpack

    restore = unpack(data)
    report = yield
    if report is not None:
        restore(report)
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With --gaia2-sequence and -n: each chain on one worker, in order (:mod:`~pytest_gaia2.plugin.chains`);
    with --gaia2-in-flight K: K items dealt to each worker ahead (:mod:`~pytest_gaia2.plugin.in_flight`)."""
    context = _context(config)
    if context and context.active and context.values.in_flight > 1:
        from pytest_gaia2.plugin.in_flight import InFlightScheduling

        return InFlightScheduling(config, log, depth=context.values.in_flight + 1)
    if not context or not context.values.sequence:
        return None
    from pytest_gaia2.plugin.chains import ChainScheduling

    chain_of = {item.key: item.chain for item in context.plan.items() if item.chain}

    def scope_of(nodeid: str) -> str:
        keys = _planned(context, [nodeid])
        return chain_of.get(keys[0], nodeid) if keys else nodeid

    return ChainScheduling(config, log, scope_of)


def _planned(context: Controller, node_ids: list[str]) -> list[str]:
    """Planned keys from collected node ids: the plugin's own items; else user tests
    parametrized with a scenario (``test_x[<split>/<id>]``)."""
    own = [
        f"{nid[len(NODE_PREFIX) + 1 :].split('::')[0]}/{nid.rpartition('[')[2].rstrip(']')}"
        for nid in node_ids
        if nid.startswith(f"{NODE_PREFIX}/") and "[" in nid
    ]
    if own:
        return list(dict.fromkeys(own))
    known = {item.key for item in context.plan.items()}
    return list(
        dict.fromkeys(
            key for nid in node_ids if "[" in nid for key in [nid.rpartition("[")[2].rstrip("]")] if key in known
        )
    )


def _prepare(context: Controller, ids: list[str], collect_only: bool = False) -> bool:
    """The run prepared once (pre-flight, run folder) and its live status started, on the
    process that owns the run. False when the run is stopped, by a usage
    error (exit status 4) or a pre-flight refusal: no test runs, and why is printed last
    (:func:`_print_stop`). Under xdist nothing is raised here: the workers, which wait to be
    dealt tests, end as soon as there are none, instead of being killed after a timeout."""
    from pytest_gaia2.run.terms import RunStopped

    was_prepared = context.prepared
    try:
        context.prepare(_planned(context, ids), collect_only=collect_only)
    except OptionError as exc:
        from pytest_gaia2.store.redact import printable

        context.stopped = RunStopped([printable(str(exc))], code=pytest.ExitCode.USAGE_ERROR)
        return False
    except RunStopped:
        return False
    if context.prepared and not was_prepared and context.folder is not None:
        from pytest_gaia2.plugin.live_status import start_live_status

        start_live_status(context.config, context.folder.path, context.book, context.values.progress_interval)
    return not context.stopped


@pytest.hookimpl(wrapper=True, specname="pytest_collection_modifyitems")
def pytest_collection_completed(session: pytest.Session) -> Any:
    """Whether every plugin's pytest_collection_modifyitems returned: pytest calls
    pytest_collection_finish even after one raised, and a refused run must not go on."""
    result = yield
    session.stash[COLLECTED_KEY] = True
    return result


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    context = _context(session.config)
    if not context or COLLECTED_KEY not in session.stash:
        return
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        return  # pytest stops at a collection error before running anything
    ids = [item.nodeid for item in session.items]
    if not _prepare(context, ids, collect_only=session.config.option.collectonly):
        session.items.clear()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist controller, for each worker's collection, before any test is dealt out: a stopped
    run's collections are emptied, so the scheduler deals out nothing and the workers end."""
    context = _context(node.config)
    if context and not _prepare(context, list(ids)):
        ids.clear()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    context = _context(node.config)
    if not context:
        return
    if error:
        context.remove_worker_containers(node.gateway.id)
    refused = (getattr(node, "workeroutput", None) or {}).get(USAGE_ERROR_OUTPUT)
    if refused and context.stopped is None:
        from pytest_gaia2.run.terms import RunStopped

        context.stopped = RunStopped([str(refused)], code=pytest.ExitCode.USAGE_ERROR)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The run's summary, then what ``pytest_gaia2_summary`` hooks add (masked, printable)."""
    context = _context(config)
    if context is None or exitstatus == pytest.ExitCode.USAGE_ERROR:
        return
    lines = context.summary_lines()
    for line in lines:
        terminalreporter.write_line(line)
    if not (lines and context.book.anything_to_write and context.folder is not None):
        return
    from types import MappingProxyType

    from pytest_gaia2.store.redact import printable

    added: list[str] = []
    summary = MappingProxyType(context.book.summary_document or {})
    context.call_hook("pytest_gaia2_summary", summary=summary, lines=added)
    for line in added:
        terminalreporter.write_line(printable(context.redactor.redact(str(line))))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Before the terminal summary and the JUnit file are written: records, summary, gate."""
    context = _context(session.config)
    if not context:
        return
    from pytest_gaia2.plugin.reports import add_junit_properties

    wind_down = session.config.stash.get(WIND_DOWN_KEY, None)
    status: int | None = context.finish(int(exitstatus), signum=wind_down.first if wind_down is not None else None)
    add_junit_properties(session.config, context)
    if context.stopped is not None:
        status = context.stopped.code
    if status is not None:
        session.exitstatus = status
    session.config.stash[EXIT_STATUS_KEY] = int(session.exitstatus)


def _print_verdict(config: pytest.Config, context: Controller) -> None:
    """The run's verdict as the last lines of the output, after pytest's own short summary and
    counts (the gate's, or a run stopped short of its plan), green when the run exits 0 and red
    otherwise."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or context.is_worker or not context.prepared or EXIT_STATUS_KEY not in config.stash:
        return
    from pytest_gaia2.store.redact import printable

    met = config.stash[EXIT_STATUS_KEY] == 0
    for line in context.book.verdict_lines():
        reporter.write_line(printable(context.redactor.redact(line)), green=met, red=not met, bold=True)


def _print_stop(config: pytest.Config, context: Controller) -> None:
    """Why the run stopped before any test, after pytest's own summary, the same serially and
    under xdist: a usage error as pytest prints its own (``ERROR: ...`` on stderr), a refusal
    as plain lines, never pytest's ``Exit`` form."""
    stopped = context.stopped
    if stopped is None or context.is_worker:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in stopped.lines:
        if stopped.code == pytest.ExitCode.USAGE_ERROR:
            sys.stderr.write(f"ERROR: {line}\n\n")
        elif reporter is None:
            sys.stderr.write(line + "\n")
        else:
            reporter.write_line(line, red=stopped.code != 0, green=stopped.code == 0, bold=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    context = _context(config)
    if context:
        _print_verdict(config, context)
        _print_stop(config, context)
        context.close()
    wind_down = config.stash.get(WIND_DOWN_KEY, None)
    if wind_down is not None:
        wind_down.uninstall()
