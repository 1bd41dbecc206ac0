"""The results store as a hostile but ordinary user meets it: many runs into one output, two at
once, resume, retries and repeats, odd ids and ``--gaia2-output .``. Every verdict of every run
is still on disk afterwards, and nothing outside a run's own folder changes (checksummed)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED, file_sums, gaia2_containers, run_folders

from pytest_gaia2.run.terms import EXIT_REFUSED

ONE = "scenario_universe_21_7kww6e"
TWO = "scenario_universe_24_zqzvsf"
RUNS_IN_TURN = 4


def _pytest(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = process.communicate(timeout=600)
    return process.returncode, out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scenarios" / "search").mkdir(parents=True)
    for sid in (ONE, TWO):
        shutil.copy(SHIPPED / "search" / f"{sid}.json", tmp_path / "scenarios" / "search")
    (tmp_path / "notes.txt").write_text("the team's own file\n")
    return tmp_path


@pytest.fixture
def in_project(project: Path, run_gaia2_inprocess: Any) -> Callable[..., tuple[int, str]]:
    """A run in the project that starts no scenario container (a refusal, stored verdicts), in this
    process: (its exit status, what it printed)."""

    def run(*args: str, output: str) -> tuple[int, str]:
        result = run_gaia2_inprocess(*args, output=output, cwd=project)
        return int(result.ret), result.stdout.str() + "\n" + result.stderr.str()

    return run


def _verdicts(output: Path) -> dict[str, dict[str, bool]]:
    """Run folder name -> scenario id -> success, read from each run's own results.jsonl."""
    found = {}
    for folder in run_folders(output):
        lines = (folder / "results.jsonl").read_text().splitlines()
        found[folder.name] = {json.loads(line)["scenario_id"]: json.loads(line)["success"] for line in lines}
    return found


@pytest.mark.slow
def test_runs_one_after_another_into_one_output_keep_every_verdict(project: Path) -> None:
    """Four runs, scenarios alternating: each run's check covers every earlier run's files, and
    the four cover each case a later run meets (a first run; a run of another scenario than the
    one before; a run of a scenario an earlier run already has a verdict for, that run no longer
    ``latest``). Runs beyond them repeat those cases (ten took 40 s more for nothing new)."""
    sums_before: dict[str, str] = {}
    for n in range(RUNS_IN_TURN):
        code, out = _finish(_pytest(project, "--gaia2-output=results", "-k", ONE if n % 2 else TWO))
        assert code == 0, out
        folders = run_folders(project / "results")
        assert len(folders) == n + 1
        earlier = {name: digest for name, digest in file_sums(project / "results").items()
                   if not name.startswith(folders[-1].name) and not name.startswith("latest")}
        assert {name: earlier.get(name) for name in sums_before} == sums_before  # nothing earlier changed
        sums_before = earlier
    verdicts = _verdicts(project / "results")
    assert len(verdicts) == RUNS_IN_TURN and all(list(v.values()) == [True] for v in verdicts.values())
    assert (project / "results" / "latest").resolve() == run_folders(project / "results")[-1]


def test_two_runs_at_once_get_a_folder_each_and_resuming_a_held_folder_is_refused(
        project: Path, in_project: Callable[..., tuple[int, str]]) -> None:
    """The first run holds its folder for as long as it lives (its agent hangs), whatever the
    machine's load, until it is interrupted as a terminal's Ctrl-C would."""
    first = _pytest(project, "--gaia2-output=results", "--gaia2-env=GAIA2_FAULT_HANG=1", "-k", ONE)
    deadline = time.monotonic() + 120
    while not (project / "results").is_dir() or not any(
            (folder / ".gaia2.lock.json").is_file() for folder in run_folders(project / "results")):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[0]
        time.sleep(0.1)
    (held,) = run_folders(project / "results")
    code, out = _finish(_pytest(project, "--gaia2-output=results", "-k", TWO))
    assert code == 0 and first.poll() is None, out  # the second ran, beside the first, in a folder of its own
    code, out = in_project(f"--gaia2-resume={held}", "--gaia2-resume-mismatch=warn", "-k", ONE, output="results")
    assert code != 0 and f"run folder {held} is in use by" in out and "pid" in out, out
    first.send_signal(signal.SIGINT)
    code, out = _finish(first)
    assert code == 2 and "interrupted" in out, out
    verdicts = _verdicts(project / "results")
    assert sorted(tuple(v) for v in verdicts.values()) == [(ONE,), (TWO,)]
    assert not (held / ".gaia2.lock.json").exists()


def test_odd_ids_and_output_dot_touch_nothing_outside_the_run_folder(
        project: Path, in_project: Callable[..., tuple[int, str]]) -> None:
    for name, sid in (("dots.json", ".."), ("dot.json", "."), ("hidden.json", ".x")):
        data = json.loads((SHIPPED / "search" / f"{ONE}.json").read_text())
        data["metadata"]["definition"]["scenario_id"] = sid
        (project / "scenarios" / "search" / name).write_text(json.dumps(data))
    before = file_sums(project)
    code, out = _finish(_pytest(project, "--gaia2-output=."))
    assert code == 1, out  # three invalid files are errors; the two good scenarios pass
    assert "2 passed" in out and "3 errors" in out and "starts with '.'" in out
    code, out = in_project("--gaia2-resume", output=".")  # every verdict stored: no scenario container
    assert "2 reused" in out, out
    runs = {folder.name for folder in run_folders(project)}
    after = {name: digest for name, digest in file_sums(project).items() if name.split("/")[0] not in runs}
    assert after == before  # the project's own files, byte for byte
    # Every session's own containers (their run label is the session id, not the folder's name).
    sessions = [json.loads(line)["session_id"] for folder in run_folders(project)
                for line in (folder / "sessions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(sessions) == 2 and all(gaia2_containers(session) == [] for session in sessions), sessions


def test_an_unwritable_output_is_one_message(project: Path, in_project: Callable[..., tuple[int, str]]) -> None:
    (project / "blocked").write_text("a file where the output folder should be\n")
    code, out = in_project(output="blocked/results")
    assert code == EXIT_REFUSED, out
    assert "cannot create a run folder in --gaia2-output" in out and "INTERNALERROR" not in out
    assert (project / "blocked").read_text() == "a file where the output folder should be\n"
