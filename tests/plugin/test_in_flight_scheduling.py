"""The xdist scheduler of ``--gaia2-in-flight K``: each worker is kept K + 1 tests dealt (pytest-xdist's
own load scheduling keeps as few as two), dealt round the workers, and shut down once all are dealt."""

from __future__ import annotations

from typing import Any

from pytest_gaia2.plugin.in_flight import InFlightScheduling


class Config:
    """What xdist's load scheduler reads of pytest's config."""

    def __init__(self, workers: int) -> None:
        self.values = {"tx": [f"{workers}*popen"], "maxschedchunk": None}

    def getvalue(self, name: str) -> Any:
        return self.values[name]

    getoption = getvalue


class Gateway:
    def __init__(self, name: str) -> None:
        self.id = name


class Node:
    def __init__(self, name: str) -> None:
        self.gateway, self.shutting_down = Gateway(name), False
        self.dealt: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.dealt.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def scheduled(workers: int, tests: int, depth: int) -> tuple[InFlightScheduling, list[Node]]:
    scheduler = InFlightScheduling(Config(workers), None, depth=depth)
    nodes = [Node(f"gw{n}") for n in range(workers)]
    collection = [f"gaia2/search::test_scenario[{n}]" for n in range(tests)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return scheduler, nodes


def test_each_worker_is_dealt_the_depth_at_once_round_the_workers() -> None:
    scheduler, nodes = scheduled(workers=2, tests=16, depth=5)
    assert [len(node.dealt) for node in nodes] == [5, 5]
    assert sorted(nodes[0].dealt + nodes[1].dealt) == list(range(10)) and len(scheduler.pending) == 6
    assert not any(node.shutting_down for node in nodes)


def test_a_finished_test_is_replaced_and_the_last_deal_shuts_the_workers_down() -> None:
    scheduler, nodes = scheduled(workers=2, tests=12, depth=5)
    first = nodes[0].dealt[0]
    scheduler.mark_test_complete(nodes[0], first)
    assert len(scheduler.node2pending[nodes[0]]) == 5 and len(nodes[0].dealt) == 6
    while scheduler.pending:
        node = nodes[len(scheduler.pending) % 2]
        scheduler.mark_test_complete(node, scheduler.node2pending[node][0])
    assert sorted(nodes[0].dealt + nodes[1].dealt) == list(range(12)), "every test dealt once"
    for node in nodes:
        scheduler.mark_test_complete(node, scheduler.node2pending[node][0])
    assert all(node.shutting_down for node in nodes)


def test_fewer_tests_than_the_depth_are_all_dealt_and_the_workers_shut_down() -> None:
    scheduler, nodes = scheduled(workers=2, tests=8, depth=9)
    assert sorted(nodes[0].dealt + nodes[1].dealt) == list(range(8)) and not scheduler.pending
    assert all(node.shutting_down for node in nodes)
    assert min(len(node.dealt) for node in nodes) >= 3, "both workers get a share"
