"""The live status's data: phase boards, the snapshot's counts, rate, ETA and running list, and
the one-line form a CI log gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_gaia2.report.progress import duration, snapshot
from pytest_gaia2.store.phases import PhaseBoard, phase_of, running
from pytest_gaia2.store.record import AttemptRecord


def _record(scenario_id: str, outcome: str) -> AttemptRecord:
    return AttemptRecord(scenario_id=scenario_id, success=outcome == "passed", reward=None, num_agent_events=1,
                         agent_response="", judged_in_container=outcome != "error", timed_out=False,
                         timeout_seconds=60.0, daemon_status=None, scenario_file="", failure_reasons=[],
                         error=None, split="search", outcome=outcome)  # type: ignore[arg-type]


PLANNED = [f"search/s{i}" for i in range(10)]


def test_counts_rate_and_eta_from_what_is_done() -> None:
    records = [_record("s0", "passed"), _record("s1", "passed"), _record("s2", "failed"), _record("s3", "error")]
    snap = snapshot(records, PLANNED, [], started=1000.0, now=1100.0)
    assert (snap.done, snap.passed, snap.failed, snap.errors) == (4, 2, 1, 1)
    assert snap.strict.value == 0.5 and snap.strict.n == 4
    assert snap.eta_seconds == pytest.approx(150.0)  # 6 left at 4 per 100 s
    data = snap.to_json()
    assert data["eta_s"] == 150 and data["elapsed_s"] == 100.0 and data["strict_so_far"]["value"] == 0.5


def test_no_eta_before_the_first_result_and_none_left_at_the_end() -> None:
    assert snapshot([], PLANNED, [], started=0.0, now=50.0).eta_seconds is None
    done = [_record(f"s{i}", "passed") for i in range(10)]
    assert snapshot(done, PLANNED, [], started=0.0, now=50.0).eta_seconds == 0.0


def test_running_entries_of_finished_scenarios_are_dropped() -> None:
    entries = [{"key": "search/s0", "worker": "gw0", "phase": "collecting", "attempt": 1, "started": 10.0,
                "phase_started": 40.0},
               {"key": "search/s5", "worker": "gw1", "phase": "turn 2 of 3", "attempt": 1, "started": 20.0,
                "phase_started": 45.0},
               {"key": "search/s6", "phase": "bad", "started": "yesterday"}]
    snap = snapshot([_record("s0", "passed")], PLANNED, entries, started=0.0, now=80.0)
    assert [entry["key"] for entry in snap.running] == ["search/s5"]
    assert snap.to_json()["running"][0]["elapsed_s"] == 60.0
    assert snap.to_json()["running"][0]["phase_elapsed_s"] == 35.0
    assert snap.line().endswith("running 1: search/s5 (turn 2 of 3, 1m00s)")


def test_the_line_names_counts_rate_eta_and_spend() -> None:
    records = [_record("s0", "passed"), _record("s1", "failed")]
    snap = snapshot(records, PLANNED, [], started=0.0, now=120.0, spend_usd=1.5, budget_usd=10.0)
    assert snap.line() == ("gaia2: 2/10 done · 1 passed, 1 failed, 0 errors · strict so far 50.0% [9.5–90.5] · "
                           "elapsed 2m00s · ETA 8m00s · spent $1.50 of $10.00")


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (59.9, "59s"), (61, "1m01s"), (3600 * 7 + 65, "7h01m")])
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize("status, phase", [
    ({"status": "running", "turn": 0, "nb_turns": 3}, "turn 1 of 3"),
    ({"status": "running", "turn": 5, "nb_turns": 3}, "turn 3 of 3"),
    ({"status": "complete", "turn": 1, "nb_turns": 1}, "complete"),
    ({"status": "waiting"}, "waiting"),
    ({}, "waiting"),
])
def test_phase_of_a_polled_status(status: dict[str, object], phase: str) -> None:
    assert phase_of(status) == phase


def test_boards_of_two_workers_are_read_together_oldest_first(tmp_path: Path) -> None:
    first, second = PhaseBoard(tmp_path, "gw0"), PhaseBoard(tmp_path, "gw1")
    second.set("search/b", "starting", attempt=1)
    first.set("search/a", "starting", attempt=1)
    first.set("search/a", "healthy", attempt=1)
    assert [(e["key"], e["phase"], e["worker"]) for e in running(tmp_path)] == [
        ("search/b", "starting", "gw1"), ("search/a", "healthy", "gw0")]
    entry = next(e for e in running(tmp_path) if e["key"] == "search/a")
    assert entry["phase_started"] >= entry["started"]
    first.clear("search/a")
    assert [e["key"] for e in running(tmp_path)] == ["search/b"]
    (tmp_path / "progress.gw2.json").write_text("not json", encoding="utf-8")  # a torn or hostile file
    (tmp_path / "progress.gw3.json").write_text(json.dumps({"running": [7, {"no": "key"}]}), encoding="utf-8")
    assert [e["key"] for e in running(tmp_path)] == ["search/b"]
