"""``pytest-gaia2 compare`` after runs that stopped early on the real engine, as a team runs it in
CI: after a ``--gaia2-stop-when-decided`` run that decided "better" (called better, and
``--fail-if-worse`` passes it), and after a budget halt or a Ctrl-C (the gate refuses to read the
scenarios that never ran as a regression, unless asked)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import DATA, SHIPPED, BackgroundRun, console, gaia2_containers, run_folder, scenario_variant
from test_refused_then_resume import halted_six, printed  # the run that module resumes, made once

from pytest_gaia2.engine.client import SCENARIO_LABEL
from pytest_gaia2.report.comparison import _p_text

MANY = DATA / "scenarios" / "many"


@pytest.fixture(scope="module", autouse=True)
def compare_libraries() -> None:
    """What ``compare`` imports on first use (numpy, scipy.stats), loaded before pytester's snapshot
    of ``sys.modules``: imported by ``console`` inside a pytester test they were dropped at its end,
    and numpy cannot be imported a second time (tests/conftest.py's LOADED_ONCE)."""
    importlib.import_module("scipy.stats")


def baseline(path: Path, ids: list[str], outcome: str) -> Path:
    """A baseline run folder whose every scenario of the search split ended ``outcome``."""
    path.mkdir()
    (path / "run_config.json").write_text(json.dumps({"planned": [f"search/{sid}" for sid in ids]}))
    (path / "results.jsonl").write_text("".join(
        json.dumps({"scenario_id": sid, "split": "search", "run": 1, "attempt": 1, "outcome": outcome}) + "\n"
        for sid in ids))
    return path


@pytest.mark.slow
def test_compare_after_a_run_stopped_as_better_calls_it_better_and_the_gate_passes(
        pytester: pytest.Pytester, run_gaia2: Any) -> None:
    """The baseline failed all 40; the reference image passes each, so the stop decides after 8
    (the rest of the scenarios in flight end too). Counting the 20-odd never-started scenarios as
    failures of B would say "B is worse", exit 1. The always-valid p-value is 1 / the largest
    mixture ratio, 2^n / (n + 1) after n one-way pairs."""
    ids = sorted(path.stem for path in (MANY / "search").glob("*.json"))
    base = baseline(pytester.path / "base", ids, "failed")
    result = run_gaia2("-n", "2", f"--gaia2-scenarios={MANY}", f"--gaia2-stop-when-decided={base}")
    ran = result.parseoutcomes()["passed"]
    assert 8 <= ran < 20
    folder = run_folder(pytester.path / "out")
    done = console("compare", base, folder, "--fail-if-worse", "0.05")
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert (f"**In words:** B is better than A on the strict rate over {ran} pairs: the sequential test decided it "
            f"at level 5.0% (8 better, 0 worse of 8 judged pairs, always-valid p = {_p_text((ran + 1) / 2**ran)})") in text
    assert f"Not compared: B has no verdict for {40 - ran} (stopped on a decision: {40 - ran})." in text
    assert "(always-valid confidence sequence)" in text and ": ok" in text
    report = json.loads(console("compare", base, folder, "--format", "json").stdout)
    (pair,) = report["comparisons"]
    assert pair["sequential"] == "B" and pair["strict"]["n"] == ran
    assert pair["answers"]["strict"]["direction"] == "better" and pair["answers"]["strict"]["low"] >= 0
    assert pair["missing"] == {"A": {}, "B": {"decided": 40 - ran}}


def test_compare_after_a_budget_halt_refuses_to_gate_unless_asked(tmp_path: Path,
                                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each scenario costs $1.20 (a fixed usage at a price file's prices); a $2.00 halt on two
    workers lets 2 or 3 of 6 run (the run test_refused_then_resume continues, made once). Against
    a baseline that passed all 6 the halted run has no pair it lost: the scenarios it never ran
    are missing, never "not passed", and gating on it is refused (exit 2) unless --allow-incomplete."""
    halted = halted_six(tmp_path_factory)
    ids = sorted(path.stem for path in (halted / "variants" / "search").glob("*.json"))
    assert len(ids) == 6
    ran = printed(halted).parseoutcomes()["passed"]
    assert 2 <= ran <= 3
    base = baseline(tmp_path / "base", ids, "passed")
    folder = run_folder(halted / "out")
    done = console("compare", base, folder, "--fail-if-worse", "0.05")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "B stopped before its plan was done (budget halt: " in done.stderr
    assert "--allow-incomplete" in done.stderr
    assert f"Not compared: B has no verdict for {6 - ran} (budget halt: {6 - ran})." in done.stdout
    assert f"B and A pass the same share of the {ran} pairs on the strict rate" in done.stdout
    assert "REFUSED, not gated" in done.stdout and "FAIL" not in done.stdout
    allowed = console("compare", base, folder, "--fail-if-worse", "0.05", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_compare_after_ctrl_c_refuses_to_gate_and_says_what_never_started(
        pytester: pytest.Pytester, start_gaia2: Any) -> None:
    """A user's mistake: Ctrl-C while the second of four scenarios runs (file order, serially),
    then compare against a run that passed all four. Reading the scenarios that never started as
    failures would say "B is worse by 50 or more points ... unlikely to be chance", and
    --fail-if-worse would fail CI as if the agent had regressed."""
    one = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
    quick, slow, after = "scenario_universe_21_7kww6e", "scenario_universe_25_slow", ["scenario_universe_27_after",
                                                                                      "scenario_universe_29_after"]
    variants = pytester.path / "variants"
    (variants / "search").mkdir(parents=True)
    (variants / "search" / one.name).write_bytes(one.read_bytes())
    scenario_variant(variants, one, scenario_id=slow, answer_after=900)
    for sid in after:
        scenario_variant(variants, one, scenario_id=sid)
    run: BackgroundRun = start_gaia2(f"--gaia2-scenarios={variants}", "--gaia2-order=file")
    run_id = run.run_id()

    def quick_done_slow_running() -> bool:
        running = [c for c in gaia2_containers(run_id) if c.labels.get(SCENARIO_LABEL) == slow]
        return len(run.results()) == 1 and bool(running) and b"Adapter listening" in running[0].logs()

    assert run.interrupt_when("the quick result and the slow adapter", quick_done_slow_running) == 2, run.text()
    base = baseline(pytester.path / "base", [quick, slow, *after], "passed")
    folder = run_folder(run.output)
    done = console("compare", base, folder, "--fail-if-worse", "0.05")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "B stopped before its plan was done (interrupted: 2 planned keys without a verdict; interrupted" in (
        done.stderr)
    assert "Not compared: B has no verdict for 2 (interrupted: 2)." in done.stdout
    assert "REFUSED, not gated" in done.stdout and "FAIL" not in done.stdout
    assert "over 2 pairs" in done.stdout  # the quick one passed in both; the slow one errored when stopped
    allowed = console("compare", base, folder, "--fail-if-worse", "0.05", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr  # 1 of 2 pairs lost: could be chance
