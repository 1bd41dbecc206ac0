"""pass@k repeats, resuming an interrupted run, retrying infrastructure errors, and gaia2-runner's
TOML config, on the real engine with the shipped scenarios.

Containers are counted from the engine's own ``create`` events for the run's label, so "reused
without a container" and "retried once" are what the engine saw, not what the plugin says.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from gaia2_testing import (
    DATA,
    REPO,
    SHIPPED,
    BackgroundRun,
    engine_events,
    file_sums,
    gaia2_containers,
    made_once,
    results_of,
    run_folder,
    run_id_of,
    run_pytest,
)

from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL
from pytest_gaia2.run.terms import EXIT_REFUSED

SEARCH = SHIPPED / "search"
SEARCH_IDS = sorted(path.stem for path in SEARCH.glob("*.json"))
ONE = "scenario_universe_21_7kww6e"
JUDGE_FAIL = DATA / "scenarios" / "judge_fail"
UPSTREAM_CONFIG = REPO / "examples" / "upstream-oracle.toml"


PREFLIGHT = "preflight"  # the scenario label of the pre-flight probe containers


def created(output: Path, since: float) -> list[tuple[str, str]]:
    """(scenario id, container name) of each scenario container that the run whose files are in
    ``output`` created since ``since``, pre-flight probes left out."""
    events = engine_events(since, label=f"{RUN_LABEL}={run_id_of(output)}", event="create")
    attributes = [event["Actor"]["Attributes"] for event in events]
    return sorted((a[SCENARIO_LABEL], a["name"]) for a in attributes if a[SCENARIO_LABEL] != PREFLIGHT)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[pytest.RunResult, Path]:
    """The shipped search split in one go, configured by the upstream example TOML: the
    reference the resumed run is compared with."""
    def make(folder: Path) -> None:
        result = run_pytest(folder, "-n", "2", f"--gaia2-config={UPSTREAM_CONFIG}", "-m", "search_split")
        (folder / "stdout.txt").write_text("\n".join(result.outlines), encoding="utf-8")
        (folder / "code.txt").write_text(str(int(result.ret)), encoding="utf-8")

    folder = made_once(tmp_path_factory, "uninterrupted", make)
    output = folder / "out"
    assert gaia2_containers(run_id_of(output)) == []
    lines = (folder / "stdout.txt").read_text(encoding="utf-8").splitlines()
    return pytest.RunResult(int((folder / "code.txt").read_text(encoding="utf-8")), lines, [], 0.0), output


def test_upstream_example_config_runs_the_shipped_search_split(
    uninterrupted: tuple[pytest.RunResult, Path],
) -> None:
    result, output = uninterrupted
    result.assert_outcomes(passed=len(SEARCH_IDS))
    assert sorted(r["scenario_id"] for r in results_of(output)) == SEARCH_IDS
    config = json.loads((run_folder(output) / "run_config.json").read_text(encoding="utf-8"))
    assert config["selection"]["scenarios"] == [str(SHIPPED)]  # dataset_root, relative to the TOML file
    assert (config["settings"]["timeout"], config["settings"]["health_timeout"]) == (600.0, 120.0)
    # The files are in ./out: the command line's --gaia2-output won over the TOML's output_dir.


def test_repeat_makes_k_items_laid_out_as_run_k(pytester: pytest.Pytester, run_gaia2) -> None:
    result = run_gaia2("-n", "2", "-v", f"--gaia2-scenarios={SEARCH}", "-k", ONE, "--gaia2-repeat=3")
    result.assert_outcomes(passed=3)
    output = pytester.path / "out"
    for run in (1, 2, 3):
        result.stdout.fnmatch_lines([f"*PASSED gaia2/search::test_scenario[[]{ONE}/run_{run}[]]*"])
        folder = run_folder(output)
        record = json.loads((folder / f"run_{run}" / "search" / ONE / "result.json").read_text(encoding="utf-8"))
        assert (record["repeat"], record["outcome"]) == (run, "passed")
    assert sorted(path.relative_to(folder).as_posix() for path in folder.glob("*/*/*")) == [
        f"run_{run}/search/{ONE}" for run in (1, 2, 3)]
    assert sorted(r["repeat"] for r in results_of(output)) == [1, 2, 3]
    result.stdout.fnmatch_lines(["3 results (1 scenarios x 3 runs): 3 passed*", "pass@3 (1 scenarios x 3 runs;*"])
    assert gaia2_containers(run_id_of(output)) == []


def test_interrupted_run_resumed_runs_only_the_rest(
    pytester: pytest.Pytester, start_gaia2: Callable[..., BackgroundRun], run_gaia2,
    uninterrupted: tuple[pytest.RunResult, Path],
) -> None:
    """Ctrl-C with two results in and the third scenario's container up, then --gaia2-resume:
    stored verdicts start no container, the rest runs (the interrupted one from scratch), and
    the folder ends up shaped like the uninterrupted run's."""
    args = (f"--gaia2-scenarios={SHIPPED}", "-m", "search_split")
    first = start_gaia2(*args)
    run_id = first.run_id()

    def two_done_third_running() -> bool:
        done = {r["scenario_id"] for r in first.results()}
        running = {c.labels.get(SCENARIO_LABEL) for c in gaia2_containers(run_id)} - done - {PREFLIGHT}
        return len(done) == 2 and bool(running)

    exit_code = first.interrupt_when("two results and a third container", two_done_third_running, timeout=180)
    assert exit_code == pytest.ExitCode.INTERRUPTED, first.text()
    assert gaia2_containers(run_id) == []
    first_records = results_of(first.output)
    done = sorted(r["scenario_id"] for r in first_records if r["outcome"] == "passed")
    assert len(done) == 2, first.text()
    (interrupted,) = [r["scenario_id"] for r in first_records if r["outcome"] == "error"]
    assert [r["error_category"] for r in first_records if r["outcome"] == "error"] == ["interrupted"]
    rest = sorted(set(SEARCH_IDS) - set(done))
    folder = run_folder(first.output)
    before = file_sums(folder)

    since = time.time()
    resumed = run_gaia2("-n", "2", *args, "--gaia2-resume")
    resumed.assert_outcomes(passed=len(SEARCH_IDS))
    output = pytester.path / "out"
    assert run_folder(output) == folder  # continued, not a new run
    assert [scenario for scenario, _ in created(output, since)] == rest
    records = results_of(output)
    assert sorted(r["scenario_id"] for r in records) == SEARCH_IDS  # one line each, no duplicates
    assert sorted(r["scenario_id"] for r in records if r["reused"]) == done
    resumed.stdout.fnmatch_lines([
        f"{len(SEARCH_IDS)} scenarios: {len(SEARCH_IDS)} passed, 0 failed, 0 errors, {len(done)} reused",
        f"gaia2: {len(done)} verdicts reused from earlier sessions (no container): "
        + ", ".join(f"search/{sid}" for sid in done),
    ])
    assert gaia2_containers(run_id_of(output)) == []
    after = file_sums(folder)
    changed = {name for name in before if after.get(name) != before[name]}
    views = {"index.html", "progress.json", "pacer.json"} | {name for name in changed if re.fullmatch(r"progress\.\w+\.json", name)}
    # Rewritten or appended, never lost; the run-level views (index, live status) are redrawn.
    assert changed - views <= {"results.jsonl", "summary.json", "sessions.jsonl"}, changed
    again = next(r for r in records if r["scenario_id"] == interrupted)
    assert again["folder"] == f"search/{interrupted}/attempt_2"  # the interrupted attempt 1 is still there
    assert json.loads((folder / "search" / interrupted / "result.json").read_text())["error_category"] == "interrupted"
    assert len(json.loads((folder / "sessions.jsonl").read_text().splitlines()[-1])["session_id"]) == 32
    # Shaped like the uninterrupted run: a folder with a result.json for each scenario, and no other.
    reference = run_folder(uninterrupted[1])
    assert sorted(p.relative_to(folder).as_posix() for p in folder.glob("search/*/result.json")) == sorted(
        p.relative_to(reference).as_posix() for p in reference.glob("search/*/result.json"))


