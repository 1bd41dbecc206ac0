"""The rules of an item's runs, without an engine: which stored verdict is final on resume, which
outcomes are retried and how many attempts an item gets.

A judgment (pass or fail) is never re-run or retried; an infrastructure error is re-run on resume
and retried ``--gaia2-retries`` times, each attempt in a folder of its own. The runner's loop is
driven here by scripted attempts in a real run folder; no container is started.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import attempt_record, judge_files

from pytest_gaia2.cost.budget import Budget, record_spend
from pytest_gaia2.cost.prices import PriceBook
from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.plan.scenarios import load_scenario
from pytest_gaia2.run.evidence import ScenarioResult
from pytest_gaia2.run.scenario_runs import (
    NOT_RETRIED,
    NotStarted,
    ScenarioRunner,
    retried,
    scenario_dir,
    stored_result,
)
from pytest_gaia2.run.verdict import Gaia2InfraError
from pytest_gaia2.store.folder import RESULT_FILE, RunFolder
from pytest_gaia2.store.record import CATEGORIES, AttemptRecord, reusable
from pytest_gaia2.store.redact import Redactor

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "search" / "scenario_universe_21_7kww6e.json"
STARTED = dt.datetime(2026, 12, 1, 9, 15, 0, tzinfo=dt.timezone.utc)
EARLIER, NOW = "a" * 32, "b" * 32


def make_record(success: bool | None, *, attempt: int = 1, category: str | None = None, **extra: Any) -> AttemptRecord:
    record: AttemptRecord = attempt_record(
        "scenario_universe_21_7kww6e", success, scenario_file=str(SCENARIO), attempt=attempt,
        error_category=(category or "no_judgment") if success is None else None, **extra,
    )
    return record


@pytest.fixture
def item() -> PlannedItem:
    scenario = load_scenario(SCENARIO, "search")
    return PlannedItem("search", scenario.scenario_id, scenario=scenario)


@pytest.fixture
def run(tmp_path: Path) -> RunFolder:
    return RunFolder.create(tmp_path, EARLIER, STARTED)


def store_attempts(run: RunFolder, item: PlannedItem, *records: AttemptRecord) -> list[Path]:
    """The records as earlier sessions left them: attempt n in its own folder."""
    where = scenario_dir(run, item)
    folders = []
    for number, record in enumerate(records, start=1):
        folder = run.attempt_dir(where, number)
        folder_name = folder.relative_to(run.path).as_posix()
        judge_files(folder, record.success)
        run.write_record(folder, replace(record, attempt=number, folder=folder_name))
        folders.append(folder)
    return folders


# -- stored verdicts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("success", "stored_hash", "current_hash", "final"),
    [
        (True, "h1", "h1", True),
        (False, "h1", "h1", True),  # a rejection is as final as a pass
        (None, "h1", "h1", False),  # an error is re-run
        (True, "h1", "h2", False),  # the scenario file changed since the judgment
        (False, "h1", "h2", False),
        (True, None, "h2", True),  # a record of an earlier version has no hash: kept
        (True, "h1", None, True),
    ],
)
def test_only_a_judgment_of_the_same_file_is_final(success, stored_hash, current_hash, final) -> None:
    assert reusable(make_record(success, scenario_sha256=stored_hash), current_hash) is final


def test_no_record_is_no_verdict() -> None:
    assert reusable(None, "h1") is False


def test_an_earlier_sessions_judgment_is_reported_again_marked_reused(run: RunFolder, item: PlannedItem) -> None:
    [folder] = store_attempts(run, item, make_record(True, session_id=EARLIER))
    result = stored_result(run, item, NOW)
    assert result is not None and result.passed and result.folder == folder
    assert result.record.reused is True
    same_session = stored_result(run, item, EARLIER)  # --reruns, or the same item twice
    assert same_session is not None and same_session.record.reused is False


def test_an_error_is_run_again_and_a_later_judgment_wins(run: RunFolder, item: PlannedItem) -> None:
    store_attempts(run, item, make_record(None, session_id=EARLIER))
    assert stored_result(run, item, NOW) is None
    folders = store_attempts(run, item, make_record(None), make_record(False), make_record(None, category="timeout"))
    result = stored_result(run, item, NOW)
    assert result is not None and result.failed and result.record.attempt == 2 and result.folder == folders[1]


@pytest.mark.parametrize(
    ("stored", "beside", "actions"),
    [
        (True, False, 1),  # result.json edited to passed; the judge's files say fail
        (True, None, 1),  # no judge's files at all
        (True, True, 0),  # a pass with no agent action
        (False, True, 1),  # edited to failed beside a recorded pass
    ],
)
def test_a_stored_verdict_the_files_beside_it_contradict_runs_again(
    run: RunFolder, item: PlannedItem, stored: bool, beside: bool | None, actions: int
) -> None:
    [folder] = store_attempts(run, item, make_record(stored, session_id=EARLIER))
    for name in ("daemon_status.json", "daemon_judgments.jsonl", "events.jsonl"):
        (folder / name).unlink(missing_ok=True)
    judge_files(folder, beside, actions)
    assert stored_result(run, item, NOW) is None


def test_a_judgment_of_a_changed_file_is_run_again(run: RunFolder, item: PlannedItem) -> None:
    store_attempts(run, item, make_record(True, scenario_sha256="0" * 64))
    assert stored_result(run, item, NOW) is None
    store_attempts(run, item, make_record(True, scenario_sha256=item.scenario.sha256))
    assert stored_result(run, item, NOW) is not None


@pytest.mark.parametrize("text", ["{", "[]", '{"scenario_id": "x", "success": "yes"}', '{"outcome": "pwned"}'])
def test_a_damaged_record_is_no_verdict(run: RunFolder, item: PlannedItem, text: str) -> None:
    folder = scenario_dir(run, item)
    folder.mkdir(parents=True)
    (folder / RESULT_FILE).write_text(text)
    assert stored_result(run, item, NOW) is None


@pytest.mark.parametrize("named", ["../../../..", "/etc", "search/other_scenario", "search//x", "run_2/search/x"])
def test_a_stored_folder_outside_the_scenarios_is_replaced_by_its_own(
    run: RunFolder, item: PlannedItem, named: str
) -> None:
    """result.json is hostile: the folder it names never sends the fixtures' readers elsewhere."""
    [folder] = store_attempts(run, item, make_record(True))
    run.write_record(folder, make_record(True, folder=named))
    result = stored_result(run, item, NOW)
    assert result is not None and result.folder == scenario_dir(run, item)


