"""A container cannot make its own verdict disappear: hostile state folders, forged and nested
status files, an image that exits at once. Each case is an image built FROM the reference image
whose init script plants the hostile thing once the judge has written its judgment line (the
daemon holds its final status for a few seconds, so the plant is in place before collection).

Every case ends with result.json, exactly one results.jsonl line, the stated outcome, no
container left, and a bounded peak memory of the pytest process that copied everything out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    DATA,
    PEAK_RSS_PROBE,
    SHIPPED,
    derived_image,
    gaia2_containers,
    peak_rss_mb,
    results_of,
    run_folder,
    run_id_of,
)

from pytest_gaia2.store.kept import CONTAINER_FILES

ONE = "scenario_universe_21_7kww6e"
JUDGE_FAIL = "scenario_universe_22_ygzpjz"
PEAK_RSS_MB = 400
"""A pytest process copying out a 1 GiB file stays far below this (it streams); 0.1 held it all."""

PLANT = r'''#!/usr/bin/bash
# Wraps the real init: plants the hostile thing named by $HOSTILE once the judge has written.
S=/var/gaia2/state
(
  for _ in $(seq 1 600); do [ -s "$S/judgments.jsonl" ] && break; sleep 0.05; done
  kill_daemon() { for p in /proc/[0-9]*; do grep -qa gaia2_ref_daemon "$p/cmdline" 2>/dev/null && kill -9 "${p#/proc/}"; done; }
  case "$HOSTILE" in
    files)
      name=$(printf 'n%.0s' $(seq 1 250)); echo long > "$S/$name"
      d="$S/deep"; for i in $(seq 1 40); do d="$d/d$i"; done; mkdir -p "$d"; echo deep > "$d/leaf.txt"
      ln -s /etc/passwd "$S/passwd_link"; ln -s / "$S/root_link"; mkfifo "$S/pipe"
      truncate -s 1G "$S/huge.bin"; echo hard > "$S/orig.txt"; ln "$S/orig.txt" "$S/hardlink.txt"
      printf 'odd' > "$S/odd name
with newline.txt"
      mkdir -p "$S/sub" /tmp/openclaw
      for f in "$S/conftest.py" "$S/sub/test_planted.py" "$S/CONFTEST.PY" "$S/test_doc.txt" /tmp/openclaw/conftest.py \
               "$S/json.cpython-311-x86_64-linux-gnu.so" "$S/pytest.ini" "$S/.envrc" "$S/conftest.py."; do
        printf 'import pathlib\npathlib.Path("ran").write_text("x")\n' > "$f"
      done ;;
    scratch)
      truncate -s 1G /tmp/agent-scratch.bin; mkfifo /tmp/agent-pipe ;;
    forge)
      kill_daemon
      printf '{"status": "complete", "turn": 1, "nb_turns": 1, "num_events": 1, "judgment": {"success": true, "failure_reason": ""}}\n' > "$S/daemon_status.json.tmp"
      mv "$S/daemon_status.json.tmp" "$S/daemon_status.json" ;;
    hide)
      kill_daemon
      printf '{"status": "error", "turn": 1, "nb_turns": 1, "num_events": 1}\n' > "$S/daemon_status.json.tmp"
      mv "$S/daemon_status.json.tmp" "$S/daemon_status.json" ;;
    nested)
      kill_daemon
      python3 -c 'import sys; sys.stdout.write("[" * 300000 + "]" * 300000)' > "$S/daemon_status.json.tmp"
      mv "$S/daemon_status.json.tmp" "$S/daemon_status.json"
      sleep 1; kill -TERM 1 ;;
  esac
) &
exec bash /opt/gaia2-real-entrypoint.sh
'''


@pytest.fixture(scope="module")
def hostile_image() -> str:
    tag = "pytest-gaia2-test/hostile-oracle:1"
    derived_image(tag, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-real-entrypoint.sh",
                  "COPY plant.sh /opt/gaia2-init-entrypoint.sh", files={"plant.sh": PLANT.encode()})
    return tag


def _run(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """pytest in a process of its own that reports its own peak RSS (MB) when it ends."""
    done = subprocess.run([sys.executable, "-c", PEAK_RSS_PROBE, "-p", "no:cacheprovider", "--gaia2-output=out", *args],
                          cwd=folder, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    return done, peak_rss_mb(done.stdout + done.stderr)


def _one_record(folder: Path, scenario_id: str) -> dict[str, Any]:
    output = folder / "out"
    record = json.loads((run_folder(output) / "search" / scenario_id / "result.json").read_text(encoding="utf-8"))
    assert results_of(output) == [record]
    assert gaia2_containers(run_id_of(output)) == []
    return record


@pytest.mark.slow
def test_hostile_state_files_are_skipped_and_listed_and_the_verdict_kept(tmp_path: Path, hostile_image: str) -> None:
    done, peak = _run(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={hostile_image}",
                      "--gaia2-env=HOSTILE=files", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=3",
                      "--gaia2-judge-provider=none", "--gaia2-judge-model=none", "--gaia2-max-file-size=64M")
    assert done.returncode == 0, done.stdout + done.stderr
    record = _one_record(tmp_path, ONE)
    assert record["outcome"] == "passed"
    skipped = {Path(item["path"]).name: item["reason"] for item in record["skipped_files"]}
    assert {"passwd_link", "root_link", "pipe", "huge.bin"} <= skipped.keys(), skipped
    attempt = run_folder(tmp_path / "out") / "search" / ONE
    with tarfile.open(attempt / CONTAINER_FILES) as archive:
        members = {member.name: member for member in archive.getmembers()}
    assert all(member.isreg() for member in members.values())  # no link, FIFO or device is kept
    assert "var/gaia2/state/" + "n" * 250 in members  # a legal long name is kept
    assert "var/gaia2/state/odd name\\x0awith newline.txt" in members  # shown printable
    assert not any(path.is_symlink() for path in attempt.rglob("*"))
    # Nothing a later pytest would import or run lands on the host as a file (only as a member
    # of the archive), and that pytest does not walk the run folder either.
    planted = {"conftest.py", "test_planted.py", "CONFTEST.PY", "test_doc.txt", "json.cpython-311-x86_64-linux-gnu.so",
               "pytest.ini", ".envrc", "conftest.py."}
    assert planted <= {name.rsplit("/", 1)[-1] for name in members}, sorted(members)
    assert not planted & skipped.keys(), skipped
    assert not [path for path in attempt.rglob("*") if path.name in planted or path.name.casefold().endswith(".py")]
    later = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "no tests collected" in later.stdout and not (tmp_path / "ran").exists(), later.stdout
    assert peak < PEAK_RSS_MB, peak


def test_an_agents_huge_scratch_file_beside_the_logs_costs_nothing_and_hides_no_log(
        tmp_path: Path, hostile_image: str) -> None:
    """The logs share /tmp with the agent's files: a 1 GiB file there is not copied, not read
    through (the logs are then fetched one by one), and not reported as a skipped artifact."""
    done, peak = _run(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={hostile_image}",
                      "--gaia2-env=HOSTILE=scratch", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=3",
                      "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
    assert done.returncode == 0, done.stdout + done.stderr
    record = _one_record(tmp_path, ONE)
    assert record["outcome"] == "passed" and record["skipped_files"] == []
    folder = run_folder(tmp_path / "out") / "search" / ONE
    assert {"eventd.log", "entrypoint.log", "faketime.rc"} <= {path.name for path in folder.iterdir()}
    assert (folder / "eventd.log").stat().st_size > 0
    assert not list(folder.rglob("agent-*"))
    assert peak < PEAK_RSS_MB, peak


def test_a_forged_pass_against_the_judges_rejection_is_a_verdict_conflict(tmp_path: Path, hostile_image: str) -> None:
    done, _ = _run(tmp_path, f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}", f"--gaia2-image={hostile_image}",
                   "--gaia2-env=HOSTILE=forge", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=5",
                   "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
    assert done.returncode == 1, done.stdout + done.stderr
    record = _one_record(tmp_path, JUDGE_FAIL)
    assert (record["outcome"], record["error_category"]) == ("error", "verdict_conflict"), record
    assert record["verdict_sources"]["daemon_judgments.jsonl (last line)"] is False
    assert record["verdict_sources"]["daemon_status.json"]["success"] is True
    assert "[verdict_conflict]" in done.stdout and "0 passed" in done.stdout


def test_a_rejection_hidden_under_an_unjudged_error_status_stays_a_failure(tmp_path: Path, hostile_image: str) -> None:
    """The judge logs its rejection, then the agent (same user in the container) kills it and
    writes an unjudged ``error`` status: that was an error daemon_error, retried (a later attempt
    could pass). The logged rejection stands: one attempt, failed."""
    done, _ = _run(tmp_path, f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}", f"--gaia2-image={hostile_image}",
                   "--gaia2-env=HOSTILE=hide", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=5", "--gaia2-retries=2",
                   "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
    assert done.returncode == 1, done.stdout + done.stderr
    record = _one_record(tmp_path, JUDGE_FAIL)
    assert (record["outcome"], record["error_category"]) == ("failed", None), record
    assert "daemon_judgments.jsonl says fail" in record["failure_reasons"][0]
    assert record["daemon_status"]["status"] == "error"


def test_a_status_file_nested_too_deep_ends_as_an_error_with_a_record(tmp_path: Path, hostile_image: str) -> None:
    """The daemon is killed, its status replaced by 300,000 nested brackets, and the adapter ends:
    neither /status nor the file gives a verdict, and nothing on the host chokes on the file."""
    done, peak = _run(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={hostile_image}",
                      "--gaia2-env=HOSTILE=nested", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=5",
                      "--gaia2-judge-provider=none", "--gaia2-judge-model=none")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr  # (the adapter's own RecursionError is in its log)
    record = _one_record(tmp_path, ONE)
    assert (record["outcome"], record["error_category"]) == ("error", "container_exited"), record
    assert record["daemon_status"] is None or "judgment" not in record["daemon_status"]
    assert peak < PEAK_RSS_MB


def test_an_image_that_exits_at_once_is_container_exited_with_its_code_and_log(tmp_path: Path) -> None:
    image = derived_image("pytest-gaia2-test/exits-at-once-oracle:1", "RUN printf '#!/usr/bin/bash\\necho wrong image >&2\\n"
                          "exit 7\\n' > /opt/gaia2-init-entrypoint.sh")
    assert image
    done, _ = _run(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE,
                   "--gaia2-image=pytest-gaia2-test/exits-at-once-oracle:1", "--gaia2-judge-provider=none",
                   "--gaia2-judge-model=none")
    assert done.returncode == 1, done.stdout + done.stderr
    record = _one_record(tmp_path, ONE)
    assert (record["outcome"], record["error_category"]) == ("error", "container_exited"), record
    assert "code 7" in record["error"] and "wrong image" in record["error"]
    assert "wrong image" in (run_folder(tmp_path / "out") / "search" / ONE / "container.log").read_text()
