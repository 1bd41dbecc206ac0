"""The rehearsal the docs describe ("Rehearse before you pay"), at a size CI can afford: a pool from
``pytest-gaia2 rehearsal``, N=40 at ``-n 2`` halted by the budget, then resumed to a larger N with a
larger halt. Every scenario of the pool passes on the reference image, the spend comes from the
pool's own price file, and no verdict is paid for twice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import gaia2_containers, results_of, run_folder, run_id_of

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cost.budget import LEDGER_FILE, Ledger
from pytest_gaia2.plan import rehearsal


def rehearse(run_gaia2: Any, pool: Path, *args: str) -> pytest.RunResult:
    return run_gaia2(
        "-n", "2", f"--gaia2-scenarios={pool}", f"--gaia2-env=GAIA2_REF_USAGE={rehearsal.USAGE}",
        f"--gaia2-price-file={pool / 'prices.toml'}", "--gaia2-seed=1", *args,
    )  # fmt: skip


def paid_attempts(folder: Path) -> Counter[str]:
    """How often the ledger charged each scenario key (one line per attempt)."""
    lines = (folder / LEDGER_FILE).read_text(encoding="utf-8").splitlines()
    return Counter(json.loads(line)["entry"].rsplit("#", 1)[0] for line in lines)


@pytest.mark.slow
def test_n40_halted_by_the_budget_then_resumed_to_a_larger_n_pays_no_verdict_twice(
    pytester: pytest.Pytester, run_gaia2: Any
) -> None:
    pool = pytester.path / "pool"
    assert cli.main(["rehearsal", str(pool), "--count", "50"]) == 0
    halted = rehearse(run_gaia2, pool, "--gaia2-sample=40", "--gaia2-budget-halt=0.4")
    first = halted.parseoutcomes()
    assert first.get("failed", 0) == first.get("errors", 0) == 0, first
    assert first["passed"] >= 2 and first["passed"] + first["skipped"] == 40, first
    output = pytester.path / "out"
    folder = run_folder(output)
    spent = Ledger(folder).total()
    assert spent >= 0.4
    halted.stdout.fnmatch_lines(["INCOMPLETE: *", "gaia2: stopped: budget: the run has spent *, its halt is $0.40*"])
    judged_first = {(r["split"], r["scenario_id"]) for r in results_of(output)}
    assert len(judged_first) == first["passed"]
    assert gaia2_containers(run_id_of(output)) == []

    # A larger halt, above what the first session spent (its scenarios in flight may pass the halt).
    halt = round(spent + 0.4, 2)
    resumed = rehearse(run_gaia2, pool, "--gaia2-sample=48", f"--gaia2-budget-halt={halt}", "--gaia2-resume")
    second = resumed.parseoutcomes()
    assert second.get("failed", 0) == second.get("errors", 0) == 0, second
    assert second["passed"] + second["skipped"] == 48, second
    records = results_of(output)
    reused = {(r["split"], r["scenario_id"]) for r in records if r["reused"]}
    new = {(r["split"], r["scenario_id"]) for r in records if not r["reused"]} - judged_first
    assert judged_first <= {(r["split"], r["scenario_id"]) for r in records}  # the first session's verdicts stand
    assert reused and new, (reused, new)  # some verdicts came back free, and some new ones were bought
    # Each scenario was charged exactly once, over both sessions, and the ledger is the records' cost.
    charged = paid_attempts(folder)
    assert set(charged.values()) == {1} and len(charged) == len(judged_first | new)
    costs = {(r["split"], r["scenario_id"]): r["cost_usd"] for r in records}
    assert Ledger(folder).total() == pytest.approx(sum(costs.values()))
    assert halt <= Ledger(folder).total() < halt + 2 * max(costs.values())
    stop = json.loads((folder / "summary.json").read_text())["stop"]
    assert stop["reason"].startswith("budget: the run has spent ") and stop["halt_usd"] == halt
    assert gaia2_containers(run_id_of(output)) == []
