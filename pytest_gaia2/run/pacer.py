"""The run's pacer: how fast new scenarios start, shared by every worker and every session.

A storm of provider errors (HTTP 429, 5xx, "overloaded") is not helped by starting more
scenarios into it. Every attempt that ends with provider trouble halves the rate at which
new attempts start (multiplicative decrease); every attempt that ends without it adds an
eighth of the rate the run had before the storm (additive increase), until that rate is
reached again and the run is unpaced (recovered). ``--gaia2-max-starts-per-minute`` caps the
rate at all times. With ``--gaia2-pacing off`` (for a comparison, or a provider paced elsewhere)
the pacer only counts the provider errors: the ceiling alone sets the rate.

The state is one small JSON file in the run folder (``pacer.json``), read and written under
a file lock, so the xdist workers of a session and the sessions of a resume share it; the
live status shows it. The file is in the run folder, so it is read like any file there:
bounded, every number range-checked; a damaged one starts the pacer afresh. A next start
later than every worker queued one longest interval after the other could be (a forged
file) is clamped to that, so no file holds a start longer than the pacer itself would.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.store import folder as store

if TYPE_CHECKING:
    from filelock import FileLock

log = logging.getLogger("pytest_gaia2")

PACER_FILE = "pacer.json"
LOCK_FILE = "pacer.json.lock"
STATE_MAX_BYTES = 64 * 1024
LOCK_TIMEOUT_S = 30.0
"""A lock held longer than this is a stuck process: the start goes ahead unpaced."""
DECREASE = 0.5
"""The rate's factor after an attempt with provider trouble."""
INCREASE_SHARE = 1 / 8
"""Each clean attempt adds this share of the rate to recover to."""
MIN_RATE = 1.0
"""Starts per minute at the deepest slowdown."""
MAX_INTERVAL_S = 60.0 / MIN_RATE
"""The longest interval between two starts the pacer ever sets."""
RATE_MAX = 100_000.0
"""Starts per minute above any real run: a larger number in the file is damage."""
WINDOW_S = 60.0
"""Starts of the last minute give the rate the run had before a storm."""
SPAN_MIN_S = 2.0
"""Fewer seconds than this between the window's starts count as this many (no infinite rate)."""
STARTS_KEPT = 200
HISTORY_KEPT = 20
SAME_STORM_S = 10.0
"""Provider errors this close together (or within one start interval) are one storm: one halving."""


def _rate(value: object) -> float | None:
    """A rate from the file: a finite number in range (no slower than the pacer ever sets), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if MIN_RATE <= value <= RATE_MAX else None


def _epoch(value: object, now: float) -> float | None:
    """A time from the file: finite and not in a far future (a day), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0 <= value <= now + 86_400 else None


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


def iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class PacerState:
    """What the pacer knows: its rate (None while unpaced), the next free start, its history."""

    rate: float | None = None
    """Starts per minute while paced; None: unpaced (only the ceiling applies)."""
    recover_at: float | None = None
    """The rate the run had before the storm: reaching it again ends the slowdown."""
    ceiling: float | None = None
    """--gaia2-max-starts-per-minute of the latest session."""
    adaptive: bool = True
    """--gaia2-pacing of the latest session: False (off) never slows down."""
    next_start: float = 0.0
    last_decrease: float | None = None
    """When the rate was last halved (None: never)."""
    slowdowns: int = 0
    recoveries: int = 0
    provider_errors: int = 0
    starts: tuple[float, ...] = ()
    history: tuple[dict[str, Any], ...] = field(default=())

    @property
    def effective(self) -> float | None:
        """Starts per minute now: the paced rate (when adaptive) under the ceiling; None for no limit."""
        rates = [rate for rate in (self.rate if self.adaptive else None, self.ceiling) if rate is not None]
        return min(rates) if rates else None

    @property
    def interval(self) -> float:
        effective = self.effective
        return 60.0 / effective if effective else 0.0

    @classmethod
    def from_json(cls, data: object, now: float) -> PacerState:
        """The state a file holds; anything out of range is left out (a damaged file: afresh)."""
        if not isinstance(data, dict):
            return cls()
        starts = data.get("starts")
        history = data.get("history")
        return cls(
            rate=_rate(data.get("rate")),
            recover_at=_rate(data.get("recover_at")),
            ceiling=_rate(data.get("ceiling")),
            adaptive=data.get("adaptive") is not False,
            next_start=_epoch(data.get("next_start"), now) or 0.0,
            last_decrease=_epoch(data.get("last_decrease"), now),
            slowdowns=_count(data.get("slowdowns")),
            recoveries=_count(data.get("recoveries")),
            provider_errors=_count(data.get("provider_errors")),
            starts=tuple(
                moment
                for moment in (
                    _epoch(value, now) for value in (starts if isinstance(starts, list) else ())[-STARTS_KEPT:]
                )
                if moment is not None
            ),
            history=tuple(
                {
                    "at": str(entry.get("at"))[:40],
                    "event": str(entry.get("event"))[:20],
                    "rate": _rate(entry.get("rate")),
                }
                for entry in (history if isinstance(history, list) else ())[-HISTORY_KEPT:]
                if isinstance(entry, dict)
            ),
        )

    def observed(self, now: float) -> float:
        """Starts per minute over the last minute (at least MIN_RATE)."""
        recent = [moment for moment in self.starts if now - moment <= WINDOW_S]
        if not recent:
            return MIN_RATE
        return max(MIN_RATE, len(recent) * 60.0 / max(SPAN_MIN_S, now - min(recent)))

    def started(self, at: float) -> PacerState:
        return replace(self, next_start=at + self.interval, starts=(*self.starts, at)[-STARTS_KEPT:])

    def _noted(self, now: float, event: str, rate: float | None) -> tuple[dict[str, Any], ...]:
        entry = {"at": iso(now), "event": event, "rate": None if rate is None else round(rate, 2)}
        return (*self.history, entry)[-HISTORY_KEPT:]

    def slowed(self, now: float) -> PacerState:
        """Slower after provider trouble, once per storm; with the pacing off, unchanged."""
        if not self.adaptive:
            return self
        if self.last_decrease is not None and now - self.last_decrease < max(SAME_STORM_S, self.interval):
            return self  # the same storm: one halving is enough
        current = self.effective or self.observed(now)
        rate = max(MIN_RATE, current * DECREASE)
        return replace(
            self,
            rate=rate,
            recover_at=self.recover_at if self.rate is not None else current,
            last_decrease=now,
            slowdowns=self.slowdowns + 1,
            history=self._noted(now, "slower", rate),
        )

    def ended(self, trouble: bool, now: float) -> PacerState:
        """After one attempt: slower after provider trouble, faster (and at last unpaced) after none;
        with the pacing off, the trouble is only counted."""
        if trouble:
            return replace(self, provider_errors=self.provider_errors + 1).slowed(now)
        if self.rate is None or not self.adaptive:
            return self
        target = self.recover_at or MIN_RATE
        rate = self.rate + max(MIN_RATE, target * INCREASE_SHARE)
        if rate >= target or (self.ceiling is not None and rate >= self.ceiling):
            return replace(
                self,
                rate=None,
                recover_at=None,
                recoveries=self.recoveries + 1,
                history=self._noted(now, "recovered", None),
            )
        return replace(self, rate=rate, history=self._noted(now, "faster", rate))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["starts"] = list(self.starts)
        data["history"] = list(self.history)
        return data

    def shown(self, now: float) -> dict[str, Any]:
        """For progress.json: paced or not, the rate, the counts and the latest changes."""
        effective = self.effective
        return {
            "pacing": "adaptive" if self.adaptive else "off",
            "paced": self.adaptive and self.rate is not None,
            "starts_per_minute": None if effective is None else round(effective, 2),
            "max_starts_per_minute": self.ceiling,
            "next_start_in_s": round(max(0.0, self.next_start - now), 1),
            "slowdowns": self.slowdowns,
            "recoveries": self.recoveries,
            "provider_errors": self.provider_errors,
            "history": list(self.history),
        }


