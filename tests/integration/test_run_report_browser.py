"""``pytest-gaia2 report`` on a real run, looked at in a real headless browser and in Allure.

The first shipped scenario of each split runs on the reference image with a judge failure (an
oracle the judge rejects) and an unreadable scenario file (an ``invalid_scenario`` error), on two workers; then
the report command writes the report and adds it to the run's Allure results.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import broken_images, headless_browser, open_page
from gaia2_testing import (
    DATA,
    FIRST_OF_EACH_SPLIT,
    SHIPPED,
    WITH_ALLURE,
    console,
    gaia2_containers,
    run_folder,
    run_id_of,
    run_pytest,
)

from pytest_gaia2.report.rates import percent, percent_number

SHIPPED_COUNT = len(FIRST_OF_EACH_SPLIT)
JUDGE_FAIL = "scenario_universe_22_ygzpjz"
INVALID = "not_json"  # tests/data/scenarios/malformed/not_json.json: never reaches a container
PLOTS = {"pass_rates", "errors", "wall_times"}  # no cost plot: the oracle leaves no trace


def _pixels(png: bytes) -> np.ndarray[Any, Any]:
    """RGB pixels of a screenshot, decoded by matplotlib's PNG reader (0..1 floats)."""
    from matplotlib import image

    return image.imread(io.BytesIO(png), format="png")[..., :3]


def _colours(png: bytes) -> int:
    pixels = _pixels(png)
    return len(np.unique(pixels.reshape(-1, 3), axis=0))


def _inked(png: bytes) -> float:
    """The share of pixels that are not (nearly) white."""
    return float((_pixels(png).min(axis=-1) < 0.95).mean())


def _cells(driver: Any, row_id: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, f"#{row_id} td")]


def _shown(rate: dict[str, Any]) -> list[str]:
    return [percent(rate["value"]), f"[{percent_number(rate['low'])}–{percent_number(rate['high'])}]",
            f"{rate['successes']}/{rate['n']}"]


def _hand_rejudge(folder: Path) -> float:
    """A re-judge's verdicts written as ``rejudge`` writes them: the judge failure passed, the first
    passed scenario failed. Returns Cohen's kappa against the run's verdicts, worked out here."""
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    judged = {f"{r['split']}/{r['scenario_id']}": r["outcome"] == "passed" for r in records
              if r["outcome"] in ("passed", "failed")}
    first_pass = min(key for key, passed in judged.items() if passed)
    flipped = {key: not passed if key == first_pass or not passed else passed for key, passed in judged.items()}
    place = folder / "rejudge" / "001-20261202T000000Z" / "by-hand"
    place.mkdir(parents=True)
    (place / "rejudgments.jsonl").write_text(
        "".join(json.dumps({"key": key, "success": value}) + "\n" for key, value in flipped.items()), encoding="utf-8")
    n = len(judged)
    agree = sum(judged[key] == flipped[key] for key in judged) / n
    yes_run, yes_judge = sum(judged.values()) / n, sum(flipped.values()) / n
    chance = yes_run * yes_judge + (1 - yes_run) * (1 - yes_judge)
    return (agree - chance) / (1 - chance)


def _check_in_browser(folder: Path, summary: dict[str, Any], shots: Path, kappa: float) -> None:
    from selenium.webdriver.common.by import By

    with headless_browser(1280, 1600) as driver:
        open_page(driver, folder / "report.html")
        assert broken_images(driver) == []
        figures = driver.find_elements(By.CSS_SELECTOR, "figure img")
        assert {element.find_element(By.XPATH, "..").get_attribute("id") for element in figures} == {
            f"plot-{name}" for name in PLOTS}
        for element in figures:
            assert element.get_attribute("src").startswith("data:image/png;base64,")  # nothing fetched
            shot = element.screenshot_as_png
            (shots / f"{element.get_attribute('alt')}.png").write_bytes(shot)
            assert _colours(shot) > 50, element.get_attribute("alt")  # bars, axes, text: not a blank box
        assert _cells(driver, "headline-strict") == _shown(summary["strict"])
        assert _cells(driver, "headline-judged") == _shown(summary["judged"])
        planned = driver.find_element(By.ID, "headline-planned")
        assert [planned.find_element(By.CLASS_NAME, name).text for name in ("planned", "done", "not-run")] == [
            str(summary["planned"]), str(summary["done"]), str(len(summary["not_run"]))]
        errors = driver.find_element(By.ID, "errors").text
        assert f"invalid_scenario 1 {INVALID}" in errors
        _check_failures(driver, folder)
        row = driver.find_element(By.CSS_SELECTOR, "#rejudges tbody tr")
        assert row.find_element(By.CLASS_NAME, "judge").text == "by-hand"
        assert row.find_element(By.CLASS_NAME, "kappa").text == f"{kappa:.3f}"
        page = driver.get_screenshot_as_png()
        (shots / "report.png").write_bytes(page)
        assert _inked(page) > 0.05 and _colours(page) > 50


