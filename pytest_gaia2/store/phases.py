"""Where each running scenario is, for the live status: one small JSON file per process.

An attempt says its phase (starting, healthy, turn k of n, judging, collecting) as it moves;
the process that runs it rewrites ``<run>/progress.<worker>.json`` atomically, and the
controller reads every worker's file to show what is running. Files rather than xdist
messages: workers have no channel to the controller between test reports, and a six-hour
run needs to show a scenario that has been on turn 3 for twenty minutes.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from pytest_gaia2.store import folder as store

BOARD_GLOB = "progress.*.json"
PID_MAX = 1 << 22
"""Linux's largest process id: a board's pid outside 1..PID_MAX is no process's."""


class PhaseBoard:
    """This process's running scenarios and their phases."""

    def __init__(self, run_root: Path, worker: str) -> None:
        self.path = store.inside(run_root, f"progress.{store.safe_part(worker)}.json")
        self.worker = worker
        self.running: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        """Several scenarios of this process may change phase at once (``--gaia2-in-flight``)."""

    def set(self, key: str, phase: str, *, attempt: int) -> None:
        """Record a phase change (a repeated phase rewrites nothing)."""
        with self.lock:
            self._set(key, phase, attempt)

    def _set(self, key: str, phase: str, attempt: int) -> None:
        entry = self.running.get(key)
        if entry is not None and entry["phase"] == phase and entry["attempt"] == attempt:
            return
        now = time.time()
        started = entry["started"] if entry is not None else now
        self.running[key] = {
            "key": key,
            "worker": self.worker,
            "phase": phase,
            "attempt": attempt,
            "started": started,
            "phase_started": now,
        }
        self._write()

    def clear(self, key: str) -> None:
        with self.lock:
            if self.running.pop(key, None) is not None:
                self._write()

    def _write(self) -> None:
        try:
            store.write_json(
                self.path, {"worker": self.worker, "pid": os.getpid(), "running": list(self.running.values())}
            )
        except OSError:
            pass  # the live status is a view: a full disk must not cost the scenario its verdict


def running(run_root: Path) -> list[dict[str, Any]]:
    """Every worker's running scenarios, oldest first."""
    entries: list[dict[str, Any]] = []
    for path in sorted(run_root.glob(BOARD_GLOB)):
        data = store.read_json(path, max_bytes=1 << 20)
        if isinstance(data, dict) and isinstance(data.get("running"), list):
            entries += [entry for entry in data["running"] if isinstance(entry, dict) and "key" in entry]
    return sorted(entries, key=lambda entry: entry.get("started", 0))


def busy_pids(run_root: Path) -> set[int]:
    """The process ids the boards name for the processes with a scenario in flight.

    Only a hint of which xdist workers to forward a signal to: a board is the run folder's,
    so anyone able to write there can name any pid; the caller signals only its own children.
    """
    pids: set[int] = set()
    for path in sorted(run_root.glob(BOARD_GLOB)):
        data = store.read_json(path, max_bytes=1 << 20)
        if not isinstance(data, dict) or not data.get("running"):
            continue
        pid = data.get("pid")
        if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= PID_MAX:
            pids.add(pid)
    return pids


def phase_of(status: dict[str, Any]) -> str:
    """The live status's name for where a polled scenario is: ``turn 2 of 3`` while running."""
    turn, turns = status.get("turn"), status.get("nb_turns")
    if status.get("status") == "running" and isinstance(turn, int) and isinstance(turns, int) and turns > 0:
        return f"turn {min(turn + 1, turns)} of {turns}"
    return str(status.get("status") or "waiting")[:40]
