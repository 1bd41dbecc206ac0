"""``pytest-gaia2 compare`` on run folders written with the real store and record code."""

from __future__ import annotations

import datetime as _dt
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cli.main import COMMANDS, main
from pytest_gaia2.report import power
from pytest_gaia2.report.paired import newcombe_interval
from pytest_gaia2.report.rates import percent_number, wilson
from pytest_gaia2.report.stats import summarise
from pytest_gaia2.report.summary import write_summary_json
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

OUTCOME = {"P": "passed", "F": "failed", "E": "error"}
T0 = _dt.datetime(2026, 1, 5, 9, 0, tzinfo=_dt.timezone.utc)


def write_run(output: Path, letters: dict[str, str], *, planned: list[str] | None = None, split: str = "search",
              minute: int = 0, sha: dict[str, str] | None = None, config: dict[str, Any] | None = None,
              fields: dict[str, dict[str, Any]] | None = None, **provenance: Any) -> Path:
    """A finished run folder: one record (result.json, events.jsonl, results.jsonl line) per scenario id
    and letter (P, F, E; ``PF`` is two repeats), run_config.json planning ``planned`` (default: every
    key) and one sessions.jsonl line. Records end at ``minute`` past T0; ``fields`` sets record fields
    (not the split) per scenario id."""
    run_id = uuid.uuid4().hex
    started = T0 + _dt.timedelta(minutes=minute)
    folder = store.RunFolder.create(output, run_id, started)
    values = {"image_id": "sha256:img", "model": "oracle", "plugin_version": "0.1.0", **provenance}
    records = []
    for scenario_id, shape in letters.items():
        for repeat, letter in enumerate(shape, start=1):
            scenario = folder.scenario_dir(split, scenario_id, repeat, len(shape))
            record = AttemptRecord(
                scenario_id=scenario_id, success={"P": True, "F": False, "E": None}[letter], reward=None,
                num_agent_events=1, agent_response="answer", judged_in_container=letter != "E", timed_out=False,
                timeout_seconds=600.0, daemon_status=None, scenario_file=f"{scenario_id}.json",
                failure_reasons=["wrong answer"] if letter == "F" else [], error="boom" if letter == "E" else None,
                split=split, outcome=OUTCOME[letter], repeat=repeat, repeats=len(shape),  # type: ignore[arg-type]
                error_category="daemon_error" if letter == "E" else None,
                folder=scenario.relative_to(folder.path).as_posix(),
                scenario_sha256=(sha or {}).get(scenario_id, "sha-" + scenario_id),
                run_id=run_id, session_id=run_id, ended_at=(started + _dt.timedelta(seconds=30)).isoformat(),
                **{"wall_time_s": 30.0, **values, **(fields or {}).get(scenario_id, {})})
            folder.write_record(scenario, record)
            store.write_text(scenario / "events.jsonl", json.dumps({"run": run_id, "id": scenario_id}) + "\n")
            records.append(record)
    folder.rewrite_results(records)
    keys = planned if planned is not None else [record.key for record in records]
    store.write_json(folder.file(store.RUN_CONFIG_FILE), {
        "command": "pytest", "started_at": started.isoformat(), "run_id": run_id, "plugin_version": "0.1.0",
        "planned": keys, "provenance": {"run_id": run_id, "session_id": run_id, **values}, **(config or {})})
    store.append_jsonl(folder.file(store.SESSIONS_FILE), {"session_id": run_id, "planned": len(keys)})
    return folder.path


def compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = compare(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_two_runs_give_both_tables_with_the_discordant_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "P", "s3": "F", "s4": "E", "s5": "P", "s6": "F"})
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "F", "s3": "P", "s4": "P", "s5": "E", "s6": "F"})
    data = as_json(capsys, a, b)
    (pair,) = data["comparisons"]
    strict, judged = pair["strict"], pair["judged"]
    assert strict["cells"] == {"both_passed": ["search/s1"], "only_a_passed": ["search/s2", "search/s5"],
                               "only_b_passed": ["search/s3", "search/s4"], "neither_passed": ["search/s6"]}
    assert strict["n"] == 6 and strict["delta"] == 0
    # Judged-only: s4 and s5 had an error in one run, so they are left out.
    assert judged["cells"] == {"both_passed": ["search/s1"], "only_a_passed": ["search/s2"],
                               "only_b_passed": ["search/s3"], "neither_passed": ["search/s6"]}
    assert pair["judged_left_out"] == 2
    assert judged["mcnemar_exact_p"] == 1.0
    assert data["patterns"] is None and data["warnings"] == []

    code, text, _ = compare(capsys, a, b)
    assert code == 0
    assert "- passed in A only (2): search/s2, search/s5" in text
    assert "- passed in B only (2): search/s3, search/s4" in text
    assert "a scenario a run never ran is no pair, it is missing" in text  # the rule is said in the Markdown
    assert "a pair with an error or not run in either run is left out" in text
    assert "### Judged-only (2 pairs left out)" in text
    assert "| **A passed** | 1 | 2 |" in text and "| **A not passed** | 2 | 1 |" in text


def test_keys_in_one_run_only_are_listed_and_not_run_is_missing_not_not_passed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """s3 was planned in A and never ran there: no pair (it is no failure of A), counted as missing."""
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "P"}, planned=["search/s1", "search/s2", "search/s3"])
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "P", "s3": "P", "s4": "F"})
    data = as_json(capsys, a, b)
    assert data["missing"] == {"A": ["search/s4"], "B": []}
    assert data["matched"] == 3
    pair = data["comparisons"][0]
    assert pair["strict"]["cells"]["only_b_passed"] == [] and pair["strict"]["n"] == 2
    assert pair["strict"]["delta"] == 0
    assert pair["missing"] == {"A": {"interrupted": 1, "not selected": 1}, "B": {}}
    assert data["sentences"][0]["strict"].endswith(
        "Not compared: A has no verdict for 2 (interrupted: 1, not selected: 1).")
    _, text, _ = compare(capsys, a, b)
    assert "- missing from A (1, not compared): search/s4" in text


def test_a_resumed_run_is_compared_on_its_latest_sessions_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run_config.json keeps the first session's plan (s1); summary.json the resume's (s1 to s3):
    compare and export count s3 as planned and not run, as the run's summary and pages do."""
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "P"}, planned=["search/s1"])
    records = list(store.RunFolder(a).records())
    summary = summarise([record.to_json() for record in records], ["search/s1", "search/s2", "search/s3"])
    write_summary_json(a / store.SUMMARY_FILE, summary, None)
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "P", "s3": "P"})
    data = as_json(capsys, a, b)
    assert [run["planned"] for run in data["runs"]] == [3, 3] and data["matched"] == 3
    assert data["comparisons"][0]["strict"]["n"] == 2  # s3: planned in A, never run: missing, no pair
    assert data["comparisons"][0]["missing"]["A"] == {"interrupted": 1}
    assert cli.main(["export", str(a), "--output", str(tmp_path / "export")]) == 2  # s3 never ran
    assert cli.main(["export", str(a), "--output", str(tmp_path / "export"), "--allow-partial"]) == 0
    report = json.loads((tmp_path / "export" / "computed_stats.json").read_text(encoding="utf-8"))
    assert report["metadata"]["not_run"] == 1


def test_three_runs_give_pattern_strings_and_their_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "P", "s3": "F", "s4": "P"})
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "F", "s3": "F", "s4": "P"})
    c = write_run(tmp_path / "c", {"s1": "F", "s2": "E", "s3": "F"})
    data = as_json(capsys, a, b, c)
    assert data["patterns"] == {"search/s1": "PPF", "search/s2": "PFE", "search/s3": "FFF", "search/s4": "PP."}
    assert [(row["pattern"], row["count"]) for row in data["pattern_counts"]] == [
        ("FFF", 1), ("PFE", 1), ("PP.", 1), ("PPF", 1)]
    assert [(pair["a"], pair["b"]) for pair in data["comparisons"]] == [("A", "B"), ("A", "C")]
    assert data["missing"]["C"] == ["search/s4"]
    _, text, _ = compare(capsys, a, b, c)
    assert "| `PFE` | 1 | search/s2 |" in text
    assert "## C vs A" in text


