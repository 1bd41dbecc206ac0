"""The xdist worker's queue :func:`pytest_gaia2.plugin.private_api.worker_queue` reads for
``--gaia2-in-flight``, checked against the installed pytest-xdist: a failure names what changed."""

from __future__ import annotations

import json

import pytest
import xdist

XDIST = f"pytest-xdist {xdist.__version__}"

QUEUE_PROBE = """
import json

from pytest_gaia2.plugin import private_api


def test_0(request):
    with open("queue.json", "w") as out:
        json.dump({"queue": private_api.worker_queue(request.config),
                   "items": [item.nodeid for item in request.session.items]}, out)


def test_1():
    pass


def test_2():
    pass
"""


def test_a_worker_sees_the_tests_dealt_to_it_next(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probe=QUEUE_PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    result.assert_outcomes(passed=3)
    seen = json.loads((pytester.path / "queue.json").read_text(encoding="utf-8"))
    assert seen["queue"] is not None, (
        f"{XDIST}: no WorkerInteractor plugin with nextitem_index and torun.lock(); --gaia2-in-flight "
        "starts nothing ahead on a worker (update private_api.worker_queue)"
    )
    following = [seen["items"][index].rpartition("::")[2] for index in seen["queue"]]
    assert following[:1] == ["test_1"] and set(following) <= {"test_1", "test_2"}, (
        f"{XDIST}: the worker's queue no longer lists the tests it runs next, in order: {following}"
    )


def test_serially_there_is_no_worker_queue(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_probe=QUEUE_PROBE)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3)
    assert json.loads((pytester.path / "queue.json").read_text(encoding="utf-8"))["queue"] is None
