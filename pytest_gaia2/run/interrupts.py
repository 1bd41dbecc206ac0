"""Writing what must survive a second Ctrl-C: records, results.jsonl, summary.json, the pages.

A first Ctrl-C (or SIGTERM) ends the run; the plugin then writes the interrupted attempt's
record and the run's summary. A second one arriving meanwhile would leave a scenario folder
without result.json, or a run without its summary: :class:`WindDown` lets only the first end
the run, and :class:`held` keeps any signal out of the few writes that must be whole.

A signal sent to the xdist controller alone (``kill``, ``docker stop``, a CI runner) reaches
no worker: :func:`forward` passes it on once, so the workers end their attempts at once, as
they do when a terminal's Ctrl-C signals the whole process group.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterable
from types import FrameType
from typing import Any

_SIGNALS = tuple(sig for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if sig is not None)


class held:  # noqa: N801 - used like a function: ``with interrupts.held():``
    """Hold SIGINT/SIGTERM inside the block; deliver the first one that came once it ends.

    Outside the main thread signals cannot be handled there, so the block just runs. The held
    signal is delivered again with ``signal.raise_signal`` after the handlers are back, so it
    raises where a signal normally would (a class, not a generator: a KeyboardInterrupt raised
    from a generator frame leaves a traceback entry pytest cannot format).
    """

    def __enter__(self) -> None:
        self.arrived: list[int] = []
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self._note) for sig in _SIGNALS}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.arrived.append(signum)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        if self.arrived:
            signal.raise_signal(self.arrived[0])


ABORT_AT = 3
"""The signal that ends the wind-down at once: the first ends the run, the next ones wait."""

FORWARD_ECHO = 3.0
"""Seconds after an xdist worker's first signal in which one more is the same press: a Ctrl-C
signals the whole process group, and the controller then forwards it to the worker as well."""


class WindDown:
    """SIGINT and SIGTERM (scancel, docker stop, CI cancel) end the run like Ctrl-C: the first
    raises KeyboardInterrupt, so every container is removed and every record written. A second
    one (a double Ctrl-C) arrives while that is done, anywhere in pytest's or the plugin's code:
    it is only counted, so the run's records, results.jsonl, summary.json and pages are still
    written. The third raises again, for a user who will not wait."""

    def __init__(self, echo: float = 0.0) -> None:
        self.count = 0
        self.first: int | None = None
        self.previous: dict[int, Any] = {}
        self.echo = echo
        self._first_at = 0.0

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.count == 1 and self.echo and now - self._first_at < self.echo:
            self.echo = 0.0  # one echo at most: the controller forwards once
            return
        self.count += 1
        if self.count == 1:
            self.first, self._first_at = signum, now
        if self.count == 1 or self.count >= ABORT_AT:
            raise KeyboardInterrupt(f"signal {signum}")

    @classmethod
    def install(cls, echo: float = 0.0) -> WindDown:
        """Handle SIGINT and SIGTERM for the run (in the main thread, where handlers can be set);
        ``echo``: an xdist worker's :data:`FORWARD_ECHO`, so the forwarded press is not a second."""
        handler = cls(echo)
        if threading.current_thread() is threading.main_thread():
            handler.previous = {sig: signal.signal(sig, handler) for sig in _SIGNALS}
        return handler

    def uninstall(self) -> None:
        """The handlers from before the run (a run inside a test process leaves that process as it was)."""
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)
        self.previous = {}


def parent_of(pid: int) -> int | None:
    """The parent process id, from Linux's ``/proc/<pid>/stat`` (the field after the state,
    which follows the last ``)``: the command name may hold one); None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read(4096).rsplit(b")", 1)[1].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def forward(signum: int, pids: Iterable[int]) -> list[int]:
    """Send ``signum`` once to each of ``pids`` that is a child of this process; the pids signalled.

    The pids come from files anyone with the run folder can write, so a pid is signalled only
    when its parent is this process (where that cannot be checked, none is: the controller then
    waits for its workers as before). A child that ended stays a zombie with its pid until this
    process reaps it, so the pid checked is the pid signalled.
    """
    me = os.getpid()
    sent = []
    for pid in sorted(set(pids)):
        if pid <= 0 or pid == me or parent_of(pid) != me:
            continue
        try:
            os.kill(pid, signum)
        except OSError:
            continue
        sent.append(pid)
    return sent
