"""``pytest-gaia2 export --format are-leaderboard``: rows and report as upstream's hf_upload path
means them, checked by the validator; a tampered export fails it with the field named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.report import export as export_module
from pytest_gaia2.report import leaderboard
from pytest_gaia2.report.export import check
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
    code, text, err = export(capsys, run, "--output", out, "--with-data", "--rows", "jsonl", "--allow-partial")
    assert code == 0, err
    assert "6 rows (jsonl) in 1 configs (search)" in text and "checked: valid" in text and "judged-only" in text
    assert "PARTIAL: 2 of 8 planned scenario runs never ran and have no row" in text
    assert "complete Gaia2 leaderboard submission also needs the agent2agent and noise phases" in text
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
    report = json.loads((exported / "computed_stats.json").read_text(encoding="utf-8"))
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
    (lambda row: {**row, "task_id": "a\u0000b/../../x"}, "field 'task_id' cannot name a scenario"),
    (lambda row: {**row, "scenario_id": ".."}, "field 'scenario_id' cannot name a scenario"),
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
    path = exported / "computed_stats.json"
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


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                             lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                         max_size=4),
                             max_leaves=12), min_size=1, max_size=4))
def test_the_checker_names_problems_in_any_json_and_never_crashes(tmp_path: Path, values: list[Any]) -> None:
    folder = tmp_path / "any"
    (folder / "search").mkdir(parents=True, exist_ok=True)
    (folder / "computed_stats.json").write_text("{}", encoding="utf-8")
    (folder / ROWS).write_text("".join(json.dumps(value) + "\n" for value in values), encoding="utf-8")
    problems = check(folder)
    assert problems and all(isinstance(problem, str) for problem in problems)


def test_a_run_that_stopped_early_is_refused_unless_partial_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", {"s1": "P", "s2": "F"}, planned=[f"search/s{i}" for i in range(1, 7)])
    code, _, err = export(capsys, run, "--output", tmp_path / "export")
    assert code == 2
    assert "4 of 6 planned scenario runs never ran (the run stopped early)" in err and "--allow-partial" in err
    assert not (tmp_path / "export").exists()
    assert export(capsys, run, "--output", tmp_path / "export", "--allow-partial")[0] == 0
    stats = json.loads((tmp_path / "export" / "computed_stats.json").read_text(encoding="utf-8"))
    assert (stats["metadata"]["planned"], stats["metadata"]["not_run"]) == (6, 4)


def test_the_refusal_and_the_partial_export_say_why_the_run_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", {"s1": "P"}, planned=["search/s1", "search/s2"])
    reason = "budget: run spend $3.21 reached the $3.00 halt; no new scenario starts"
    (run / "summary.json").write_text(json.dumps({"stop": {"stopped": True, "reason": reason}}), encoding="utf-8")
    code, _, err = export(capsys, run, "--output", tmp_path / "export")
    assert code == 2 and f"1 of 2 planned scenario runs never ran ({reason})" in err
    code, text, _ = export(capsys, run, "--output", tmp_path / "export", "--allow-partial")
    assert code == 0 and text.splitlines()[-1].endswith(f"; stopped: {reason}")
    stats = json.loads((tmp_path / "export" / "computed_stats.json").read_text(encoding="utf-8"))
    assert stats["metadata"]["stopped"] == reason


def test_the_default_export_is_upstreams_dataset_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Parquet rows with upstream's schema, the dataset card with its configs, computed_stats.json with
    report_version, durations and run_configurations; the check reads the parquet back."""
    pq = pytest.importorskip("pyarrow.parquet")
    run = write_run(tmp_path / "run", {"s1": "PP", "s2": "PF"})
    out = tmp_path / "export"
    code, text, err = export(capsys, run, "--output", out)
    assert code == 0, err
    assert "4 rows (parquet) in 1 configs (search)" in text
    table = pq.read_table(out / "search" / "validation-00000-of-00001.parquet")
    assert table.column_names == list(leaderboard.ROW_FIELDS)
    assert sorted(table.column("score").to_pylist()) == [0.0, 1.0, 1.0, 1.0]
    card = (out / "README.md").read_text(encoding="utf-8")
    front = card.split("---\n")[1]
    assert '- config_name: "search"' in front and 'path: "search/validation-*"' in front
    assert front.count('dtype: "string"') == 11 and "dataset_info:" in front
    stats = json.loads((out / "computed_stats.json").read_text(encoding="utf-8"))
    assert stats["metadata"]["report_version"] == "3.0"
    assert set(stats["statistics"]["per_capability"]["search"]) >= {"avg_run_duration", "avg_run_duration_std"}
    assert {"job_duration", "avg_run_duration"} <= set(stats["statistics"]["global"])
    assert stats["run_configurations"] == [{
        "phase_name": "standard", "config": "search", "a2a_app_prop": "0.0", "has_tool_augmentation": "False",
        "has_env_events": "False", "total_runs": 4, "validated_runs": 4, "success_runs": 3, "failed_runs": 1,
        "exception_runs": 0, "no_validation_runs": 0,
    }]
    assert check(out) == []
    table = table.set_column(table.column_names.index("score"), "score", pa_array([1.0, 1.0, 1.0, 1.0]))
    (out / "search" / "validation-00000-of-00001.parquet").unlink()
    pq.write_table(table, out / "search" / "validation-00000-of-00001.parquet")
    assert any("field 'score' must be 0.0 for status 'failed'" in problem for problem in check(out))


