"""The console command on hostile run folders: a real run of one shipped scenario on the reference
image, copied and damaged in each test, then handed to the console command: in this process
(``gaia2_testing.console``), and as ``.venv/bin/pytest-gaia2`` itself for a re-judge (its pid labels
its containers) and a merge stopped by SIGTERM.

Every damage ends in one line naming the file (and line and field), exit status 2, no traceback,
promptly, and nothing outside the command's own output changed; nothing a record names outside
the run folder is read; merge copies no link and leaves no half-made folder when stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bad_records import BAD_FIELDS
from gaia2_testing import (
    REPO,
    SHIPPED,
    Finished,
    console,
    file_sums,
    made_once,
    owned_containers,
    run_command,
    run_folder,
    run_pytest,
)

COMMAND = REPO / ".venv" / "bin" / "pytest-gaia2"
SCENARIO = "scenario_universe_21_7kww6e"
PROMPT = 20.0
"""Seconds within which every refusal must come (a FIFO read would hang forever)."""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run folder (the oracle passes one shipped search scenario), never changed by a test."""

    def make(root: Path) -> None:
        result = run_pytest(root, f"--gaia2-scenarios={SHIPPED}", "-m", "search_split", "-k", SCENARIO)
        assert result.parseoutcomes().get("passed") == 1, "\n".join(result.outlines)

    return run_folder(made_once(tmp_path_factory, "pristine", make) / "out")


