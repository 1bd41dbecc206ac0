"""``pytest-gaia2 merge`` on run folders written with the real store and record code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import file_sums
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.report import stats
from pytest_gaia2.report.summary import write_summary_json
from pytest_gaia2.store import folder as store


def merge(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = cli.main(["merge", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def results(folder: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / store.RESULTS_FILE).read_text(encoding="utf-8").splitlines()]
    return {f"{row['split']}/{row['scenario_id']}": row for row in rows}


def test_two_shards_merge_into_one_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_run(tmp_path / "one", {"s1": "P", "s2": "F", "s3": "E"}, shard="1/2")
    second = write_run(tmp_path / "two", {"s4": "P", "s5": "P"}, planned=["search/s4", "search/s5", "search/s6"],
                       minute=5, shard="2/2")
    before = {path: file_sums(path) for path in (first, second)}
    out = tmp_path / "merged"
    code, text, err = merge(capsys, out, first, second)
    assert code == 0, err
    assert {path: file_sums(path) for path in (first, second)} == before  # the pieces are only read
    assert sorted(results(out)) == [f"search/s{i}" for i in range(1, 6)]
    summary = read(out / store.SUMMARY_FILE)
    counts = ("planned", "done", "passed", "failed", "errors")
    assert [summary[name] for name in counts] == [6, 5, 3, 1, 1]
    assert summary["not_run"] == ["search/s6"]
    # The same numbers as summarising every piece's records against the whole plan.
    pieces = [store.RunFolder(path) for path in (first, second)]
    recount = stats.summarise([r.to_json() for piece in pieces for r in piece.records()],
                              planned=[f"search/s{i}" for i in range(1, 7)])
    assert summary["strict"] == recount.overall.strict.to_dict()
    assert summary["merged_from"] == [str(first), str(second)]
    # Scenario folders are copied in the same layout, with their files.
    for scenario_id, piece in [("s1", first), ("s3", first), ("s5", second)]:
        assert (out / "search" / scenario_id / "events.jsonl").read_bytes() == \
            (piece / "search" / scenario_id / "events.jsonl").read_bytes()
        copied, original = (folder / "search" / scenario_id / "result.json" for folder in (out, piece))
        assert read(copied) == read(original)
    config = read(out / store.RUN_CONFIG_FILE)
    assert config["planned"] == [f"search/s{i}" for i in range(1, 7)]
    assert [piece["path"] for piece in config["merged_from"]] == [str(first), str(second)]
    assert [piece["run_config"]["provenance"]["shard"] for piece in config["merged_from"]] == ["1/2", "2/2"]
    assert [piece["keys_taken"] for piece in config["merged_from"]] == [3, 2]
    assert "shard" not in config["provenance"] and config["provenance"]["model"] == "oracle"
    assert config["run_id"] not in [read(piece / store.RUN_CONFIG_FILE)["run_id"] for piece in (first, second)]
    sessions = [json.loads(line) for line in (out / store.SESSIONS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [line["piece"] for line in sessions] == [str(first), str(second)]
    assert read(out / store.MANIFEST_FILE) == {"splits": {"search": [f"s{i}" for i in range(1, 7)]}}
    assert f"gaia2: merged 2 run folders into {out}: 5 results, 6 planned" in text
    assert "INCOMPLETE: 5 of 6 planned scenarios done" in text
    assert not list(tmp_path.glob(".merged.merging-*"))
    # The merged folder is a run folder like any other: compare reads it.
    assert cli.main(["compare", str(out), str(first), "--format", "json"]) == 0


def test_a_resumed_piece_brings_its_latest_sessions_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A piece whose resume planned s4 to s6 (summary.json) while its first session planned s4
    (run_config.json): the merged run plans s6 too, and says it did not run."""
    first = write_run(tmp_path / "one", {"s1": "P"}, shard="1/2")
    second = write_run(tmp_path / "two", {"s4": "P", "s5": "F"}, planned=["search/s4"], minute=5, shard="2/2")
    records = [record.to_json() for record in store.RunFolder(second).records()]
    write_summary_json(second / store.SUMMARY_FILE, stats.summarise(records, ["search/s4", "search/s5", "search/s6"]), None)
    out = tmp_path / "merged"
    code, text, err = merge(capsys, out, first, second)
    assert code == 0, err
    summary = read(out / store.SUMMARY_FILE)
    assert (summary["planned"], summary["done"], summary["not_run"]) == (4, 3, ["search/s6"])
    assert [piece["planned_count"] for piece in read(out / store.RUN_CONFIG_FILE)["merged_from"]] == [1, 3]


