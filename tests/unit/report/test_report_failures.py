"""report.md/html: every failure and error named with its reason or category and a link to an
existing trace.html only, the flakiness of repeated scenarios, what the money bought, and the
universe-clustered interval. Run folders are written with the real store and record code."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from test_run_report import _record, _report, _run_folder

from pytest_gaia2.cost.budget import record_spend
from pytest_gaia2.store import folder as store


def _with_trace(run: Path, relative: str) -> None:
    (run / relative).mkdir(parents=True, exist_ok=True)
    store.write_text(run / relative / "trace.html", "<html>trace</html>")


def test_failures_and_errors_are_named_with_reasons_and_existing_trace_links(tmp_path: Path) -> None:
    records = [
        _record("s_01", "passed", folder="search/s_01"),
        replace(_record("s_02", "failed", folder="search/s_02"), failure_reasons=["wrong | answer", "<b>late</b>"]),
        _record("s_03", "error", folder="search/s_03", error_category="timeout"),
        _record("s_04", "error", folder="../../outside", error_category="daemon_error"),
        _record("s_05", "failed", folder="search/s_05"),
    ]
    run = _run_folder(tmp_path, records)
    for name in ("s_01", "s_02", "s_03"):
        _with_trace(run, f"search/{name}")
    _with_trace(tmp_path, "outside")  # exists, but outside the run folder
    (run / "search" / "s_05").mkdir(parents=True)
    os.symlink(tmp_path / "outside" / "trace.html", run / "search" / "s_05" / "trace.html")
    markdown, html, _ = _report(run, tmp_path)
    lines = [line for line in markdown.splitlines() if line.startswith("| `search/")]
    assert lines == [
        r"| `search/s_02` | failed | `judge` | wrong \| answer; &lt;b&gt;late&lt;/b&gt; |  | [trace.html](<search/s_02/trace.html>) |",
        "| `search/s_05` | failed | `judge` | wrong answer |  | no trace.html |",
        "| `search/s_03` | error | `timeout` | it broke |  | [trace.html](<search/s_03/trace.html>) |",
        "| `search/s_04` | error | `daemon_error` | it broke |  | no trace.html |",
    ]
    assert 'href="search/s_02/trace.html"' in html and "&lt;b&gt;late&lt;/b&gt;" in html
    assert "outside" not in html.split('id="failures"')[1].split("</table>")[0]


def test_repeated_scenarios_show_their_runs(tmp_path: Path) -> None:
    records = [
        _record("s_01", outcome, repeat=k, repeats=3) for k, outcome in enumerate(("passed", "failed", "passed"), 1)
    ]
    records += [_record("s_02", "failed", repeat=k, repeats=3) for k in (1, 2, 3)]
    markdown, _, _ = _report(_run_folder(tmp_path, records), tmp_path)
    assert "| `search/s_01/run_2` | failed | `judge` | wrong answer | PFP | no trace.html |" in markdown
    assert "| `search/s_02/run_3` | failed | `judge` | wrong answer | FFF | no trace.html |" in markdown


def test_cost_per_passed_scenario_and_wasted_spend(tmp_path: Path) -> None:
    records = [
        _record("s_01", "passed", cost_usd=1.0, attempt=2),
        _record("s_02", "passed", cost_usd=2.0),
        _record("s_03", "failed", cost_usd=1.5),
        _record("s_04", "error", cost_usd=0.5, error_category="daemon_error"),
    ]
    run = _run_folder(tmp_path, records)
    # The ledger holds every attempt: s_01's first attempt (0.75) was replaced by its second.
    for key, attempt, usd in (
        ("search/s_01", 1, 0.75),
        ("search/s_01", 2, 1.0),
        ("search/s_02", 1, 2.0),
        ("search/s_03", 1, 1.5),
        ("search/s_04", 1, 0.5),
    ):
        record_spend(run, key, attempt, usd)
    markdown, html, _ = _report(run, tmp_path)
    # 5.75 spent over 2 passes; wasted 0.50 on the error + 0.75 on the replaced attempt.
    assert "- cost per passed scenario run: $2.88" in markdown
    assert (
        "- wasted (bought no verdict): $1.25: $0.50 on errors, $0.75 on attempts a later attempt replaced" in markdown
    )
    assert 'id="wasted"' in html


def test_universe_clustered_interval_beside_wilson(tmp_path: Path) -> None:
    # _record puts s_01 in universe_01 and so on: three universes, two scenarios each.
    records = [_record(f"a_{u:02d}", "passed") for u in (1, 2, 3)]
    records += [_record(f"b_{u:02d}", "failed") for u in (1, 2, 3)]
    markdown, html, summary = _report(_run_folder(tmp_path, records), tmp_path)
    clustered = summary["universe_clustered"]["strict"]
    assert clustered["clusters"] == 3
    line = next(line for line in markdown.splitlines() if line.startswith("- universe-clustered"))
    assert f"design effect {clustered['design_effect']:.2f}" in line and "(3 universes;" in line
    assert 'id="universe-clustered"' in html
