"""This process's items' runs: one runner, made on first use; serially each item runs alone in
pytest's thread; with items in flight the next ones start ahead, up to K in all, and an interrupt
at the session's end stops the work still in flight."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pytest_gaia2.run import ahead
from pytest_gaia2.run.item_runs import ItemRuns


class Runner:
    """A stand-in for the scenario runner: the first item's verdict at once, the others' work waits,
    through ahead.pause as an attempt's poll loop does, until it is stopped."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.waiting = threading.Event()

    def result_for(self, item: Any, keep: Callable[[Any], None]) -> str:
        self.log.append(f"{item.key} in {'pytest' if threading.current_thread() is threading.main_thread() else 'ahead'}")
        if item.key != "a":
            ahead.starting()
            self.waiting.set()
            try:
                while True:
                    ahead.pause(0.01)
            except BaseException as exc:
                self.log.append(f"{item.key} stopped by {type(exc).__name__}")
                raise
        return f"verdict of {item.key}"


def items(*keys: str) -> list[Any]:
    return [SimpleNamespace(key=key) for key in keys]


def never() -> float:
    raise AssertionError("nothing was in flight: no wait is asked for")


def test_the_runner_is_made_once_on_first_use() -> None:
    made: list[Runner] = []

    def make() -> Any:
        made.append(Runner())
        return made[-1]

    runs = ItemRuns(make, 1)
    assert made == []
    assert runs.runner is runs.runner and len(made) == 1


def test_serially_each_item_runs_alone_in_pytests_thread() -> None:
    runner = Runner()
    runs = ItemRuns(lambda: runner, 1)
    a, b = items("a", "b")
    assert runs.result_of(a, lambda attempt: None, [b]) == "verdict of a"
    assert runs.ahead is None and runner.log == ["a in pytest"]
    runs.land(True, never)


def test_in_flight_the_next_items_start_ahead_and_an_interrupt_stops_them() -> None:
    runner = Runner()
    runs = ItemRuns(lambda: runner, 2)
    a, b, c = items("a", "b", "c")
    assert runs.result_of(a, lambda attempt: None, [b, c]) == "verdict of a"
    assert runner.waiting.wait(10)
    runs.land(True, lambda: 10.0)
    assert "c in ahead" not in runner.log  # two in flight in all: a, then b
    assert runner.log[-1] == "b stopped by KeyboardInterrupt"
