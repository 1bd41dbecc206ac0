"""``pytest-gaia2 report``: report.md and report.html agree with summary.json, list errors with
their ids, show pass@k and cost only when there is something to show, break the run down per
app, never write a secret, and attach themselves to Allure.

Run folders are written with the real store, record and summary code, as a run writes them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED

from pytest_gaia2.cli import main as cli
from pytest_gaia2.plan import scenarios
from pytest_gaia2.report import plots
from pytest_gaia2.report.document import APPS_UNKNOWN, REPORT_HTML, REPORT_MD, write_report
from pytest_gaia2.report.rates import percent, percent_number
from pytest_gaia2.report.stats import summarise
from pytest_gaia2.report.summary import write_summary_json
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord, outcome_of

STARTED = dt.datetime(2026, 12, 1, 9, 15, tzinfo=dt.timezone.utc)
SUCCESS = {"passed": True, "failed": False, "error": None}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _record(sid: str, outcome: str, *, split: str = "search", repeat: int = 1, repeats: int = 1,
            scenario_file: str = "", **extra: Any) -> AttemptRecord:
    return AttemptRecord(
        scenario_id=sid, success=SUCCESS[outcome], reward=None, num_agent_events=2, agent_response="",
        judged_in_container=outcome != "error", timed_out=False, timeout_seconds=600.0, daemon_status=None,
        scenario_file=scenario_file, failure_reasons=["wrong answer"] if outcome == "failed" else [],
        error="it broke" if outcome == "error" else None, split=split, universe=f"universe_{sid[-2:]}",
        repeat=repeat, repeats=repeats, outcome=outcome_of(SUCCESS[outcome]), run_id="r" * 32, **extra)


def _run_folder(root: Path, records: list[AttemptRecord], planned: list[str] | None = None,
                command: str = "pytest -n 2") -> Path:
    """A run folder as the plugin leaves it: run_config.json, results.jsonl, summary.json."""
    folder = store.RunFolder.create(root / "out", "0123456789abcdef", STARTED)
    keys = planned if planned is not None else [record.key for record in records]
    store.write_json(folder.file(store.RUN_CONFIG_FILE), {
        "command": command, "run_id": "0123456789abcdef", "started_at": STARTED.isoformat(),
        "planned": keys, "settings": {"image": "example/agent:1", "model": "m1"}})
    for record in records:
        store.append_jsonl(folder.results, record.to_json())
    write_summary_json(folder.file(store.SUMMARY_FILE), summarise([r.to_json() for r in records], keys), None)
    return folder.path


def _report(folder: Path, tmp_path: Path, **kwargs: Any) -> tuple[str, str, dict[str, Any]]:
    write_report(folder, index=tmp_path / "index.json", **kwargs)
    summary = json.loads((folder / store.SUMMARY_FILE).read_text(encoding="utf-8"))
    return ((folder / REPORT_MD).read_text(encoding="utf-8"), (folder / REPORT_HTML).read_text(encoding="utf-8"),
            summary)


def _mixed() -> list[AttemptRecord]:
    """5 passes, 2 judge failures, 3 errors of two categories, over two splits; timed, unpriced."""
    outcomes = ["passed"] * 5 + ["failed"] * 2 + ["error"] * 3
    return [_record(f"s_{i:02d}", outcome, split="search" if i % 2 else "time", wall_time_s=10.0 + i,
                    error_category=("timeout" if i == 9 else "daemon_error") if outcome == "error" else None)
            for i, outcome in enumerate(outcomes)]


def _row(markdown: str, label: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(f"| {label}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_headline_numbers_equal_summary_json(tmp_path: Path) -> None:
    records = _mixed()
    not_run = "search/s_99"
    folder = _run_folder(tmp_path, records, planned=[r.key for r in records] + [not_run])
    markdown, html, summary = _report(folder, tmp_path)
    for key, label in (("strict", "strict"), ("judged", "judged-only")):
        rate = summary[key]
        assert _row(markdown, label)[1:] == [
            percent(rate["value"]), f"[{percent_number(rate['low'])}–{percent_number(rate['high'])}]",
            f"{rate['successes']}/{rate['n']}"]
    assert (summary["strict"]["n"], summary["judged"]["n"]) == (11, 7)  # the not-run key is in the strict rate
    assert f"- planned: {summary['planned']} scenarios, done: {summary['done']}, not run: 1" in markdown
    assert "**INCOMPLETE:** 10 of 11 planned scenarios done; not run: `search/s_99`" in markdown
    for split, numbers in summary["splits"].items():
        row = _row(markdown, f"`{split}`")
        assert row[1:6] == [str(numbers[key]) for key in ("total", "passed", "failed", "errors", "not_run_count")]
        assert row[6] == percent(numbers["strict"]["value"])
    assert 'id="incomplete"' in html


def test_errors_listed_by_category_with_ids(tmp_path: Path) -> None:
    markdown, html, summary = _report(_run_folder(tmp_path, _mixed()), tmp_path)
    assert summary["errors_by_category"] == {"daemon_error": {"count": 2, "ids": ["s_07", "s_08"]},
                                             "timeout": {"count": 1, "ids": ["s_09"]}}
    assert "| `daemon_error` | 2 | `s_07`, `s_08` |" in markdown
    assert "| `timeout` | 1 | `s_09` |" in markdown
    assert "<code>s_07</code><code>s_08</code>" in html
    assert (tmp_path / "out" / "latest" / "report" / "errors.png").read_bytes().startswith(PNG_MAGIC)


def test_no_error_plot_and_a_plain_line_without_errors(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path, [_record("s_01", "passed", wall_time_s=3.0)])
    markdown, _, _ = _report(folder, tmp_path)
    assert "No infrastructure errors." in markdown
    assert sorted(path.name for path in (folder / "report").iterdir()) == ["pass_rates.png", "wall_times.png"]


def test_pass_at_k_only_when_repeated(tmp_path: Path) -> None:
    table = {"s_01": "PPP", "s_02": "PFP", "s_03": "FFF"}
    letters = {"P": "passed", "F": "failed"}
    records = [_record(sid, letters[letter], repeat=run, repeats=3)
               for sid, pattern in table.items() for run, letter in enumerate(pattern, start=1)]
    markdown, html, summary = _report(_run_folder(tmp_path / "repeated", records), tmp_path)
    repeats = summary["repeats"]
    assert "## pass@3" in markdown
    assert _row(markdown, "pass@3")[1] == percent(repeats["pass_at_k"]["value"]) == "66.7%"
    assert _row(markdown, "pass^3")[3] == "1/3"
    assert "`s_02` PFP" in markdown and 'id="pass-at-k"' in html
    assert "- planned: 9 scenario runs" in markdown
    single, _, _ = _report(_run_folder(tmp_path / "single", _mixed()), tmp_path)
    assert "pass@" not in single


def test_cost_only_when_known(tmp_path: Path) -> None:
    usage = {"calls": 3, "input_tokens": 1000, "output_tokens": 200, "cached_input_tokens": 100,
             "cache_write_tokens": 0, "models": ["m1"]}
    priced = [_record("s_01", "passed", usage=usage, cost_usd=0.25, wall_time_s=5.0),
              _record("s_02", "failed", usage=usage, cost_usd=1.5, wall_time_s=7.0),
              _record("s_03", "passed", usage=usage, cost_usd=None, wall_time_s=6.0)]
    folder = _run_folder(tmp_path / "priced", priced)
    markdown, html, _ = _report(folder, tmp_path)
    assert "## Cost" in markdown and 'id="cost"' in html
    assert "- $1.75 over 2 priced scenario runs; 1 with cost unknown (no price for: `m1`)" in markdown
    assert (folder / "report" / "costs.png").read_bytes().startswith(PNG_MAGIC)
    unpriced = _run_folder(tmp_path / "unpriced", _mixed())
    markdown, html, _ = _report(unpriced, tmp_path)
    assert "## Cost" not in markdown and 'id="cost"' not in html
    assert not (unpriced / "report" / "costs.png").exists()


def test_slowest_scenarios_slowest_first(tmp_path: Path) -> None:
    markdown, _, _ = _report(_run_folder(tmp_path, _mixed()), tmp_path)
    slowest = re.findall(r"^\| `(\S+)` \| \w+ \| ([\d.]+) s \|$", markdown, flags=re.MULTILINE)
    assert slowest[:3] == [("search/s_09", "19.0"), ("time/s_08", "18.0"), ("search/s_07", "17.0")]


def test_per_app_from_the_scenario_files_and_unknown_when_gone_or_changed(tmp_path: Path) -> None:
    source = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
    data = json.loads(source.read_text(encoding="utf-8"))
    data["apps"].append({"name": "<img src=x onerror=alert(1)>"})
    data["metadata"]["definition"]["scenario_id"] = "kept"  # two files of one id would both be refused
    files = tmp_path / "files"
    files.mkdir()
    kept, changed = files / "kept.json", files / "changed.json"
    kept.write_text(json.dumps(data), encoding="utf-8")
    shutil.copy(source, changed)
    digest = hashlib.sha256(kept.read_bytes()).hexdigest()
    records = [_record("s_01", "passed", scenario_file=str(kept), scenario_sha256=digest),
               _record("s_02", "failed", scenario_file=str(kept), scenario_sha256=digest),
               _record("s_03", "passed", scenario_file=str(files / "gone.json")),
               _record("s_04", "passed", scenario_file=str(changed), scenario_sha256="0" * 64)]
    markdown, html, _ = _report(_run_folder(tmp_path, records, planned=[r.key for r in records] + ["search/s_05"]),
                                tmp_path)
    names = [app["name"] for app in data["apps"]]
    for name in names:
        assert _row(markdown, f"`{name}`")[1:4] == ["2", "1", "1"]
    assert _row(markdown, f"`{APPS_UNKNOWN}`")[1:6] == ["2", "2", "0", "0", "1"]  # gone, changed, not run
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_planned_scenario_that_never_ran_shows_the_apps_of_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planned scenario that never started (a halt, Ctrl-C) is not ``apps unknown`` when the run
    knew its file: summary.json's ``not_run_files`` names it with its hash; the report reads it (a
    regular file only, bounded) when the hash still matches."""
    data = json.loads((SHIPPED / "search" / "scenario_universe_21_7kww6e.json").read_text(encoding="utf-8"))
    data["metadata"]["definition"]["scenario_id"] = "kept"
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps(data), encoding="utf-8")
    digest = hashlib.sha256(kept.read_bytes()).hexdigest()
    records = [_record("s_01", "passed", scenario_file=str(kept), scenario_sha256=digest)]
    planned = ["search/s_01", "search/s_05", "search/s_06", "search/s_07", "search/s_08"]
    folder = _run_folder(tmp_path, records, planned=planned)
    summary = json.loads((folder / store.SUMMARY_FILE).read_text(encoding="utf-8"))
    summary["not_run_files"] = {
        "search/s_05": {"scenario_file": str(kept), "scenario_sha256": digest},
        "search/s_06": {"scenario_file": str(kept), "scenario_sha256": "0" * 64},  # changed since planned
        "search/s_07": {"scenario_file": str(tmp_path), "scenario_sha256": digest},  # a folder: never walked
        "search/s_08": {"scenario_file": str(kept), "scenario_sha256": None},  # no hash vouches for it
    }
    (folder / store.SUMMARY_FILE).write_text(json.dumps(summary), encoding="utf-8")
    roots: list[list[Path]] = []
    discover = scenarios.discover
    monkeypatch.setattr(scenarios, "discover", lambda paths, **kw: roots.append(list(paths)) or discover(paths, **kw))
    markdown, _, _ = _report(folder, tmp_path)
    for name in {app["name"] for app in data["apps"]}:
        assert _row(markdown, f"`{name}`")[1:6] == ["1", "1", "0", "0", "1"]  # s_01 ran, s_05 did not
    assert _row(markdown, f"`{APPS_UNKNOWN}`")[1:6] == ["0", "0", "0", "0", "3"]
    assert roots == [[kept]]


