"""Writing what must survive a second Ctrl-C: records, results.jsonl, summary.json.

A first Ctrl-C (or SIGTERM) ends the run; the plugin then writes the interrupted attempt's
record and the run's summary. A second one arriving during those few writes would leave a
scenario folder without result.json, so it is held until the writes are done, then raised.
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


def end_like_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (scancel, docker stop, CI cancel) ends the run like Ctrl-C: every container
    is removed and every record written."""
    raise KeyboardInterrupt(f"signal {signum}")
