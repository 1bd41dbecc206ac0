"""Several scenarios in flight in one process (``--gaia2-in-flight K``).

Each xdist worker is a whole pytest process; a scenario mostly waits on its container. So one
process may work ahead: while pytest runs one item, the items it will run next (up to K in all)
are already computed in threads of their own, each still its own container, each still through
:meth:`~pytest_gaia2.run.scenario_runs.ScenarioRunner.result_for` (pacer, halts, retries). pytest
then takes each item's result in its own order, so verdicts, reports and exit status stay as they
are with one scenario at a time.

A job's thread is stopped cooperatively: every wait of an attempt goes through :func:`pause`,
which raises the reason its job was cancelled with (Ctrl-C, an item's pytest-timeout), so the
attempt writes its record and removes its container as it would in pytest's own thread. Before its
first container a job passes :func:`starting`: a job cancelled before that (the run halted, ``-x``)
never starts one. A job already started is never given up silently: its record is written.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

R = TypeVar("R")

WAIT_STEP = 0.2
"""Seconds between looks at a job pytest waits for (a signal interrupts the wait anyway)."""
STOP_JOIN_S = 60.0
"""Seconds a cancelled job is given to write its record and remove its container."""

_local = threading.local()


@dataclass
class Job(Generic[R]):
    """One item's work in a thread of its own: its result or what it raised, its latest attempt."""

    key: str
    work: Callable[[Callable[[Any], None]], R]
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    reason: BaseException | None = None
    started: bool = False
    """Whether it passed :func:`starting`: an attempt (and its record) exists or is on its way."""
    attempt: Any = None
    result: R | None = None
    raised: BaseException | None = None

    def keep(self, attempt: Any) -> None:
        self.attempt = attempt

    def run(self) -> None:
        _local.job = self
        try:
            self.result = self.work(self.keep)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that takes the job
            self.raised = exc
        finally:
            self.done.set()

    def outcome(self) -> R:
        if self.raised is not None:
            raise self.raised
        return self.result  # type: ignore[return-value]  # set when nothing was raised


def _current() -> Job[Any] | None:
    return getattr(_local, "job", None)


def _stop_if_cancelled(job: Job[Any]) -> None:
    if job.cancelled.is_set() and job.reason is not None:
        raise copy.copy(job.reason)


def pause(seconds: float) -> None:
    """``time.sleep``; in a job's thread, cut short by the job's cancellation, which it raises."""
    job = _current()
    if job is None:
        time.sleep(seconds)
        return
    job.cancelled.wait(max(0.0, seconds))
    _stop_if_cancelled(job)


def starting() -> None:
    """Before an attempt is made: in a job's thread, raise its cancellation; otherwise it counts
    as started from here on (a later halt lets it finish, so its verdict is recorded)."""
    job = _current()
    if job is None:
        return
    with _LOCK:
        _stop_if_cancelled(job)
        job.started = True


_LOCK = threading.Lock()
"""Makes a job's start and a cancellation of the jobs not started one step each."""


class Ahead(Generic[R]):
    """Up to ``width`` items' work at once, started in the order they are offered, taken by key."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.jobs: dict[str, Job[R]] = {}
        """Started and not yet taken, in the order they were started."""
        self.taken: set[str] = set()

    @property
    def in_flight(self) -> int:
        return len(self.jobs)

    def offer(self, key: str, work: Callable[[Callable[[Any], None]], R]) -> bool:
        """Start ``key``'s work unless it is started or taken, or ``width`` jobs are untaken."""
        if key in self.jobs or key in self.taken or len(self.jobs) >= self.width:
            return False
        self._start(key, work)
        return True

    def _start(self, key: str, work: Callable[[Callable[[Any], None]], R]) -> None:
        job: Job[R] = Job(key, work)
        job.thread = threading.Thread(target=job.run, name=f"gaia2-in-flight {key}", daemon=True)
        self.jobs[key] = job
        job.thread.start()

    def take(self, key: str, work: Callable[[Callable[[Any], None]], R], keep: Callable[[Any], None]) -> R:
        """``key``'s result (its work started now if it was not), as if computed here: what it
        raised is raised. ``keep`` gets its latest attempt. A signal while waiting (Ctrl-C,
        pytest-timeout) cancels this job, all jobs for a KeyboardInterrupt, and lets it write its
        record before it is raised on."""
        if key not in self.jobs:  # not offered ahead, or taken before (a rerun): started now, whatever the width
            self._start(key, work)
        job = self.jobs.pop(key)
        self.taken.add(key)
        try:
            while not job.done.wait(WAIT_STEP):
                pass
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                self.cancel(exc)
            _cancel(job, exc)
            _join(job, STOP_JOIN_S)
            if job.attempt is not None:
                keep(job.attempt)
            raise
        if job.attempt is not None:
            keep(job.attempt)
        return job.outcome()

    def cancel(self, reason: BaseException) -> None:
        """Stop every untaken job: those started write their record and remove their container."""
        for job in list(self.jobs.values()):
            _cancel(job, reason)

    def stop_starting(self, reason: BaseException) -> None:
        """Cancel the untaken jobs that have not started an attempt (those that have go on)."""
        with _LOCK:
            for job in self.jobs.values():
                if not job.started:
                    _cancel(job, reason)

    def close(self, interrupt: BaseException | None, not_started: BaseException, wait: float) -> None:
        """The session ends: no job left running. An interrupted one cancels every job; otherwise
        the jobs not started are cancelled and those started finish (they were paid for), for at
        most ``wait`` seconds, then they are cancelled too."""
        if interrupt is not None:
            self.cancel(interrupt)
        else:
            self.stop_starting(not_started)
        deadline = time.monotonic() + wait
        try:
            for job in list(self.jobs.values()):
                _join(job, max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt as exc:  # Ctrl-C while the started ones finish: they stop now
            interrupt = exc
        if any(not job.done.is_set() for job in self.jobs.values()):
            self.cancel(interrupt or KeyboardInterrupt())
            for job in list(self.jobs.values()):
                _join(job, STOP_JOIN_S)
        self.jobs.clear()


def _cancel(job: Job[Any], reason: BaseException) -> None:
    if not job.cancelled.is_set():
        job.reason = reason
        job.cancelled.set()


def _join(job: Job[Any], timeout: float) -> None:
    if job.thread is not None:
        job.thread.join(timeout)
