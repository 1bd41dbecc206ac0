"""``pytest-gaia2 export --format are-leaderboard``: rows and report as upstream's hf_upload path
means them, checked by the validator; a tampered export fails it with the field named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cli.export import check
from pytest_gaia2.report.stats import summarise
from pytest_gaia2.store import folder as store

ROWS = Path("search") / "validation-00000-of-00001.jsonl"


def export(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main(["export", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    # s1 passed twice, s2 passed then failed, s3 errored then failed; s4 planned, never run.
    run = write_run(tmp_path / "run", {"s1": "PP", "s2": "PF", "s3": "EF"},
                    planned=[f"search/s{i}/run_{k}" for i in range(1, 5) for k in (1, 2)])
    out = tmp_path / "export"
    code, text, err = export(capsys, run, "--output", out, "--with-data")
    assert code == 0, err
    assert "6 rows in 1 configs (search)" in text and "checked: valid" in text and "judged-only" in text
    assert "2 planned scenario runs never ran: no row" in text
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rows_carry_upstreams_fields_and_meanings(exported: Path) -> None:
    rows = {(r["scenario_id"], r["run_number"]): r for r in lines(exported / ROWS)}
    assert set(rows) == {("s1", 1), ("s1", 2), ("s2", 1), ("s2", 2), ("s3", 1), ("s3", 2)}
    passed, failed, error = rows[("s1", 1)], rows[("s2", 2)], rows[("s3", 1)]
    assert (passed["score"], passed["status"], passed["has_exception"]) == (1.0, "success", False)
    assert (failed["score"], failed["status"], failed["rationale"]) == (0.0, "failed", "wrong answer")
    assert "score" not in error and error["status"] == "exception" and error["has_exception"] is True
    assert (error["exception_type"], error["exception_message"]) == ("daemon_error", "boom")
    for row in rows.values():
        assert (row["config"], row["phase_name"], row["a2a_app_prop"]) == ("search", "standard", 0.0)
        assert (row["has_app_noise"], row["has_env_noise"], row["task_id"]) == (False, False, row["scenario_id"])
        assert json.loads(row["run_config"])["run_id"] and "planned" not in json.loads(row["run_config"])
        assert json.loads(row["data"].splitlines()[0])["id"] == row["scenario_id"]  # that attempt's events.jsonl


def test_statistics_by_hand(exported: Path) -> None:
    report = json.loads((exported / "report.json").read_text(encoding="utf-8"))
    search = report["statistics"]["per_capability"]["search"]
    # Scored runs: run 1: P, P (s3 errored: left out) -> 100%; run 2: P, F, F -> 33.3%. Pooled 3/5 = 60%.
    assert (search["total_runs"], search["validated_runs"], search["exception_runs"]) == (6, 5, 1)
    assert search["success_rate"] == pytest.approx(60.0)
    per_run = [100.0, 100 / 3]
    std = (sum((x - sum(per_run) / 2) ** 2 for x in per_run)) ** 0.5  # n - 1 = 1
    assert search["success_rate_std"] == pytest.approx(std)
    assert search["success_rate_sem"] == pytest.approx(std / 2**0.5)
    # pass@2: s1 and s2 passed at least once; pass^2: s1 only; over 3 scenarios with a row.
    assert (search["pass_at_k"], search["pass_k"], search["total_scenarios"]) == (2, 1, 3)
    assert report["statistics"]["global"]["macro_success_rate"] == pytest.approx(60.0)
    assert report["metadata"]["rates"].startswith("success rates are judged-only")


@pytest.mark.parametrize(("tamper", "named"), [
    (lambda row: {**row, "score": 1.0} if row["status"] == "failed" else row,
     "field 'score' must be 0.0 for status 'failed'"),
    (lambda row: {key: value for key, value in row.items() if key != "status"}, "field 'status' is missing"),
    (lambda row: {**row, "run_number": "1"}, "field 'run_number' must be int"),
    (lambda row: {**row, "has_exception": not row["has_exception"]}, "field 'has_exception' must be"),
    (lambda row: {**row, "config": "time"}, "field 'config' is 'time' in the files of config 'search'"),
    (lambda row: {**row, "extra": 1}, "unknown field 'extra'"),
])
def test_a_tampered_row_fails_with_the_field_named(exported: Path, capsys: pytest.CaptureFixture[str],
                                                   tamper: Any, named: str) -> None:
    assert export(capsys, "--check", exported)[0] == 0
    path = exported / ROWS
    path.write_text("".join(json.dumps(tamper(row)) + "\n" for row in lines(path)), encoding="utf-8")
    code, text, _ = export(capsys, "--check", exported)
    assert code == 1 and named in text and f"{exported}: NOT valid" in text
    assert text.startswith(f"pytest-gaia2 export: {ROWS.as_posix()}:")


def test_a_tampered_report_fails_with_the_statistic_named(exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = exported / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    report["statistics"]["per_capability"]["search"]["success_rate"] = 75.0
    path.write_text(json.dumps(report), encoding="utf-8")
    code, text, _ = export(capsys, "--check", exported)
    assert code == 1
    assert "field 'statistics.per_capability.search.success_rate' is 75.0, the rows say 60.0" in text


def test_the_output_is_a_new_folder_outside_every_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", {"s1": "P"})
    code, _, err = export(capsys, run, "--output", run / "export")
    assert code == 2 and "inside run folder" in err
    (tmp_path / "taken").mkdir()
    code, _, err = export(capsys, run, "--output", tmp_path / "taken")
    assert code == 2 and "already exists" in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                             lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                         max_size=4),
                             max_leaves=12), min_size=1, max_size=4))
def test_the_checker_names_problems_in_any_json_and_never_crashes(tmp_path: Path, values: list[Any]) -> None:
    folder = tmp_path / "any"
    (folder / "search").mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text("{}", encoding="utf-8")
    (folder / ROWS).write_text("".join(json.dumps(value) + "\n" for value in values), encoding="utf-8")
    problems = check(folder)
    assert problems and all(isinstance(problem, str) for problem in problems)


def test_pass_hat_k_agrees_with_the_report_on_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An errored run is left out of pass^k in both (neither a pass nor a failure): s2 (EP) passed
    every judged run; s3 (EE) has none, so it is no pass."""
    run = write_run(tmp_path / "run", {"s1": "PP", "s2": "EP", "s3": "EE", "s4": "PF"})
    code, _, err = export(capsys, run, "--output", tmp_path / "export")
    assert code == 0, err
    search = json.loads((tmp_path / "export" / "report.json").read_text(encoding="utf-8"))["statistics"][
        "per_capability"]["search"]
    repeats = summarise([record.to_json() for record in store.RunFolder(run).records()]).repeats
    assert repeats is not None
    assert (search["pass_k"], search["total_scenarios"]) == (repeats.pass_hat_k.successes, repeats.pass_hat_k.n)
    assert repeats.pass_hat_k.successes == 2
