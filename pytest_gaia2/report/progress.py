"""How a run is going, while it runs: done of planned, outcomes so far, the strict rate so far
with its interval, each running scenario's phase and time, an ETA and the spend.

One :class:`Snapshot` feeds both ``<run>/progress.json`` (for ``watch``, dashboards and other
tools) and the terminal's status line, from the same records as the summary and the
workers' phase files (:mod:`phases`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.report.rates import Rate, percent, percent_number
from pytest_gaia2.report.summary import first_n
from pytest_gaia2.store.record import AttemptRecord

PROGRESS_FILE = "progress.json"
RUNNING_SHOWN = 4
"""Running scenarios named in the one-line form; the rest are counted."""


def iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).isoformat(timespec="seconds")


def duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h07m``: short enough for a status line."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


@dataclass(frozen=True)
class Snapshot:
    """The run at one moment."""

    planned: int
    passed: int
    failed: int
    errors: int
    running: tuple[Mapping[str, Any], ...]
    started: float
    now: float
    spend_usd: float | None = None
    budget_usd: float | None = None
    finished: bool = False
    pacer: Mapping[str, Any] | None = None
    """The run's pacer (:func:`pytest_gaia2.run.pacer.shown`): its rate of starts, slowdowns and recoveries."""

    @property
    def done(self) -> int:
        return self.passed + self.failed + self.errors

    @property
    def strict(self) -> Rate:
        """Passed of done so far: the strict rate the finished run will have if the rest goes alike."""
        return Rate.of(self.passed, self.done)

    @property
    def eta_seconds(self) -> float | None:
        """The rest at the rate observed so far (scenarios per wall second, all workers together)."""
        left = self.planned - self.done
        if self.finished or left <= 0:
            return 0.0
        elapsed = self.now - self.started
        return left * elapsed / self.done if self.done and elapsed > 0 else None

    def to_json(self) -> dict[str, Any]:
        strict = self.strict
        return {
            "started_at": iso(self.started),
            "updated_at": iso(self.now),
            "finished": self.finished,
            "elapsed_s": round(self.now - self.started, 1),
            "planned": self.planned,
            "done": self.done,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "strict_so_far": {"value": strict.value, "low": strict.low, "high": strict.high, "n": strict.n},
            "eta_s": None if self.eta_seconds is None else round(self.eta_seconds),
            "spend_usd": self.spend_usd,
            "budget_usd": self.budget_usd,
            "pacer": dict(self.pacer) if self.pacer is not None else None,
            "running": [
                {
                    **entry,
                    "started_at": iso(entry["started"]),
                    "elapsed_s": round(self.now - entry["started"], 1),
                    "phase_elapsed_s": round(self.now - entry["phase_started"], 1),
                }
                for entry in self.running
            ],
        }

    def running_texts(self) -> list[str]:
        return [f"{entry['key']} ({entry['phase']}, {duration(self.now - entry['started'])})" for entry in self.running]

    def headline(self) -> str:
        """Counts, the strict rate so far, ETA and spend, without the running scenarios."""
        parts = [
            f"{self.done}/{self.planned} done",
            f"{self.passed} passed, {self.failed} failed, {self.errors} errors",
        ]
        strict = self.strict
        if strict.value is not None:
            parts.append(
                f"strict so far {percent(strict.value)} [{percent_number(strict.low)}–{percent_number(strict.high)}]"
            )
        eta = self.eta_seconds
        if not self.finished:
            parts.append(f"elapsed {duration(self.now - self.started)}")
            parts.append(f"ETA {duration(eta)}" if eta is not None else "ETA after the first result")
        if self.pacer is not None and self.pacer.get("paced"):
            parts.append(f"paced at {self.pacer.get('starts_per_minute')} starts/min after provider errors")
        if self.spend_usd is not None:
            parts.append(f"spent ${self.spend_usd:.2f}" + (f" of ${self.budget_usd:.2f}" if self.budget_usd else ""))
        return "gaia2: " + " · ".join(parts)

    def line(self) -> str:
        """One line for a log: the headline and what runs now."""
        texts = self.running_texts()
        return self.headline() + (f" · running {len(texts)}: {first_n(texts, RUNNING_SHOWN)}" if texts else "")


def snapshot(
    records: Iterable[AttemptRecord],
    planned: Sequence[str],
    running: Iterable[Mapping[str, Any]],
    *,
    started: float,
    now: float,
    spend_usd: float | None = None,
    budget_usd: float | None = None,
    finished: bool = False,
    pacer: Mapping[str, Any] | None = None,
) -> Snapshot:
    """The snapshot of a run: records that arrived, and the phase entries of scenarios not done yet."""
    counts = {"passed": 0, "failed": 0, "error": 0}
    done: set[str] = set()
    for record in records:
        counts[record.outcome] = counts.get(record.outcome, 0) + 1
        done.add(record.key)
    still = tuple(
        entry
        for entry in running
        if entry.get("key") not in done
        and isinstance(entry.get("started"), (int, float))
        and isinstance(entry.get("phase_started"), (int, float))
    )
    return Snapshot(
        len(planned),
        counts["passed"],
        counts["failed"],
        counts["error"],
        still,
        started,
        now,
        spend_usd,
        budget_usd,
        finished,
        pacer,
    )
