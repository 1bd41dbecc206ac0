"""pytest hooks and fixtures for pytest-gaia2: options, collection, fixtures, reporting.

Thin on purpose: each hook hands plain data to the module that owns the concern.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
from _pytest.runner import runtestprotocol

from . import allure_report, options, scenario_item
from .run import Gaia2InfraError, RunResult
from .scenarios import SPLITS
from .session import Gaia2Session, ItemPlan, LiveRun

SESSION_KEY = pytest.StashKey[Gaia2Session]()
PLAN_KEY = pytest.StashKey[ItemPlan]()
RESULT_KEY = pytest.StashKey[RunResult]()
INFRA_KEY = pytest.StashKey[bool]()
NODE_PREFIX = "gaia2"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def _session(config: pytest.Config) -> Gaia2Session:
    return config.stash[SESSION_KEY]


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    """SIGTERM ends the run like Ctrl-C, so teardown removes every container."""
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gaia2: a Gaia2 scenario run in its own container")
    for split in SPLITS:
        config.addinivalue_line("markers", f"{split}_split: Gaia2 scenarios of the {split} split")
    session = Gaia2Session.from_config(config)
    config.stash[SESSION_KEY] = session
    for marker in session.extra_markers():
        config.addinivalue_line("markers", f"{marker}: Gaia2 scenarios from a folder of that name")
    if session.active and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    if session.active and allure_report.enabled(config):
        config.pluginmanager.register(allure_report.AllureGaia2(session), "gaia2-allure")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _session(config).header_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: every worker shares the run id, owner and start time."""
    node.workerinput.update(_session(node.config).worker_input())


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _session(session.config).start()


class ScenarioModule(pytest.Module):
    """The plugin's own test module, collected under the short node id ``gaia2``."""

    def _getobj(self) -> Any:
        return scenario_item


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the scenario items before -k/-m deselection runs, so both work on them."""
    if not _session(config).collects_scenarios:
        return
    module = ScenarioModule.from_parent(
        session, path=Path(scenario_item.__file__), nodeid=NODE_PREFIX, name=NODE_PREFIX
    )
    items.extend(item for item in session.genitems(module) if isinstance(item, pytest.Item))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Any test that asks for ``gaia2_scenario`` runs once per selected scenario (and repeat)."""
    if "gaia2_scenario" not in metafunc.fixturenames:
        return
    plans = _session(metafunc.config).plans()
    metafunc.parametrize(
        "gaia2_plan",
        [pytest.param(plan, id=plan.test_id, marks=plan.marks()) for plan in plans],
        indirect=False,
    )


@pytest.fixture
def gaia2_plan(request: pytest.FixtureRequest) -> ItemPlan:  # pragma: no cover - always parametrized
    raise pytest.UsageError("gaia2_plan is set by parametrization")


@pytest.fixture
def gaia2_scenario(request: pytest.FixtureRequest, gaia2_plan: ItemPlan) -> Any:
    """The scenario of this item: id, split, path, duration, task, apps (bad files error here)."""
    request.node.stash[PLAN_KEY] = gaia2_plan
    if gaia2_plan.error is not None:
        request.node.stash[INFRA_KEY] = True
        raise Gaia2InfraError("invalid_scenario", str(gaia2_plan.error)) from None
    return gaia2_plan.scenario


@pytest.fixture
def gaia2_container(request: pytest.FixtureRequest, gaia2_scenario: Any) -> Iterator[Any]:
    """One started, healthy container for this test; always removed at teardown."""
    session = _session(request.config)
    live = session.new_run(request.node.stash[PLAN_KEY], attempt=getattr(request.node, "_gaia2_attempt", 1))
    request.node.stash[INFRA_KEY] = True  # until the run proves otherwise
    try:
        try:
            live.start()
        except BaseException:
            _keep_result(request, live)
            raise
        request.node.stash[INFRA_KEY] = False
        yield live
    finally:
        live.close()


