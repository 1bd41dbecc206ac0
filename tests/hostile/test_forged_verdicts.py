"""No container forges a pass: a proxy in front of the real adapter (built FROM the reference
image, :mod:`adapter_proxy`) answers /status with a judge's pass that the judge never gave.
The verdict comes from the judge's own record in the container's state (daemon_status.json and
the judgments file's last line); a /status that claims otherwise is ``verdict_conflict``, with
every source in result.json, and pytest reports what results.jsonl says.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from adapter_proxy import PEAK_RSS_MB, only_record, proxy_image, pytest_says, run_measured
from gaia2_testing import DATA, SHIPPED

from pytest_gaia2.run.verdict import ENDPOINT_SOURCE, LAST_JUDGMENT_SOURCE, STATE_SOURCE

ONE = "scenario_universe_21_7kww6e"
JUDGE_FAIL = "scenario_universe_22_ygzpjz"


@pytest.fixture(scope="module")
def image() -> str:
    return proxy_image()


def test_a_forged_pass_with_no_judge_at_all_is_a_verdict_conflict(tmp_path: Path, image: str) -> None:
    """/status says complete + success from its first answer, the judge is
    killed at start (daemon_status.json running or absent, no judgments file)."""
    run = run_measured(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={image}",
                       "--gaia2-env=HOSTILE=forge")
    record = only_record(tmp_path, "search", ONE)
    assert (record["outcome"], record["error_category"]) == ("error", "verdict_conflict"), record
    sources = record["verdict_sources"]
    assert sources[ENDPOINT_SOURCE] == {"success": True, "failure_reason": ""}
    assert sources[STATE_SOURCE] in (None, {"status": "running"}), sources
    assert sources[LAST_JUDGMENT_SOURCE] is None
    assert record["success"] is None and record["judged_in_container"] is False
    assert pytest_says(run, "error") and "[verdict_conflict]" in run.done.stdout, run.text
    assert run.peak_mb < PEAK_RSS_MB


def test_a_forged_pass_over_the_judges_rejection_is_a_verdict_conflict(tmp_path: Path, image: str) -> None:
    """The judge rejects (stopped, judgment and judgments line fail); /status rewrites it to a pass."""
    run = run_measured(tmp_path, f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}", f"--gaia2-image={image}",
                       "--gaia2-env=HOSTILE=forge_late")
    record = only_record(tmp_path, "search", JUDGE_FAIL)
    assert (record["outcome"], record["error_category"]) == ("error", "verdict_conflict"), record
    sources = record["verdict_sources"]
    assert sources[ENDPOINT_SOURCE]["success"] is True
    assert sources[STATE_SOURCE]["success"] is False and sources[LAST_JUDGMENT_SOURCE] is False
    assert record["daemon_status"]["status"] == "stopped"  # the judge's record, not the forged answer
    assert pytest_says(run, "error"), run.text


def test_a_proxy_that_agrees_with_the_judge_changes_nothing(tmp_path: Path, image: str) -> None:
    """The control: the same rewriting proxy over a real pass (every source says pass) is a pass."""
    run = run_measured(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={image}",
                       "--gaia2-env=HOSTILE=forge_late")
    record = only_record(tmp_path, "search", ONE)
    assert (record["outcome"], record["verdict_sources"]) == ("passed", None), record
    assert pytest_says(run, "passed"), run.text
