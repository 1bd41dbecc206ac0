"""--gaia2-stop-when-decided on the real engine and two xdist workers: the run stops starting
scenarios once the comparison with a baseline run folder is decided, every worker sees the
verdicts of both (the run folder's results.jsonl), and every planned scenario ends either with
its record or as not started, with the reason, never both and never neither."""

from __future__ import annotations

import json

import pytest
from gaia2_testing import DATA, gaia2_containers, results_of, run_folder, run_id_of

MANY = DATA / "scenarios" / "many"


def test_a_run_better_than_its_baseline_stops_early_on_two_workers(pytester: pytest.Pytester, run_gaia2) -> None:
    """The baseline failed all 40 scenarios; the reference image passes each, so the eighth
    scenario of the start order decides (2^8/9 = 28.4 >= 1/0.05): the scenarios in flight then
    end, and the rest never start."""
    ids = sorted(path.stem for path in (MANY / "search").glob("*.json"))
    base = pytester.path / "base"
    base.mkdir()
    (base / "run_config.json").write_text(json.dumps({"planned": [f"search/{sid}" for sid in ids]}))
    (base / "results.jsonl").write_text(
        "".join(
            json.dumps({"scenario_id": sid, "split": "search", "run": 1, "attempt": 1, "outcome": "failed"}) + "\n"
            for sid in ids
        )
    )
    result = run_gaia2("-n", "2", f"--gaia2-scenarios={MANY}", f"--gaia2-stop-when-decided={base}")
    output = pytester.path / "out"
    folder = run_folder(output)
    outcomes = result.parseoutcomes()
    ran = {record["scenario_id"] for record in results_of(output)}
    assert set(outcomes) == {"passed", "skipped"} and outcomes["passed"] == len(ran)
    assert 8 <= len(ran) < 20, outcomes  # eight decide; at most a few more were in flight
    print(f"stop when decided: {len(ran)} of 40 scenarios ran on -n 2")
    summary = json.loads((folder / "summary.json").read_text())
    stop = summary["stop"]
    reason = (
        f"decided: better than baseline {base}: 8 better, 0 worse of 8 judged pairs "
        "(sequential test at level 5.0%); no new scenario starts"
    )
    assert stop["reason"] == reason
    assert {key: stop["decided"][key] for key in ("direction", "better", "worse", "pairs", "looked")} == {
        "direction": "better",
        "better": 8,
        "worse": 0,
        "pairs": 8,
        "looked": 8,
    }
    not_started = {item["key"].split("/")[1]: item["why"] for item in stop["not_started"]}
    assert set(not_started.values()) == {reason}
    assert ran | set(not_started) == set(ids) and not ran & set(not_started)
    assert not any((folder / "search" / sid).exists() for sid in not_started)
    planned = json.loads((folder / "run_config.json").read_text())["planned"]
    assert {key.split("/")[1] for key in planned[:8]} <= ran  # the first eight of the start order decided
    result.stdout.fnmatch_lines([f"gaia2: stopped: {reason}"])
    assert gaia2_containers(run_id_of(output)) == []