def test_no_secret_from_the_environment_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-report-test-5c1e9a"
    monkeypatch.setenv("GAIA2_REPORT_TEST_API_KEY", secret)
    folder = _run_folder(tmp_path, _mixed(), command=f"pytest --gaia2-env=X={secret}")
    markdown, html, _ = _report(folder, tmp_path)
    assert secret not in markdown + html
    assert "--gaia2-env=X=***" in markdown


def test_command_reports_each_run_and_checks_every_name_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _run_folder(tmp_path / "a", _mixed())
    second = _run_folder(tmp_path / "b", [_record("s_01", "passed")])
    assert cli.main(["report", str(tmp_path / "a" / "out"), str(second)]) == 0  # an output folder means its latest run
    assert (first / REPORT_HTML).is_file() and (second / REPORT_HTML).is_file()
    out = capsys.readouterr().out
    assert f"{first / REPORT_HTML} (report.md; plots: 3)" in out and f"{second / REPORT_HTML} (report.md; plots: 1)" in out
    (first / REPORT_HTML).unlink()
    assert cli.main(["report", str(first), str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'} is not a run folder" in capsys.readouterr().err
    assert not (first / REPORT_HTML).exists()


def test_without_matplotlib_one_message_names_the_extra_and_nothing_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _run_folder(tmp_path, _mixed())
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(plots.MissingLibrary, match=re.escape("pytest-gaia2[analysis]")):
        plots.require()
    assert cli.main(["report", str(folder)]) == 2
    assert capsys.readouterr().err.strip() == f"pytest-gaia2 report: {plots.MISSING}"
    assert not (folder / REPORT_MD).exists() and not (folder / "report").exists()


def test_allure_gets_one_result_with_the_report_and_plots(tmp_path: Path) -> None:
    pytest.importorskip("allure_commons")
    folder = _run_folder(tmp_path, _mixed())
    written = write_report(folder, alluredir=tmp_path / "allure", index=tmp_path / "index.json")
    results = [json.loads(path.read_text(encoding="utf-8")) for path in (tmp_path / "allure").glob("*-result.json")]
    assert len(results) == 1
    result = results[0]
    assert result["name"] == f"gaia2 run report {folder.name}" and result["status"] == "unknown"
    assert "strict 50.0%, judged-only 71.4%, 10 of 10 done" in result["statusDetails"]["message"]
    attached = {item["name"]: tmp_path / "allure" / item["source"] for item in result["attachments"]}
    assert sorted(attached) == ["Errors by category.png", "Pass rate per split.png", "Wall time per scenario.png",
                                "report.html"]
    assert attached["report.html"].read_bytes() == (folder / REPORT_HTML).read_bytes()
    assert all(path.read_bytes().startswith(PNG_MAGIC) for name, path in attached.items() if name.endswith(".png"))
    assert {path.name for path in written} == {REPORT_MD, REPORT_HTML, "pass_rates.png", "errors.png",
                                               "wall_times.png"}


def test_free_text_stays_one_table_cell_in_markdown() -> None:
    from pytest_gaia2.report.markdown import code_span as _code

    assert _code("pytest -k 'a or b' | tee\nlog") == "`pytest -k 'a or b' \\| tee log`"
    assert _code("run `x` ``y``") == "``` run `x` ``y`` ```"  # a longer fence; padded next to a backtick


def test_a_category_that_reads_as_mathtext_is_drawn_as_text() -> None:
    """``$\\frac{`` in an error category made matplotlib's mathtext raise; labels are plain text."""
    from pytest_gaia2.report.plots import LABEL_CHARS, errors
    from pytest_gaia2.report.plots import plain_label as label
    from pytest_gaia2.report.stats import ErrorGroup

    assert label("$\\frac{a") == "\\$\\frac{a" and len(label("x" * 500)) == LABEL_CHARS
    assert errors([ErrorGroup("$\\frac{a", 2, ()), ErrorGroup("a$b$" * 200, 1, ())]).png.startswith(PNG_MAGIC)


def test_a_grown_run_shows_its_latest_command_and_its_first(tmp_path: Path) -> None:
    """A probe of 10 grown to 12 by a resumed session: "command" is the session that grew it, and
    the first session's command is kept beside it; a run of one session shows one command."""
    first = "pytest --gaia2-probe-only --gaia2-sample=10"
    folder = _run_folder(tmp_path, _mixed(), command=first)
    store.append_jsonl(folder / store.SESSIONS_FILE, {"session_id": "a", "command": first})
    markdown, html, _ = _report(folder, tmp_path)
    assert _row(markdown, "command") == ["command", f"`{first}`"] and "first command" not in markdown + html
    grown = "pytest -n 2 --gaia2-sample=12 --gaia2-resume"
    store.append_jsonl(folder / store.SESSIONS_FILE, {"session_id": "b", "command": grown})
    markdown, html, _ = _report(folder, tmp_path)
    assert _row(markdown, "command") == ["command", f"`{grown}`"]
    assert _row(markdown, "first command") == ["first command", f"`{first}`"]
    assert f"<th>first command</th><td><code>{first}</code>" in html
