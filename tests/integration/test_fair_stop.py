"""A run stopped early ran a fair sample of its plan, and says why it stopped, on the reference image.

Every scenario costs $1.20 (one agent call of a fixed usage, priced from a price file), so the
halt's moment is known in advance; the scenarios sit in five splits, the way a folder-order run
would spend its whole budget on the first two.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, run_folder, run_id_of

ONE_FILE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
SPLITS = ("adaptability", "ambiguity", "execution", "search", "time")
USAGE = ("--gaia2-env=GAIA2_REF_USAGE=1000000,100000,0", "--gaia2-env=MODEL=bench-model")


def five_splits(root: Path, per_split: int) -> Path:
    """``per_split`` copies of one quick scenario in each of five splits, two universes each."""
    data = json.loads(ONE_FILE.read_text(encoding="utf-8"))
    for s, split in enumerate(SPLITS):
        for n in range(per_split):
            scenario_id = f"scenario_universe_{30 + 2 * s + n % 2}_{split[:3]}{n:02d}"
            data["metadata"]["definition"]["scenario_id"] = scenario_id
            path = root / split / f"{scenario_id}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data), encoding="utf-8")
    return root


def price_file(pytester: pytest.Pytester) -> str:
    prices = pytester.path / "prices.json"
    prices.write_text(json.dumps({"bench-model": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}))
    return f"--gaia2-price-file={prices}"


def assert_fair(summary: dict[str, Any]) -> None:
    """Each split ran its share of what ran, within one scenario."""
    share = summary["done"] / summary["planned"]
    for split in SPLITS:
        stratum = summary["coverage"]["splits"][split]
        assert abs(stratum["ran"] - stratum["planned"] * share) <= 1, (split, summary["coverage"])
    assert summary["coverage"]["under_covered"] == []


@pytest.mark.slow
def test_a_budget_halt_leaves_a_stratified_sample_and_its_reason_on_record(
    pytester: pytest.Pytester, run_gaia2: Any
) -> None:
    five_splits(pytester.path / "five", 4)
    args = ("--gaia2-scenarios=five", price_file(pytester), *USAGE, "--gaia2-sample=15", "--gaia2-seed=7")
    halted = run_gaia2(*args, "--gaia2-budget-halt=5.5", "--junitxml=j.xml")
    halted.assert_outcomes(passed=5, skipped=10)
    output = pytester.path / "out"
    summary = json.loads((run_folder(output) / "summary.json").read_text())
    assert (summary["planned"], summary["done"]) == (15, 5)
    assert Counter(r["split"] for r in map(json.loads, (run_folder(output) / "results.jsonl").open())) == dict.fromkeys(
        SPLITS, 1
    )
    assert_fair(summary)
    stop = summary["stop"]
    assert stop["stopped"] and stop["reason"].startswith("budget: the run has spent $6.00, its halt is $5.50")
    assert (stop["halt_usd"], stop["cap_usd"]) == (5.5, None)
    assert stop["spent_usd"] == pytest.approx(6.0) and stop["spent_at_stop_usd"] == pytest.approx(6.0)
    assert sorted(item["key"] for item in stop["not_started"]) == sorted(summary["not_run"])
    assert len(stop["not_started"]) == 10 and all("halt" in item["why"] for item in stop["not_started"])
    halted.stdout.fnmatch_lines(
        [
            "coverage (ran/planned): *",
            "gaia2: budget: spent $6.00, at stop $6.00, halt $5.50",
            "gaia2: stopped: budget: the run has spent $6.00, its halt is $5.50; no new scenario starts",
            "gaia2: 10 not started (budget: *",
        ]
    )
    coverage_line = next(line for line in halted.outlines if line.startswith("coverage (ran/planned): "))
    assert sorted(coverage_line.split(": ")[1].split(", ")) == [f"{split} 1/3" for split in SPLITS]
    suite = ET.parse(pytester.path / "j.xml").find(".//testsuite/properties")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["gaia2_stop_reason"] == stop["reason"] and float(props["gaia2_spent_usd"]) == pytest.approx(6.0)
    assert float(props["gaia2_strict"]) == pytest.approx(5 / 15)
    assert float(props["gaia2_strict_low"]) < 5 / 15 < float(props["gaia2_strict_high"])
    assert float(props["gaia2_run_cost_usd"]) == pytest.approx(6.0) and props["gaia2_gate"] == ""

    # The same halt in file order spends it all on the first splits, and the summary says so.
    in_file_order = run_gaia2(*args, "--gaia2-budget-halt=5.5", "--gaia2-order=file", output="file-order")
    in_file_order.assert_outcomes(passed=5, skipped=10)
    coverage = json.loads((run_folder(pytester.path / "file-order") / "summary.json").read_text())["coverage"]
    assert coverage["splits"]["adaptability"]["ran"] == 3 and coverage["splits"]["time"]["ran"] == 0
    assert {"execution", "search", "time"} <= set(coverage["under_covered"])
    in_file_order.stdout.fnmatch_lines(
        ["under-covered (a scenario or more short of their share): *time 0 of 1 expected*"]
    )


def test_a_ctrl_c_at_half_time_leaves_a_stratified_sample_and_says_so(
    pytester: pytest.Pytester, start_gaia2: Any
) -> None:
    five_splits(pytester.path / "five", 2)
    run = start_gaia2("--gaia2-scenarios=five", price_file(pytester), *USAGE, "--gaia2-seed=7")
    run._until("five results", 300, lambda: len(run.results()) >= 5)
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=120) == pytest.ExitCode.INTERRUPTED
    summary = json.loads((run_folder(run.output) / "summary.json").read_text())
    assert 5 <= summary["done"] < 10, summary["done"]
    assert_fair(summary)
    stop = summary["stop"]
    assert stop["reason"].startswith("interrupted") and stop["halt_usd"] is None
    assert sorted(item["key"] for item in stop["not_started"]) == sorted(summary["not_run"])
    assert "gaia2: stopped: interrupted" in run.text()
    # The last line says it, after pytest's own; export then refuses to publish the half as the whole.
    assert run.text().splitlines()[-1] == (
        f"gaia2: INCOMPLETE: {10 - summary['done']} of 10 planned scenarios did not run; stopped early: interrupted "
        "(Ctrl-C, SIGTERM or a collection error)")
    exported = subprocess.run([sys.executable, "-m", "pytest_gaia2.cli", "export", str(run.output), "--output",
                               str(pytester.path / "export")], capture_output=True, text=True, timeout=120)
    assert exported.returncode == 2 and exported.stderr.startswith("pytest-gaia2 export: ")
    assert (f": {10 - summary['done']} of 10 planned scenario runs never ran (interrupted (Ctrl-C, SIGTERM or a "
            "collection error) before they started)") in exported.stderr
    assert "--allow-partial" in exported.stderr
    assert not (pytester.path / "export").exists()
    assert gaia2_containers(run_id_of(run.output)) == []