def test_infrastructure_error_is_retried_and_resume_runs_it_again(
        pytester: pytest.Pytester, run_gaia2, run_gaia2_inprocess) -> None:
    args = (f"--gaia2-scenarios={SEARCH}", "-k", ONE)
    since = time.time()
    crashing = run_gaia2(*args, "--gaia2-retries=1", "--gaia2-env=GAIA2_FAULT_EXIT_CODE=3",
                         "--gaia2-env=GAIA2_FAULT_EXIT_AFTER=0")
    output = pytester.path / "out"
    # Retries happen inside the one test: one report, one JUnit case, one results line.
    assert crashing.parseoutcomes() == {"errors": 1, "deselected": len(SEARCH_IDS) - 1}
    run_id = run_id_of(output)
    assert created(output, since) == [(ONE, f"gaia2-{ONE}-{run_id[:8]}-r1a{attempt}") for attempt in (1, 2)]
    folder = run_folder(output) / "search" / ONE
    kept = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    final = json.loads((folder / "attempt_2" / "result.json").read_text(encoding="utf-8"))
    assert (kept["attempt"], kept["error_category"]) == (1, "container_exited")
    assert (final["attempt"], final["error_category"]) == (2, "container_exited")
    assert [(r["attempt"], r["outcome"]) for r in results_of(output)] == [(2, "error")]  # no line for attempt 1
    assert gaia2_containers(run_id) == []
    before = file_sums(folder)

    # Resumed without the fault's --gaia2-env: refused, naming the variables (never a value) and
    # the command that continues the run as it was made, unless told to go on.
    refused = run_gaia2_inprocess(*args, "--gaia2-resume")  # refused at pre-flight: no scenario container
    assert refused.ret == EXIT_REFUSED
    folder_path = run_folder(output)
    refused.stdout.fnmatch_lines([
        f"pytest-gaia2: --gaia2-resume: {folder_path} was run with other settings:",
        "  --gaia2-env: GAIA2_FAULT_EXIT_AFTER set by the run, not now; GAIA2_FAULT_EXIT_CODE set by the run, not now",
        "to continue it with the settings it was run with (its saved verdicts are reused, none is paid again):",
        f"  * --gaia2-env=GAIA2_FAULT_EXIT_AFTER=0 --gaia2-resume={folder_path}",
        "to run these settings instead, start a new run: leave out --gaia2-resume",
    ])
    assert "env_digest" not in refused.stdout.str() and "_pytest.outcomes.Exit" not in refused.stdout.str()
    since = time.time()
    resumed = run_gaia2(*args, "--gaia2-resume", "--gaia2-resume-mismatch=warn")
    resumed.assert_outcomes(passed=1)
    resumed.stdout.fnmatch_lines(["gaia2: warning: --gaia2-resume: * was run with other settings: --gaia2-env: *"])
    assert [scenario for scenario, _ in created(output, since)] == [ONE]
    assert [(r["outcome"], r["reused"], r["attempt"]) for r in results_of(output)] == [("passed", False, 3)]
    assert {name: digest for name, digest in file_sums(folder).items() if name in before} == before  # kept
    assert gaia2_containers(run_id_of(output)) == []


