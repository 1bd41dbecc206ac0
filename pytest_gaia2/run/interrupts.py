"""Writing what must survive a second Ctrl-C: records, results.jsonl, summary.json, the pages.

A first Ctrl-C (or SIGTERM) ends the run; the plugin then writes the interrupted attempt's
record and the run's summary. A second one arriving meanwhile would leave a scenario folder
without result.json, or a run without its summary: :class:`WindDown` lets only the first end
the run, and :class:`held` keeps any signal out of the few writes that must be whole.
"""

from __future__ import annotations

import signal
import threading
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


class WindDown:
    """SIGINT and SIGTERM (scancel, docker stop, CI cancel) end the run like Ctrl-C: the first
    raises KeyboardInterrupt, so every container is removed and every record written. A second
    one (a double Ctrl-C) arrives while that is done, anywhere in pytest's or the plugin's code:
    it is only counted, so the run's records, results.jsonl, summary.json and pages are still
    written. The third raises again, for a user who will not wait."""

    def __init__(self) -> None:
        self.count = 0
        self.previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1 or self.count >= ABORT_AT:
            raise KeyboardInterrupt(f"signal {signum}")

    @classmethod
    def install(cls) -> WindDown:
        """Handle SIGINT and SIGTERM for the run (in the main thread, where handlers can be set)."""
        handler = cls()
        if threading.current_thread() is threading.main_thread():
            handler.previous = {sig: signal.signal(sig, handler) for sig in _SIGNALS}
        return handler

    def uninstall(self) -> None:
        """The handlers from before the run (a run inside a test process leaves that process as it was)."""
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)
        self.previous = {}
