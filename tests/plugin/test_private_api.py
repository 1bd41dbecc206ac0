"""The private pytest and allure-pytest shapes :mod:`pytest_gaia2.plugin.private_api` relies on,
checked against the installed versions: each failure names what changed and what it breaks."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest
from gaia2_testing import WITH_ALLURE

from pytest_gaia2.plugin import private_api

PYTEST = f"pytest {pytest.__version__}"


def test_terminal_writer_file_and_line_state(pytestconfig: pytest.Config) -> None:
    """The live status's view of pytest's terminal: its file, rerouting it, an unfinished line."""
    screen, routed = io.StringIO(), io.StringIO()
    reporter = pytest.TerminalReporter(pytestconfig, screen)
    assert private_api.terminal_file(reporter) is screen, (
        f"{PYTEST}: TerminalReporter._tw._file is not the file the reporter writes to; "
        "the live status cannot find the terminal (update private_api.terminal_file)"
    )
    reporter.write("gaia2/search ..")
    assert private_api.mid_line(reporter), (
        f"{PYTEST}: TerminalReporter._tw.width_of_current_line no longer counts an unfinished line; "
        "plain status lines would break pytest's progress dots (update private_api.mid_line)"
    )
    reporter.line("")
    assert not private_api.mid_line(reporter), f"{PYTEST}: width_of_current_line is not 0 after a full line"
    private_api.route_terminal(reporter, routed)
    reporter.write_line("after the swap")
    assert routed.getvalue() == "after the swap\n" and "after the swap" not in screen.getvalue(), (
        f"{PYTEST}: setting TerminalReporter._tw._file no longer reroutes pytest's output; the live "
        "status on a TTY would print through pytest's lines (update private_api.route_terminal)"
    )


JUNIT_CONFTEST = """
import pytest

from pytest_gaia2.plugin import private_api


@pytest.hookimpl(tryfirst=True)  # as the plugin's: before --junitxml writes its file
def pytest_sessionfinish(session):
    add = private_api.junit_property_writer(session.config)
    if add is not None:
        add("probe_property", "42")
    with open("found.txt", "w") as out:
        out.write(str(add is not None))
"""


@pytest.mark.parametrize("junit", [True, False], ids=["junitxml", "no-junitxml"])
def test_junit_run_properties_writer(pytester: pytest.Pytester, junit: bool) -> None:
    pytester.makeconftest(JUNIT_CONFTEST)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *(["--junitxml=j.xml"] if junit else []))
    result.assert_outcomes(passed=1)
    assert (pytester.path / "found.txt").read_text() == str(junit), (
        f"{PYTEST}: config.stash[_pytest.junitxml.xml_key].add_global_property is gone (what the "
        "record_testsuite_property fixture returns); the gaia2_planned/done/not_run/complete JUnit "
        "properties are lost (update private_api.junit_property_writer)"
    )
    if junit:
        props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "j.xml").iter("property")}
        assert props == {"probe_property": "42"}, f"{PYTEST}: add_global_property no longer writes a property"


ALLURE_CONFTEST = """
import pytest

from pytest_gaia2.plugin import private_api


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        with open("set.txt", "w") as out:
            out.write(str(private_api.set_allure_span(item.config, 1000.0, 1234.5)))
    return report
"""


def test_allure_test_span(pytester: pytest.Pytester) -> None:
    """The span of a scenario's test in Allure: allure-pytest's listener, reporter and test result."""
    allure_pytest = pytest.importorskip("allure_pytest")
    version = f"allure-pytest {getattr(allure_pytest, '__version__', '(version unknown)')}"
    pytester.makeconftest(ALLURE_CONFTEST)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", *WITH_ALLURE, "--alluredir=allure")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "set.txt").read_text() == "True", (
        f"{version}: pluginmanager.get_plugin('allure_listener').allure_logger.get_test(None) no longer "
        "gives the running test with start and stop; scenario tests show only the call phase's "
        "duration (update private_api.set_allure_span)"
    )
    results = [json.loads(path.read_text()) for path in (pytester.path / "allure").glob("*-result.json")]
    assert [(r["start"], r["stop"]) for r in results] == [(1_000_000, 1_234_500)], (
        f"{version}: the span set on the test result is not the one written (update private_api.set_allure_span)"
    )


def test_mark_expression_evaluates_as_pytest_does() -> None:
    """-m's expression before any item exists: the plugin creates no item it cannot select."""
    evaluate = private_api.mark_expression("search_split and not universe_21 or tagged(level=2)")
    assert evaluate is not None, (
        f"{PYTEST}: _pytest.mark.expression.Expression.compile(...).evaluate is gone; every split's items "
        "are created again and -m reports the others as deselected (update private_api.mark_expression)"
    )
    asked: list[tuple[str, dict[str, object]]] = []

    def matcher(name: str, /, **kwargs: object) -> bool:
        asked.append((name, kwargs))
        return name == "search_split"

    assert evaluate(matcher) is True and asked == [("search_split", {}), ("universe_21", {})], (
        f"{PYTEST}: Expression.evaluate no longer asks the matcher for each name in order ({asked})"
    )
    asked.clear()
    assert evaluate(lambda name, /, **kwargs: asked.append((name, kwargs)) or name == "tagged") is True
    assert asked[-1] == ("tagged", {"level": 2}), f"{PYTEST}: marker arguments no longer reach the matcher"
    assert private_api.mark_expression("search_split and (") is None

