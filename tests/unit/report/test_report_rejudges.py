"""The report's re-judge section: each judge against the run's own verdicts, Cohen's kappa by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_run_report import _record, _report, _run_folder

from pytest_gaia2.report.rejudged import REJUDGE_DIR, REJUDGMENTS_FILE, cohen_kappa


def _rejudge(run: Path, name: str, judge: str, verdicts: dict[str, bool | None]) -> None:
    folder = run / REJUDGE_DIR / name / judge
    folder.mkdir(parents=True)
    (folder / REJUDGMENTS_FILE).write_text(
        "".join(json.dumps({"key": f"search/{sid}", "success": v, "in_container": not v}) + "\n"
                for sid, v in verdicts.items()), encoding="utf-8")


def test_kappa_by_hand() -> None:
    # 6 pairs, 4 agree: p_o = 2/3; both raters say yes half the time: p_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    pairs = [(True, True), (True, True), (True, False), (False, False), (False, False), (False, True)]
    assert cohen_kappa(pairs) == pytest.approx(1 / 3)
    # 10 pairs: A yes 6, B yes 5, agree on 4 yes + 3 no = 7: p_e = .6 * .5 + .4 * .5 = .5, kappa = (.7 - .5) / .5 = .4
    pairs = [(True, True)] * 4 + [(True, False)] * 2 + [(False, True)] * 1 + [(False, False)] * 3
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([(True, True)] * 3) is None and cohen_kappa([]) is None


def test_every_rejudge_is_a_row_with_its_kappa_and_flipped_ids(tmp_path: Path) -> None:
    outcomes = {"s_01": "passed", "s_02": "passed", "s_03": "passed", "s_04": "failed", "s_05": "failed",
                "s_06": "failed", "s_07": "passed", "s_08": "error"}
    run = _run_folder(tmp_path, [_record(sid, outcome, error_category="daemon_error" if outcome == "error" else None)
                                 for sid, outcome in outcomes.items()])
    _rejudge(run, "001-20261202T080000Z", "strict-model", {
        "s_01": True, "s_02": True, "s_03": False, "s_04": False, "s_05": False, "s_06": True, "s_07": None,
        "s_08": True})  # s_08 errored in the run: not compared
    _rejudge(run, "002-20261202T090000Z", "reference", {sid: outcome == "passed" for sid, outcome in outcomes.items()})
    (run / REJUDGE_DIR / "notes").mkdir()  # not a re-judge of the command: ignored
    markdown, html, _ = _report(run, tmp_path)
    rows = [line for line in markdown.splitlines() if line.startswith("| `00")]
    assert rows == [
        "| `001-20261202T080000Z` | `strict-model` | 6 | 1 | 66.7% | 0.333 | `search/s_03` | `search/s_06` |",
        "| `002-20261202T090000Z` | `reference` | 7 | 0 | 100.0% | 1.000 |  |  |",
    ]
    assert 'id="rejudges"' in html and '<td class="kappa">0.333</td>' in html


def test_no_section_without_a_rejudge(tmp_path: Path) -> None:
    markdown, html, _ = _report(_run_folder(tmp_path, [_record("s_01", "passed")]), tmp_path)
    assert "## Re-judges" not in markdown and 'id="rejudges"' not in html
