"""The probe against the budget: how many planned scenarios the halt or cap is
expected to complete, with the interval; a --gaia2-probe-only run ends as a projection."""

from __future__ import annotations

import pytest

from pytest_gaia2.cost.projection import Projection, project
from pytest_gaia2.report.book import ResultBook
from pytest_gaia2.report.gate import Gate
from pytest_gaia2.report.summary import PROBE_ONLY
from pytest_gaia2.store.record import AttemptRecord

# A probe of 5 of 40 planned: about $309.12 (95% interval $198.72-$397.44), so $7.728 a scenario.
PROBE = dict(planned=40, probed=5, usd=309.12, low=198.72, high=397.44, hours=1.0, workers=2)


def test_a_halt_completes_the_scenario_that_crosses_it() -> None:
    # 50 / 7.728 = 6.47 -> 7; 50 / 9.936 = 5.03 -> 6; 50 / 4.968 = 10.06 -> 11
    line = Projection(**PROBE, halt=50.0).line()
    assert line.endswith("; the halt ($50.00) is expected to complete 7 of the 40 (95% interval 6–11)")


def test_a_cap_stops_it_and_the_tighter_limit_is_named() -> None:
    assert Projection(**PROBE, cap=50.0).reach() == ("cap", 6, 5, 10)
    assert Projection(**PROBE, halt=50.0, cap=40.0).reach() == ("cap", 5, 4, 8)
    assert Projection(**PROBE, halt=10_000.0).reach() == ("halt", 40, 40, 40)  # never more than planned


@pytest.mark.parametrize(("hours", "shown"), [
    (0.01, "36 s"), (0.0, "0 s"), (89 / 3600, "89 s"), (0.05, "3 min"), (1.0, "60 min"), (1.5, "1.5 h"),
    (6.5, "6.5 h"),
])
def test_the_probe_line_gives_its_time_in_seconds_minutes_or_hours(hours: float, shown: str) -> None:
    line = Projection(**{**PROBE, "hours": hours}).line()  # type: ignore[arg-type]
    assert line == ("gaia2: probe of 5: the 40 selected scenarios ≈ $309.12 (95% interval $198.72–$397.44) "
                    f"and ≈ {shown} at -n 2")


def test_the_probe_spreads_its_time_over_every_scenario_in_flight() -> None:
    records = [AttemptRecord.from_json({"scenario_id": f"s{i}", "split": "search", "wall_time_s": 360.0}) for i in range(4)]
    workers = project(records, 40, 2)
    in_flight = project(records, 40, 2, in_flight=4)
    assert (workers.hours, in_flight.hours) == (2.0, 0.5)
    assert workers.line().endswith("≈ 2.0 h at -n 2") and in_flight.line().endswith("≈ 30 min at -n 2 x 4 in flight")


def test_no_budget_or_no_price_says_nothing_of_reach() -> None:
    assert Projection(**PROBE).reach() is None and "expected to complete" not in Projection(**PROBE).line()
    unpriced = {**PROBE, "usd": None, "low": None, "high": None}
    assert Projection(**unpriced, halt=50.0).reach() is None  # type: ignore[arg-type]


def _record(sid: str) -> AttemptRecord:
    return AttemptRecord(
        scenario_id=sid, success=True, reward=None, num_agent_events=1, agent_response="", judged_in_container=True,
        timed_out=False, timeout_seconds=60.0, daemon_status=None, scenario_file="", failure_reasons=[], error=None,
        split="search", outcome="passed", run_id="r" * 32, cost_usd=0.5)


def test_a_probe_only_run_ends_as_a_projection_not_as_incomplete() -> None:
    book = ResultBook(Gate(), allow_incomplete=False)
    book.planned = ["search/a", "search/b", "search/c"]
    book.note_not_started("search/c", f"{PROBE_ONLY}: not in the probe")
    for sid in ("a", "b"):
        book.add(_record(sid), probe_keys={"search/a", "search/b"})
    lines = book.lines()
    assert lines[2].startswith("PROBE ONLY: 2 of 3 planned scenarios ran as the probe (--gaia2-probe-only)")
    assert not any(line.startswith("INCOMPLETE") for line in lines)
    assert any(line.startswith("gaia2: probe of 2: the 3 selected scenarios") for line in lines)
    book.not_started["search/c"] = "budget: halt reached"  # stopped for another reason: incomplete it is
    assert book.lines()[2].startswith("INCOMPLETE: 2 of 3")
