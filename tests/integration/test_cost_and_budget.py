"""Cost from real traces and a budget that halts, on the reference image: each agent call writes a
Format A trace line with a fixed usage (``GAIA2_REF_USAGE``), priced from a price file, so every
figure below is known in advance: one call of 1,000,000 prompt and 100,000 completion tokens at
$1 and $2 per million is $1.20 a scenario."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    SHIPPED,
    gaia2_containers,
    results_of,
    run_folder,
    run_id_of,
    scenario_variant,
    session_prefix,
)

from pytest_gaia2.cost.budget import LEDGER_FILE, Ledger

ONE_FILE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"  # one agent call: its answer
PER_SCENARIO = 1.2
USAGE = ("--gaia2-env=GAIA2_REF_USAGE=1000000,100000,0", "--gaia2-env=MODEL=bench-model")


@pytest.fixture
def priced(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    prices = pytester.path / "prices.json"
    prices.write_text(json.dumps({"bench-model": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}))

    def run(run_gaia2: Any, *args: str) -> pytest.RunResult:
        return run_gaia2("--gaia2-scenarios=variants", f"--gaia2-price-file={prices}", *USAGE, "--junitxml=j.xml",
                         *args)

    return run


def _scenarios(pytester: pytest.Pytester, count: int) -> list[str]:
    ids = [f"scenario_universe_{21 + n}_cost{n:02d}" for n in range(count)]
    for sid in ids:
        scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id=sid)
    return ids


def test_costs_add_up_in_every_file(pytester: pytest.Pytester, run_gaia2: Any, priced: Any) -> None:
    _scenarios(pytester, 3)
    result = priced(run_gaia2)
    result.assert_outcomes(passed=3)
    output = pytester.path / "out"
    records = results_of(output)
    assert [r["cost_usd"] for r in records] == [pytest.approx(PER_SCENARIO)] * 3
    assert all(r["cost_source"] == "price file" and r["usage"]["calls"] == 1 for r in records)
    summary = json.loads((run_folder(output) / "summary.json").read_text())
    assert summary["cost"]["usd"] == pytest.approx(3 * PER_SCENARIO) and summary["cost"]["priced"] == 3
    assert summary["cost"]["by_split"]["search"]["tokens"]["input_tokens"] == 3_000_000
    result.stdout.fnmatch_lines(["cost: $3.60 over 3 priced scenario(s)",
                                 "tokens: 3000000 in (0 cached), 300000 out, 3 calls"])
    cases = ET.parse(pytester.path / "j.xml").findall(".//testcase")
    costs = [float(p.get("value")) for case in cases for p in case.iter("property") if p.get("name") == "gaia2_cost_usd"]
    assert costs == [pytest.approx(PER_SCENARIO)] * 3
    assert Ledger(run_folder(output)).total() == pytest.approx(3 * PER_SCENARIO)
    assert len((run_folder(output) / LEDGER_FILE).read_text().splitlines()) == 3  # one line per attempt


def test_the_halt_stops_new_scenarios_on_two_workers_and_resume_continues_the_spend(
    pytester: pytest.Pytester, run_gaia2: Any, priced: Any
) -> None:
    """The run carries a probe of 4, which the halt cuts short: the ``-n 2`` case of
    ``test_a_probe_the_halt_cuts_short_still_projects_from_what_it_measured`` (the same six
    scenarios, prices and halt), checked here on this run rather than on a run of its own."""
    _scenarios(pytester, 6)
    halted = priced(run_gaia2, "-n", "2", *CUT_SHORT_PROBE)
    outcomes = halted.parseoutcomes()
    # Two start at once (nothing is spent yet); a worker may start one more before the other's
    # spend is recorded; then the halt holds.
    assert 2 <= outcomes.get("passed", 0) <= 3 and outcomes["passed"] + outcomes["skipped"] == 6, outcomes
    output = pytester.path / "out"
    folder = run_folder(output)
    spent = Ledger(folder).total()
    assert spent == pytest.approx(outcomes["passed"] * PER_SCENARIO)
    halted.stdout.fnmatch_lines(["INCOMPLETE: *", f"cost: ${spent:.2f} over *; run spend ${spent:.2f} (halt $2.00)"])
    assert "budget: the run has spent" in halted.stdout.str() or "SKIPPED" not in halted.stdout.str()
    assert gaia2_containers(run_id_of(output)) == []
    assert outcomes["passed"] == projected_from_a_cut_short_probe(halted, folder, ["-n", "2"])
    # Resumed with a higher halt: the earlier spend counts, judged verdicts are not paid again.
    resumed = priced(run_gaia2, "-n", "2", "--gaia2-resume", f"--gaia2-budget-halt={spent + 1.0}")
    again = resumed.parseoutcomes()
    assert again.get("passed", 0) + again.get("skipped", 0) == 6
    total = Ledger(folder).total()
    assert spent + PER_SCENARIO <= total + 1e-9 <= spent + 3 * PER_SCENARIO + 1e-9


def test_the_cap_stops_a_running_scenario_and_keeps_its_files(
    pytester: pytest.Pytester, run_gaia2: Any, priced: Any
) -> None:
    """A quick scenario spends $1.20 and passes the $1 cap while a slow one (its answer 900 sim
    seconds late) is still running: the slow one stops with budget_cap, its files kept."""
    _scenarios(pytester, 1)
    scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id="scenario_universe_30_zzslow", answer_after=900)
    result = priced(run_gaia2, "-n", "2", "--gaia2-budget-cap=1.0")
    result.assert_outcomes(passed=1, errors=1)
    output = pytester.path / "out"
    slow = next(r for r in results_of(output) if r["scenario_id"] == "scenario_universe_30_zzslow")
    assert slow["error_category"] == "budget_cap" and "passed its cap $1.00" in slow["error"]
    folder = run_folder(output) / slow["folder"]
    assert (folder / "container.log").is_file() and (folder / "events.jsonl").is_file()
    assert slow["wall_time_s"] < 60
    assert gaia2_containers(run_id_of(output)) == []


@pytest.mark.slow
def test_the_probe_projects_the_whole_runs_cost_and_probe_only_stops_there(
    pytester: pytest.Pytester, run_gaia2: Any, priced: Any
) -> None:
    """Every scenario costs the same, so the projection of 6 from a probe of 2 is the true cost (2
    costs bound no interval)."""
    _scenarios(pytester, 6)
    full = priced(run_gaia2, "-n", "2", "--gaia2-probe=2", "--gaia2-seed=3")
    full.assert_outcomes(passed=6)
    full.stdout.fnmatch_lines(["gaia2: probe of 2: the 6 selected scenarios ≈ $7.20 (no interval from fewer than 3 "
                               "scenarios with a cost) and ≈ * s at -n 2"])  # seconds, never "0.01 h"
    # Printed once its last scenario is in, and again in the summary: each time on a line of its
    # own, never after xdist's progress dots.
    probe_lines = [line for line in full.outlines if "gaia2: probe of 2:" in line]
    assert len(probe_lines) == 2 and all(line.startswith("gaia2: probe of 2:") for line in probe_lines), probe_lines
    true_cost = json.loads((run_folder(pytester.path / "out") / "summary.json").read_text())["cost"]["usd"]
    assert true_cost == pytest.approx(6 * PER_SCENARIO)
    only = priced(run_gaia2, "--gaia2-probe=2", "--gaia2-seed=3", "--gaia2-probe-only", "-rs", "--gaia2-report")
    only.assert_outcomes(passed=2, skipped=4)
    only.stdout.fnmatch_lines(["gaia2: probe of 2: the 6 selected scenarios ≈ $7.20*",
                               "*--gaia2-probe-only: not in the probe*"])
    folder = run_folder(pytester.path / "out")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["probe"]["usd"] == pytest.approx(true_cost) and summary["complete"] is False
    # The pages end the probe as the terminal does: as its projection, not as an incomplete run.
    projection = "probe of 2: the 6 selected scenarios ≈ $7.20 (no interval from fewer than 3 scenarios with a cost)"
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert ("**PROBE ONLY:** 2 of 6 planned scenarios ran as the probe (`--gaia2-probe-only`); its result is "
            f"the projection: `{projection}") in markdown and "INCOMPLETE" not in markdown
    for page in ("report.html", "index.html"):
        html = (folder / page).read_text(encoding="utf-8")
        assert 'id="probe-only"' in html and projection in html and "INCOMPLETE" not in html, page


CUT_SHORT_PROBE = ("--gaia2-probe=4", "--gaia2-seed=3", "--gaia2-budget-halt=2.0")
"""A probe of 4 of the six scenarios under a $2 halt at $1.20 a scenario."""


def projected_from_a_cut_short_probe(result: pytest.RunResult, folder: Path, workers: list[str]) -> int:
    """A run of :data:`CUT_SHORT_PROBE`: serially the halt stops it after 2; on two workers after 2
    or 3 (both start before anything is spent). The projection is made from those, says so, and
    is in summary.json. How many ran."""
    ran = result.parseoutcomes()["passed"]
    assert ran in ((2,) if not workers else (2, 3)), result.stdout.str()
    at = f"-n {2 if workers else 1}"
    # From 3 costs an interval, and with it what the halt is expected to complete.
    cost = "no interval from fewer than 3 scenarios with a cost" if ran == 2 else "95% interval $7.20–$7.20"
    reach = "; the halt ($2.00) is expected to complete 2 of the 6 (95% interval 2–2)" if ran == 3 else ""
    line = (
        f"gaia2: probe of {ran} of 4 (cut short: the run stopped before the rest): the 6 selected scenarios "
        f"≈ $7.20 ({cost}) and ≈ * at {at}{reach}"
    )
    result.stdout.fnmatch_lines(["INCOMPLETE: *", line])
    assert sum(line.startswith("gaia2: probe of") for line in result.outlines) == 1  # in the summary, once
    probe = json.loads((folder / "summary.json").read_text())["probe"]
    assert (probe["probed"], probe["chosen"], probe["planned"]) == (ran, 4, 6)
    assert probe["usd"] == pytest.approx(6 * PER_SCENARIO)
    return ran


def test_a_probe_the_halt_cuts_short_still_projects_from_what_it_measured(
    pytester: pytest.Pytester, run_gaia2: Any, priced: Any
) -> None:
    """Serially; its ``-n 2`` case is checked on the run of
    ``test_the_halt_stops_new_scenarios_on_two_workers_and_resume_continues_the_spend``."""
    _scenarios(pytester, 6)
    result = priced(run_gaia2, *CUT_SHORT_PROBE)
    projected_from_a_cut_short_probe(result, run_folder(pytester.path / "out"), [])


def test_an_unknown_model_gives_tokens_and_one_warning_never_a_guessed_price(
    pytester: pytest.Pytester, run_gaia2: Any
) -> None:
    _scenarios(pytester, 2)
    result = run_gaia2("--gaia2-scenarios=variants", "--gaia2-env=GAIA2_REF_USAGE=1000,100,0",
                       "--gaia2-env=MODEL=nobody-prices-this-model")
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count("gaia2: warning: no price for nobody-prices-this-model") == 1
    result.stdout.fnmatch_lines(["cost: $0.00 over 0 priced scenario(s), 2 with cost unknown "
                                 "(no price for: nobody-prices-this-model)"])
    records = results_of(pytester.path / "out")
    assert [(r["cost_usd"], r["cost_source"], r["usage"]["input_tokens"]) for r in records] == [
        (None, "unknown", 1000)] * 2


def test_a_resumed_session_its_halt_stops_at_once_says_why_on_every_page(
    pytester: pytest.Pytester, run_gaia2: Any, run_gaia2_inprocess: Any, priced: Any
) -> None:
    """A resumed session that the halt stops before any start (the run's spend already over it)
    still writes its summary: summary.json, the pages and the terminal say this session stopped at
    once, and why, not the session before it (a complete run, no stop)."""
    first_id, second_id = _scenarios(pytester, 2)
    first = priced(run_gaia2, "-k", first_id)
    first.assert_outcomes(passed=1)
    folder = run_folder(pytester.path / "out")
    assert json.loads((folder / "summary.json").read_text())["stop"]["stopped"] is False
    resumed = priced(
        run_gaia2_inprocess,  # the halt stops it before any start: no scenario container
        "--gaia2-resume",
        "--gaia2-resume-mismatch=warn",
        "-k",
        second_id,
        "--gaia2-budget-halt=1.0",
        "--gaia2-report",
    )
    resumed.assert_outcomes(skipped=1)
    reason = "budget: the run has spent $1.20, its halt is $1.00; no new scenario starts"
    summary = json.loads((folder / "summary.json").read_text())
    stop = summary["stop"]
    assert summary["session_id"].startswith(session_prefix(resumed.stdout.str()))
    assert (summary["planned"], summary["done"], summary["complete"]) == (1, 0, False)
    assert stop["stopped"] is True and stop["reason"] == reason
    assert stop["spent_usd"] == pytest.approx(PER_SCENARIO) and stop["spent_at_stop_usd"] == pytest.approx(PER_SCENARIO)
    assert [item["key"].endswith(second_id) for item in stop["not_started"]] == [True]
    resumed.stdout.fnmatch_lines([f"gaia2: stopped: {reason}", "gaia2: 1 not started (budget: *"])
    for page in ("report.md", "index.html"):
        assert "its halt is $1.00; no new scenario starts" in (folder / page).read_text(encoding="utf-8"), page
    # The scenario that never started is named with its file and hash, for its apps on the pages.
    (key, named), = summary["not_run_files"].items()
    file = pytester.path / "variants" / "search" / f"{second_id}.json"
    assert key == stop["not_started"][0]["key"] and named["scenario_file"] == str(file)
    assert named["scenario_sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()


BROKEN = "--gaia2-env=GAIA2_FAULT_DAEMON_ERROR=1"  # every scenario ends daemon_error: a broken setup


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_max_errors_stops_a_broken_setup_fairly_and_a_resume_after_the_fix_starts_afresh(
    pytester: pytest.Pytester, run_gaia2: Any, workers: list[str]
) -> None:
    ids = _scenarios(pytester, 5)
    broken = run_gaia2("--gaia2-scenarios=variants", BROKEN, "--gaia2-max-errors=2", "--gaia2-report", *workers)
    outcomes = broken.parseoutcomes()
    # Serially the second error stops the run; on two workers the other may have one in flight.
    assert (2 <= outcomes["errors"] <= 3) if workers else outcomes["errors"] == 2, outcomes
    assert outcomes.get("passed", 0) == 0 and outcomes["errors"] + outcomes["skipped"] == 5, outcomes
    output = pytester.path / "out"
    folder = run_folder(output)
    errored = results_of(output)
    assert len(errored) == outcomes["errors"] and {r["error_category"] for r in errored} == {"daemon_error"}
    summary = json.loads((folder / "summary.json").read_text())
    stop = summary["stop"]
    reason = stop["reason"]
    assert stop["stopped"] is True and stop["max_errors"] == 2
    assert reason.startswith("errors: ") and "(daemon_error " in reason and "--gaia2-max-errors 2" in reason
    # Every selected scenario has exactly one account: a record, or not started with the stop's reason.
    not_started = {item["key"] for item in stop["not_started"]}
    keys = {f"{r['split']}/{r['scenario_id']}" for r in errored}
    assert not_started.isdisjoint(keys) and len(not_started | keys) == 5
    assert all(item["why"].startswith("errors: ") for item in stop["not_started"])
    assert set(summary["not_run"]) == not_started
    broken.stdout.fnmatch_lines(["gaia2: stopped: errors: * reached --gaia2-max-errors 2; no new scenario starts",
                                 "gaia2: * not started (errors: *"])
    for page in ("report.md", "index.html"):
        assert "reached --gaia2-max-errors 2; no new scenario starts" in (folder / page).read_text(encoding="utf-8")
    assert gaia2_containers(run_id_of(output)) == []
    if not workers:
        return
    # The setup fixed, the run resumed: the earlier session's errors do not count.
    fixed = run_gaia2("--gaia2-scenarios=variants", "--gaia2-max-errors=2", "--gaia2-resume",
                      "--gaia2-resume-mismatch=warn", *workers)
    fixed.assert_outcomes(passed=5)
    assert {r["scenario_id"] for r in results_of(output)} == set(ids)
    assert json.loads((folder / "summary.json").read_text())["stop"]["stopped"] is False


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_token_halt_stops_a_model_nobody_prices(
    pytester: pytest.Pytester, run_gaia2: Any, workers: list[str]
) -> None:
    """A local model (no price anywhere): 1,100 tokens a scenario, a halt at 2,000 tokens."""
    _scenarios(pytester, 6)
    halted = run_gaia2("--gaia2-scenarios=variants", "--gaia2-env=GAIA2_REF_USAGE=1000,100,0",
                       "--gaia2-env=MODEL=local-qwen", "--gaia2-token-halt=2000", *workers)
    outcomes = halted.parseoutcomes()
    ran = outcomes.get("passed", 0)
    assert (2 <= ran <= 3) if workers else ran == 2, outcomes
    assert ran + outcomes["skipped"] == 6
    output = pytester.path / "out"
    folder = run_folder(output)
    read = Ledger(folder).read()
    assert read.total == 0 and read.total_tokens == 1_100 * ran  # tokens counted, no money claimed
    stop = json.loads((folder / "summary.json").read_text())["stop"]
    assert (stop["token_halt"], stop["tokens_used"]) == (2000, 1_100 * ran)
    reason = f"budget: the run has used {1_100 * ran:,} tokens, its token halt is 2,000; no new scenario starts"
    if not workers:
        assert stop["reason"] == reason
    assert stop["reason"].startswith("budget: the run has used ")
    halted.stdout.fnmatch_lines([f"gaia2: tokens: used {1_100 * ran:,}, halt 2,000", "gaia2: stopped: budget: *"])
    # Everything that ran passed, yet the run is not its plan: the last line says so and it exits 1.
    assert halted.ret == pytest.ExitCode.TESTS_FAILED
    assert halted.outlines[-1] == (
        f"gaia2: INCOMPLETE: {6 - ran} of 6 planned scenarios did not run; stopped early: "
        f"{stop['reason'].removesuffix('; no new scenario starts')}; exit status 1 (--gaia2-allow-incomplete accepts it)")
