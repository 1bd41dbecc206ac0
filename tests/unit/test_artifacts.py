"""The output folder's files that several sessions may write to: results.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_gaia2 import artifacts


def record(scenario_id: str, outcome: str, *, split: str = "search", run: int = 1, reused: bool = False) -> dict:
    return {"scenario_id": scenario_id, "split": split, "run": run, "outcome": outcome, "reused": reused}


def test_rewrite_keeps_the_last_line_per_scenario_and_run_in_a_fixed_order(tmp_path: Path) -> None:
    """An interrupted session's lines, then a resumed session's reused and new ones, then a torn line."""
    path = tmp_path / artifacts.RESULTS_FILE
    lines = [
        record("scenario_universe_24_b", "passed"),
        record("scenario_universe_21_a", "error"),
        record("scenario_universe_21_a", "passed", run=2),
        record("scenario_universe_24_b", "passed", reused=True),
        record("scenario_universe_21_a", "failed"),
        record("scenario_universe_25_c", "passed", split="time"),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"scenario_id": "torn', encoding="utf-8")

    artifacts.rewrite_results(path)

    assert artifacts.read_jsonl(path) == [
        record("scenario_universe_21_a", "failed"),
        record("scenario_universe_21_a", "passed", run=2),
        record("scenario_universe_24_b", "passed", reused=True),
        record("scenario_universe_25_c", "passed", split="time"),
    ]
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_rewrite_leaves_a_missing_file_missing(tmp_path: Path) -> None:
    artifacts.rewrite_results(tmp_path / artifacts.RESULTS_FILE)
    assert not (tmp_path / artifacts.RESULTS_FILE).exists()