def test_judge_failure_is_never_retried_and_resume_reuses_it(
        pytester: pytest.Pytester, run_gaia2, run_gaia2_inprocess) -> None:
    since = time.time()
    failing = run_gaia2(f"--gaia2-scenarios={JUDGE_FAIL}", "--gaia2-retries=2")
    output = pytester.path / "out"
    assert failing.parseoutcomes() == {"failed": 1}
    (record,) = results_of(output)
    assert (record["outcome"], record["attempt"]) == ("failed", 1)
    assert len(created(output, since)) == 1
    assert not list(run_folder(output).glob("search/*/attempt_*"))

    since = time.time()
    resumed = run_gaia2_inprocess(f"--gaia2-scenarios={JUDGE_FAIL}", "--gaia2-retries=2", "--gaia2-resume")
    assert resumed.parseoutcomes() == {"failed": 1}
    assert created(output, since) == []
    (reused,) = results_of(output)
    assert (reused["outcome"], reused["reused"], reused["failure_reasons"]) == (
        "failed", True, record["failure_reasons"])
    resumed.stdout.fnmatch_lines(["1 scenarios: 0 passed, 1 failed, 0 errors, 1 reused"])


def test_an_error_that_repeats_across_resumed_sessions_is_called_persistent(
        pytester: pytest.Pytester, run_gaia2) -> None:
    """The same scenario errors in the first session and again when resumed: the end of the run
    and summary.json name it as persistent; a scenario that errored once is not."""
    args = (f"--gaia2-scenarios={SEARCH}", "-k", ONE, "--gaia2-env=GAIA2_FAULT_EXIT_CODE=3",
            "--gaia2-env=GAIA2_FAULT_EXIT_AFTER=0")
    first = run_gaia2(*args)
    assert first.parseoutcomes()["errors"] == 1
    assert "persistent error" not in first.stdout.str()
    summary = run_folder(pytester.path / "out") / "summary.json"
    assert json.loads(summary.read_text(encoding="utf-8"))["persistent_errors"] == []
    again = run_gaia2(*args, "--gaia2-resume")
    assert again.parseoutcomes()["errors"] == 1
    again.stdout.fnmatch_lines([f"gaia2: persistent error: search/{ONE} errored in 2 sessions (container_exited); "
                                "re-running will not fix it"])
    persistent = json.loads(summary.read_text(encoding="utf-8"))["persistent_errors"]
    assert [(p["key"], p["sessions"], p["attempts"], p["categories"]) for p in persistent] == [
        (f"search/{ONE}", 2, 2, ["container_exited"])]
