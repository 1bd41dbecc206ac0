"""The verdicts a summary counts, one row per (split, scenario, run), and their display order.

A row is the last record written for its key or, given the run's plan, a ``not_run`` row
for a planned key without one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.store.names import SPLITS, universe_of

OUTCOMES = ("passed", "failed", "error")
NOT_RUN = "not_run"
"""The outcome of a planned (scenario, run) without a record; never read from a record."""
UNCATEGORISED = "uncategorised"
UNKNOWN_UNIVERSE = "unknown"


def natural_key(text: str) -> list[Any]:
    """Sort ``universe_3`` before ``universe_21``; re.split alternates text and digits."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def split_order(name: str) -> tuple[int, list[Any]]:
    """Gaia2's own split order first, any other folder name after, alphabetically."""
    return (SPLITS.index(name) if name in SPLITS else len(SPLITS), natural_key(name))


@dataclass(frozen=True)
class ResultRow:
    """One counted verdict, the last record for a (split, scenario, run), or a planned one
    that has none (outcome ``not_run``)."""

    split: str
    scenario_id: str
    universe: str
    run: int
    outcome: str
    reused: bool
    error_category: str
    wall_time_s: float | None
    events: float | None

    @property
    def key(self) -> tuple[str, str, int]:
        return self.split, self.scenario_id, self.run


def _outcome(record: Mapping[str, Any]) -> str:
    """``outcome`` when present, else upstream's ``success`` (True / False / None = error)."""
    outcome = record.get("outcome")
    if outcome is None:
        success = record.get("success")
        outcome = "error" if success is None else ("passed" if success else "failed")
    if outcome not in OUTCOMES:
        raise ValueError(
            f"result for {record.get('scenario_id')!r}: outcome {outcome!r} is not one of {', '.join(OUTCOMES)}"
        )
    return outcome


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _row(record: Mapping[str, Any]) -> ResultRow:
    return ResultRow(
        split=str(record.get("split") or "scenarios"),
        scenario_id=str(record["scenario_id"]),
        universe=str(record.get("universe") or UNKNOWN_UNIVERSE),
        run=int(record.get("repeat") or record.get("run") or 1),  # "run" in files of version 0.1
        outcome=_outcome(record),
        reused=bool(record.get("reused")),
        error_category=str(record.get("error_category") or UNCATEGORISED),
        wall_time_s=_number(record.get("wall_time_s")),
        events=_number(record.get("num_agent_events")),
    )


def latest_rows(records: Iterable[Mapping[str, Any]]) -> list[ResultRow]:
    """Keep one verdict per (split, scenario, run): the record written last.

    Records arrive in the order they were written (retries after the attempt they retry,
    a resumed session after the one it resumes), so "last written" is "last attempt" even
    when a resumed session numbers its attempts from 1 again.
    """
    rows: dict[tuple[str, str, int], ResultRow] = {}
    for record in records:
        row = _row(record)
        rows[row.key] = row
    return list(rows.values())


_PLANNED_KEY = re.compile(r"([^/]+)/(.+?)(?:/run_(\d+))?")


def is_key(key: object) -> bool:
    """Whether ``key`` (from any file) is a ``<split>/<scenario_id>[/run_<k>]`` key :func:`planned_keys` takes."""
    return isinstance(key, str) and _PLANNED_KEY.fullmatch(key) is not None


def planned_keys(keys: Sequence[str]) -> dict[tuple[str, str, int], str]:
    """``<split>/<scenario_id>[/run_<k>]`` keys (as test ids and records spell them) by
    (split, scenario, run), the identity ``latest_rows`` keeps records by."""
    planned = {}
    for key in keys:
        match = _PLANNED_KEY.fullmatch(key)
        if not match:
            raise ValueError(f"planned key {key!r} is not <split>/<scenario_id>[/run_<k>]")
        planned[(match[1], match[2], int(match[3] or 1))] = key
    return planned


def not_run_rows(rows: Sequence[ResultRow], planned: Mapping[tuple[str, str, int], str]) -> list[ResultRow]:
    """A ``not_run`` row per planned key without a record; its universe is a sibling run's, else its id's."""
    done = {row.key for row in rows}
    universes = {(row.split, row.scenario_id): row.universe for row in rows}
    return [
        ResultRow(
            split=split,
            scenario_id=scenario_id,
            run=run,
            outcome=NOT_RUN,
            reused=False,
            universe=universes.get((split, scenario_id)) or universe_of(scenario_id) or UNKNOWN_UNIVERSE,
            error_category=UNCATEGORISED,
            wall_time_s=None,
            events=None,
        )
        for split, scenario_id, run in planned
        if (split, scenario_id, run) not in done
    ]
