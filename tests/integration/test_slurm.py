"""SLURM for real: a one-node cluster started on this machine by ``scripts/start-slurm-cluster.sh``
runs ``examples/slurm/`` (an array of shards, each task running pytest against the node's Docker
engine, and the dependent merge job) with the reference image.

Skipped, with the script's reason, when this machine cannot host the cluster (not root, no
apt-get, packages unavailable, a slurm.conf the script did not write). The tests take the
cluster in turn (a file lock), and a cluster this module started is stopped after each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from gaia2_testing import (
    FIRST_OF_EACH_SPLIT,
    REPO,
    SHIPPED,
    engine_events,
    gaia2_containers,
    results_of,
    run_folder,
    run_folders,
    run_id_of,
    scenario_variant,
)

from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL

CLUSTER = REPO / "scripts" / "start-slurm-cluster.sh"
SUBMIT = REPO / "examples" / "slurm" / "submit.sh"
CANNOT_HOST = 77  # the cluster script's exit code for "this machine cannot host the cluster"
SLURM_LOCK = Path(tempfile.gettempdir()) / "pytest-gaia2-tests-slurm.lock"
COUNTS = ("planned", "done", "not_run_count", "complete", "total", "passed", "failed", "errors")


def _sinfo_answers() -> bool:
    try:
        return subprocess.run(["sinfo", "-h"], check=False, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture
def slurm(clean_env: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The cluster, this test's alone; yields the list the test adds its job ids to (cancelled at the
    end if still queued). Jobs see the venv's pytest and pytest-gaia2 first on PATH."""
    if os.geteuid() != 0:
        pytest.skip("the SLURM cluster script needs root (it installs packages and starts daemons)")
    clean_env.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    jobs: list[str] = []
    with FileLock(str(SLURM_LOCK)):
        was_up = _sinfo_answers()
        started = subprocess.run(["bash", str(CLUSTER)], check=False, capture_output=True, text=True, timeout=600)
        if started.returncode == CANNOT_HOST:
            pytest.skip(f"no SLURM cluster on this machine: {started.stderr.strip()}")
        assert started.returncode == 0, started.stdout + started.stderr
        try:
            yield jobs
        finally:
            if jobs:
                subprocess.run(["scancel", *jobs], check=False, capture_output=True, timeout=30)
                _wait_ended(jobs, timeout=60)
            if not was_up:
                subprocess.run(["bash", str(CLUSTER), "--stop"], capture_output=True, timeout=60, check=True)