def test_repeats_are_matched_run_by_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "PP", "s2": "PF"})
    b = write_run(tmp_path / "b", {"s1": "PF", "s2": "FF"})
    strict = as_json(capsys, a, b)["comparisons"][0]["strict"]
    assert strict["cells"] == {"both_passed": ["search/s1/run_1"],
                               "only_a_passed": ["search/s1/run_2", "search/s2/run_1"],
                               "only_b_passed": [], "neither_passed": ["search/s2/run_2"]}
    _, text, _ = compare(capsys, a, b)
    assert "a scenario's repeats are not independent" in text


def test_provenance_differences_are_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "P"}, judge_model="judge-1")
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "P"}, model="other-model", judge_model="judge-2",
                  base_url_host="proxy:4000", sha={"s2": "changed"})
    warnings = as_json(capsys, a, b)["warnings"]
    assert "model differs: A oracle; B other-model" in warnings
    assert "judge_model differs: A judge-1; B judge-2" in warnings
    assert "base_url_host differs: A -; B proxy:4000" in warnings
    assert "scenario files differ between A and B (1): search/s2" in warnings
    assert not any(w.startswith(("image_id", "plugin_version")) for w in warnings)
    _, text, _ = compare(capsys, a, b)
    assert "> **Warning:** model differs: A oracle; B other-model" in text


def table_runs(tmp_path: Path, both: int, only_a: int, only_b: int, neither: int) -> tuple[Path, Path]:
    """Two runs whose strict 2x2 table has exactly these cells (every pair judged in both)."""
    cells = [("P", "P")] * both + [("P", "F")] * only_a + [("F", "P")] * only_b + [("F", "F")] * neither
    a = write_run(tmp_path / "a", {f"s{i}": pair[0] for i, pair in enumerate(cells)})
    b = write_run(tmp_path / "b", {f"s{i}": pair[1] for i, pair in enumerate(cells)})
    return a, b


def test_not_significant_gap_is_said_in_words_and_the_interval_gate_does_not_fail_on_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 20 pairs, 6 passed in A only, 1 in B only: -25 points,
    # exact McNemar p = 2 * P(X <= 1 | 7, 1/2) = 2 * 8 / 128 = 0.125.
    a, b = table_runs(tmp_path, both=8, only_a=6, only_b=1, neither=5)
    needed = power.paired_pairs(-0.25, 7 / 20).pairs
    code, text, _ = compare(capsys, a, b, "--fail-if-worse", "0.05")
    assert code == 0
    low, high = (power.paired_pairs(-0.25, max(0.25, discordance)).pairs for discordance in wilson(7, 20))
    assert (
        "**In words:** B is worse than A by 25.0 points on the strict rate over 20 pairs; this could be chance: "
        "the 95% interval runs from -46.2 to +0.9 points, which includes no gap. "
        f"About {needed} pairs ({low} to {high} over the discordance's 95% interval, 18.1% to 56.7%) would detect "
        "a 25.0-point gap 80% of the time."
    ) in text
    assert (needed, low, high) == (45, 31, 75)
    assert "--gate interval: fails when the upper end of the paired interval" in text and ": ok" in text
    assert compare(capsys, a, b, "--fail-if-worse", "0.05", "--gate", "p-value")[0] == 0  # 0.125 is not below 0.05
    assert compare(capsys, a, b, "--fail-if-worse", "0.05", "--gate", "p-value", "--alpha", "0.2")[0] == 1
    code, text, _ = compare(capsys, a, b, "--fail-if-worse", "0.05", "--gate", "point")  # only when asked
    assert code == 1 and "FAIL: worse than A: B" in text
    _, text, _ = compare(capsys, a, b, "--gate", "p-value", "--alpha", "0.2")  # the sentence follows the gate's rule
    assert "B is worse than A by 25.0 points on the strict rate over 20 pairs; this is unlikely to be chance " \
        "(p = 0.13, below 0.2); the 80% interval runs from" in text


