"""trace.html and index.html of real runs on the reference image, opened in a real headless
browser: a passed scenario, two judged failures (a tool-count mismatch, and a scripted agent
whose hostile answer the judge matched event by event), and two errors (a scenario file that
never reached a container, and a daemon that ended in error).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from browser import headless_browser, open_page
from gaia2_testing import DATA, SHIPPED, WITH_ALLURE, made_once, results_of, run_folder, run_pytest

from pytest_gaia2.report.trace_page import INDEX_FILE, TRACE_FILE
from pytest_gaia2.store import folder as store

HOSTILE = 'Not found. <script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
OUTPUTS = ("out", "out-scripted", "out-error")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three runs, one run folder each, the first with Allure results; the plugin wrote every
    attempt's trace and each run's index."""

    def make(folder: Path) -> None:
        script = folder / "wrong.jsonl"
        script.write_text(json.dumps({"app": "AgentUserInterface", "fn": "send_message_to_user",
                                      "args": {"content": HOSTILE}}) + "\n", encoding="utf-8")
        scenarios = DATA / "scenarios"
        run_pytest(folder, f"--gaia2-scenarios={SHIPPED / 'search'}", f"--gaia2-scenarios={scenarios / 'judge_fail'}",
                   f"--gaia2-scenarios={scenarios / 'malformed' / 'not_json.json'}",
                   "-k", "7kww6e or ygzpjz or not_json", *WITH_ALLURE, f"--alluredir={folder / 'allure'}").assert_outcomes(passed=1, failed=1, errors=1)
        run_pytest(folder, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", "7kww6e",
                   f"--gaia2-copy-in={script}:/tmp/agent-script.jsonl",
                   "--gaia2-env=GAIA2_AGENT_SCRIPT=/tmp/agent-script.jsonl",
                   output="out-scripted").assert_outcomes(failed=1)
        run_pytest(folder, f"--gaia2-scenarios={scenarios / 'no_events'}", "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1",
                   "--gaia2-judge-grace=1", output="out-error").assert_outcomes(errors=1)

    folder = made_once(tmp_path_factory, "trace_html", make)
    found = {}
    for output in OUTPUTS:
        run = run_folder(folder / output)
        assert (run / INDEX_FILE).is_file()
        assert all((run / result["folder"] / TRACE_FILE).is_file() for result in results_of(folder / output))
        found[output] = run
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with headless_browser() as driver:
        yield driver


