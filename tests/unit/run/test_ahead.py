"""Several items' work in flight in one process (``--gaia2-in-flight``): order, width, halts,
interrupts, timeouts, and that nothing is left running."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_gaia2.run import ahead
from pytest_gaia2.run.ahead import Ahead


class Work:
    """One item's stand-in work: it "starts" (as an attempt would), then waits until released,
    through ahead.pause like an attempt's poll loop; it records what happened to it."""

    def __init__(self, log: list[str], key: str, release: threading.Event, *, start_after: float = 0.0) -> None:
        self.log, self.key, self.release, self.start_after = log, key, release, start_after
        self.started = threading.Event()

    def __call__(self, keep: Callable[[Any], None]) -> str:
        if self.start_after:
            ahead.pause(self.start_after)  # as the pacer's wait
        ahead.starting()
        self.log.append(f"start {self.key}")
        keep(f"attempt of {self.key}")
        self.started.set()
        try:
            while not self.release.is_set():
                ahead.pause(0.01)
        except BaseException as exc:
            self.log.append(f"stopped {self.key} by {type(exc).__name__}")  # its record
            raise
        self.log.append(f"done {self.key}")
        return f"verdict of {self.key}"


def works(keys: list[str], **kwargs: Any) -> tuple[list[str], threading.Event, dict[str, Work]]:
    log: list[str] = []
    release = threading.Event()
    return log, release, {key: Work(log, key, release, **kwargs) for key in keys}


def test_offered_items_start_in_order_up_to_the_width_and_are_taken_by_key() -> None:
    log, release, work = works(["a", "b", "c", "d"])
    runner: Ahead[str] = Ahead(3)
    assert [runner.offer(key, work[key]) for key in "abcd"] == [True, True, True, False]
    assert runner.in_flight == 3
    for key in "abc":
        assert work[key].started.wait(5)
    assert not work["d"].started.is_set() and "start d" not in log
    assert not runner.offer("a", work["a"]), "an item is never started twice"
    release.set()
    kept: list[Any] = []
    assert runner.take("a", work["a"], kept.append) == "verdict of a"
    assert kept == ["attempt of a"]
    assert not runner.offer("a", work["a"]), "a taken item is not started again ahead"
    assert runner.offer("d", work["d"])
    assert [runner.take(key, work[key], kept.append) for key in "bcd"] == ["verdict of b", "verdict of c", "verdict of d"]
    assert sorted(log) == sorted([f"{what} {key}" for key in "abcd" for what in ("start", "done")])
    assert runner.in_flight == 0


def test_an_item_not_offered_ahead_is_started_when_taken_whatever_the_width() -> None:
    log, release, work = works(["a", "b", "x"])
    runner: Ahead[str] = Ahead(2)
    runner.offer("a", work["a"])
    runner.offer("b", work["b"])
    release.set()
    assert runner.take("x", work["x"], lambda attempt: None) == "verdict of x"
    assert "done x" in log
    runner.close(None, RuntimeError("unused"), wait=5)
    assert runner.in_flight == 0 and sorted(line for line in log if line.startswith("done")) == [
        "done a", "done b", "done x"]


def test_what_the_work_raised_is_raised_to_the_taker() -> None:
    def broken(keep: Callable[[Any], None]) -> str:
        raise LookupError("no such scenario")

    runner: Ahead[str] = Ahead(2)
    with pytest.raises(LookupError, match="no such scenario"):
        runner.take("a", broken, lambda attempt: None)


def test_a_halt_cancels_only_what_has_not_started_and_the_started_finish() -> None:
    """-x or a budget halt at session end: a job still waiting for its turn never starts; one
    already started runs to its verdict (it was paid for)."""
    log, release, work = works(["a", "b"])
    late = Work(log, "late", release, start_after=30.0)  # still in the pacer's wait
    runner: Ahead[str] = Ahead(3)
    runner.offer("a", work["a"])
    runner.offer("late", late)
    assert work["a"].started.wait(5)
    threading.Timer(0.3, release.set).start()
    began = time.monotonic()
    runner.close(None, LookupError("halted"), wait=30)
    assert time.monotonic() - began < 10
    assert "done a" in log and "start late" not in log, log
    assert runner.in_flight == 0


def test_a_keyboard_interrupt_while_waiting_stops_every_job_and_each_writes_its_record() -> None:
    log, release, work = works(["a", "b", "c"])
    runner: Ahead[str] = Ahead(3)
    for key in "abc":
        runner.offer(key, work[key])
    for key in "abc":
        assert work[key].started.wait(5)
    threading.Timer(0.3, signal.raise_signal, (signal.SIGINT,)).start()
    kept: list[Any] = []
    with pytest.raises(KeyboardInterrupt):
        runner.take("a", work["a"], kept.append)
    assert kept == ["attempt of a"], "the interrupted item's attempt is kept for its record"
    time.sleep(0.5)
    assert sorted(line for line in log if line.startswith("stopped")) == [
        f"stopped {key} by KeyboardInterrupt" for key in "abc"
    ], log
    runner.close(KeyboardInterrupt(), LookupError("halted"), wait=5)
    assert not release.is_set() and not any(line.startswith("done") for line in log)


def test_an_items_timeout_stops_its_own_work_and_no_other() -> None:
    log, release, work = works(["a", "b"])
    runner: Ahead[str] = Ahead(2)
    runner.offer("a", work["a"])
    runner.offer("b", work["b"])
    assert work["a"].started.wait(5) and work["b"].started.wait(5)

    def alarm(signum: int, frame: object) -> None:  # pytest-timeout's signal method, as it fails a test
        pytest.fail("Timeout (>1.0s) from pytest-timeout.", pytrace=False)

    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(pytest.fail.Exception, match="pytest-timeout"):
            runner.take("a", work["a"], lambda attempt: None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert "stopped a by Failed" in log and not any("stopped b" in line for line in log), log
    release.set()
    assert runner.take("b", work["b"], lambda attempt: None) == "verdict of b"


def test_close_after_an_interrupt_leaves_no_thread() -> None:
    log, release, work = works(["a", "b"])
    runner: Ahead[str] = Ahead(2)
    for key in "ab":
        runner.offer(key, work[key])
    threads = [job.thread for job in runner.jobs.values()]
    runner.close(KeyboardInterrupt(), LookupError("halted"), wait=5)
    assert all(thread is not None and not thread.is_alive() for thread in threads)
    assert runner.in_flight == 0


def test_outside_a_job_pause_sleeps_and_starting_does_nothing() -> None:
    began = time.monotonic()
    ahead.pause(0.05)
    ahead.starting()
    assert time.monotonic() - began >= 0.05