def test_a_repeat_has_its_own_verdict(run: RunFolder, item: PlannedItem) -> None:
    scenario = item.scenario
    first, second = (PlannedItem("search", item.name, repeat=k, repeats=2, scenario=scenario) for k in (1, 2))
    store_attempts(run, first, make_record(True, repeat=1, repeats=2))
    assert stored_result(run, first, NOW) is not None
    assert stored_result(run, second, NOW) is None


def test_a_file_that_cannot_run_has_no_stored_verdict(run: RunFolder) -> None:
    assert stored_result(run, PlannedItem("search", "broken"), NOW) is None


# -- retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("category", sorted(set(CATEGORIES) - NOT_RETRIED))
def test_an_error_is_retried_whatever_its_category(category: str) -> None:
    error = make_record(None, category=category)
    assert retried(error, 1, 1) and not retried(error, 2, 1)


def test_a_scenario_stopped_by_its_own_cap_is_never_retried() -> None:
    assert NOT_RETRIED == {"scenario_cap"}
    assert not retried(make_record(None, category="scenario_cap"), 1, 5)


@pytest.mark.parametrize("success", [True, False])
@pytest.mark.parametrize("retries", [0, 1, 5])
def test_a_judgment_is_never_retried(success: bool, retries: int) -> None:
    assert not any(retried(make_record(success), tried, retries) for tried in range(1, retries + 2))