def _keep_result(request: pytest.FixtureRequest, live: LiveRun) -> None:
    """The record of a run that ended by an exception (infra error, Ctrl-C, pytest-timeout) is reported too."""
    if live.last_result is not None:
        request.node.stash[RESULT_KEY] = live.last_result


@pytest.fixture
def gaia2_result(request: pytest.FixtureRequest, gaia2_scenario: Any) -> RunResult:
    """The run's verdict, record and files. Raises (as a setup error) on infrastructure errors."""
    session = _session(request.config)
    plan: ItemPlan = request.node.stash[PLAN_KEY]
    result = session.reused_result(plan)
    if result is None:
        scenario_run = request.getfixturevalue("gaia2_container")
        try:
            result = scenario_run.drive()
        except BaseException:
            _keep_result(request, scenario_run)
            raise
    request.node.stash[RESULT_KEY] = result
    request.node.stash[INFRA_KEY] = result.errored
    if result.errored:
        raise Gaia2InfraError(result.verdict.category or "error", result.verdict.message)
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Re-run a scenario whose outcome is an infrastructure error (never a judge failure)."""
    session = _session(item.config)
    if session.retries == 0 or "gaia2_scenario" not in getattr(item, "fixturenames", ()):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(1, session.retries + 2):
        item._gaia2_attempt = attempt  # type: ignore[attr-defined]
        item.stash[INFRA_KEY] = False
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        retry = item.stash.get(INFRA_KEY, False) and attempt <= session.retries
        for report in reports:
            if retry and report.failed:
                report.outcome = "rerun"  # type: ignore[assignment]
            item.ihook.pytest_runtest_logreport(report=report)
        if not retry:
            break
        item._initrequest()  # type: ignore[attr-defined]
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    result = item.stash.get(RESULT_KEY, None)
    plan = item.stash.get(PLAN_KEY, None)
    if call.excinfo is not None and isinstance(call.excinfo.value, Gaia2InfraError):
        report.longrepr = str(call.excinfo.value)
    elif call.excinfo is not None and result is not None and result.verdict.category == "interrupted":
        report.longrepr = f"[interrupted] {result.verdict.message}"  # e.g. pytest-timeout's bound
    elif call.when == "call" and call.excinfo is not None and result is not None and result.failed:
        report.longrepr = f"AssertionError: {result.verdict.message}\n(files: {result.folder})"
    final = (report.when == "call") or (report.when == "setup" and report.failed)
    # A user test that only reads gaia2_scenario ran no scenario: it has no record to report.
    if final and plan is not None and (result is not None or plan.error is not None) \
            and not getattr(report, "_gaia2_sent", False):
        record = result.record if result is not None else plan.error_record()
        _session(item.config).annotate(item, report, record)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    if report.outcome == "rerun":
        return "rerun", "R", ("RERUN", {"yellow": True})
    return None


def _runs_scenarios(gaia2: Gaia2Session, node_ids: list[str]) -> bool:
    """Whether a collected test needs the engine and image: the plugin's items, or a user test
    parametrized with a scenario (``test_x[<split>/<id>]``), such as one using ``gaia2_container``."""
    if any(node_id.startswith(f"{NODE_PREFIX}::") for node_id in node_ids):
        return True
    plan_ids = [plan.test_id for plan in gaia2.plans()]
    return any(test_id in node_id.partition("[")[2]
               for node_id in node_ids if "[" in node_id for test_id in plan_ids)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    gaia2 = _session(session.config)
    gaia2.prepare_if_needed(_runs_scenarios(gaia2, [item.nodeid for item in session.items]),
                            collect_only=session.config.option.collectonly)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    gaia2 = _session(node.config)
    gaia2.prepare_if_needed(_runs_scenarios(gaia2, ids))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """A worker that died (even by SIGKILL) leaves no container behind."""
    if error:
        _session(node.config).remove_worker_containers(node.gateway.id)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    for line in _session(config).summary_lines():
        terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    gaia2 = _session(session.config)
    status = gaia2.finish(int(exitstatus))
    if status is not None:
        session.exitstatus = status


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION_KEY in config.stash:
        _session(config).close()
