"""File-level plumbing shared by the reference image's programs.

The daemon and the adapter are separate processes of the judge's user that talk
through files in the state directory (as Gaia2's eventd and adapter do); the agent,
a process of its own user, reaches that state only through the adapter's tool
socket (gaia2_ref_tools.py). This module owns the conventions: where files live, how
events.jsonl is appended (flock on events.lock), how it is tailed without
reading half-written lines, and how JSON is replaced atomically.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from gaia2_ref_scenario import sim_str_to_time, sim_time_to_str

TERMINAL_STATUSES = ("complete", "stopped", "error")
AGENT_STOPPED = "agent_stopped.json"
"""Written in the state directory by an agent that stopped for good before its task was done
(its model provider refused it): the daemon judges the turns the agent answered, then ends the
run with status ``error``, unjudged, unless the last turn was answered (then that is judged)."""


def env_float(name: str, default: float) -> float:
    """Read a float env var; malformed or empty values fall back to the default."""
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def env_flag(name: str) -> bool:
    """True when an env var is set to something other than empty/0/false/no."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def state_dir() -> Path:
    return Path(os.environ.get("GAIA2_STATE_DIR") or "/var/gaia2/state")


def scenario_path() -> Path:
    return Path(os.environ.get("GAIA2_SCENARIO") or "/var/gaia2/custom_scenario.json")


def faketime_path() -> Path:
    """``/tmp/faketime.rc`` unless overridden (lets the programs run outside Docker)."""
    return Path(os.environ.get("GAIA2_FAKETIME_PATH") or "/tmp/faketime.rc")


def read_sim_time(path: Path) -> float | None:
    """Current sim time from faketime.rc; None when the file is empty or missing."""
    try:
        return sim_str_to_time(path.read_text(encoding="utf-8"))
    except OSError:
        return None


def read_sim_text(path: Path) -> str:
    """Raw faketime.rc content for ``sim_t`` (empty when time is not faked)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def write_atomic(path: Path, text: str) -> None:
    """Replace a file through ``<name>.tmp`` + rename so readers never see a partial file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_sim_time(path: Path, epoch: float) -> None:
    write_atomic(path, sim_time_to_str(epoch) + "\n")


def read_json(path: Path) -> Any:
    """Parsed JSON file, or None when it is missing or invalid."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_status(state: Path) -> dict[str, Any]:
    """daemon_status.json as the adapter serves it (``waiting`` if absent/invalid)."""
    data = read_json(state / "daemon_status.json")
    return data if isinstance(data, dict) else {"status": "waiting"}


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, default=str) + "\n")


def append_event(state: Path, line: dict[str, Any]) -> None:
    """Append one events.jsonl line under an flock on events.lock (Gaia2's convention)."""
    with open(state / "events.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(state / "events.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, default=str) + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def fake_ret(event_id: str) -> str:
    """Deterministic return value of a write, so ``{{event_id}}`` placeholders resolve."""
    import hashlib  # here: the adapter and the init, which import this module too, never need it

    return hashlib.sha256(event_id.encode()).hexdigest()[:12]


def make_line(
    app: str, fn: str, args: dict[str, Any], write: bool, ret: Any, sim_t: str, event_id: str | None = None
) -> dict[str, Any]:
    """An events.jsonl line with Gaia2's key order: t, app, fn, args, w, ret, event_id, sim_t."""
    line: dict[str, Any] = {"t": time.time(), "app": app, "fn": fn, "args": args, "w": write, "ret": ret}
    if event_id:
        line["event_id"] = event_id
    if sim_t:
        line["sim_t"] = sim_t
    return line


READ_AT_MOST = 4 << 20
"""Bytes of a JSONL file read per call (the rest comes on the next)."""


def read_lines(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The whole JSON-object lines of ``path`` from ``offset`` on, and the offset after them."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(offset, 0))
            data = handle.read(READ_AT_MOST)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    records: list[dict[str, Any]] = []
    for raw in data[: end + 1].splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records, offset + end + 1


class JsonlTail:
    """Reads lines appended to a JSONL file since the last call (whole lines only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def read_new(self) -> list[dict[str, Any]]:
        records, self.offset = read_lines(self.path, self.offset)
        return records


def setup_logging(name: str, fmt: str, datefmt: str | None, files: list[Path], file_mode: str = "a") -> logging.Logger:
    """Logger writing to stderr plus the given files (files that cannot be opened are skipped)."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    formatter = logging.Formatter(fmt, datefmt)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    for path in files:
        try:
            handlers.append(logging.FileHandler(path, mode=file_mode, encoding="utf-8"))
        except OSError:
            continue
    for handler in handlers:
        handler.setFormatter(formatter)
        logger.addHandler(handler)
    logger.propagate = False
    return logger
