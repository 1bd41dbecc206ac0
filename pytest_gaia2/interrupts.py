"""Writing what must survive a second Ctrl-C: records, results.jsonl, summary.json.

A first Ctrl-C (or SIGTERM) ends the run; the plugin then writes the interrupted attempt's
record and the run's summary. A second one arriving during those few writes would leave a
scenario folder without result.json, so it is held until the writes are done, then raised.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Iterator

_SIGNALS = tuple(sig for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)) if sig is not None)


@contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM inside the block; raise KeyboardInterrupt after it if one came.

    Outside the main thread signals cannot be handled there, so the block just runs.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    previous: dict[int, Any] = {sig: signal.signal(sig, note) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if arrived:
        raise KeyboardInterrupt(f"signal {arrived[0]} (held while results were written)")


def end_like_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (scancel, docker stop, CI cancel) ends the run like Ctrl-C: every container
    is removed and every record written."""
    raise KeyboardInterrupt(f"signal {signum}")