def test_different_verdicts_are_refused_unless_told_which_wins(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_run(tmp_path / "old", {"s1": "P", "s2": "P"})
    new = write_run(tmp_path / "new", {"s1": "F", "s2": "P"}, minute=10)
    out = tmp_path / "merged"
    code, _, err = merge(capsys, out, old, new)
    assert code == 2
    assert err.count("\n") == 1
    assert f"search/s1: failed in {new} but passed in {old}; pass --prefer RUN or --prefer newest" in err
    assert not out.exists() and not list(tmp_path.glob(".merged.*"))

    code, text, _ = merge(capsys, out, old, new, "--prefer", old)
    assert code == 0
    assert results(out)["search/s1"]["outcome"] == "passed"
    assert f"search/s1: failed in {new} and passed in {old}: kept passed from {old} (--prefer)" in text

    newest = tmp_path / "newest"
    assert merge(capsys, newest, old, new, "--prefer", "newest")[0] == 0
    assert results(newest)["search/s1"]["outcome"] == "failed"
    assert read(newest / "search" / "s1" / "result.json")["run_id"] == read(new / store.RUN_CONFIG_FILE)["run_id"]


def test_a_verdict_wins_over_an_error_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged = write_run(tmp_path / "judged", {"s1": "F", "s2": "P"})
    errored = write_run(tmp_path / "errored", {"s1": "E", "s3": "E"}, minute=30)  # newer, but only an error
    out = tmp_path / "merged"
    code, text, err = merge(capsys, out, judged, errored)
    assert code == 0, err
    rows = results(out)
    assert {key: row["outcome"] for key, row in rows.items()} == {
        "search/s1": "failed", "search/s2": "passed", "search/s3": "error"}
    assert f"search/s1: the verdict from {judged} wins over the error in {errored}" in text
    assert read(out / "search" / "s1" / "result.json")["outcome"] == "failed"


def test_mixed_settings_are_refused_unless_allowed_then_the_newest_same_verdict_wins(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_run(tmp_path / "first", {"s1": "P"}, model="model-a")
    second = write_run(tmp_path / "second", {"s1": "P"}, minute=3, model="model-b")
    out = tmp_path / "merged"
    code, _, err = merge(capsys, out, second, first)
    assert code == 2 and not out.exists()
    assert (f"the pieces were run with different settings (1): provenance.model: {second} model-b; {first} model-a; "
            "pass --allow-mixed to merge anyway") in err
    code, text, _ = merge(capsys, out, second, first, "--allow-mixed")
    assert code == 0
    assert f"gaia2: warning: setting differs (--allow-mixed): provenance.model: {second} model-b; {first} model-a" in text
    assert results(out)["search/s1"]["model"] == "model-b"
    assert f"gaia2: warning: model differs: {second} model-b; {first} model-a" in text
    assert "model" not in read(out / store.RUN_CONFIG_FILE)["provenance"]  # not common to the pieces


@pytest.mark.parametrize("case", ["not_empty", "piece_inside_out", "out_inside_piece", "twice", "prefer_other",
                                  "not_a_run"])
def test_places_that_would_overwrite_or_confuse_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              case: str) -> None:
    piece = write_run(tmp_path / "piece", {"s1": "P"})
    other = write_run(tmp_path / "other", {"s2": "P"})
    out = tmp_path / "merged"
    args: list[Any] = [out, piece, other]
    message = {
        "not_empty": "exists and is not an empty folder; merge never writes into an existing run",
        "piece_inside_out": "exists and is not an empty folder",
        "out_inside_piece": "merge never writes into a run folder",
        "twice": "is given twice",
        "prefer_other": "--prefer elsewhere: not one of the RUN folders being merged",
        "not_a_run": "is not a run folder (no run_config.json)",
    }[case]
    if case == "not_empty":
        out.mkdir()
        (out / "keep.txt").write_text("mine", encoding="utf-8")
    elif case == "piece_inside_out":
        args = [tmp_path, piece]
    elif case == "out_inside_piece":
        args = [piece / "merged", piece, other]
    elif case == "twice":
        args = [out, piece, tmp_path / "piece"]  # the same run, once through its output folder's latest
    elif case == "prefer_other":
        args = [out, piece, other, "--prefer", "elsewhere"]
    else:
        args = [out, piece, tmp_path / "nothing"]
    sums = file_sums(tmp_path)
    code, _, err = merge(capsys, *args)
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert file_sums(tmp_path) == sums  # nothing written, nothing removed


def test_an_empty_out_folder_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    piece = write_run(tmp_path / "piece", {"s1": "P", "s2": "F"})
    out = tmp_path / "merged"
    out.mkdir()
    code, text, _ = merge(capsys, out, piece)
    assert code == 0
    assert read(out / store.SUMMARY_FILE)["passed"] == 1
    assert "2 scenarios: 1 passed, 1 failed, 0 errors" in text


def test_repeated_runs_merge_in_their_run_k_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_run(tmp_path / "one", {"s1": "PF"})
    second = write_run(tmp_path / "two", {"s2": "FF"})
    out = tmp_path / "merged"
    assert merge(capsys, out, first, second)[0] == 0
    assert sorted(path.relative_to(out).as_posix() for path in out.glob("run_*/search/*/result.json")) == [
        "run_1/search/s1/result.json", "run_1/search/s2/result.json",
        "run_2/search/s1/result.json", "run_2/search/s2/result.json"]
    summary = read(out / store.SUMMARY_FILE)
    assert (summary["planned"], summary["passed"], summary["repeats"]["k"]) == (4, 1, 2)
    assert summary["repeats"]["patterns"] == {"s1": "PF", "s2": "FF"}


def test_a_missing_shard_is_refused_by_name_unless_partial_is_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_run(tmp_path / "one", {"s1": "P"}, shard="1/3")
    third = write_run(tmp_path / "three", {"s3": "F"}, shard="3/3")
    out = tmp_path / "merged"
    sums = file_sums(tmp_path)
    code, _, err = merge(capsys, out, first, third)
    assert code == 2 and "missing shard 2/3: the merged run would not be the whole plan" in err
    assert file_sums(tmp_path) == sums
    code, text, _ = merge(capsys, out, first, third, "--allow-partial")
    assert code == 0 and "gaia2: warning: missing shard 2/3 (--allow-partial)" in text
    other_plan = write_run(tmp_path / "two", {"s2": "P"}, shard="2/2")
    code, _, err = merge(capsys, tmp_path / "again", first, other_plan)
    assert code == 2 and "shards of plans of different sizes (N = 2, N = 3)" in err


def test_the_merged_run_carries_its_own_name_in_its_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = write_run(tmp_path / "one", {"s1": "P"}, shard="1/2")
    second = write_run(tmp_path / "two", {"s2": "P"}, shard="2/2")
    out = tmp_path / "vB"
    assert merge(capsys, out, first, second)[0] == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<title>Gaia2 run vB</title>" in page and "merging" not in page
    assert sorted(path.name for path in tmp_path.iterdir()) == ["one", "two", "vB"]  # no helper folder left
