"""Result-record builders shared by the stats and report tests (hand-checked tables)."""

from __future__ import annotations

from typing import Any


def record(scenario_id: str, outcome: str, *, split: str = "search", universe: str | None = None,
           run: int = 1, attempt: int = 1, **extra: Any) -> dict[str, Any]:
    """A result record with just the keys the statistics read."""
    return {"scenario_id": scenario_id, "split": split, "universe": universe, "run": run,
            "attempt": attempt, "outcome": outcome, "reused": False, **extra}


def headline_records() -> list[dict[str, Any]]:
    """The P4.5 search run: 134 passed, 21 failed, 5 errors out of 160."""
    outcomes = ["passed"] * 134 + ["failed"] * 21 + ["error"] * 5
    return [record(f"s{i:03d}", outcome, error_category="no_turn_boundary" if outcome == "error" else None)
            for i, outcome in enumerate(outcomes)]


def pass_at_k_records() -> list[dict[str, Any]]:
    """Four scenarios, three runs, by hand:

    a PPP, b PFP (flips), c FFF, d PEP (run 2 errored: not a flip). b's run 2 was retried.
    Pairs: 7 passes of 12. Per run: 3/4, 1/4, 3/4. pass@3 3/4, pass^3 2/4 (d's error left out).
    """
    table = {"a": "PPP", "b": "PFP", "c": "FFF", "d": "PEP"}
    letters = {"P": "passed", "F": "failed", "E": "error"}
    records = [record("b", "error", run=2, attempt=1, error_category="daemon_error")]
    for run in (1, 2, 3):
        for scenario_id, pattern in table.items():
            records.append(record(scenario_id, letters[pattern[run - 1]], run=run,
                                  attempt=2 if (scenario_id, run) == ("b", 2) else 1,
                                  error_category="daemon_error" if pattern[run - 1] == "E" else None))
    return records


def repeated(table: dict[str, str], **extra: Any) -> list[dict[str, Any]]:
    """Records from one letter pattern per scenario (``PFP``), written as today's records are:
    ``repeat``/``repeats``, not version 0.1's ``run``."""
    letters = {"P": "passed", "F": "failed", "E": "error"}
    return [{"scenario_id": sid, "split": "search", "repeat": run, "repeats": len(pattern),
             "outcome": letters[letter], **extra}
            for sid, pattern in table.items() for run, letter in enumerate(pattern, start=1)]
