"""The output folder: where each scenario's files go, result.json and results.jsonl.

The layout follows upstream's runner (``<out>/<split>/<scenario_id>/``, ``run_k/`` for
pass@k), so tools written for upstream output read ours unchanged. Everything is UTF-8
and written atomically: a crash never leaves half a file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Mapping

STATE_DIR = "/var/gaia2/state"

# In-container state files and the names upstream's runner gives them on the host.
STATE_FILES: dict[str, str] = {
    "events.jsonl": "events.jsonl",
    "judgments.jsonl": "daemon_judgments.jsonl",
    "daemon_status.json": "daemon_status.json",
    "user_details.json": "user_details.json",
    "notifications.jsonl": "notifications.jsonl",
}
# Logs and traces outside the state folder.
LOG_FILES: dict[str, str] = {
    "/tmp/gaia2-eventd.log": "eventd.log",
    "/tmp/entrypoint.log": "entrypoint.log",
    "/tmp/gaia2-adapter.log": "adapter.log",
    "/tmp/faketime.rc": "faketime.rc",
    "/tmp/trace.jsonl": "trace.jsonl",
}
OPENCLAW_LOG_DIR = "/tmp/openclaw"
RESULT_FILE = "result.json"
RESULTS_FILE = "results.jsonl"


def scenario_dir(output: Path, split: str, scenario_id: str, run: int, repeat: int) -> Path:
    """``<out>/<split>/<id>``, or ``<out>/run_<k>/<split>/<id>`` when scenarios are repeated."""
    base = output / f"run_{run}" if repeat > 1 else output
    return base / split / scenario_id


def write_text(path: Path, text: str) -> None:
    """Atomic UTF-8 write: a hidden temporary (per process, so two writers never share one), then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_json(path: Path) -> Any:
    """Parsed JSON, or None when the file is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    """One line per call, flushed at once, so a crashed run keeps what it finished."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete line; a torn last line from a crash is skipped."""
    records: list[dict[str, Any]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return records
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def rewrite_results(path: Path) -> None:
    """Leave one line per (split, scenario, run), the last one written, in a fixed order.

    Lines are appended as verdicts arrive, so a crash keeps what finished; a resumed run then
    appends its reused verdicts after the earlier session's lines. At the end of a run the file
    is rewritten (atomically) to read like that of one uninterrupted run.
    """
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for record in read_jsonl(path):
        latest[(str(record.get("split")), str(record.get("scenario_id")), int(record.get("run") or 1))] = record
    if latest:
        write_text(path, "".join(json.dumps(latest[key], ensure_ascii=False, default=str) + "\n"
                                 for key in sorted(latest)))


def set_aside_previous_attempt(folder: Path, attempt: int) -> None:
    """Keep an errored attempt's files under ``attempt_<n>/`` before the next attempt writes."""
    if not folder.is_dir():
        return
    keep = folder / f"attempt_{attempt}"
    keep.mkdir(parents=True, exist_ok=True)
    for entry in list(folder.iterdir()):
        if entry.name.startswith("attempt_"):
            continue
        shutil.move(str(entry), str(keep / entry.name))


def save_collected(
    folder: Path,
    state_tree: Mapping[str, bytes],
    logs: Mapping[str, bytes],
    redact: Callable[[str], str],
) -> list[str]:
    """Write what was copied out of the container; names of the files written.

    ``state_tree`` is keyed by archive path (``state/events.jsonl``); known files get
    upstream's names at the top, everything else keeps its place under ``state/``.
    """
    written: list[str] = []

    def put(relative: str, content: bytes) -> None:
        write_text(folder / relative, redact(content.decode("utf-8", errors="replace")))
        written.append(relative)

    for archive_path, content in sorted(state_tree.items()):
        parts = PurePosixPath(archive_path).parts[1:]  # drop the archive's top folder
        if not parts:
            continue
        relative = "/".join(parts)
        put(STATE_FILES.get(relative, f"state/{relative}"), content)
    for name, content in sorted(logs.items()):
        put(name, content)
    return written


def events_of(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(folder / "events.jsonl")


def last_agent_response(events: Iterable[Mapping[str, Any]]) -> str:
    """The content of the last turn boundary the agent wrote, as upstream's fallback does."""
    response = ""
    for event in events:
        if event.get("app") == "AgentUserInterface" and event.get("fn") == "send_message_to_user":
            args = event.get("args") or {}
            if isinstance(args, Mapping) and args.get("content") is not None:
                response = str(args["content"])
    return response
