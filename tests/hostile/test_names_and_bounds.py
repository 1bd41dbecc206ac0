"""Names, bounds and interrupts on the real engine: ids Windows cannot name are refused before
any container, a flood of output stays within the engine's log cap and its cut is listed, a
state folder of 20,000 files still gives the judge's files (and counts what it cut), and a
double Ctrl-C at -n 2 still writes the run's summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import (
    SEARCH_IDS,
    SHIPPED,
    BackgroundRun,
    derived_image,
    engine_events,
    gaia2_containers,
    results_of,
    run_folder,
    run_id_of,
)

from pytest_gaia2.engine.client import RUN_LABEL, SCENARIO_LABEL
from pytest_gaia2.store.kept import CONTAINER_FILES

ONE = "scenario_universe_21_7kww6e"
ORACLE = ("--gaia2-judge-provider=none", "--gaia2-judge-model=none")

WRAP = r'''#!/usr/bin/bash
# Wraps the real init: floods stdout, or fills the state folder once the judge has written.
S=/var/gaia2/state
case "$HOSTILE" in
  flood)
    yes 'flood of output from the agent under test' | head -n 400000 ;;
  files)
    (
      for _ in $(seq 1 600); do [ -s "$S/judgments.jsonl" ] && break; sleep 0.05; done
      # The daemon is paused while the files are made: its final status waits for them.
      daemon=$(for p in /proc/[0-9]*; do grep -qa gaia2_ref_daemon "$p/cmdline" 2>/dev/null && echo "${p#/proc/}"; done)
      kill -STOP $daemon
      mkdir -p "$S/aaa"
      python3 -c '
for i in range(21000):
    open(f"/var/gaia2/state/aaa/f{i:05}", "w").close()
'
      kill -CONT $daemon
    ) & ;;
esac
exec bash /opt/gaia2-real-entrypoint.sh
'''


@pytest.fixture(scope="module")
def hostile_image() -> str:
    tag = "pytest-gaia2-test/names-and-bounds-oracle:1"
    derived_image(tag, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-real-entrypoint.sh",
                  "COPY wrap.sh /opt/gaia2-init-entrypoint.sh", files={"wrap.sh": WRAP.encode()})
    return tag


def _scenario_file(root: Path, split: str, name: str, scenario_id: str) -> Path:
    data = json.loads((SHIPPED / "search" / f"{ONE}.json").read_text(encoding="utf-8"))
    data["metadata"]["definition"]["scenario_id"] = scenario_id
    path = root / split / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gaia2-output=out", *args],
                          cwd=folder, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _record(folder: Path, scenario_id: str) -> dict[str, Any]:
    output = folder / "out"
    record = json.loads((run_folder(output) / "search" / scenario_id / "result.json").read_text(encoding="utf-8"))
    assert results_of(output) == [record]
    assert gaia2_containers(run_id_of(output)) == []
    return record


LOG_ENTRY_SLACK = 64 << 10
"""The engine rotates its log after the write that crosses max-size: a file may pass it by one
log entry (a 16 KiB chunk of output, JSON-escaped)."""


def _log_bytes(log_path: Path) -> int:
    """Bytes of the engine's log files of one container, each file once: a rotation renames the
    log while it is listed, and the same file seen under both names is one file (one inode)."""
    sizes: dict[int, int] = {}
    for path in log_path.parent.glob(f"{log_path.name}*"):
        try:
            info = path.stat()
        except FileNotFoundError:  # rotated away since the listing
            continue
        sizes[info.st_ino] = info.st_size
    return sum(sizes.values())


def test_ids_windows_cannot_name_and_case_duplicates_are_refused_before_any_container(
        pytester: pytest.Pytester, run_gaia2_inprocess: Any) -> None:
    refused = {"con": "CON", "nul_ext": "nul.x", "com1": "COM1", "aux": "aux.txt", "lpt9": "LPT9.json",
               "dot": "trailing.", "upper": "Case_A", "lower": "case_a"}
    paths = {name: _scenario_file(pytester.path / "scenarios", "search", name, sid) for name, sid in refused.items()}
    since = time.time()
    done = run_gaia2_inprocess("--gaia2-scenarios=scenarios", *ORACLE)  # every file refused: no scenario container
    text = done.stdout.str() + done.stderr.str()
    assert done.ret == pytest.ExitCode.TESTS_FAILED, text
    assert "Traceback" not in text
    for name, sid in refused.items():
        lines = [line for line in done.outlines
                 if line.startswith(f"[invalid_scenario] {paths[name]}: metadata.definition.scenario_id: ")]
        assert len(lines) == 1 and repr(sid) in lines[0], (name, lines, text)
    records = results_of(pytester.path / "out")
    assert len(records) == len(refused) and {r["error_category"] for r in records} == {"invalid_scenario"}
    run_id = run_id_of(pytester.path / "out")
    created = [event["Actor"]["Attributes"].get(SCENARIO_LABEL)
               for event in engine_events(since, event="create", label=f"{RUN_LABEL}={run_id}")]
    assert [scenario for scenario in created if scenario != "preflight"] == []


def test_a_flood_of_output_stays_within_the_engine_log_cap_and_its_cut_is_listed(
        tmp_path: Path, hostile_image: str, start_gaia2: Callable[..., BackgroundRun]) -> None:
    cap = 1 << 20
    run = start_gaia2(f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={hostile_image}",
                      "--gaia2-env=HOSTILE=flood", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=3",
                      f"--gaia2-max-file-size={cap}", *ORACLE)
    [container] = run.wait_for_containers(1)
    client = docker.from_env()
    try:
        attrs = client.api.inspect_container(container.id)
    finally:
        client.close()
    assert attrs["HostConfig"]["LogConfig"] == {"Type": "json-file",
                                                "Config": {"max-size": str(cap // 2), "max-file": "2"}}
    log_path = Path(attrs.get("LogPath") or "/nonexistent")
    sizes = []
    while run.process.poll() is None:
        if os.access(log_path.parent, os.R_OK):  # the engine's own folder: readable when the tests run as root
            sizes.append(_log_bytes(log_path))
        time.sleep(0.1)
    assert run.wait() == 0, run.text()
    assert all(size <= cap + 2 * LOG_ENTRY_SLACK for size in sizes), sizes
    print(f"engine log sizes seen: {len(sizes)} samples, largest {max(sizes, default=0)} bytes")
    record = _record(run.output.parent, ONE)
    assert record["outcome"] == "passed"
    cuts = [item["reason"] for item in record["skipped_files"] if item["path"] == "container.log"]
    assert len(cuts) == 1 and "rotated" in cuts[0], record["skipped_files"]
    kept = (run_folder(run.output) / "search" / ONE / "container.log").stat().st_size
    assert 0 < kept <= cap


def test_twenty_thousand_state_files_still_give_the_judges_files_and_the_cut_is_counted(
        tmp_path: Path, hostile_image: str) -> None:
    done = _pytest(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={hostile_image}",
                   "--gaia2-env=HOSTILE=files", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=1", *ORACLE)
    assert done.returncode == 0, done.stdout + done.stderr
    record = _record(tmp_path, ONE)
    assert record["outcome"] == "passed"
    folder = run_folder(tmp_path / "out") / "search" / ONE
    assert {"events.jsonl", "daemon_judgments.jsonl", "daemon_status.json", "user_details.json",
            "notifications.jsonl"} <= {path.name for path in folder.iterdir()}
    with tarfile.open(folder / CONTAINER_FILES) as archive:  # kept as members, never as files
        copied = sum(1 for name in archive.getnames() if name.startswith("var/gaia2/state/aaa/"))
    listed = [item for item in record["skipped_files"] if item["path"].startswith("/var/gaia2/state/aaa/")]
    [counted] = [item for item in record["skipped_files"] if "count" in item]
    assert counted["path"] == "/var/gaia2/state" and len(listed) == 100 and copied < 10_000
    # Every one of the 21,000 files is copied, named or counted (the count also holds the
    # state folder's own files sorted after them).
    assert copied + len(listed) + counted["count"] >= 21_000, (copied, len(listed), counted)
    assert len(json.dumps(record["skipped_files"])) < 20_000


@pytest.mark.parametrize(("layout", "alive"), [
    (("-n", "2"), 2),
    (("--gaia2-in-flight=3",), 3),
    (("-n", "2", "--gaia2-in-flight=2"), 4),
], ids=["two workers", "three in flight in one process", "two in flight on each of two workers"])
def test_a_double_ctrl_c_still_writes_the_runs_summary(
        start_gaia2: Callable[..., BackgroundRun], layout: tuple[str, ...], alive: int) -> None:
    chosen = SEARCH_IDS[:alive]
    run = start_gaia2(*layout, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", " or ".join(chosen),
                      "--gaia2-env", "GAIA2_FAULT_HANG=1")
    run.wait_for_containers(alive)
    os.killpg(run.process.pid, signal.SIGINT)
    time.sleep(0.3)
    os.killpg(run.process.pid, signal.SIGINT)
    assert run.wait(120) == pytest.ExitCode.INTERRUPTED, run.text()
    text = run.text()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    folder = run_folder(run.output)
    assert all((folder / name).is_file() for name in ("results.jsonl", "summary.json", "index.html")), text
    records = results_of(run.output)
    assert sorted(r["scenario_id"] for r in records) == chosen, (records, text)
    assert {r["error_category"] for r in records} == {"interrupted"}, records
    assert gaia2_containers(run.run_id()) == []
