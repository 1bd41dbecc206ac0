"""The main job on the real engine: the shipped search split on two workers, all passing."""

from __future__ import annotations

import json

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of


def test_search_split_on_two_workers(pytester: pytest.Pytester, run_gaia2) -> None:
    result = run_gaia2("-n", "2", "-m", "search_split", f"--gaia2-scenarios={SHIPPED}")
    searches = sorted(p.stem for p in (SHIPPED / "search").glob("*.json"))
    result.assert_outcomes(passed=len(searches))
    output = pytester.path / "out"
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == searches
    assert all(r["success"] is True and r["split"] == "search" for r in records)
    for record in records:
        folder = run_folder(output) / "search" / record["scenario_id"]
        result_json = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        assert result_json["daemon_status"]["judgment"]["success"] is True
        for name in ("events.jsonl", "daemon_status.json", "daemon_judgments.jsonl", "entrypoint.log"):
            assert (folder / name).is_file(), f"{name} missing for {record['scenario_id']}"
    assert gaia2_containers(run_id_of(output)) == []
    result.stdout.fnmatch_lines(["*strict*100.0%*", "*gaia2: results in*"])


def test_time_split_marker_and_k_selection(run_gaia2, run_gaia2_inprocess) -> None:
    times = sorted(p.stem for p in (SHIPPED / "time").glob("*.json"))
    result = run_gaia2_inprocess("--collect-only", "-q", "-m", "time_split", f"--gaia2-scenarios={SHIPPED}")
    listed = sorted(line.split("[")[1].rstrip("]") for line in result.stdout.lines if line.startswith("gaia2/time::"))
    assert listed == times, result.stdout.str()  # all of them, in the run's seeded start order
    assert "search/" not in result.stdout.str()
    one = times[0]
    result = run_gaia2("-k", one, f"--gaia2-scenarios={SHIPPED}", "--strict-markers")
    result.assert_outcomes(passed=1)
