"""The results store: containment, atomic writes, run folders, attempts, the lock."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

STARTED = dt.datetime(2026, 12, 1, 9, 15, 0, tzinfo=dt.timezone.utc)


def _record(scenario_id: str = "s1", success: bool | None = True, **extra: object) -> AttemptRecord:
    return AttemptRecord(
        scenario_id=scenario_id, success=success, reward=None, num_agent_events=0, agent_response="",
        judged_in_container=success is not None, timed_out=False, timeout_seconds=600.0, daemon_status=None,
        scenario_file="", failure_reasons=[], error=None if success is not None else "boom", split="search",
        outcome={True: "passed", False: "failed", None: "error"}[success], **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", [".", "..", ".hidden", "a/b", "", "a" * 129, "x\x00y", "-rf", "a b"])
def test_unsafe_parts_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(store.StoreError, match="cannot be a folder name"):
        store.inside(tmp_path, name)


def test_inside_refuses_a_symlink_out(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "search").symlink_to(tmp_path.parent)
    with pytest.raises(store.StoreError, match="resolves outside"):
        store.inside(tmp_path / "run", "search", "x")


def test_write_is_atomic_and_leaves_no_temporary_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    store.write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    (tmp_path / "file").write_text("x")
    with pytest.raises(store.StoreError, match="cannot write"):
        store.write_text(tmp_path / "file" / "b.json", "x")  # the parent is a file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "file"]


FILE_LIMITED_WRITE = """
import resource, signal, sys
from pathlib import Path
from pytest_gaia2.store import folder as store
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4, 4))
try:
    store.write_bytes(Path(sys.argv[1]), b"x" * 10)
except store.StoreError as exc:
    print(exc)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no RLIMIT_FSIZE")
