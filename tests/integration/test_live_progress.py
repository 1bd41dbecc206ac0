"""The live status of a running run: progress.json read while it runs, the plain progress lines
a CI log gets, the updating status on a real terminal (a pseudo-terminal), and -q's silence."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gaia2_testing import SHIPPED, BackgroundRun, run_folder, run_pytest

SEARCH = SHIPPED / "search"
SLOW = "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=6"
"""Each scenario holds its judgment 6 s: a run of four on two workers takes two rounds."""


def _progress(output: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_folder(output) / "progress.json").read_text(encoding="utf-8"))
    except (AssertionError, OSError, ValueError):
        return None


def test_progress_json_is_current_mid_run_under_xdist(start_gaia2: Callable[..., BackgroundRun]) -> None:
    run = start_gaia2("-n", "2", f"--gaia2-scenarios={SEARCH}", SLOW, "--gaia2-progress-interval=2")
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 180
    while run.process.poll() is None and time.monotonic() < deadline:
        data = _progress(run.output)
        if data and not data["finished"]:
            seen.append(data)
        time.sleep(0.5)
    assert run.wait() == 0, run.text()
    mid = [data for data in seen if data["done"] < data["planned"] and data["running"]]
    assert mid, seen[-3:]
    phases = {entry["phase"] for data in mid for entry in data["running"]}
    assert "turn 1 of 1" in phases, phases
    workers = {entry["worker"] for data in mid for entry in data["running"]}
    assert workers == {"gw0", "gw1"}, workers  # the controller shows both workers' scenarios
    after_first = [data for data in mid if data["done"] >= 1]
    assert after_first and all(data["eta_s"] is not None and data["strict_so_far"]["n"] == data["done"]
                               for data in after_first)
    final = _progress(run.output)
    assert final is not None and final["finished"] and final["done"] == final["planned"] == 4
    assert final["running"] == [] and final["passed"] == 4
    # CI logs (not a terminal): plain lines every 2 s, naming what runs and where it is.
    lines = [line for line in run.text().splitlines() if line.startswith("gaia2: ") and " done · " in line]
    assert len(lines) >= 3, run.text()
    assert any(re.search(r"running 2: search/\S+ \(turn 1 of 1, \d+s\), search/\S+ \(turn 1 of 1, \d+s\)", line)
               for line in lines), lines


def test_quiet_shows_no_progress_lines_but_keeps_progress_json(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, "-q", f"--gaia2-scenarios={SEARCH}", "-k", "7kww6e", SLOW,
                        "--gaia2-progress-interval=1")
    result.assert_outcomes(passed=1)
    assert " done · " not in result.stdout.str()
    data = json.loads((run_folder(tmp_path / "out") / "progress.json").read_text(encoding="utf-8"))
    assert (data["finished"], data["done"], data["passed"]) == (True, 1, 1)


def _read_all(fd: int, process: subprocess.Popen[bytes], timeout: float) -> bytes:
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the other end closed
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks)


def test_a_terminal_gets_an_updating_status_and_pytests_lines_intact(tmp_path: Path) -> None:
    """On a TTY, rich redraws the status in place (cursor movements), and pytest's own output
    (the dots, the summary) arrives whole, above it and after it."""
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "LINES": "50", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gaia2-output=out", f"--gaia2-scenarios={SEARCH}",
         "-k", "7kww6e or zqzvsf", "--gaia2-env=GAIA2_FAULT_JUDGE_DELAY=3"],
        cwd=tmp_path, stdin=secondary, stdout=secondary, stderr=secondary, env=env, start_new_session=True)
    os.close(secondary)
    try:
        screen = _read_all(primary, process, 180).decode("utf-8", errors="replace")
    finally:
        os.close(primary)
    assert process.wait(30) == 0, screen
    assert "\x1b[2K" in screen and "\x1b[1A" in screen  # the status line is erased and redrawn
    assert re.search(r"gaia2: 1/2 done · 1 passed, 0 failed, 0 errors · strict so far 100\.0%", screen), screen
    assert re.search(r"running search/scenario_universe_\d+_\w+ \(turn 1 of 1, \d+s\)", screen), screen
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert re.search(r"gaia2/search \.\.\s+\[100%\]", plain), plain
    assert "2 scenarios: 2 passed, 0 failed, 0 errors" in plain