def test_significant_gap_fails_the_interval_gate_up_to_its_bound(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 40 pairs, 12 vs 1 discordant: p = 2 * 14 / 2**13 = 0.0034; -27.5 points.
    a, b = table_runs(tmp_path, both=20, only_a=12, only_b=1, neither=7)
    data = as_json(capsys, a, b)
    strict = data["comparisons"][0]["strict"]
    assert strict["mcnemar_exact_p"] == pytest.approx(28 / 2**13)
    high = strict["delta_high"]
    assert high < 0
    assert data["sentences"][0]["strict"] == (
        "B is worse than A by 27.5 points on the strict rate over 40 pairs; this is unlikely to be chance "
        "(the interval leaves out no gap); the 95% interval runs from -42.3 to -10.6 points.")
    assert compare(capsys, a, b, "--fail-if-worse", "0")[0] == 1
    assert compare(capsys, a, b, "--fail-if-worse", f"{-high - 0.001:.4f}")[0] == 1  # bound still below -D
    assert compare(capsys, a, b, "--fail-if-worse", f"{-high + 0.001:.4f}")[0] == 0  # bound above -D
    assert compare(capsys, b, a, "--fail-if-worse", "0", "--gate", "point")[0] == 0  # better is never worse


def test_tied_runs_have_no_gap_to_detect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = table_runs(tmp_path, both=5, only_a=3, only_b=3, neither=4)
    data = as_json(capsys, a, b)
    assert data["sentences"][0]["strict"] == (
        "B and A pass the same share of the 15 pairs on the strict rate (6 pairs disagree, as many each way): "
        "no gap seen, but the 95% interval runs from -30.9 to +30.9 points, so a gap of up to 30.9 points either "
        "way is not ruled out.")
    for gate in ("interval", "p-value", "point"):
        assert compare(capsys, a, b, "--fail-if-worse", "0", "--gate", gate)[0] == 0


def test_every_differing_setting_is_listed_with_secret_values_masked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def settings(env: dict[str, str], profile: str) -> dict[str, Any]:
        return {"settings": {"profile": profile, "extra_env": env, "api_key_env": "OPENAI_API_KEY",
                             "output": str(tmp_path)},
                "selection": {"splits": ["search"], "sample": None}}
    a = write_run(tmp_path / "a", {"s1": "P"}, config=settings({"AGENT_MODE": "v1", "MY_TOKEN": "tok-aaaa1111"}, "x"))
    b = write_run(tmp_path / "b", {"s1": "P"}, config={
        **settings({"AGENT_MODE": "v2", "MY_TOKEN": "tok-bbbb2222"}, "x"),
        "selection": {"splits": ["search", "time"], "sample": 5}}, image_id="sha256:other", judge_model="j2")
    data = as_json(capsys, a, b)
    assert data["settings_differ"] == {
        "provenance.image_id": {"A": "sha256:img", "B": "sha256:other"},
        "provenance.judge_model": {"A": "-", "B": "j2"},
        "selection.sample": {"A": "-", "B": "5"},
        "selection.splits": {"A": '["search"]', "B": '["search", "time"]'},
        "settings.extra_env.AGENT_MODE": {"A": "v1", "B": "v2"},
    }  # MY_TOKEN's values differ but both show as ***; output, run and session ids are not settings
    _, text, _ = compare(capsys, a, b)
    assert "## Settings that differ (5)" in text
    assert "| settings.extra_env.AGENT_MODE | `v1` | `v2` |" in text
    assert "tok-" not in text
    same = write_run(tmp_path / "c", {"s1": "P"}, config=settings({"AGENT_MODE": "v1", "MY_TOKEN": "x"}, "x"))
    _, text, _ = compare(capsys, a, same)
    assert "Settings: every setting of run_config.json is the same in every run." in text


def test_output_file_is_written_instead_of_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P"})
    b = write_run(tmp_path / "b", {"s1": "F"})
    target = tmp_path / "reports" / "compare.json"
    # Output folders name their latest run.
    code, out, _ = compare(capsys, tmp_path / "a", tmp_path / "b", "--format", "json", "--output", target)
    assert (code, out) == (0, "")
    data = json.loads(target.read_text(encoding="utf-8"))
    assert [run["path"] for run in data["runs"]] == [str(a), str(b)]
    assert data["comparisons"][0]["strict"]["cells"]["only_a_passed"] == ["search/s1"]


@pytest.mark.parametrize(("args", "message"), [
    (["{a}"], "compare needs at least two run folders"),
    (["{a}", "{missing}"], "is not a run folder (no run_config.json)"),
    (["{a}", "{a}", "--fail-if-worse", "-3"], "--fail-if-worse: expected a fraction from 0 to 1"),
    (["{a}", "{a}", "--fail-if-worse", "5"], "--fail-if-worse: expected a fraction from 0 to 1 (0.05 is 5 points)"),
    (["{a}", "{a}", "--fail-if-worse", "nan"], "--fail-if-worse: expected a fraction"),
    (["{a}", "{bad}"], "run_config.json: 'planned' must be a list"),
])
def test_bad_input_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                         message: str) -> None:
    a = write_run(tmp_path / "a", {"s1": "P"})
    bad = write_run(tmp_path / "bad", {"s1": "P"})
    store.write_json(bad / store.RUN_CONFIG_FILE, {"planned": "search/s1"})
    code, _, err = compare(capsys, *(arg.format(a=a, bad=bad, missing=tmp_path / "nowhere") for arg in args))
    assert code == 2
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("place", ["in_run", "in_output_of_run", "existing"])
def test_output_never_lands_in_a_run_folder_nor_over_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            place: str) -> None:
    a = write_run(tmp_path / "a", {"s1": "P"})
    write_run(tmp_path / "b", {"s1": "F"})
    target = {"in_run": a / "results.jsonl", "in_output_of_run": a / "search" / "new.md",
              "existing": tmp_path / "mine.md"}[place]
    if place == "existing":
        target.write_text("mine", encoding="utf-8")
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    code, out, err = compare(capsys, tmp_path / "a", tmp_path / "b", "--output", target)
    assert code == 2 and out == ""
    expected = "already exists" if place in ("existing", "in_run") else "inside run folder"
    assert err.count("\n") == 1 and f"--output {target}: " in err and expected in err
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


