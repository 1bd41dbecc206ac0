"""Every use of pytest's or allure-pytest's private API, in one place, each where no public way exists.

Each function says what it reaches into and why nothing public does the job. They read
defensively (a missing shape gives None or False, and the feature steps aside instead of
breaking a run); ``tests/plugin/test_private_api.py`` checks every shape against the
installed pytest and allure-pytest and fails naming what changed.

Not here: :mod:`.joined_values`' second ``pytest.main``, which uses public API only. It
exists because pytest picks the rootdir and ini file (``Config.parse``: ``determine_setup``)
before it loads installed plugins, so no hook of this plugin, ``pytest_load_initial_conftests``
included, runs early enough to stop ``--gaia2-output DIR`` moving the rootdir.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

import pytest


def terminal_file(reporter: Any) -> TextIO | None:
    """The file pytest's terminal output goes to: ``TerminalReporter._tw._file``.

    The live status writes to its own duplicate of that file's descriptor (pytest captures
    descriptor 1 while a test runs); ``sys.stdout`` is the capture's by then, and the
    reporter exposes no file of its own.
    """
    return getattr(getattr(reporter, "_tw", None), "_file", None)


def route_terminal(reporter: Any, file: Any) -> None:
    """Send pytest's terminal output through ``file`` from now on (``_tw._file`` replaced).

    The live status prints pytest's lines above rich's live display; the reporter writes
    only through its writer, and no public API swaps the writer's file.
    """
    reporter._tw._file = file


def mid_line(reporter: Any) -> bool:
    """Whether pytest's last terminal line is unfinished (progress dots):
    ``_tw.width_of_current_line``. A plain status line, or a notice of the run (the probe's
    projection), then starts on a new line: under xdist, which prints no file path before the
    dots, the reporter's public ``ensure_newline`` does not know the line is unfinished."""
    return bool(getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0))


def mark_expression(text: str) -> Callable[[Callable[..., bool]], bool] | None:
    """-m's expression as pytest evaluates it: ``_pytest.mark.expression.Expression.compile(text)
    .evaluate``, which calls a matcher with each marker name (and arguments) it needs.

    The plugin creates no item -m cannot select (``plan.selection.could_match``), so the split a
    run does not ask for is not collected and then "deselected"; pytest offers no public way to
    evaluate -m before the items exist. None when that shape is not there or the text does not
    compile (pytest's own -m then reports it): every item is created and -m deselects as usual.
    """
    try:
        from _pytest.mark.expression import Expression

        evaluate = Expression.compile(text).evaluate
    except Exception:  # noqa: BLE001 - any change or refusal: pytest's -m decides alone
        return None
    return evaluate if callable(evaluate) else None


def junit_property_writer(config: pytest.Config) -> Callable[[str, object], None] | None:
    """``--junitxml``'s run-level property writer: what the public ``record_testsuite_property``
    fixture returns, which only a test can ask for (an xdist controller runs none). It is
    ``config.stash[_pytest.junitxml.xml_key].add_global_property``; None without --junitxml."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return None
    add = getattr(config.stash.get(xml_key, None), "add_global_property", None)
    return add if callable(add) else None


def set_allure_span(config: pytest.Config, start: float, stop: float) -> bool:
    """Give allure-pytest's running test the span ``start``..``stop`` (seconds since the epoch).

    allure-pytest times only the call phase, but a scenario runs in its setup fixtures;
    ``allure.dynamic`` cannot set a test's times, so its listener's reporter is reached:
    ``pluginmanager.get_plugin("allure_listener").allure_logger.get_test(None)``. False when
    that shape is not there (the times stay allure-pytest's own).
    """
    reporter = getattr(config.pluginmanager.get_plugin("allure_listener"), "allure_logger", None)
    get_test = getattr(reporter, "get_test", None)
    test = get_test(None) if callable(get_test) else None
    if test is None or not (hasattr(test, "start") and hasattr(test, "stop")):
        return False
    test.start, test.stop = int(start * 1000), int(stop * 1000)
    return True


def worker_queue(config: pytest.Config) -> list[int] | None:
    """On an xdist worker: the indices into ``session.items`` of the tests dealt to this worker and
    not yet started, in the order it runs them; None when not a worker or the shape is not there.

    ``--gaia2-in-flight`` starts the work of the items a worker runs next, and xdist hands
    ``pytest_runtest_protocol`` only one of them (``nextitem``). The worker's queue is its
    ``xdist.remote.WorkerInteractor`` plugin's: ``nextitem_index`` (already taken off the queue),
    then ``torun.lock()``'s deque (it also holds xdist's shutdown marker, not an int).
    """
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ != "WorkerInteractor":
            continue
        following = getattr(plugin, "nextitem_index", None)
        lock = getattr(getattr(plugin, "torun", None), "lock", None)
        if not callable(lock):
            return None
        with lock() as queued:
            pending = [following, *queued]
        return [index for index in pending if isinstance(index, int) and not isinstance(index, bool)]
    return None
