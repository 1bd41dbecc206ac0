"""What each process of a run under xdist imports, as installed (only the plugins pytest-gaia2
depends on): a worker holds only the per-scenario path, since every module it imports is paid for
once per worker in CPU and memory; the controller's end of the run loads no scipy.stats
(the t quantile comes from scipy.special) while the workers still live."""

from __future__ import annotations

import json
import shutil

import pytest
from gaia2_testing import SHIPPED, results_of, stored_verdict

SEARCH = ("-m", "search_split", f"--gaia2-scenarios={SHIPPED}", "--gaia2-first-n=2")
AS_INSTALLED = ("-p", "pytest_gaia2.plugin.hooks", "-p", "xdist.plugin", "-p", "pytest_timeout")
RECORDER = """
import json, os, sys


def pytest_unconfigure(config):
    # Not PYTEST_XDIST_WORKER: a controller started by a test on an xdist worker inherits it.
    who = getattr(config, "workerinput", {}).get("workerid", "controller")
    with open(os.path.join(str(config.rootpath), f"modules-{who}.json"), "w") as out:
        json.dump(sorted(sys.modules), out)
"""
NOT_IN_A_WORKER = (
    "rich",
    "matplotlib",
    "scipy",
    "numpy",
    "allure",
    "allure_commons",
    "pytest_gaia2.plugin.allure",
    "pytest_gaia2.plugin.live_status",
    "pytest_gaia2.report.pages",
    "pytest_gaia2.report.document",
    "pytest_gaia2.report.plots",
    "pytest_gaia2.report.leaderboard",
    "pytest_gaia2.cli",
)
NOT_IN_THE_CONTROLLER = ("scipy.stats", "matplotlib", "rich")
NOT_IN_A_RESUMING_WORKER = ("docker", "requests", "filelock", "pytest_gaia2.report.book")
"""A worker whose every verdict is stored starts no container: no engine client, pacer lock or run's book."""


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if any(m == name or m.startswith(f"{name}.") for m in modules))


def test_a_worker_imports_only_the_per_scenario_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run_gaia2
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(RECORDER)
    result = run_gaia2(*AS_INSTALLED, "-n", "2", *SEARCH)
    result.assert_outcomes(passed=2)
    assert {record["worker"] for record in results_of(pytester.path / "out")} == {"gw0", "gw1"}
    for worker in ("gw0", "gw1"):
        modules = json.loads((pytester.path / f"modules-{worker}.json").read_text(encoding="utf-8"))
        assert "pytest_gaia2.run.attempt" in modules  # it ran its scenario
        assert _loaded(modules, NOT_IN_A_WORKER) == [], worker
    controller = json.loads((pytester.path / "modules-controller.json").read_text(encoding="utf-8"))
    assert "pytest_gaia2.report.pages" in controller  # the end of the run's pages were written
    assert _loaded(controller, NOT_IN_THE_CONTROLLER) == []


def test_a_worker_whose_verdicts_are_all_stored_never_loads_the_engine_client(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run_gaia2
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(RECORDER)
    shutil.copytree(SHIPPED / "search", pytester.path / "scenarios" / "search")
    for source in sorted((SHIPPED / "search").glob("*.json")):
        universe = source.stem.split("_")[2]
        stored_verdict(pytester.path / "run" / "search" / source.stem, {
            "scenario_id": source.stem, "split": "search", "run": 1, "repeat": 1, "repeats": 1, "attempt": 1,
            "universe": f"universe_{universe}", "success": True, "outcome": "passed", "reused": False,
            "error": None, "error_category": None, "failure_reasons": [], "wall_time_s": 3.0, "num_agent_events": 2,
        })
    (pytester.path / "run" / "run_config.json").write_text(json.dumps({"run_id": "stored"}), encoding="utf-8")
    result = run_gaia2(*AS_INSTALLED, "-n", "2", "--gaia2-scenarios=scenarios", "--gaia2-resume=run")
    result.assert_outcomes(passed=4)
    assert all(record["reused"] for record in results_of(pytester.path / "run"))
    for worker in ("gw0", "gw1"):
        modules = json.loads((pytester.path / f"modules-{worker}.json").read_text(encoding="utf-8"))
        assert "pytest_gaia2.run.scenario_runs" in modules  # it took its stored verdicts
        assert _loaded(modules, NOT_IN_A_RESUMING_WORKER) == [], worker
