"""Every limit of a scenario attempt in one place: time bounds, file caps, container limits.

The defaults live in the options table (``options.OPTIONS``) and nowhere else; this module
turns the parsed option values into one frozen object and derives the bounds from it.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

HARD_TIMEOUT_SLACK = 60.0
"""pytest-timeout's bound over every phase's limit: copying files out and engine latency."""
LOG_DIR_IGNORE_LIMIT = 16 * 2**20
"""Bytes of other files read past in one archive of the container's log folder before the
logs are fetched one by one instead (the folder is an agent's scratch space too)."""
ADAPTER_ANSWER_MAX_BYTES = 1 << 20
"""Largest adapter answer the host reads, through the published port or through exec: the
contract's answers are small JSON objects, and the container is not trusted."""
ADAPTER_TIMEOUT = 5.0
"""Seconds one adapter call may take in all (connect, headers and body): a container that
drips its answer is cut off at this wall-clock bound, not at each read's."""
HARD_TIMEOUT_METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
"""pytest-timeout's signal method raises in the test, so teardown removes the container; its
thread method would end the process at once and leave the container running."""


@dataclass(frozen=True)
class Limits:
    """Time bounds (seconds), caps on files copied out (bytes) and container limits."""

    timeout: float
    duration_slack: float
    """Seconds past a scenario's declared duration before it fails as too slow (upstream: 60)."""
    health_timeout: float
    judge_grace: float
    stop_timeout: float
    reap_grace: float
    max_file_size: int
    max_collect_size: int
    memory: int
    pids_limit: int
    keep: bool = False
    idle_timeout: float = 0.0
    """Seconds without a new daemon event before the attempt ends (0: none)."""
    stuck_loop_min_calls: int = 3
    """Model calls since the last turn boundary that make a daemon error the agent's loop (0: never)."""

    def effective_timeout(self, duration: float | None) -> float:
        """The larger of the scenario duration + the slack and the configured timeout (upstream)."""
        return max(self.timeout, duration + self.duration_slack) if duration else self.timeout

    def hard_timeout(self, duration: float | None, attempts: int) -> float:
        """What pytest-timeout enforces even if an attempt hangs: every phase, every attempt."""
        one = (
            self.effective_timeout(duration)
            + self.health_timeout
            + self.judge_grace
            + self.stop_timeout
            + HARD_TIMEOUT_SLACK
        )
        return round(one * attempts, 1)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


STATUS_MAX_BYTES = 4 * 2**20
