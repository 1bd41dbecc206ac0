"""The run's spend and its limits: a ledger in the run folder that every xdist worker and every
resumed session adds to (under a file lock), and the halt and cap decisions read from it.

Each attempt is one ledger entry, keyed by scenario and attempt, so writing the same entry again
(a reused verdict, a retried write) never counts it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .store import read_json, write_json

LEDGER_FILE = "spend.json"


@dataclass(frozen=True)
class Budget:
    """``--gaia2-budget-halt``: no new scenario starts once reached; ``--gaia2-budget-cap``:
    running scenarios stop too once passed (USD, None when unset)."""

    halt: float | None = None
    cap: float | None = None

    def halted(self, spent: float) -> str | None:
        """Why no new scenario may start, or None."""
        limit = min((value for value in (self.halt, self.cap) if value is not None), default=None)
        if limit is None or spent < limit:
            return None
        which = "halt" if limit == self.halt else "cap"
        return f"budget: the run has spent ${spent:.2f}, its {which} is ${limit:.2f}; no new scenario starts"

    def capped(self, spent: float) -> str | None:
        """Why a running scenario must stop, or None."""
        if self.cap is None or spent <= self.cap:
            return None
        return f"the run's spend ${spent:.2f} passed its cap ${self.cap:.2f}; stopped before a verdict"


class Ledger:
    """Spend per attempt, in ``<run folder>/spend.json``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LEDGER_FILE

    def _entries(self) -> dict[str, float]:
        data = read_json(self.path)
        entries = data.get("attempts") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {str(key): float(value) for key, value in entries.items() if isinstance(value, (int, float))}

    def add(self, entry: str, usd: float) -> float:
        """Record an attempt's spend (replacing an earlier value of the same entry); the new total."""
        from filelock import FileLock

        with FileLock(str(self.path) + ".lock"):
            entries = self._entries()
            entries[entry] = round(float(usd), 6)
            total = round(sum(entries.values()), 6)
            write_json(self.path, {"total_usd": total, "attempts": dict(sorted(entries.items()))})
        return total

    def total(self) -> float:
        return round(sum(self._entries().values()), 6)


def entry_of(key: str, attempt: int) -> str:
    """One ledger entry per attempt of a scenario (and repeat)."""
    return f"{key}#{attempt}"

