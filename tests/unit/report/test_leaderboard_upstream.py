"""The export against Meta's own leaderboard code (PyPI ``meta-agents-research-environments``
1.2.0): the same runs give the same computed_stats.json, our rows fit upstream's schema, and
``export --check`` accepts what upstream builds. Upstream runs in a throwaway virtualenv (cached
per version); the test skips, saying why, when the package index cannot be reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import DATA

from pytest_gaia2.report import leaderboard
from pytest_gaia2.report.export import check

VERSION = "1.2.0"
PACKAGES = [f"meta-agents-research-environments=={VERSION}", "numpy", "polars", "pyarrow"]
SCRIPT = DATA / "upstream" / "are_stats.py"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def upstream_python() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-gaia2" / f"are-{VERSION}"
    python = cache / "bin" / "python"
    if not (cache / ".complete").is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(cache)], check=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--no-deps", *PACKAGES[:1]],
            capture_output=True, text=True, timeout=600,
        )
        if done.returncode == 0:
            done = subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES[1:]],
                                  capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"cannot install {PACKAGES} from the package index: {done.stderr.strip()[-300:]}")
        (cache / ".complete").write_text("ok", encoding="utf-8")
    return python


def run(status: str, config: str, scenario: str, number: int, duration: float) -> dict[str, Any]:
    score = {"success": 1.0, "failed": 0.0}.get(status)
    values = {
        "scenario_id": scenario, "run_number": number, "task_id": scenario, "score": score, "status": status,
        "config": config, "phase_name": "standard", "a2a_app_prop": 0.0, "has_app_noise": False,
        "has_env_noise": False, "has_exception": status == "exception",
        "exception_type": "daemon_error" if status == "exception" else None,
        "rationale": "wrong answer" if status == "failed" else None,
    }
    return {key: value for key, value in values.items() if value is not None} | {"run_duration": duration}


# Three capabilities, two run numbers, skewed durations; time errored every run (a whole split
# down), execution has a scenario that errored once.
RUNS = [
    run(status, config, f"{config}_{i}", number, 10.0 + 7 * i + number)
    for config, pattern in {
        "search": ["success", "success", "failed", "success", "failed", "failed"],
        "execution": ["success", "exception", "failed", "success", "success", "failed"],
        "time": ["exception"] * 4,
    }.items()
    for index, status in enumerate(pattern)
    for i, number in [(index // 2, index % 2 + 1)]
]
JOB = 1234.5


def upstream(python: Path, runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = subprocess.run([str(python), str(SCRIPT)], input=json.dumps([{**r, "job_duration": JOB} for r in runs]),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def ours(runs: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [leaderboard.Scored.of(r, r["run_duration"]) for r in runs]
    return leaderboard.stats_report(scored, {"model": "model-x", "model_provider": "provider-y"}, JOB)


def test_computed_stats_are_what_upstreams_report_builds(upstream_python: Path) -> None:
    theirs, mine = upstream(upstream_python, RUNS)["report"], ours(RUNS)
    assert mine["metadata"]["report_version"] == theirs["metadata"]["report_version"] == "3.0"
    assert mine["statistics"]["per_capability"].keys() == theirs["statistics"]["per_capability"].keys()
    for capability, expected in theirs["statistics"]["per_capability"].items():
        assert mine["statistics"]["per_capability"][capability] == pytest.approx(expected), capability
    assert mine["statistics"]["global"] == pytest.approx(theirs["statistics"]["global"])
    key = json.dumps
    assert sorted(map(key, mine["run_configurations"])) == sorted(map(key, theirs["run_configurations"]))
    # Whole split errored: 0.0 in upstream's macro average, so not the mean of search and execution alone.
    assert theirs["statistics"]["per_capability"]["time"]["success_rate"] == 0.0


def test_our_rows_fit_upstreams_schema(upstream_python: Path) -> None:
    schema = upstream(upstream_python, RUNS)["schema"]
    python = {"string": str, "int64": int, "float64": float, "bool_": bool}
    assert [(name, python[kind]) for name, kind in schema] == [(n, k[0]) for n, k in leaderboard.ROW_FIELDS.items()]


def test_the_check_accepts_upstreams_own_export(upstream_python: Path, tmp_path: Path) -> None:
    built = upstream(upstream_python, RUNS)
    for row in built["rows"]:
        path = tmp_path / row["config"] / "validation-00000-of-00001.jsonl"
        path.parent.mkdir(exist_ok=True)
        with path.open("a", encoding="utf-8") as rows:
            rows.write(json.dumps(row) + "\n")
    (tmp_path / leaderboard.STATS_FILE).write_text(json.dumps(built["report"]), encoding="utf-8")
    assert check(tmp_path) == []
    built["report"]["statistics"]["global"]["macro_success_rate"] += 1
    (tmp_path / leaderboard.STATS_FILE).write_text(json.dumps(built["report"]), encoding="utf-8")
    assert [p for p in check(tmp_path) if "macro_success_rate" in p]