def _check_failures(driver: Any, folder: Path) -> None:
    """Every failed or errored result of results.jsonl is a row of #failures; each link opens the
    scenario's own trace.html, and the judge's failure has one."""
    from selenium.webdriver.common.by import By

    records = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    problems = {f"{r['split']}/{r['scenario_id']}": r for r in records if r["outcome"] in ("failed", "error")}
    rows = driver.find_elements(By.CSS_SELECTOR, "#failures tbody tr")
    shown = {row.find_element(By.CLASS_NAME, "key").text: row for row in rows}
    assert set(shown) == set(problems)
    links = {}
    for key, row in shown.items():
        assert row.find_element(By.CLASS_NAME, "outcome").text == problems[key]["outcome"]
        anchors = row.find_elements(By.CSS_SELECTOR, ".trace a")
        if anchors:
            target = Path(anchors[0].get_attribute("href").removeprefix("file://"))
            assert target == (folder / problems[key]["folder"] / "trace.html").resolve() and target.is_file()
            links[key] = anchors[0].get_attribute("href")
    judge_fail = next(key for key in shown if key.endswith(JUDGE_FAIL))
    assert shown[judge_fail].find_element(By.CLASS_NAME, "category").text == "judge"
    assert shown[judge_fail].find_element(By.CLASS_NAME, "reason").text  # the judge's reason, not empty
    assert judge_fail in links
    for key, href in links.items():
        driver.get(href)
        assert JUDGE_FAIL in driver.page_source if key == judge_fail else key.split("/")[-1] in driver.page_source
    open_page(driver, folder / "report.html")


def _check_allure(folder: Path, name: str) -> None:
    allure = shutil.which("allure")
    if allure is None:
        pytest.skip("report and Allure results checked; the Allure report was not generated: the Allure "
                    "command line is not on PATH (npm install allure-commandline; it needs Java)")
    subprocess.run([allure, "generate", "allure", "-o", "allure-report", "--clean"], cwd=folder, check=True,
                   capture_output=True, timeout=300)
    cases = [json.loads(path.read_text(encoding="utf-8"))
             for path in (folder / "allure-report" / "data" / "test-cases").glob("*.json")]
    report = next(case for case in cases if case["name"] == f"gaia2 run report {name}")
    attached = {item["name"]: item for item in report["testStage"]["attachments"]}
    assert set(attached) == {"report.html", "Pass rate per split.png", "Errors by category.png",
                             "Wall time per scenario.png"}
    for item in attached.values():
        data = (folder / "allure-report" / "data" / "attachments" / item["source"]).read_bytes()
        assert data.startswith(b"\x89PNG" if item["type"] == "image/png" else b"<!DOCTYPE html>")
    assert {case["name"] for case in cases} >= {JUDGE_FAIL, INVALID}  # the scenarios are still there


@pytest.mark.slow
def test_report_of_a_real_run_renders_in_a_browser_and_in_allure(tmp_path: Path) -> None:
    result = run_pytest(
        tmp_path, "-n", "2", *(f"--gaia2-scenarios={path}" for path in FIRST_OF_EACH_SPLIT),
        f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}",
        f"--gaia2-scenarios={DATA / 'scenarios' / 'malformed' / 'not_json.json'}", *WITH_ALLURE, "--alluredir=allure",
    )
    result.assert_outcomes(passed=SHIPPED_COUNT, failed=1, errors=1)
    output = tmp_path / "out"
    assert gaia2_containers(run_id_of(output)) == []
    folder = run_folder(output)
    kappa = _hand_rejudge(folder)

    done = console("report", output, "--alluredir", tmp_path / "allure", timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"pytest-gaia2 report: {folder / 'report.html'} (report.md; plots: {len(PLOTS)})"
    assert {path.stem for path in (folder / "report").glob("*.png")} == PLOTS

    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert (summary["passed"], summary["failed"], summary["errors"]) == (SHIPPED_COUNT, 1, 1)
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "| `invalid_scenario` | 1 | `not_json` |" in markdown
    assert "| `apps unknown` | 1 | 0 | 0 | 1 | 0 |" in markdown  # the unreadable file has no apps
    assert "| `Contacts` |" in markdown  # an app of the shipped scenarios
    shots = tmp_path / "screenshots"
    shots.mkdir()
    _check_in_browser(folder, summary, shots, kappa)
    _check_allure(tmp_path, folder.name)


def test_gaia2_report_writes_the_report_at_the_end_of_the_run(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", "7kww6e or zqzvsf",
                        "--gaia2-report", *WITH_ALLURE, "--alluredir=allure")
    result.assert_outcomes(passed=2)
    folder = run_folder(tmp_path / "out")
    result.stdout.fnmatch_lines([f"gaia2: report {folder / 'report.html'}"])
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    assert summary["passed"] == 2 and (folder / "report.md").is_file() and (folder / "index.html").is_file()
    with headless_browser() as driver:
        open_page(driver, folder / "report.html")
        assert broken_images(driver) == []
        assert _cells(driver, "headline-strict") == _shown(summary["strict"])
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in (tmp_path / "allure").glob("*-result.json")]
    assert sorted(r["name"] for r in reports) == sorted(
        ["scenario_universe_21_7kww6e", "scenario_universe_24_zqzvsf", f"gaia2 run report {folder.name}"])