def test_markdown_shows_values_from_a_results_folder_as_text() -> None:
    from pytest_gaia2.report.markdown import plain

    shown = plain("s1\n| x | <script>alert(1)</script> `y` [l](http://e)")
    assert "\n" not in shown and "<" not in shown and not re.search(r"(?<!\\)[|`\[]", shown)
    assert shown == ("s1 \\| x \\| &lt;script&gt;alert(1)&lt;/script&gt; \\`y\\` \\[l\\](http://e)")


def test_hostile_settings_are_shown_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run_config.json comes from a run folder: an escape sequence, a table-breaking value and a
    key's raw value never reach the terminal as themselves."""
    a = write_run(tmp_path / "a", {"s1": "P"}, config={"settings": {"extra_env": {"MODE": "x"}}})
    b = write_run(tmp_path / "b", {"s1": "P"}, config={"settings": {"extra_env": {
        "MODE": "\x1b]0;pwned\x07 | new | row", "TEAM_API_KEY": "sk-live-123456"}, "nested": {"a": [1] * 500}}})
    _, text, _ = compare(capsys, a, b)
    assert "\x1b" not in text and "\\x1b]0;pwned\\x07" in text
    assert "sk-live-123456" not in text and "| settings.extra_env.TEAM_API_KEY | `-` | `***` |" in text
    assert max(len(line) for line in text.splitlines() if line.startswith("| settings.nested")) < 200


