"""This process's items' runs: its one scenario runner, made once pre-flight has settled the run
folder and the image id; with --gaia2-in-flight K above 1, the items it runs next started ahead
(:mod:`~pytest_gaia2.run.ahead`); and, when the session ends, the work still in flight landed.

Apart from the run's context because it is the part that runs scenarios, on every process that
runs them (the only one, or each xdist worker), and the part whose work must not outlive the
session: whatever ends the session, every job in flight stops or finishes and writes its record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.run.ahead import Ahead
from pytest_gaia2.run.scenario_runs import NotStarted, ScenarioRunner

if TYPE_CHECKING:
    from pytest_gaia2.run.evidence import ScenarioResult


class ItemRuns:
    """The runner, made on first use, and the items ahead of the current one."""

    def __init__(self, make_runner: Callable[[], ScenarioRunner], in_flight: int) -> None:
        self._make_runner = make_runner
        self.in_flight = in_flight

    @cached_property
    def runner(self) -> ScenarioRunner:
        """Made on first use, once pre-flight has settled the run folder and the image id."""
        return self._make_runner()

    @cached_property
    def ahead(self) -> Ahead[ScenarioResult] | None:
        """--gaia2-in-flight K above 1: this process's items in flight (:mod:`~pytest_gaia2.run.ahead`)."""
        return Ahead(self.in_flight) if self.in_flight > 1 else None

    def result_of(self, item: PlannedItem, keep: Callable[[Any], None], upcoming: list[PlannedItem]) -> ScenarioResult:
        """The item's verdict (:meth:`ScenarioRunner.result_for`); with --gaia2-in-flight, the work of
        the ``upcoming`` items this process runs next is started too, in their order, up to K in all."""
        ahead = self.ahead
        if ahead is None:
            return self.runner.result_for(item, keep)
        for planned in [item, *upcoming]:
            ahead.offer(planned.key, functools.partial(self.runner.result_for, planned))
        return ahead.take(item.key, functools.partial(self.runner.result_for, item), keep)

    def land(self, interrupted: bool, wait: Callable[[], float]) -> None:
        """No item's work outlives the session: ``interrupted``, every job in flight stops and writes
        its record; otherwise (a halt, -x) those not started never start and those started finish,
        within ``wait()`` seconds."""
        ahead = self.__dict__.get("ahead")
        if ahead is None or not ahead.jobs:
            return
        ahead.close(
            KeyboardInterrupt() if interrupted else None,
            NotStarted("the run ended before it started"),
            wait=wait(),
        )