def test_a_failed_write_names_the_file_and_removes_the_temporary(tmp_path: Path) -> None:
    """A write the disk refuses (here a file-size limit of 4 bytes, as a full disk would) is one
    error naming the file, and no temporary is left. (A temporary that is a link, say to
    /dev/full, is never written through: the store removes it first.)"""
    done = subprocess.run([sys.executable, "-c", FILE_LIMITED_WRITE, str(tmp_path / "y.json")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert f"cannot write {tmp_path / 'y.json'}: File too large" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_run_folders_are_new_and_latest_points_at_the_newest(tmp_path: Path) -> None:
    first = store.RunFolder.create(tmp_path, "a" * 32, STARTED)
    second = store.RunFolder.create(tmp_path, "b" * 32, STARTED + dt.timedelta(seconds=1))
    for folder in (first, second):
        store.write_json(folder.file(store.RUN_CONFIG_FILE), {})
    assert first.path.name == "20261201T091500Z-aaaaaaaa"
    assert store.resolve_latest(tmp_path) == second.path
    assert store.RunFolder.find(tmp_path, None).path == second.path
    with pytest.raises(store.StoreError, match="cannot create a run folder"):
        store.RunFolder.create(tmp_path, "a" * 32, STARTED)  # never reuses a folder


def test_resume_passes_over_newer_run_folders_without_a_verdict(tmp_path: Path) -> None:
    """A run with judged verdicts, then newer ones that ended with none (a crash before any
    scenario, every scenario in error): a bare resume continues the one whose verdicts are paid
    for and names the newer ones it passed over; with no verdict anywhere, the latest."""
    paid = store.RunFolder.create(tmp_path, "a" * 32, STARTED)
    crashed = store.RunFolder.create(tmp_path, "b" * 32, STARTED + dt.timedelta(seconds=1))
    errored = store.RunFolder.create(tmp_path, "c" * 32, STARTED + dt.timedelta(seconds=2))
    for folder in (paid, crashed, errored):
        store.write_json(folder.file(store.RUN_CONFIG_FILE), {})
    assert store.RunFolder.find(tmp_path, None).path == errored.path  # nothing judged anywhere yet
    store.append_jsonl(errored.results, _record("s1", None).to_json())
    store.append_jsonl(paid.results, _record("s1", None).to_json())
    store.append_jsonl(paid.results, _record("s2", False).to_json())
    chosen = store.RunFolder.find(tmp_path, None)
    assert chosen.path == paid.path and chosen.skipped == [errored.path, crashed.path]
    named = store.RunFolder.find(tmp_path, crashed.path)  # a folder named is continued as named
    assert named.path == crashed.path and named.skipped == []
    store.append_jsonl(errored.results, _record("s1", True).to_json())
    latest = store.RunFolder.find(tmp_path, None)
    assert latest.path == errored.path and latest.skipped == []


def test_latest_that_is_a_users_folder_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "latest").mkdir()
    (tmp_path / "latest" / "mine.txt").write_text("keep")
    store.RunFolder.create(tmp_path, "c" * 32, STARTED)
    assert (tmp_path / "latest" / "mine.txt").read_text() == "keep"


def test_find_accepts_a_version_0_1_output_folder_and_refuses_a_non_run(tmp_path: Path) -> None:
    (tmp_path / "run_config.json").write_text("{}")
    assert store.RunFolder.find(tmp_path, None).path == tmp_path
    with pytest.raises(store.StoreError, match="not a run folder"):
        store.RunFolder.find(tmp_path, tmp_path / "nowhere")
    with pytest.raises(store.StoreError, match="no run folder to resume"):
        store.RunFolder.find(tmp_path / "empty", None)


def test_attempts_never_reuse_a_folder_and_a_judged_record_wins(tmp_path: Path) -> None:
    folder = store.RunFolder.create(tmp_path, "d" * 32, STARTED)
    scenario_dir = folder.scenario_dir("search", "s1", 1, 1)
    assert folder.next_attempt(scenario_dir) == 1
    folder.write_record(folder.attempt_dir(scenario_dir, 1), _record(success=None))
    assert folder.next_attempt(scenario_dir) == 2
    folder.write_record(folder.attempt_dir(scenario_dir, 2), _record(success=False, attempt=2))
    folder.write_record(folder.attempt_dir(scenario_dir, 3), _record(success=None, attempt=3))
    assert folder.attempts(scenario_dir) == [1, 2, 3]
    last = folder.last_record(scenario_dir)
    assert last is not None and last.success is False and last.attempt == 2
    assert folder.scenario_dir("search", "s1", 2, 3) == folder.path / "run_2" / "search" / "s1"


def test_results_keep_one_line_per_key(tmp_path: Path) -> None:
    folder = store.RunFolder.create(tmp_path, "e" * 32, STARTED)
    for record in (_record("s1", None), _record("s2"), _record("s1", True)):
        store.append_jsonl(folder.results, record.to_json())
    folder.rewrite_results(folder.records())
    lines = [json.loads(line) for line in folder.results.read_text().splitlines()]
    assert [(row["scenario_id"], row["success"]) for row in lines] == [("s1", True), ("s2", True)]


def test_a_second_holder_is_refused_with_the_first_named(tmp_path: Path) -> None:
    folder = store.RunFolder.create(tmp_path, "f" * 32, STARTED)
    folder.lock({"session_id": "first"})
    code = (
        "import sys; from pathlib import Path; from pytest_gaia2.store import folder as store\n"
        f"f = store.RunFolder(Path({str(folder.path)!r}))\n"
        "try:\n    f.lock({'session_id': 'second'})\nexcept store.StoreError as e:\n    print(e); sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert "in use by" in done.stdout and "session_id first" in done.stdout and str(os.getpid()) in done.stdout
    folder.unlock()
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_read_json_is_bounded_and_never_raises(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert store.read_json(deep) is None
    os.mkfifo(tmp_path / "fifo.json")
    assert store.read_json(tmp_path / "fifo.json") is None
    (tmp_path / "big.json").write_text(json.dumps({"x": "y" * 100}))
    assert store.read_json(tmp_path / "big.json", max_bytes=50) is None