def test_runs_compared_under_a_rejudges_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "F", "s3": "P", "s4": "E"})
    b = write_run(tmp_path / "b", {"s1": "P", "s2": "P", "s3": "P", "s4": "P"})
    for run, verdicts in ((a, {"s1": True, "s2": True, "s3": None}), (b, {"s1": False, "s2": True, "s3": True})):
        for name, judge, values in (("001-20261201T000000Z", "strict", {"s1": True, "s2": False, "s3": True}),
                                    ("002-20261202T000000Z", "strict", verdicts)):
            place = run / "rejudge" / name / judge
            place.mkdir(parents=True)
            (place / "rejudgments.jsonl").write_text("".join(
                json.dumps({"key": f"search/{sid}", "success": value}) + "\n" for sid, value in values.items()),
                encoding="utf-8")
    data = as_json(capsys, a, b, "--judge", "strict")  # the newest re-judge, 002, of each run
    strict = data["comparisons"][0]["strict"]["cells"]
    # A: s1 P, s2 P (was F), s3 no verdict -> error, s4 error (never judged: stays).
    # B: s1 F (was P), s2 P, s3 P, s4 not in the re-judge -> no verdict: error.
    assert strict == {"both_passed": ["search/s2"], "only_a_passed": ["search/s1"],
                      "only_b_passed": ["search/s3"], "neither_passed": ["search/s4"]}
    assert [run["summary"]["errors"] for run in data["runs"]] == [2, 1]
    code, _, err = compare(capsys, a, b, "--judge", "lenient")
    assert code == 2 and "no re-judge by a judge named 'lenient'" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_commands_help_prints(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help text: a bare '%' in one ('95% interval') crashed `compare --help`."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0 and f"usage: pytest-gaia2 {command}" in capsys.readouterr().out


# --- what both runs decided, and why the rest is missing ----------------------------------------

def stopped_run(output: Path, letters: dict[str, str], planned: list[str], why: str, **fields: Any) -> Path:
    """A run that stopped before its plan was done: its records, and summary.json with the stop
    block the plugin writes (each key without a record not started, with ``why``)."""
    folder = write_run(output, letters, planned=planned, **fields)
    records = [record.to_json() for record in store.RunFolder(folder).records()]
    summary = summarise(records, planned)
    not_started = [key for key in planned if key not in {f"search/{sid}" for sid in letters}]
    stop = {"stopped": True, "reason": why, "not_started": [{"key": key, "why": why} for key in not_started]}
    write_summary_json(folder / store.SUMMARY_FILE, summary, None, {"stop": stop})
    return folder


def test_a_run_stopped_early_as_better_is_called_better_and_passes_the_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline of 100 scenarios (46 passed), B stopped by --gaia2-stop-when-decided after 10,
    all passed, 8 of them failed in A. A strict table that counted B's 90 never-run scenarios as
    failures would say "B is worse by 36.0 points, p = 0.00000073", exit 1."""
    ids = [f"s{i}" for i in range(100)]
    a = write_run(tmp_path / "a", {sid: "P" if (i < 2 or i >= 56) else "F" for i, sid in enumerate(ids)})
    why = (f"decided: better than baseline {a}: 8 better, 0 worse of 10 judged pairs (sequential test at level 5.0%); "
           "no new scenario starts")
    b = stopped_run(tmp_path / "b", dict.fromkeys(ids[:10], "P"), [f"search/{sid}" for sid in ids], why)
    code, text, err = compare(capsys, a, b, "--fail-if-worse", "0.05")
    assert code == 0, err
    assert "FAIL" not in text and ": ok" in text
    data = as_json(capsys, a, b)
    pair = data["comparisons"][0]
    assert pair["strict"]["n"] == 10 and pair["missing"] == {"A": {}, "B": {"decided": 90}}
    assert pair["sequential"] == "B"
    found = pair["answers"]["strict"]
    assert found["direction"] == "better" and found["interval"] == "confidence-sequence"
    assert found["decision"]["better"] == 8 and found["decision"]["pairs"] == 10
    assert found["low"] >= 0 and found["delta"] == pytest.approx(0.8)
    assert data["sentences"][0]["strict"].startswith(
        "B is better than A on the strict rate over 10 pairs: the sequential test decided it at level 5.0% "
        "(8 better, 0 worse of 10 judged pairs, always-valid p = 0.035); the gap is +80.0 points and the "
        "always-valid 95% range of the gap (a confidence sequence, as B stopped on a decision) runs from")
    assert data["sentences"][0]["strict"].endswith("Not compared: B has no verdict for 90 (stopped on a decision: 90).")
    assert compare(capsys, b, a, "--fail-if-worse", "0")[0] == 1  # the other way round A is decided worse
    assert compare(capsys, a, b, "--fail-if-worse", "0", "--gate", "p-value")[0] == 0
    assert compare(capsys, a, b, "--fail-if-worse", "0", "--gate", "point")[0] == 0


@pytest.mark.parametrize(("why", "kind"), [
    ("interrupted (Ctrl-C, SIGTERM or a collection error) before they started", "interrupted"),
    ("budget: the run has spent $2.61, its halt is $2.60; no new scenario starts", "budget"),
    ("errors: 3 infrastructure error(s) in this session (daemon_error 3) reached --gaia2-max-errors 3; "
     "no new scenario starts", "errors"),
])
def test_gating_on_a_run_stopped_by_a_halt_or_ctrl_c_is_refused_unless_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], why: str, kind: str) -> None:
    """A complete run of 12 against one stopped after 4 (6 of 12 never started, the 4 that ran all
    passed, as in A): counting the never-started as failures would say "B is worse by 66.7 points"."""
    ids = [f"s{i}" for i in range(12)]
    a = write_run(tmp_path / "a", dict.fromkeys(ids, "P"))
    b = stopped_run(tmp_path / "b", dict.fromkeys(ids[:4], "P"), [f"search/{sid}" for sid in ids], why)
    code, text, err = compare(capsys, a, b, "--fail-if-worse", "0.05")
    label = {"interrupted": "interrupted", "budget": "budget halt", "errors": "error limit"}[kind]
    assert code == 2
    assert f"B stopped before its plan was done ({label}: 8 planned keys without a verdict; {why})" in err
    assert "--allow-incomplete" in err and err.count("\n") == 1
    assert "REFUSED, not gated" in text and "FAIL" not in text
    assert f"Not compared: B has no verdict for 8 ({label}: 8)." in text
    assert "B and A pass the same share of the 4 pairs on the strict rate (no pair disagrees)" in text
    code, text, _ = compare(capsys, a, b, "--fail-if-worse", "0.05", "--allow-incomplete")
    assert code == 0 and text.rstrip().endswith(": ok (pairs with a verdict in both runs: B 4 of 12)")
    assert compare(capsys, b, a, "--fail-if-worse", "0.05")[0] == 2  # a stopped baseline is refused too
    assert compare(capsys, a, b)[0] == 0  # without a gate nothing is refused


def repeated_runs(tmp_path: Path, shapes: list[tuple[str, str]]) -> tuple[Path, Path]:
    a = write_run(tmp_path / "a", {f"s{i}": shape[0] for i, shape in enumerate(shapes)})
    b = write_run(tmp_path / "b", {f"s{i}": shape[1] for i, shape in enumerate(shapes)})
    return a, b


def test_with_repeats_the_scenario_is_the_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """30 scenarios x 3 repeats, B wins every repeat of 5 scenarios and A of 1.
    Per run that is McNemar 15 vs 3, p = 0.0075; per scenario 5 vs 1, p = 0.22."""
    shapes = [("FFF", "PPP")] * 5 + [("PPP", "FFF")] + [("PPP", "PPP")] * 12 + [("FFF", "FFF")] * 12
    a, b = repeated_runs(tmp_path, shapes)
    data = as_json(capsys, a, b)
    strict = data["comparisons"][0]["strict"]
    assert (strict["n"], strict["scenarios"], strict["test"]) == (90, 30, "sign-flip-scenarios")
    assert strict["p_value"] == pytest.approx(14 / 64)  # 2 x P(X <= 1 | 6, 1/2) = 0.21875
    assert strict["mcnemar_exact_p"] is None
    assert strict["design_effect"] == pytest.approx(3.0)
    assert strict["interval"] == "newcombe-paired-scenario-clustered"
    assert strict["delta_low"] < 0 < strict["delta_high"]
    sentence = data["sentences"][0]["strict"]
    assert sentence.startswith("B is better than A by 13.3 points on the strict rate over 30 scenarios (90 pairs; "
                               "the scenario is the unit); this could be chance")
    assert "scenarios at 3 runs each" in sentence
    assert compare(capsys, b, a, "--fail-if-worse", "0")[0] == 0  # chance is no regression
    _, text, _ = compare(capsys, a, b)
    assert "the scenario is the unit of every test and interval below" in text
    assert "exact sign-flip test over scenarios p = 0.219 (18 discordant pairs in 30 scenarios)" in text


def test_cavo_table_one_answer_from_sentence_interval_and_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Cavo 2012, [[59, 6], [16, 80]]: Newcombe -11.9 to -0.5 points, exact McNemar p = 0.052. The
    sentence said "could be chance (p = 0.052)" while the default gate (the interval) failed B."""
    a, b = table_runs(tmp_path, both=59, only_a=16, only_b=6, neither=80)
    data = as_json(capsys, a, b)
    strict = data["comparisons"][0]["strict"]
    assert (round(strict["delta_low"], 4), round(strict["delta_high"], 4)) == (-0.1186, -0.0046)
    assert strict["mcnemar_exact_p"] == pytest.approx(0.0525, abs=5e-5)
    assert data["sentences"][0]["strict"] == (
        "B is worse than A by 6.2 points on the strict rate over 161 pairs; this is unlikely to be chance "
        "(the interval leaves out no gap); the 95% interval runs from -11.9 to -0.5 points.")
    assert compare(capsys, a, b, "--fail-if-worse", "0")[0] == 1
    # Under --gate p-value the sentence and the gate both read the p-value: chance, no failure.
    code, text, _ = compare(capsys, a, b, "--fail-if-worse", "0", "--gate", "p-value")
    assert code == 0
    assert ("B is worse than A by 6.2 points on the strict rate over 161 pairs; this could be chance: the 95% "
            "interval runs from -11.9 to -0.5 points") in text


def test_twenty_zero_five_twenty_five_is_better_by_its_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """20/0/5/25: exact McNemar p = 0.063 but the paired interval is +0.9 to +18.7: better."""
    a, b = table_runs(tmp_path, both=20, only_a=0, only_b=5, neither=25)
    data = as_json(capsys, a, b)
    strict = data["comparisons"][0]["strict"]
    assert strict["mcnemar_exact_p"] == pytest.approx(0.0625)
    assert (round(strict["delta_low"], 3), round(strict["delta_high"], 3)) == (0.009, 0.187)
    assert data["sentences"][0]["strict"].startswith("B is better than A by 10.0 points on the strict rate over 50 "
                                                     "pairs; this is unlikely to be chance")


def test_balanced_discordance_is_no_gap_only_with_its_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """0/10/10/0 is no "no gap": its paired interval is about +-40 points."""
    a, b = table_runs(tmp_path, both=0, only_a=10, only_b=10, neither=0)
    sentence = as_json(capsys, a, b)["sentences"][0]["strict"]
    assert sentence.startswith("B and A pass the same share of the 20 pairs on the strict rate (20 pairs disagree, "
                               "as many each way): no gap seen, but the 95% interval runs from -")
    low, high = newcombe_interval(0, 10, 10, 0)
    assert f"from {percent_number(low)} to +{percent_number(high)} points" in sentence and high > 0.35


def test_one_pair_is_one_pair_and_several_runs_get_a_multiplicity_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "a", {"s1": "P", "s2": "E"})
    b = write_run(tmp_path / "b", {"s1": "F", "s2": "P"})
    c = write_run(tmp_path / "c", {"s1": "P", "s2": "P"})
    d = write_run(tmp_path / "d", {"s1": "P", "s2": "P"})
    data = as_json(capsys, a, b)
    assert "the 2 pairs on the strict rate" in data["sentences"][0]["strict"]
    assert data["sentences"][0]["judged"].startswith("B is worse than A by 100.0 points on the judged-only rate over "
                                                     "1 pair; this could be chance")
    assert data["multiplicity"] is None
    _, text, _ = compare(capsys, a, b)
    assert "### Judged-only (1 pair left out)" in text and "1 pairs" not in text
    data = as_json(capsys, a, b, c, d)
    assert data["multiplicity"] == (
        "3 runs are each compared with the first at level 0.05: if none differed, the chance that at least one "
        "comparison still shows a gap is up to 14.3%; for 0.05 over all of them, use --alpha 0.0167 (Bonferroni)")
    _, text, _ = compare(capsys, a, b, c)
    assert "- 2 runs are each compared with the first at level 0.05" in text
