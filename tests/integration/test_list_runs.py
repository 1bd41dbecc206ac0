"""``pytest-gaia2 list`` on an output folder of five runs of the reference image (one halted, one
interrupted, one resumed, two named), on the terminal and in a real headless browser.

Each run plans two scenarios (two splits): enough for a halt to leave one not run and for a
resume to reuse one, and the five runs follow each other, so each scenario more is waited for five times.

Four runs are real; the interrupted one is a copy of a real run folder whose run_config.json
plans two more scenarios and whose summary.json says it was interrupted (as a Ctrl-C leaves it).
Every scenario costs $1.20 (a fixed usage priced from a price file), so the halt's moment is known.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from browser import headless_browser, open_page
from gaia2_testing import console, run_folder, run_folders
from test_fair_stop import USAGE, five_splits, price_file

from pytest_gaia2.report.rates import percent, percent_number
from pytest_gaia2.report.run_list import MARKER

INTERRUPTED = "interrupted (Ctrl-C, SIGTERM or a collection error) before they started"


def _strict(summary: dict[str, Any]) -> str:
    rate = summary["strict"]
    return (f"{rate['successes']}/{rate['n']} = {percent(rate['value'])} "
            f"[{percent_number(rate['low'])}–{percent_number(rate['high'])}]")


def _files(folder: Path) -> dict[str, float]:
    return {str(path): path.stat().st_mtime for path in folder.rglob("*") if path.is_file()}


def _interrupted_copy(output: Path, source: Path) -> Path:
    """A copy of a finished run as a Ctrl-C leaves it: two planned scenarios never started."""
    copy = output / "20300101T000000Z-deadbeef"
    shutil.copytree(source, copy, symlinks=True)
    config = json.loads((copy / "run_config.json").read_text(encoding="utf-8"))
    missing = ["search/scenario_universe_98_zzz00", "time/scenario_universe_99_zzz01"]
    config.update(started_at="2030-01-01T00:00:00+00:00", name=None, tags=[], planned=config["planned"] + missing)
    (copy / "run_config.json").write_text(json.dumps(config), encoding="utf-8")
    summary = json.loads((copy / "summary.json").read_text(encoding="utf-8"))
    summary.update(planned=summary["planned"] + len(missing), not_run=missing, not_run_count=len(missing), complete=False)
    summary["stop"] = {"stopped": True, "reason": INTERRUPTED, "halt_usd": None, "cap_usd": None, "spent_usd": 2.4,
                       "spent_at_stop_usd": None, "not_started": [{"key": key, "why": INTERRUPTED} for key in missing]}
    (copy / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return copy


@pytest.mark.slow
def test_list_shows_five_runs_newest_first_on_the_terminal_and_in_a_browser(
    pytester: pytest.Pytester, run_gaia2: Any
) -> None:
    five_splits(pytester.path / "five", 1)
    args = ("--gaia2-scenarios=five/search", "--gaia2-scenarios=five/time", price_file(pytester), *USAGE,
            "--gaia2-seed=7")
    output = pytester.path / "out"
    run_gaia2(*args, "--gaia2-name=baseline", "--gaia2-tag=nightly", "--gaia2-tag=ref").assert_outcomes(passed=2)
    baseline = run_folder(output)
    run_gaia2(*args, "--gaia2-budget-halt=1.0").assert_outcomes(passed=1, skipped=1)
    halted = run_folder(output)
    run_gaia2(*args, "--gaia2-budget-halt=1.0").assert_outcomes(passed=1, skipped=1)
    run_gaia2(*args, "--gaia2-resume").assert_outcomes(passed=2)  # one of them reused
    resumed = run_folder(output)
    run_gaia2(*args, "--gaia2-name=candidate", "--gaia2-tag=ref").assert_outcomes(passed=2)
    candidate = run_folder(output)
    interrupted = _interrupted_copy(output, baseline)
    assert len(run_folders(output)) == 5
    before = {folder: _files(folder) for folder in run_folders(output)}
    summaries = {folder: json.loads((folder / "summary.json").read_text()) for folder in run_folders(output)}

    done = console("list", output)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    order = [line.split()[0] for line in lines[1:-1:2]]
    assert order == [interrupted.name, candidate.name, resumed.name, halted.name, baseline.name]  # newest first
    rows = dict(zip(order, lines[1:-1:2], strict=True))
    status = dict(zip(order, (line.strip() for line in lines[2:-1:2]), strict=True))
    assert rows[baseline.name].split()[1:3] == ["baseline", "nightly,ref"]
    assert rows[candidate.name].split()[1:3] == ["candidate", "ref"] and rows[halted.name].split()[1:3] == ["-", "-"]
    assert " 2 " in rows[resumed.name] and " 1 " in rows[halted.name]  # sessions: the resumed run has two
    assert "2/2 " in rows[resumed.name] and "1/2 " in rows[halted.name] and "2/4 " in rows[interrupted.name]
    for folder in (baseline, halted, resumed, candidate):
        assert _strict(summaries[folder]) in rows[folder.name]
    assert "2/4 = 50.0% [" in rows[interrupted.name]
    assert rows[baseline.name].endswith("$2.40") and rows[halted.name].endswith("$1.20")
    assert status[baseline.name] == status[resumed.name] == status[candidate.name] == "complete"
    assert status[halted.name] == f"incomplete: {summaries[halted]['stop']['reason']}"
    assert status[halted.name].startswith("incomplete: budget: the run has spent $1.20, its halt is $1.00")
    assert status[interrupted.name] == f"incomplete: {INTERRUPTED}"
    assert lines[-1] == f"pytest-gaia2 list: runs page: {output.resolve() / 'index.html'}"
    assert {folder: _files(folder) for folder in run_folders(output)} == before  # no run folder touched

    from selenium.webdriver.common.by import By

    with headless_browser(1400, 900) as driver:
        open_page(driver, output / "index.html")
        shown = driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
        assert [row.get_attribute("data-folder") for row in shown] == order
        for element in shown:
            cells = {name: element.find_element(By.CLASS_NAME, name).text
                     for name in ("name", "tags", "sessions", "done", "strict", "cost", "status")}
            folder = output / element.get_attribute("data-folder")
            assert cells["status"] == status[folder.name]
            assert cells["strict"] in rows[folder.name] and cells["cost"] in rows[folder.name]
            assert element.get_attribute("class") == ("complete" if cells["status"] == "complete" else "incomplete")
            assert cells["done"] == {halted: "1/2", interrupted: "2/4"}.get(folder, "2/2")
            assert (cells["name"], cells["tags"]) == {
                baseline: ("baseline", "nightlyref"), candidate: ("candidate", "ref")}.get(folder, ("", ""))
            link = element.find_element(By.CSS_SELECTOR, ".folder a")
            assert Path(link.get_attribute("href").removeprefix("file://")) == (folder / "index.html").resolve()
        driver.find_element(By.CSS_SELECTOR, f'tr[data-folder="{halted.name}"] .folder a').click()
        assert "stopped" in driver.find_element(By.ID, "incomplete").text.lower()
        assert driver.find_element(By.ID, "stop-budget").text.startswith("budget: halt $1.00, cap none, spent $1.20")

    assert console("list", output).returncode == 0  # its own index.html is replaced, nothing else


def test_list_leaves_a_foreign_index_alone_and_names_an_unreadable_run(
    pytester: pytest.Pytester, run_gaia2: Any
) -> None:
    five_splits(pytester.path / "five", 1)
    run_gaia2("--gaia2-scenarios=five/search").assert_outcomes(passed=1)
    output = pytester.path / "out"
    broken = output / "20300101T000000Z-0badf00d"
    shutil.copytree(run_folder(output), broken, symlinks=True)
    with (broken / "results.jsonl").open("a") as stream:
        stream.write('{"scenario_id": "\\u001b[31mred", "outcome": 7}\n')
    (output / "index.html").write_text("<p>a team's own page</p>", encoding="utf-8")
    done = console("list", output)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert done.stdout.splitlines()[2].startswith("    unreadable: ") and "line 2" in done.stdout
    assert done.stdout.splitlines()[-1] == (
        f"pytest-gaia2 list: index.html not written: {output.resolve() / 'index.html'} exists and was not "
        "written by pytest-gaia2 list")
    assert (output / "index.html").read_text(encoding="utf-8") == "<p>a team's own page</p>"
    os.unlink(output / "index.html")
    os.symlink(broken / "index.html", output / "index.html")  # a link is nobody's page to replace either
    assert "not written" in console("list", output).stdout.splitlines()[-1]
    assert MARKER not in (broken / "index.html").read_text(encoding="utf-8")