def records(runs: dict[str, Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every (run folder, results.jsonl line) of the three runs."""
    return [(run, record) for run in runs.values() for record in store.read_jsonl(run / store.RESULTS_FILE)]


def only_local_requests(driver: Any) -> list[str]:
    """Every resource the page loaded that did not come from file://."""
    names = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
    return [name for name in names if not name.startswith("file://")]


def test_the_runs_cover_every_outcome(runs: dict[str, Path]) -> None:
    outcomes = sorted((record["outcome"], record["error_category"]) for _, record in records(runs))
    assert outcomes == [("error", "daemon_error"), ("error", "invalid_scenario"), ("failed", None),
                        ("failed", None), ("passed", None)]


def test_trace_pages_show_the_attempt_and_the_judge_matching(runs: dict[str, Path], browser: Any) -> None:
    matched_rows = 0
    for run, record in records(runs):
        folder = run / record["folder"]
        open_page(browser, folder / TRACE_FILE)
        assert browser.find_element("css selector", "h1").text.startswith(record["scenario_id"])
        assert browser.find_element("css selector", "#outcome").text == record["outcome"]
        assert only_local_requests(browser) == []
        assert browser.execute_script("return window.__pwned === undefined;")
        shown = browser.execute_script(
            "return [...document.querySelectorAll('table.matching tbody tr')].map(r => "
            "[r.cells[0].textContent, r.cells[1].textContent, r.cells[4].textContent.trim(), r.cells[5].textContent]);")
        expected = [[detail["oracle_id"], detail["oracle_tool"], "yes" if detail["matched"] else "no",
                     detail["reason"] or ""]
                    for line in store.read_jsonl(folder / "daemon_judgments.jsonl")
                    for detail in line.get("match_details") or []]
        assert shown == expected
        matched_rows += len(shown)
        events = store.read_jsonl(folder / "events.jsonl")
        assert len(browser.find_elements("css selector", "table.events tbody tr")) == len(events)
        hrefs = browser.execute_script("return [...document.querySelectorAll('a')].map(a => a.getAttribute('href'));")
        assert all((folder / unquote(href)).is_file() for href in hrefs)
        assert "result.json" in hrefs
    assert matched_rows >= 2  # the passing oracle's match and the scripted agent's mismatch


def test_hostile_agent_text_is_shown_as_text(runs: dict[str, Path], browser: Any) -> None:
    run = runs["out-scripted"]
    (record,) = store.read_jsonl(run / store.RESULTS_FILE)
    open_page(browser, run / record["folder"] / TRACE_FILE)
    body = browser.find_element("css selector", "body").text
    assert HOSTILE in body  # every tag arrived as text: nothing was parsed as markup
    assert browser.find_elements("css selector", "img") == []
    assert browser.find_element("css selector", "table.matching td:nth-child(5)").text == "no"


def test_error_pages_show_what_exists(runs: dict[str, Path], browser: Any) -> None:
    for run, record in records(runs):
        if record["outcome"] != "error":
            continue
        open_page(browser, run / record["folder"] / TRACE_FILE)
        message = browser.find_element("css selector", "#message").text
        assert message.split("\n")[0] in record["error"]
        body = browser.find_element("css selector", "body").text
        assert "No judgment (not in this attempt's files)" in body
        if record["error_category"] == "daemon_error":
            assert '"status": "error"' in browser.find_element("css selector", "#status").text


def index_rows(driver: Any) -> list[list[str]]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#results tbody tr')].map(r => "
        "[r.dataset.key, r.cells[5].textContent.trim(), r.cells[6].textContent.trim(), r.cells[8].textContent.trim()]);")


def test_index_rows_equal_results_and_sort(runs: dict[str, Path], browser: Any) -> None:
    run = runs["out"]
    results = store.read_jsonl(run / store.RESULTS_FILE)
    open_page(browser, run / INDEX_FILE)
    assert only_local_requests(browser) == []
    expected = {(r["split"] + "/" + r["scenario_id"], r["outcome"],
                 r["error_category"] or ("judge" if r["outcome"] == "failed" else ""),
                 "" if r["wall_time_s"] is None else f"{r['wall_time_s']:.1f}") for r in results}
    assert {tuple(row) for row in index_rows(browser)} == expected and len(results) == 3

    headers = browser.find_elements("css selector", "#results th")
    outcome, wall_time = headers[5], headers[8]
    outcome.click()
    assert [row[1] for row in index_rows(browser)] == ["error", "failed", "passed"]
    assert outcome.get_attribute("aria-sort") == "ascending"
    outcome.click()
    assert [row[1] for row in index_rows(browser)] == ["passed", "failed", "error"]
    wall_time.click()
    times = [row[3] for row in index_rows(browser)]
    assert times[-1] == "" and [float(t) for t in times[:-1]] == sorted(float(t) for t in times[:-1])

    link = browser.find_element("link text", "scenario_universe_22_ygzpjz")
    link.click()
    assert browser.find_element("css selector", "#outcome").text == "failed"
    assert browser.current_url.endswith("/search/scenario_universe_22_ygzpjz/trace.html")


def test_every_allure_test_has_its_trace_attached(runs: dict[str, Path]) -> None:
    allure = runs["out"].parent.parent / "allure"
    results = [json.loads(path.read_text(encoding="utf-8")) for path in allure.glob("*-result.json")]
    assert len(results) == 3
    for result in results:
        traces = [a for a in result.get("attachments", []) if a["name"] == TRACE_FILE]
        assert len(traces) == 1 and traces[0]["type"] == "text/html", result["name"]
        assert "<html" in (allure / traces[0]["source"]).read_text(encoding="utf-8").lower()
