"""The mistake users make, then the resume that follows it, counted in containers and dollars: a
command that is refused (a usage error, a resume made with other settings) creates no run folder,
moves no ``latest``, starts no container and spends nothing, serially and under ``-n 2``; and
``--gaia2-resume`` after it, or after a run that ended without a verdict, continues the run whose
verdicts are paid for and pays only for what that run is missing.

Spend is priced from the reference image's fixed usage (``GAIA2_REF_USAGE``): $1.20 a scenario.
Containers are counted from the engine's own ``create`` events for each session's run label.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    SHIPPED,
    engine_events,
    file_sums,
    gaia2_containers,
    made_once,
    results_of,
    run_folder,
    run_folders,
    run_pytest,
    scenario_variant,
    session_prefix,
)

from pytest_gaia2.cost.budget import Ledger
from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL
from pytest_gaia2.run.terms import EXIT_REFUSED

ONE_FILE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
PER_SCENARIO = 1.2
USAGE = ("--gaia2-env=GAIA2_REF_USAGE=1000000,100000,0", "--gaia2-env=MODEL=bench-model")
COUNT = 6
PRICES = {"bench-model": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}
USAGE_ERROR = int(pytest.ExitCode.USAGE_ERROR)

REFUSED: list[tuple[tuple[str, ...], int, str, str]] = [
    (
        ("--gaia2-sample=40",),
        USAGE_ERROR,
        "stderr",
        "ERROR: --gaia2-sample 40: the pool has only 6 scenarios *; ask for at most 6, *",
    ),
    (
        ("-m", "serch_split"),
        USAGE_ERROR,
        "stderr",
        "ERROR: -m 'serch_split' selects no scenario. Markers: search_split, *; nearest: 'serch_split' -> search_split",
    ),
    (
        ("--gaia2-resume", "--gaia2-env=GAIA2_REF_EXTRA=1"),
        EXIT_REFUSED,
        "stdout",
        "pytest-gaia2: --gaia2-resume: * was run with other settings:",
    ),
]
"""(arguments, exit status, stream, the message's line): each a mistake the resume must survive."""


@pytest.fixture
def priced(pytester: pytest.Pytester, run_gaia2: Any, run_gaia2_inprocess: Any) -> Callable[..., pytest.RunResult]:
    """A run of the variants, priced; one that starts no scenario container (``no_container``: a
    refused one) runs in this process."""
    prices = pytester.path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    for n in range(COUNT):
        scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id=f"scenario_universe_{21 + n}_cost{n:02d}")

    def run(*args: str, no_container: bool = False) -> pytest.RunResult:
        runner = run_gaia2_inprocess if no_container else run_gaia2
        return runner("--gaia2-scenarios=variants", f"--gaia2-price-file={prices}", *USAGE, *args)

    return run


def halted_six(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """COUNT $1.20 scenarios at ``-n 2`` under a $2.00 halt (2 or 3 run), made once per session: the
    run this module's resume continues and test_compare_stopped_runs compares. A copy of a folder
    holding variants/, prices.json, out/ and what the run printed (halted.txt)."""

    def make(folder: Path) -> None:
        (folder / "prices.json").write_text(json.dumps(PRICES))
        for n in range(COUNT):
            scenario_variant(folder / "variants", ONE_FILE, scenario_id=f"scenario_universe_{21 + n}_cost{n:02d}")
        result = run_pytest(folder, "-n", "2", "--gaia2-scenarios=variants", "--gaia2-price-file=prices.json", *USAGE,
                            "--gaia2-budget-halt=2.0")
        (folder / "halted.txt").write_text("\n".join(result.outlines), encoding="utf-8")

    return made_once(tmp_path_factory, "halted-six", make)


def printed(folder: Path) -> pytest.RunResult:
    """The halted run of :func:`halted_six` as it printed (its outcomes are in its last line)."""
    return pytest.RunResult(0, (folder / "halted.txt").read_text(encoding="utf-8").splitlines(), [], 0.0)


def scenario_containers(prefix: str, since: float) -> list[str]:
    """Names of the scenario containers the session ``prefix`` created since ``since`` (pre-flight's
    own helper containers left out)."""
    events = engine_events(since, event="create")
    attributes = [event["Actor"]["Attributes"] for event in events]
    return [
        a["name"]
        for a in attributes
        if a.get(RUN_LABEL, "").startswith(prefix) and a.get(SCENARIO_LABEL) not in (None, "preflight")
    ]


@pytest.mark.slow
def test_refused_commands_then_resume_pay_for_no_verdict_twice(
    pytester: pytest.Pytester, priced: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The halted run, made here as `priced("-n", "2", "--gaia2-budget-halt=2.0")` would make it.
    shared = halted_six(tmp_path_factory)
    shutil.copytree(shared, pytester.path, symlinks=True, dirs_exist_ok=True)
    halted = printed(shared)
    judged = halted.parseoutcomes().get("passed", 0)
    assert 2 <= judged <= 3, halted.stdout.str()
    output = pytester.path / "out"
    folder = run_folder(output)
    spent = Ledger(folder).total()
    assert spent == pytest.approx(judged * PER_SCENARIO)
    listing, latest, sums = sorted(os.listdir(output)), os.readlink(output / "latest"), file_sums(folder)

    for layout in ((), ("-n", "2")):
        for args, code, stream, line in REFUSED:
            since = time.time()
            refused = priced(*layout, *args, no_container=True)
            assert refused.ret == code, (layout, args, refused.stdout.str(), refused.stderr.str())
            getattr(refused, stream).fnmatch_lines([line])
            text = refused.stdout.str() + refused.stderr.str()
            assert "INTERNALERROR" not in text and "_pytest.outcomes.Exit" not in text and "no scenario ran" not in text
            assert scenario_containers(session_prefix(refused.stdout.str()), since) == [], (layout, args)
            assert sorted(os.listdir(output)) == listing and os.readlink(output / "latest") == latest, (layout, args)
            assert file_sums(folder) == sums and Ledger(folder).total() == pytest.approx(spent), (layout, args)

    # A run that ends without a verdict (its only scenario's container exits at once) is the
    # newest run folder and `latest`; the resume passes it over for the run with verdicts.
    crashed = priced("-k", "cost00", "--gaia2-env=GAIA2_FAULT_EXIT_CODE=3", "--gaia2-env=GAIA2_FAULT_EXIT_AFTER=0")
    crashed.assert_outcomes(errors=1, deselected=COUNT - 1)
    empty = run_folder(output)
    assert empty != folder and not any(record["outcome"] != "error" for record in results_of(output))

    since = time.time()
    resumed = priced("-n", "2", "--gaia2-resume")
    resumed.assert_outcomes(passed=COUNT)
    resumed.stdout.fnmatch_lines(
        [f"gaia2: --gaia2-resume: continuing {folder.name}, the latest run with a verdict; newer without one: {empty.name}"]
    )
    resumed.stdout.fnmatch_lines([f"{COUNT} scenarios: {COUNT} passed, 0 failed, 0 errors, {judged} reused"])
    assert len(scenario_containers(session_prefix(resumed.stdout.str()), since)) == COUNT - judged
    assert Ledger(folder).total() == pytest.approx(spent + (COUNT - judged) * PER_SCENARIO)
    sessions = [json.loads(line) for line in (folder / "sessions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(sessions) == 2 and gaia2_containers(sessions[-1]["session_id"]) == []
    assert [path.name for path in run_folders(output)] == sorted([folder.name, empty.name])