def _submit(jobs: list[str], cwd: Path, *args: str) -> tuple[str, str, Path]:
    """examples/slurm/submit.sh from ``cwd``: (array job id, merge job id, the merge's OUT folder)."""
    done = subprocess.run(["bash", str(SUBMIT), *args], cwd=cwd, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    match = re.search(r"^gaia2-slurm: array (\d+) merge (\d+) merged (.+)$", done.stdout, re.MULTILINE)
    assert match, done.stdout
    jobs += match.group(1, 2)
    return match.group(1), match.group(2), Path(match.group(3))


def _states(job: str) -> list[str]:
    """The state of each of the job's tasks (one for a plain job), as slurmctld has it."""
    shown = subprocess.run(["scontrol", "-o", "show", "job", job], check=False, capture_output=True, text=True, timeout=30)
    return re.findall(r"\bJobState=(\S+)", shown.stdout)


def _queued(job: str) -> bool:
    """Pending, running or completing: squeue lists a job until its last process has ended."""
    listed = subprocess.run(["squeue", "-h", "-j", job], check=False, capture_output=True, text=True, timeout=30)
    return bool(listed.stdout.strip())


def _wait_ended(jobs: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(_queued(job) for job in jobs):
        assert time.monotonic() < deadline, f"jobs {jobs} still queued after {timeout:g} s"
        time.sleep(1)


def _logs(shared: Path) -> str:
    return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in sorted(shared.glob("slurm-*.out")))


def _summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _counts(summary: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between a merged sharded run and a serial run: counts overall, per split
    and per universe, and the rates derived from them."""
    groups = {name: {group: {key: row[key] for key in ("total", "passed", "failed", "errors", "not_run_count")}
                     for group, row in summary[name].items()} for name in ("splits", "universes")}
    return {**{key: summary[key] for key in COUNTS}, **groups, "strict": summary["strict"]["value"],
            "judged": summary["judged"]["value"], "errors_by_category": summary["errors_by_category"]}


def _one_per_split(root: Path) -> list[str]:
    """FIRST_OF_EACH_SPLIT copied under ``root``: five scenarios, which two shards hold three
    and two of. Their ids, sorted."""
    for path in FIRST_OF_EACH_SPLIT:
        (root / path.parent.name).mkdir(parents=True)
        shutil.copy(path, root / path.parent.name)
    return sorted(path.stem for path in FIRST_OF_EACH_SPLIT)


@pytest.mark.slow
def test_array_of_two_shards_and_merge_equal_a_serial_run(slurm: list[str], tmp_path: Path) -> None:
    """The serial run starts alongside the array: on 2 cores the node runs both shards at once."""
    scenarios = tmp_path / "scenarios"
    ids = _one_per_split(scenarios)
    with (tmp_path / "serial.log").open("wb") as serial_log:
        serial = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gaia2-output=serial",
             f"--gaia2-scenarios={scenarios}"],
            cwd=tmp_path, stdout=serial_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    started = time.monotonic()
    shared = tmp_path / "shared"
    array, merge, merged = _submit(slurm, tmp_path, "--shards", "2", "--shared", str(shared), "--scenarios", str(scenarios))
    _wait_ended([array, merge], timeout=400)
    sharded_s = time.monotonic() - started
    assert serial.wait(timeout=400) == 0, (tmp_path / "serial.log").read_text()
    serial_s = time.monotonic() - started
    print(f"slurm: 2 shards + merge in {sharded_s:.1f} s; the serial run, started alongside, in {serial_s:.1f} s")

    assert _states(array) == ["COMPLETED", "COMPLETED"], _logs(shared)
    assert _states(merge) == ["COMPLETED"], _logs(shared)
    pieces = [sorted(r["scenario_id"] for r in results_of(shared / f"shard-{k}")) for k in (1, 2)]
    assert pieces[0] and pieces[1] and not set(pieces[0]) & set(pieces[1]), pieces
    assert sorted(pieces[0] + pieces[1]) == ids
    for k in (1, 2):
        output = shared / f"shard-{k}"
        assert {r["shard"] for r in results_of(output)} == {f"{k}/2"}
        assert gaia2_containers(run_id_of(output)) == []

    serial_summary = _summary(run_folder(tmp_path / "serial"))
    assert serial_summary["total"] == len(ids) == 5
    assert _counts(_summary(merged)) == _counts(serial_summary)
    merged_ids = sorted(json.loads(line)["scenario_id"] for line in (merged / "results.jsonl").read_text().splitlines())
    assert merged_ids == ids


@pytest.mark.slow
def test_scancel_leaves_no_container_and_resubmitting_finishes_only_the_rest(slurm: list[str], tmp_path: Path) -> None:
    """One shard: two quick scenarios, then a slow one (the oracle answers 20 s in). scancel while the
    slow one's container runs; then submit again with --resume."""
    sources = sorted((SHIPPED / "search").glob("*.json"))
    scenarios = tmp_path / "scenarios"
    quick = ["scenario_universe_21_quick1", "scenario_universe_22_quick2"]
    for scenario_id, source in zip(quick, sources[:2], strict=True):
        scenario_variant(scenarios, source, scenario_id=scenario_id, duration=180)
    slow = "scenario_universe_29_slowed"
    scenario_variant(scenarios, sources[0], scenario_id=slow, duration=180, answer_after=20)
    shared = tmp_path / "shared"
    submit = ("--shards", "1", "--shared", str(shared), "--scenarios", str(scenarios))

    output = shared / "shard-1"

    def slow_running() -> bool:
        """The shard's own container for the slow scenario is there (its run label: the shard's session)."""
        return (run_folder(output) / "sessions.jsonl").is_file() and any(
            c.labels.get(SCENARIO_LABEL) == slow for c in gaia2_containers(run_id_of(output)))

    array, merge, _ = _submit(slurm, tmp_path, *submit, "--", "--gaia2-order=file")  # the quick ones first
    deadline = time.monotonic() + 180
    while not slow_running():
        assert time.monotonic() < deadline and _queued(array), f"no container for {slow}:\n{_logs(shared)}"
        time.sleep(0.3)
    cancelled = time.monotonic()
    subprocess.run(["scancel", array], check=True, timeout=30)
    _wait_ended([array], timeout=60)  # within KillWait (30 s), or SLURM would have SIGKILLed pytest
    print(f"slurm: the cancelled task was gone {time.monotonic() - cancelled:.1f} s after scancel")

    assert _states(array) == ["CANCELLED"], _logs(shared)
    assert gaia2_containers(run_id_of(output)) == [], "the cancelled task left containers"
    first = {r["scenario_id"]: r for r in results_of(output)}
    assert first[slow]["error_category"] == "interrupted", _logs(shared)
    assert [first[q]["outcome"] for q in quick if q in first] == ["passed", "passed"], first

    _wait_ended([merge], timeout=60)  # the first merge (of the interrupted shard) reads shard-1: let it finish
    since = time.time()
    array2, merge2, merged = _submit(slurm, tmp_path, *submit, "--resume")
    _wait_ended([array2, merge2], timeout=240)
    # The resumed session's own containers (its id is the run label), pre-flight's probe left out.
    created = engine_events(since, event="create", label=f"{RUN_LABEL}={run_id_of(output)}")
    ours = [e["Actor"]["Attributes"].get(SCENARIO_LABEL) for e in created]
    ours = [scenario for scenario in ours if scenario != "preflight"]
    assert _states(array2) == ["COMPLETED"], _logs(shared)
    assert _states(merge2) == ["COMPLETED"], _logs(shared)
    assert len(run_folders(output)) == 1, "the resubmitted shard did not continue its run folder"
    resumed = {r["scenario_id"]: r for r in results_of(output)}
    assert {q: resumed[q]["reused"] for q in quick} == {q: True for q in quick}
    assert (resumed[slow]["outcome"], resumed[slow]["attempt"]) == ("passed", 2)
    assert ours == [slow], "the resubmitted shard started containers for stored verdicts"
    assert gaia2_containers(run_id_of(output)) == []
    summary = _summary(merged)
    assert (summary["total"], summary["passed"], summary["complete"]) == (3, 3, True), summary


@pytest.mark.slow
def test_time_limit_ends_the_task_like_scancel(slurm: list[str], tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    """A two-minute limit and SIGTERM to pytest 70 s before it: slurmctld checks every 30 s and
    signals at the first check less than 70 + 30 s before the limit, so 20 to 50 s in. The scenario
    hanging then gets an interrupted record, and no container is left."""
    clean_env.setenv("SBATCH_TIMELIMIT", "2")
    clean_env.setenv("SBATCH_SIGNAL", "B:TERM@70")
    shared = tmp_path / "shared"
    scenarios = scenario_variant(tmp_path / "scenarios", SHIPPED / "search" / "scenario_universe_21_7kww6e.json",
                                 scenario_id="scenario_universe_21_hangs", duration=180)
    array, merge, _ = _submit(slurm, tmp_path, "--shards", "1", "--shared", str(shared), "--scenarios", str(scenarios),
                              "--", "--gaia2-env", "GAIA2_FAULT_HANG=1")
    started = time.monotonic()
    _wait_ended([array], timeout=150)
    print(f"slurm: the time-limited task ended after {time.monotonic() - started:.0f} s")
    assert _states(array)[0] in ("FAILED", "TIMEOUT"), _logs(shared)
    output = shared / "shard-1"
    assert gaia2_containers(run_id_of(output)) == [], "the time-limited task left containers"
    (record,) = results_of(output)
    assert record["error_category"] == "interrupted", _logs(shared)
    _wait_ended([merge], timeout=60)