@pytest.mark.parametrize("retries", [0, 1, 2, 7])
def test_errors_get_retries_plus_one_attempts(retries: int) -> None:
    error = make_record(None)
    assert [tried for tried in range(1, 100) if not retried(error, tried, retries)][0] == retries + 1


class ScriptedAttempt:
    """Stands in for :class:`~pytest_gaia2.run.attempt.ScenarioAttempt`: ends as scripted, and
    writes its record as a real attempt does, so the next attempt gets a folder of its own."""

    def __init__(self, run: RunFolder, folder: Path, attempt: int, ends: AttemptRecord | str) -> None:
        self.run, self.folder, self.attempt, self.ends = run, folder, attempt, ends
        self.result: ScenarioResult | None = None
        self.removed = False

    def start(self) -> None:
        if self.ends == "raises before a record":
            raise Gaia2InfraError("container_start", "no engine")
        if isinstance(self.ends, AttemptRecord) and self.ends.error_category == "health_timeout":
            self._finish()  # start() writes the record, then raises (as the real attempt does)
            raise Gaia2InfraError("health_timeout", "never healthy")

    def drive(self) -> ScenarioResult:
        return self._finish()

    def _finish(self) -> ScenarioResult:
        assert isinstance(self.ends, AttemptRecord)
        record = replace(self.ends, attempt=self.attempt)
        self.run.write_record(self.folder, record)
        self.result = ScenarioResult(record, self.folder)
        return self.result

    def remove(self) -> None:
        self.removed = True


class ScriptedRunner(ScenarioRunner):
    """The real runner's loop; only the attempt is scripted."""

    def __init__(self, run: RunFolder, retries: int, ends: list[AttemptRecord | str], budget: Budget) -> None:
        super().__init__(
            None,  # type: ignore[arg-type]  # no engine: no attempt here starts a container
            None,  # type: ignore[arg-type]
            Redactor([]),
            run,
            {},
            retries=retries,
            session_id=NOW,
            worker="main",
            workers=1,
            budget=budget,
            prices=PriceBook.load(None),
        )
        self.ends = list(ends)
        self.made: list[ScriptedAttempt] = []

    def new_attempt(self, item: PlannedItem) -> ScriptedAttempt:  # type: ignore[override]
        assert self.folder is not None
        where = scenario_dir(self.folder, item)
        number = self.folder.next_attempt(where)
        attempt = ScriptedAttempt(self.folder, self.folder.attempt_dir(where, number), number, self.ends.pop(0))
        self.made.append(attempt)
        return attempt


def run_item(
    run: RunFolder, item: PlannedItem, retries: int, *ends: AttemptRecord | str, budget: Budget | None = None
) -> tuple[ScenarioResult, ScriptedRunner]:
    runner = ScriptedRunner(run, retries, list(ends), budget or Budget())
    seen: list[Any] = []
    result = runner.result_for(item, seen.append)
    assert seen == runner.made  # on_attempt saw each attempt before it started
    assert all(attempt.removed for attempt in runner.made)
    return result, runner


ERROR, PASS, FAIL = make_record(None), make_record(True), make_record(False)


@pytest.mark.parametrize(
    ("retries", "ends", "outcome", "attempts"),
    [
        (2, [PASS], "passed", 1),
        (2, [FAIL], "failed", 1),
        (2, [ERROR, PASS], "passed", 2),
        (2, [ERROR, ERROR, FAIL], "failed", 3),
        (2, [ERROR, ERROR, ERROR], "error", 3),
        (0, [ERROR], "error", 1),
        (1, [make_record(None, category="health_timeout"), PASS], "passed", 2),  # raised in start, with a record
        (3, [make_record(None, category="verdict_conflict"), PASS], "passed", 2),
    ],
)
def test_the_runner_retries_errors_each_in_a_new_folder(
    run: RunFolder, item: PlannedItem, retries: int, ends: list[AttemptRecord], outcome: str, attempts: int
) -> None:
    result, runner = run_item(run, item, retries, *ends)
    assert result.record.outcome == outcome
    assert [attempt.attempt for attempt in runner.made] == list(range(1, attempts + 1))
    assert run.attempts(scenario_dir(run, item)) == list(range(1, attempts + 1))
    assert result.folder == runner.made[-1].folder