def pa_array(values: list[float]) -> Any:
    import pyarrow as pa

    return pa.array(values, type=pa.float64())


def test_a_capability_without_a_scored_run_counts_as_zero_in_the_macro_rate() -> None:
    """As upstream's macro average: a split whose every run errored is 0.0, not left out."""
    runs = [
        leaderboard.Scored("search", "standard", "s1", 1, "success", 1.0),
        leaderboard.Scored("time", "standard", "t1", 1, "exception", None),
    ]
    stats = leaderboard.statistics_of(runs)
    assert stats["per_capability"]["time"]["success_rate"] == 0.0
    assert stats["global"]["macro_success_rate"] == pytest.approx(50.0)
    assert stats["global"]["micro_success_rate"] == pytest.approx(100.0)


def test_the_check_reads_a_bounded_number_of_files_and_bytes(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "MAX_EXPORT_FILES", 0)
    assert check(exported) == [f"{exported}: 1 row files, more than the 0 a submission holds"]
    monkeypatch.setattr(export_module, "MAX_EXPORT_FILES", 64)
    monkeypatch.setattr(export_module, "MAX_EXPORT_TOTAL", 10)
    assert "bytes of rows, more than the 10 allowed" in check(exported)[0]
    monkeypatch.setattr(export_module, "MAX_EXPORT_TOTAL", 1 << 30)
    monkeypatch.setattr(export_module, "MAX_LINE", 100)
    assert "a line longer than 100 bytes" in check(exported)[0]


def test_pass_hat_k_agrees_with_the_report_on_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An errored run is left out of pass^k in both (neither a pass nor a failure): s2 (EP) passed
    every judged run; s3 (EE) has none, so it is no pass."""
    run = write_run(tmp_path / "run", {"s1": "PP", "s2": "EP", "s3": "EE", "s4": "PF"})
    code, _, err = export(capsys, run, "--output", tmp_path / "export")
    assert code == 0, err
    search = json.loads((tmp_path / "export" / "computed_stats.json").read_text(encoding="utf-8"))["statistics"][
        "per_capability"]["search"]
    repeats = summarise([record.to_json() for record in store.RunFolder(run).records()]).repeats
    assert repeats is not None
    assert (search["pass_k"], search["total_scenarios"]) == (repeats.pass_hat_k.successes, repeats.pass_hat_k.n)
    assert repeats.pass_hat_k.successes == 2
