"""``--gaia2-in-flight K`` under pytest: which items a process runs next, and xdist dealing enough.

The work itself is the run context's (:mod:`pytest_gaia2.run.ahead`). Here: the items that follow
the one pytest runs now on this process (serially the session's next items, on an xdist worker its
queue: :func:`~pytest_gaia2.plugin.private_api.worker_queue`), and a load scheduler that keeps K
items dealt to each worker, where pytest-xdist's own keeps as few as two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from xdist.scheduler import LoadScheduling

from pytest_gaia2.plugin import private_api
from pytest_gaia2.plugin.item import planned_item

if TYPE_CHECKING:
    from pytest_gaia2.plan.items import PlannedItem

NOT_AHEAD_MARKS = ("skip", "skipif", "xfail")
"""Marks that may keep a test from running its fixtures: such an item is never started ahead."""


def upcoming(request: pytest.FixtureRequest, width: int) -> list[PlannedItem]:
    """The planned items of the next ``width - 1`` tests this process runs after the current one,
    those that only ask for the verdict (``gaia2_result``, not ``gaia2_container``, no skip mark)."""
    if width <= 1:
        return []
    items = request.session.items
    if hasattr(request.config, "workerinput"):
        queue = private_api.worker_queue(request.config)
        following = [items[index] for index in (queue or [])[: width - 1] if 0 <= index < len(items)]
    else:
        try:
            at = items.index(request.node)
        except ValueError:
            return []
        following = items[at + 1 : at + width]
    return [planned for item in following if (planned := _ahead_ok(item)) is not None]


def _ahead_ok(item: pytest.Item) -> PlannedItem | None:
    planned = planned_item(item)
    names = getattr(item, "fixturenames", ())
    if planned is None or planned.scenario is None or planned.error is not None:
        return None
    if "gaia2_result" not in names or "gaia2_container" in names:
        return None
    if any(item.get_closest_marker(name) is not None for name in NOT_AHEAD_MARKS):
        return None
    return planned


class InFlightScheduling(LoadScheduling):  # type: ignore[misc]  # xdist ships no type information
    """pytest-xdist's load scheduling, but each worker is kept ``depth`` tests dealt (the one it
    runs, the ones in flight ahead of it, one spare), dealt one at a time round the workers."""

    def __init__(self, config: pytest.Config, log: Any, depth: int) -> None:
        super().__init__(config, log)
        self.depth = depth

    def schedule(self) -> None:
        first = self.collection is None
        super().schedule()
        if first and self.collection:
            self._top_up(self.nodes)

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if self.pending:
            self._top_up([node])
        else:
            node.shutdown()

    def _top_up(self, nodes: list[Any]) -> None:
        short = [node for node in nodes if not node.shutting_down]
        while self.pending and short:
            short = [node for node in short if len(self.node2pending[node]) < self.depth]
            for node in short:
                self._send_tests(node, 1)
        if not self.pending:
            for node in nodes:
                if not node.shutting_down:
                    node.shutdown()
