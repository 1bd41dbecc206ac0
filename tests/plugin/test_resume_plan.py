"""What a resumed run planned, on every page: run_config.json keeps the first session's plan,
summary.json the latest's. A resume with a larger selection plans more than the first session;
report.md, report.html, the run's index.html and ``pytest-gaia2 list`` count the latest
session's plan, as summary.json does (not run_config.json's, the first session's).

Verdicts are stored result.json files a ``--gaia2-resume`` reports again, and the scenarios
without one are held back by the budget, so no container starts (the ``stored_run`` fixture).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import console

from pytest_gaia2.cost.budget import record_spend


def _text_of(html: str, element_id: str) -> str:
    """The text of the element with ``element_id`` (tags dropped, spaces collapsed)."""
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</(?:p|li)>', html, re.S)
    assert match is not None, element_id
    return " ".join(re.sub(r"<[^>]+>", "", match[1]).split())


def _pages_agree(run: Path, summary: dict[str, Any], list_output: Path) -> str:
    """report.md, report.html, index.html and ``pytest-gaia2 list`` show summary.json's planned,
    done and not run; the list's status line is returned."""
    planned, done, not_run = summary["planned"], summary["done"], summary["not_run"]
    markdown = (run / "report.md").read_text(encoding="utf-8")
    assert f"- planned: {planned} scenarios, done: {done}, not run: {len(not_run)}\n" in markdown
    report = (run / "report.html").read_text(encoding="utf-8")
    assert (
        _text_of(report, "headline-planned") == f"planned: {planned} scenarios, done: {done}, not run: {len(not_run)}"
    )
    index = (run / "index.html").read_text(encoding="utf-8")
    assert _text_of(index, "counts").startswith(f"{done} of {planned} planned scenarios done, {done} row(s)")
    if not_run:
        assert f"not run: {', '.join(f'`{key}`' for key in not_run)}. Stopped:" in markdown
        for html in (report, index):
            assert _text_of(html, "incomplete").startswith(f"INCOMPLETE: {done} of {planned} planned scenarios done")
    else:
        assert "INCOMPLETE" not in markdown and 'id="incomplete"' not in report + index
    for page in (markdown, report, index):
        assert "run_config.json" not in page  # the plan is summary.json's: no fallback note
    listed = console("list", list_output)
    assert listed.returncode == 0, listed.stderr
    header, row, status, *_ = listed.stdout.splitlines()
    assert row.split()[0] == run.name and f" {done}/{planned} " in row, listed.stdout
    return status.strip()


def test_pages_and_list_count_the_latest_sessions_plan_after_a_larger_resume(
    pytester: pytest.Pytester, stored_run: Any
) -> None:
    run = stored_run(passed=3, failed=1, unstored=2)
    folder = pytester.path / "run"
    ids = sorted(path.stem for path in (pytester.path / "scenarios" / "search").glob("*.json"))
    first = ids[:2]
    # The first session (the one that wrote run_config.json) planned two scenarios.
    (folder / "run_config.json").write_text(
        json.dumps({"run_id": "stored", "planned": [f"search/{sid}" for sid in first]}), encoding="utf-8"
    )
    run("-k", " or ".join(first), "--gaia2-report").assert_outcomes(passed=2)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert (summary["planned"], summary["done"], summary["not_run"]) == (2, 2, [])
    assert _pages_agree(folder, summary, pytester.path) == "complete"

    # The resume plans all six: four stored verdicts reported again, two held back by the budget.
    record_spend(folder, "search/elsewhere", 1, 1.0)
    resumed = run("--gaia2-budget-halt=0.5", "--gaia2-report")
    resumed.assert_outcomes(passed=3, failed=1, skipped=2)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert (summary["planned"], summary["done"]) == (6, 4)
    assert summary["not_run"] == [f"search/{sid}" for sid in ids[4:]]
    assert json.loads((folder / "run_config.json").read_text(encoding="utf-8"))["planned"] == [
        f"search/{sid}" for sid in first
    ]  # still the first session's
    status = _pages_agree(folder, summary, pytester.path)
    assert status == f"incomplete: {summary['stop']['reason']}"
    assert status.startswith("incomplete: budget: the run has spent $1.00, its halt is $0.50")

    # A damaged summary.json: the pages fall back to the first session's plan and every result, and say so.
    (folder / "summary.json").write_text(json.dumps({**summary, "planned": 7}), encoding="utf-8")
    listed = console("list", pytester.path)
    _, row, status, *_ = listed.stdout.splitlines()
    assert " 4/4 " in row
    assert status.endswith(
        "planned: the first session's plan (run_config.json) and every result, as summary.json's plan is damaged"
    )