@pytest.fixture
def run(pristine: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the real run to damage; the pristine run is checked unchanged afterwards."""
    before = file_sums(pristine)
    copy = tmp_path / "run"
    shutil.copytree(pristine, copy, symlinks=True)
    yield copy
    assert file_sums(pristine) == before


def rejudge(run: Path) -> Finished:
    """``pytest-gaia2 rejudge`` with the reference judge; its process id labels its containers."""
    return run_command([str(COMMAND), "rejudge", str(run), "--judge", "reference", "--scenarios", str(SHIPPED)],
                       timeout=PROMPT)


def refused(done: subprocess.CompletedProcess[str] | Finished, *expected: str) -> str:
    """The one error line of a refusal (exit 2, no traceback), checked to contain ``expected``."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr
    return done.stderr


def lines_of(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def damage(run: Path, **fields: Any) -> None:
    """results.jsonl with ``fields`` changed in its one line (an infinity written as json reads it)."""
    (line,) = lines_of(run)
    (run / "results.jsonl").write_text(json.dumps({**line, **fields}).replace("Infinity", "1e999") + "\n")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("name", "value"), BAD_FIELDS, ids=[f"{n}={v!r}" for n, v in BAD_FIELDS])
def test_a_wrong_field_is_one_line_naming_file_line_and_field(run: Path, name: str, value: object) -> None:
    damage(run, **{name: value})
    sums = file_sums(run)
    refused(console("report", run, timeout=PROMPT), f"{run / 'results.jsonl'}: line 1: field {name!r}: ")
    assert file_sums(run) == sums  # nothing written by a refused report


@pytest.mark.parametrize("command", ["compare", "merge", "rejudge"])
def test_every_command_refuses_the_bad_line_the_same_way(run: Path, tmp_path: Path, command: str) -> None:
    good = tmp_path / "good"
    shutil.copytree(run, good, symlinks=True)
    damage(run, folder=["x"])
    args = {"compare": [good, run], "merge": [tmp_path / "merged", good, run],
            "rejudge": [run, "--judge", "reference", "--scenarios", SHIPPED]}[command]
    refused(console(command, *args, timeout=PROMPT),
            f"{run / 'results.jsonl'}: line 1: field 'folder': expected a string")
    assert not (tmp_path / "merged").exists()


def test_an_error_category_that_reads_as_mathtext_is_reported(run: Path) -> None:
    damage(run, outcome="error", success=None, error_category="$\\frac{x", error="boom")
    done = console("report", run)
    assert done.returncode == 0, done.stderr
    assert "frac" in (run / "report.md").read_text() and (run / "report" / "errors.png").is_file()


@pytest.mark.parametrize("name", ["results.jsonl", "sessions.jsonl"])
def test_a_fifo_in_a_run_folder_never_hangs_the_command(run: Path, tmp_path: Path, name: str) -> None:
    good = tmp_path / "good"
    shutil.copytree(run, good, symlinks=True)
    (run / name).unlink()
    os.mkfifo(run / name)
    if name == "results.jsonl":
        for args in (["report", run], ["compare", good, run], ["merge", tmp_path / "out", good, run]):
            refused(console(*args, timeout=PROMPT), f"{run / name}: not a regular file (fifo)")
        assert not (tmp_path / "out").exists()
    else:  # sessions are history, not results: read as empty, the merge goes on
        done = console("merge", tmp_path / "out", run, timeout=PROMPT)
        assert done.returncode == 0, done.stderr
        assert json.loads((tmp_path / "out" / "results.jsonl").read_text())["scenario_id"] == SCENARIO


def test_results_linked_to_dev_zero_are_refused_without_reading(run: Path) -> None:
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").symlink_to("/dev/zero")
    started = time.monotonic()
    refused(console("report", run, timeout=PROMPT), f"{run / 'results.jsonl'}: is a symbolic link, not followed")
    assert time.monotonic() - started < PROMPT


def test_compare_output_into_a_run_folder_is_refused_and_the_file_kept(run: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(run, other, symlinks=True)
    results = run / "results.jsonl"
    before, sums = sha(results), file_sums(tmp_path)
    refused(console("compare", run, other, "--output", results, timeout=PROMPT), f"--output {results}: already exists")
    refused(console("compare", run, other, "--output", run / "notes.md", timeout=PROMPT), "inside run folder")
    assert sha(results) == before and file_sums(tmp_path) == sums


def test_rejudge_never_reads_a_scenario_file_the_record_names_outside(run: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text('{"secret": "host-file-CANARY"}')
    for fields, expected in (({"scenario_file": str(outside), "scenario_sha256": None}, "without the run's hash"),
                             ({"scenario_file": "/dev/zero", "scenario_sha256": "0" * 64}, "no file under --scenarios")):
        damage(run, **fields)
        sums = file_sums(tmp_path)
        done = rejudge(run)
        refused(done, expected)
        assert file_sums(tmp_path) == sums
        assert owned_containers(done.pid) == []  # its own: the other tests' re-judges run at the same time
    assert not (run / "rejudge").exists()


def test_rejudge_never_follows_a_linked_user_details_file(run: Path, tmp_path: Path) -> None:
    outside = tmp_path / "private.json"
    outside.write_text('{"private": "host-file-CANARY"}')
    details = run / "search" / SCENARIO / "user_details.json"
    details.unlink(missing_ok=True)
    details.symlink_to(outside)
    done = rejudge(run)
    refused(done, f"{details}: (user details) is a symbolic link, not followed")
    assert not (run / "rejudge").exists()
    assert owned_containers(done.pid) == []


def test_merge_copies_no_link_and_lists_it(run: Path, tmp_path: Path) -> None:
    (run / "search" / SCENARIO / "passwd").symlink_to("/etc/passwd")
    os.mkfifo(run / "search" / SCENARIO / "pipe")
    out = tmp_path / "merged"
    done = console("merge", out, run, timeout=PROMPT)
    assert done.returncode == 0, done.stderr
    assert "not copied (a link or special file" in done.stdout and "passwd" in done.stdout and "pipe" in done.stdout
    assert [path for path in out.rglob("*") if path.is_symlink() or not (path.is_file() or path.is_dir())] == []
    assert (out / "search" / SCENARIO / "result.json").is_file()


def test_sigterm_during_merge_leaves_no_half_made_folder(run: Path, tmp_path: Path) -> None:
    bulk = run / "search" / SCENARIO / "state" / "bulk"
    bulk.mkdir(parents=True)
    for number in range(4000):  # enough files that the copy is still going when the signal comes
        (bulk / f"{number}.txt").write_bytes(b"x" * 4096)
    out = tmp_path / "merged"
    merge = subprocess.Popen([str(COMMAND), "merge", str(out), str(run)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + PROMPT
    while not list(tmp_path.glob(".merged.merging-*")) and merge.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert merge.poll() is None, "the merge ended before it could be stopped"
    merge.send_signal(signal.SIGTERM)
    _, err = merge.communicate(timeout=PROMPT)
    assert merge.returncode == 128 + signal.SIGTERM, err
    assert "merge stopped by signal" in err and "Traceback" not in err
    assert not list(tmp_path.glob(".merged.merging-*")) and not out.exists()