def read_state(folder: Path, now: float | None = None) -> PacerState:
    """The pacer's state in a run folder, without the lock (a view may be a moment old)."""
    data = store.read_json(folder / PACER_FILE, max_bytes=STATE_MAX_BYTES)
    return PacerState.from_json(data, time.time() if now is None else now)


def shown(folder: Path) -> dict[str, Any] | None:
    """progress.json's ``pacer``: None before the pacer first wrote its file."""
    if not (folder / PACER_FILE).is_file():
        return None
    now = time.time()
    return read_state(folder, now).shown(now)


class Pacer:
    """One process's handle on the run's pacer file."""

    def __init__(
        self,
        folder: Path,
        ceiling: float | None,
        *,
        adaptive: bool = True,
        workers: int = 1,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.folder = folder
        self.ceiling = ceiling
        self.adaptive = adaptive
        self.horizon = MAX_INTERVAL_S * max(1, workers)
        """The latest a start can honestly be from now: every worker (of this session) queued, each
        at most one longest interval after the one before; a next start beyond it is clamped."""
        self.clock = clock
        self.sleep = sleep

    @cached_property
    def lock(self) -> FileLock:
        from filelock import FileLock

        return FileLock(str(self.folder / LOCK_FILE), timeout=LOCK_TIMEOUT_S)

    def _update(self, change: Callable[[PacerState, float], tuple[PacerState, float]]) -> float:
        """Read, change and write the state under the lock; what ``change`` returns besides."""
        from filelock import Timeout

        try:
            with self.lock:
                now = self.clock()
                state = replace(read_state(self.folder, now), ceiling=self.ceiling, adaptive=self.adaptive)
                state, value = change(state, now)
                store.write_json(self.folder / PACER_FILE, state.to_json())
                return value
        except (Timeout, OSError, store.StoreError) as exc:  # StoreError: the file cannot be written
            log.warning("gaia2: the pacer's file is not usable (%s); this start is not paced", type(exc).__name__)
            return 0.0

    def wait_turn(self) -> float:
        """Take the next free start (later by one interval than the one before, never later than
        the horizon) and wait for it."""

        def take(state: PacerState, now: float) -> tuple[PacerState, float]:
            at = min(max(now, state.next_start), now + self.horizon) if state.interval else now
            return state.started(at), at - now

        delay = self._update(take)
        if delay > 0:
            self.sleep(delay)
        return delay

    def ended(self, trouble: bool) -> None:
        """One attempt ended, with provider trouble or without."""
        self._update(lambda state, now: (state.ended(trouble, now), 0.0))

    def trouble_seen(self) -> None:
        """The provider refused or failed a call just now (the model gateway saw it): slower at
        once, not when the attempt ends; the attempt still counts as troubled when it does."""
        self._update(lambda state, now: (state.slowed(now), 0.0))