def test_a_resumed_error_gets_new_attempts_after_the_stored_ones(run: RunFolder, item: PlannedItem) -> None:
    store_attempts(run, item, make_record(None, session_id=EARLIER), make_record(None, session_id=EARLIER))
    result, runner = run_item(run, item, 1, ERROR, PASS)
    assert result.passed and [attempt.attempt for attempt in runner.made] == [3, 4]


def test_a_stored_judgment_starts_no_attempt(run: RunFolder, item: PlannedItem) -> None:
    store_attempts(run, item, make_record(False, session_id=EARLIER))
    result, runner = run_item(run, item, 2)
    assert result.failed and result.record.reused and runner.made == []


def test_an_error_raised_before_any_record_is_not_retried(run: RunFolder, item: PlannedItem) -> None:
    """The report hook writes the last-resort record (error_record) for it."""
    runner = ScriptedRunner(run, 2, ["raises before a record", PASS], Budget())
    with pytest.raises(Gaia2InfraError, match="no engine"):
        runner.result_for(item, lambda attempt: None)
    assert len(runner.made) == 1 and runner.made[0].removed


def test_a_halted_budget_skips_before_the_next_attempt(run: RunFolder, item: PlannedItem) -> None:
    record_spend(run.path, "search/earlier", 1, 5.0)
    runner = ScriptedRunner(run, 2, [ERROR], Budget(halt=1.0))
    with pytest.raises(NotStarted, match="budget"):
        runner.result_for(item, lambda attempt: None)
    assert runner.made == []


def test_the_token_halt_skips_before_the_next_attempt(run: RunFolder, item: PlannedItem) -> None:
    record_spend(run.path, "search/earlier", 1, None, 1_500)  # a model without a price: tokens only
    runner = ScriptedRunner(run, 0, [PASS], Budget(token_halt=1_000))
    with pytest.raises(NotStarted, match="budget: the run has used 1,500 tokens, its token halt is 1,000"):
        runner.result_for(item, lambda attempt: None)
    assert runner.made == []


def test_max_errors_counts_this_sessions_errors_its_own_at_once(run: RunFolder, item: PlannedItem) -> None:
    """Another worker's error is in results.jsonl (the controller wrote it); this worker's own
    counts before the controller has written it. Earlier sessions' errors and errors that are
    not the setup's (a broken file, an interruption, the cap) do not count."""
    other = replace(make_record(None, category="health_timeout", session_id=NOW), scenario_id="scenario_universe_22_x")
    for record in (
        other,
        replace(make_record(None, session_id=EARLIER), scenario_id="scenario_universe_23_x"),
        replace(make_record(None, category="interrupted", session_id=NOW), scenario_id="scenario_universe_24_x"),
        replace(make_record(None, category="invalid_scenario", session_id=NOW), scenario_id="scenario_universe_25_x"),
        replace(make_record(None, category="budget_cap", session_id=NOW), scenario_id="scenario_universe_26_x"),
    ):
        run.append_result(record)
    runner = ScriptedRunner(run, 0, [make_record(None, session_id=NOW)], Budget(max_errors=2))
    assert runner.result_for(item, lambda attempt: None).record.outcome == "error"  # one error seen: it starts
    assert runner.own_errors == {item.key: "no_judgment"}
    with pytest.raises(NotStarted) as skipped:
        runner.result_for(item, lambda attempt: None)
    assert str(skipped.value) == (
        "errors: 2 infrastructure error(s) in this session (health_timeout 1, no_judgment 1) reached "
        "--gaia2-max-errors 2; no new scenario starts"
    )
    assert len(runner.made) == 1
