"""The end of a run without pytest or a running engine: only a prepared controller writes the run's
files; a record this session wrote that never reached the controller still gets its line, another
session's does not; and an engine that is down does not stop the end."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from gaia2_testing import SHIPPED

from pytest_gaia2.config import options
from pytest_gaia2.config.settings import RunSettings
from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.engine.spec import EngineSpec
from pytest_gaia2.report.book import ResultBook
from pytest_gaia2.report.gate import Gate
from pytest_gaia2.run.run_end import RunEnd
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.run_plan import RunPlan
from pytest_gaia2.run.scenario_runs import scenario_dir
from pytest_gaia2.run.terms import ExitStatus, Invocation
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

STARTED = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
DOWN = EngineSpec(url="unix:///nonexistent/gaia2-engine.sock")
"""An engine that does not answer: the sweep's removal is skipped, never raised."""


def ending(tmp_path: Path, *, prepared: bool, is_worker: bool = False) -> tuple[RunEnd, list[str]]:
    cli = {"scenarios": [str(SHIPPED / "search")], "report": False}
    run_options = RunOptions(Invocation(base=tmp_path), lambda toml: options.resolve(cli, toml, {}), [])
    values = run_options.values
    settings = RunSettings.from_options(values, rootdir=tmp_path, environ={}, reference_image="gaia2-ref:test")
    plan = RunPlan(values, active=True, base=tmp_path, path=lambda raw: tmp_path / raw, handed_over={},
                   settings=lambda: settings, notes=[])
    folder = store.RunFolder.create(tmp_path / "out", "run", STARTED)
    book = ResultBook(Gate.from_options(values), allow_incomplete=False)
    book.folder, book.planned = folder, [item.key for item in plan.items()[:2]]
    engines = EnginePool.of_process([DOWN], {}, workers=1, distributed=False, run_id="session", worker="main",
                                    owner_pid=1)
    lines: list[str] = []
    end = RunEnd(lambda: book, plan, engines, folder, run_options, lines.append, alluredir=None,
                 run_id="run", session_id="session", worker="main", is_worker=is_worker, prepared=prepared)
    return end, lines


def written_by(end: RunEnd, index: int, session_id: str) -> None:
    """The record a worker wrote into the item's attempt folder before the run ended."""
    assert end.folder is not None
    item = end.plan.items()[index]
    assert item.scenario is not None
    record = AttemptRecord(scenario_id=item.scenario.scenario_id, success=True, reward=1.0, num_agent_events=1,
                           agent_response="", judged_in_container=True, timed_out=False, timeout_seconds=60.0,
                           daemon_status=None, scenario_file="", failure_reasons=[], error=None, split=item.split,
                           outcome="passed", session_id=session_id)
    attempt = end.folder.attempt_dir(scenario_dir(end.folder, item), 1)
    attempt.mkdir(parents=True)
    store.RunFolder.write_record(attempt, record)


def test_an_unprepared_run_or_a_worker_writes_no_run_files(tmp_path: Path) -> None:
    for prepared, is_worker in ((False, False), (True, True)):
        end, lines = ending(tmp_path / str(is_worker), prepared=prepared, is_worker=is_worker)
        assert end.finish(ExitStatus.INTERRUPTED) is None
        assert end.book.end_reason is None and end.folder is not None
        assert not end.folder.file(store.SUMMARY_FILE).exists() and lines == []


def test_a_record_this_session_wrote_is_recovered_and_another_sessions_is_not(tmp_path: Path) -> None:
    end, lines = ending(tmp_path, prepared=True)
    written_by(end, 0, "session")
    written_by(end, 1, "an earlier session")
    assert end.finish(ExitStatus.INTERRUPTED) is None  # interrupted: pytest's status stands
    assert end.folder is not None and lines == []
    lines_of = end.folder.file(store.RESULTS_FILE).read_text().splitlines()
    assert [AttemptRecord.from_json(json.loads(line)).key for line in lines_of] == [end.plan.items()[0].key]
    summary: dict[str, Any] = json.loads(end.folder.file(store.SUMMARY_FILE).read_text())
    assert summary["run_id"] == "run" and summary["session_id"] == "session"
    assert end.book.end_reason is not None and end.book.end_reason.startswith("interrupted")
