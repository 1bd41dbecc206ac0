"""The results store: one run folder per pytest run, locked while written, nothing outside it touched.

Layout (gaia2-runner's inside each run folder, so its viewer and a team's scripts read it)::

    <output>/
      latest -> 20261201T091500Z-3f2a9c1d       (the newest run folder)
      20261201T091500Z-3f2a9c1d/
        run_config.json  sessions.jsonl  results.jsonl  summary.json  manifest.json
        <split>/<scenario_id>/            attempt 1: result.json, events.jsonl, logs, container-files.tar
        <split>/<scenario_id>/attempt_2/  a retry (or a resumed session's new attempt)
        run_<k>/<split>/<scenario_id>/    with --gaia2-repeat

Files are only ever created: an attempt writes into a folder no earlier attempt used, every
write goes through a temporary file and a rename, and every path is built from validated
parts and checked to resolve inside its parent before anything is written.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import socket
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_gaia2.store import names, redact
from pytest_gaia2.store.record import AttemptRecord, RecordError, is_judged, reusable
from pytest_gaia2.store.safejson import (
    JsonLimitError,
    JsonReadError,
    loads_bounded,
    open_regular,
    read_json_file,
    read_regular_file,
)

RESULT_FILE = "result.json"
RESULTS_FILE = "results.jsonl"
RUN_CONFIG_FILE = "run_config.json"
SESSIONS_FILE = "sessions.jsonl"
SUMMARY_FILE = "summary.json"
MANIFEST_FILE = "manifest.json"
LATEST = "latest"
RUN_MARKERS = (RUN_CONFIG_FILE, RESULTS_FILE)
"""The files that make a folder a run folder (see :func:`holds_a_run`)."""
LATEST_MAX_BYTES = 4096
LOCK_FILE = ".gaia2.lock"
HOLDER_FILE = ".gaia2.lock.json"
RECORD_MAX_BYTES = 64 * 2**20
"""result.json files are read back bounded: a container cannot make the host read a huge one."""
JSONL_MAX_BYTES = 1 << 30
"""A whole JSONL file (results.jsonl of a large run included) is read up to this size."""


def holds_a_run(folder: Path, *, both: bool = False) -> bool:
    """Whether ``folder`` is a run folder: it holds a run's files (a link by that name counts).
    One is enough where being wrong costs a refused write; ``both`` where being wrong would hide
    a project's own tests from pytest (``run_config.json`` alone is a common name)."""
    found = (os.path.lexists(folder / name) for name in RUN_MARKERS)
    return all(found) if both else any(found)


TRACE_FILE = "trace.jsonl"
"""The agent's model calls, one ``llm_call`` line each (the same name in the container and here)."""
STATUS_FILE = "daemon_status.json"
"""The daemon's own record of its last status and judgment (the same name in the container and here)."""
EVENTS_FILE = "events.jsonl"
JUDGMENTS_FILE = "daemon_judgments.jsonl"

STATE_DIR = "/var/gaia2/state"
STATE_FILES: dict[str, str] = {
    EVENTS_FILE: EVENTS_FILE,
    "judgments.jsonl": JUDGMENTS_FILE,
    STATUS_FILE: STATUS_FILE,
    "user_details.json": "user_details.json",
    "notifications.jsonl": "notifications.jsonl",
    "judge_decisions.jsonl": "judge_decisions.jsonl",
}
"""In-container state files the harness reads and the names gaia2-runner gives them (a judge's
audit trail as it is named); the rest are kept in ``container-files.tar``, never as files."""
LOG_DIR = "/tmp"
LOG_FILES: dict[str, str] = {
    "gaia2-eventd.log": "eventd.log",
    "entrypoint.log": "entrypoint.log",
    "gaia2-adapter.log": "adapter.log",
    "faketime.rc": "faketime.rc",
    TRACE_FILE: TRACE_FILE,
}
"""Log files in LOG_DIR -> their names in the attempt folder."""
OPENCLAW_LOG_DIR = "openclaw"
"""A folder in LOG_DIR kept whole, in ``container-files.tar``."""


def is_log_artifact(name: str) -> bool:
    """Whether a path below LOG_DIR is one of the logs an attempt keeps."""
    return name in LOG_FILES or name.startswith(f"{OPENCLAW_LOG_DIR}/")


_RUN_NAME = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")


class StoreError(Exception):
    """The results store cannot do what was asked; the message names the folder or file."""


class ResultsError(StoreError):
    """A results.jsonl that cannot be trusted whole: the message names the file, the line and the field."""


def safe_part(name: str) -> str:
    """A name that may become one path component: ids, splits, file stems.

    Refuses ``.``, ``..``, a leading dot, separators, anything past 128 characters and what
    Windows cannot name (:mod:`~pytest_gaia2.store.names`), so no derived path can leave its parent,
    pass the host's limits or break the run folder when it is copied to another system.
    """
    if names.problem(name) is not None:
        raise StoreError(
            f"{name!r} cannot be a folder name in the results store ({names.RULES}; "
            f"at most {names.MAX_PART} characters)"
        )
    return name


def inside(parent: Path, *parts: str) -> Path:
    """``parent/part/...`` after checking every part and that the result resolves inside ``parent``."""
    path = parent.joinpath(*(safe_part(part) for part in parts))
    root = parent.resolve()
    if not path.resolve().is_relative_to(root):
        raise StoreError(f"{path} resolves outside {root}; nothing was written")
    return path


# -- atomic files ------------------------------------------------------------------------------


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _new_temp(tmp: Path) -> int:
    """A new file at ``tmp``, opened for writing. Whatever already has the name (a file a
    crashed process left, or a link or FIFO planted in a hostile folder) is unlinked first and
    the file created exclusively, never through a link: a write never lands outside the folder."""
    tmp.unlink(missing_ok=True)
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)


def write_bytes(path: Path, data: bytes) -> None:
    """Atomic write: a hidden temporary of this thread, then a rename; on failure
    (disk full, no permission) the temporary is removed and one error names the file.

    The final bytes are masked here with every running run's secrets (:func:`redact.active`),
    whatever their encoding, so no writer can put a key on disk."""
    data = redact.active().redact_bytes(data)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(_new_temp(tmp), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, data: object) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str, allow_nan=False) + "\n")


def read_json(path: Path, max_bytes: int = RECORD_MAX_BYTES) -> Any:
    """Parsed JSON, or None when the file is missing, unreadable, too big, too deep, or not a
    regular file (a symbolic link included: the store writes none)."""
    try:
        return read_json_file(path, max_bytes=max_bytes, follow_symlinks=False)
    except JsonReadError:
        return None


def append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    """One line per call, flushed at once, so a crashed run keeps what it finished."""
    line = redact.active().redact_bytes(
        (json.dumps(record, ensure_ascii=False, default=str, allow_nan=False) + "\n").encode("utf-8")
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Never through a link (out of the run folder) nor into a FIFO without reader (a hang).
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"cannot append to {path}: {exc.strerror or exc}") from None


def numbered_lines(
    path: Path, max_line_bytes: int = RECORD_MAX_BYTES, max_bytes: int = JSONL_MAX_BYTES
) -> Iterator[tuple[int, Any | JsonLimitError]]:
    """(line number, parsed value or the reason it is refused) of a JSONL file, streamed.

    Only a regular file that is no symbolic link is opened (a FIFO cannot hang the reader, a
    link to /dev/zero is refused) and at most ``max_bytes`` of it read: a :class:`JsonReadError`
    says why not. Lines are read at most ``max_line_bytes + 1`` bytes at a time, so a line
    without end costs no more memory than that. Blank lines are skipped.
    """
    with open_regular(path, max_bytes=max_bytes, follow_symlinks=False) as handle:
        number, total = 0, 0
        while line := handle.readline(max_line_bytes + 1):
            number, total = number + 1, total + len(line)
            if total > max_bytes:
                raise JsonLimitError(f"larger than the {max_bytes} bytes allowed (grew while being read)")
            if len(line) > max_line_bytes:
                while not line.endswith(b"\n") and (line := handle.readline(max_line_bytes + 1)):
                    total += len(line)  # the rest of this line, however long, is skipped unkept
                yield number, JsonLimitError(f"longer than the {max_line_bytes} bytes allowed")
            elif line.strip():
                try:
                    yield number, loads_bounded(line, max_bytes=max_line_bytes)
                except JsonLimitError as exc:
                    yield number, exc


def json_lines(path: Path, max_line_bytes: int = RECORD_MAX_BYTES) -> Iterator[Any]:
    """Every parseable line of a JSONL file, streamed; torn, oversized or too deep lines are
    skipped, and a file that is missing or not a regular file (see :func:`numbered_lines`) reads
    as empty."""
    try:
        for _number, value in numbered_lines(path, max_line_bytes):
            if not isinstance(value, JsonLimitError):
                yield value
    except JsonReadError:
        return


def read_jsonl(path: Path, max_line_bytes: int = RECORD_MAX_BYTES) -> list[dict[str, Any]]:
    """Every complete object line."""
    return [value for value in json_lines(path, max_line_bytes) if isinstance(value, dict)]


# -- run folders -------------------------------------------------------------------------------


def run_folder_name(run_id: str, started: _dt.datetime) -> str:
    """``20261201T091500Z-3f2a9c1d``: sorts by start time, unique by run id."""
    return f"{started.astimezone(_dt.timezone.utc):%Y%m%dT%H%M%SZ}-{run_id[:8]}"


class RunFolder:
    """One run's folder: where its records and files go, and the lock that keeps it its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: Any = None
        self.skipped: list[Path] = []
        """The newer run folders :meth:`find` passed over: they hold no verdict."""

    # where things go

    @property
    def results(self) -> Path:
        return self.path / RESULTS_FILE

    def file(self, name: str) -> Path:
        return inside(self.path, name)

    def scenario_dir(self, split: str, scenario_id: str, repeat: int, repeats: int) -> Path:
        """``<split>/<id>`` or ``run_<k>/<split>/<id>``: gaia2-runner's layout."""
        parts = ([f"run_{repeat}"] if repeats > 1 else []) + [split, scenario_id]
        return inside(self.path, *parts)

    @staticmethod
    def attempt_dir(scenario_dir: Path, attempt: int) -> Path:
        return scenario_dir if attempt == 1 else inside(scenario_dir, f"attempt_{attempt}")

    @staticmethod
    def attempts(scenario_dir: Path) -> list[int]:
        """Attempt numbers that have a folder (attempt 1 is the scenario folder itself)."""
        if not scenario_dir.is_dir():
            return []
        found = [1]
        for entry in scenario_dir.iterdir():
            match = re.fullmatch(r"attempt_(\d+)", entry.name)
            if match and entry.is_dir() and not entry.is_symlink():
                found.append(int(match.group(1)))
        return sorted(found)

    def next_attempt(self, scenario_dir: Path) -> int:
        """The first attempt number whose folder no earlier attempt used: nothing is overwritten."""
        used = self.attempts(scenario_dir)
        return (used[-1] + 1) if used else 1

    def attempt_records(self, scenario_dir: Path) -> list[AttemptRecord]:
        """The records of the scenario's attempts that wrote one, every session's, in order."""
        records = [self.read_record(self.attempt_dir(scenario_dir, n)) for n in self.attempts(scenario_dir)]
        return [record for record in records if record is not None]

    def last_record(self, scenario_dir: Path) -> AttemptRecord | None:
        """The record of the scenario's latest attempt that wrote one; a judged one wins."""
        present = self.attempt_records(scenario_dir)
        judged = [record for record in present if is_judged(record)]
        return (judged or present)[-1] if present else None

    def final_record(self, scenario_dir: Path, scenario_sha256: str | None) -> AttemptRecord | None:
        """The scenario's latest record if it is its final verdict for the file of hash
        ``scenario_sha256`` (:func:`~pytest_gaia2.store.record.reusable`), else None: one question
        of the store, asked before a scenario runs."""
        record = self.last_record(scenario_dir)
        return record if reusable(record, scenario_sha256) else None

    @staticmethod
    def read_record(folder: Path) -> AttemptRecord | None:
        """The attempt's result.json, or None when it is missing, unreadable or not a valid record."""
        data = read_json(folder / RESULT_FILE)
        if not isinstance(data, dict):
            return None
        try:
            return AttemptRecord.from_json(data)
        except RecordError:
            return None

    @staticmethod
    def write_record(folder: Path, record: AttemptRecord) -> None:
        """The attempt's result.json: the one place a record becomes that file."""
        write_json(folder / RESULT_FILE, record.to_json())

    def append_result(self, record: AttemptRecord) -> None:
        """The record's results.jsonl line, appended as soon as its verdict is known, so a
        crashed run keeps what it finished (:meth:`rewrite_results` tidies the file at the end)."""
        append_jsonl(self.results, record.to_json())

    def records(self, strict: bool = False) -> Iterator[AttemptRecord]:
        """Every stored record of the run's results.jsonl, last line per key.

        ``strict`` (the console command): the file must be a regular file within the bounds and
        every line a valid record, else one :class:`ResultsError` names the file, line and
        field, so no result vanishes unsaid. Otherwise (a run resuming or drawing its pages)
        bad lines are skipped and a missing or unreadable file has no records.
        """
        latest: dict[str, AttemptRecord] = {}
        if not os.path.lexists(self.results):  # a run that has finished no scenario yet
            return
        try:
            for number, row in numbered_lines(self.results):
                try:
                    if isinstance(row, JsonLimitError):
                        raise RecordError(None, str(row))
                    record = AttemptRecord.from_json(row)
                except RecordError as exc:
                    if strict:
                        raise ResultsError(f"{self.results}: line {number}: {exc}") from None
                    continue
                latest[record.key] = record
        except JsonReadError as exc:
            if strict:
                raise ResultsError(f"{self.results}: {exc}") from None
        yield from latest.values()

    def rewrite_results(self, records: Iterable[AttemptRecord]) -> None:
        """One line per scenario key in a fixed order, written atomically at the end of a run."""
        by_key = {record.key: record for record in records}
        lines = "".join(
            json.dumps(by_key[key].to_json(), ensure_ascii=False, default=str, allow_nan=False) + "\n"
            for key in sorted(by_key)
        )
        write_text(self.results, lines)

    # lifetime

    @classmethod
    def create(cls, output: Path, run_id: str, started: _dt.datetime) -> RunFolder:
        """A new, empty run folder under ``output`` and the ``latest`` pointer to it."""
        try:
            output.mkdir(parents=True, exist_ok=True)
            path = output / run_folder_name(run_id, started)
            path.mkdir()
        except OSError as exc:
            raise StoreError(f"cannot create a run folder in --gaia2-output {output}: {exc.strerror or exc}") from None
        point_latest(output, path.name)
        return cls(path)

    @classmethod
    def find(cls, output: Path, named: str | Path | None) -> RunFolder:
        """The run folder to resume: the one named, else the latest under ``output`` that holds
        a verdict (``latest``, then the newest first), else the latest: a run that ended before
        any verdict (a crash) is never continued in place of one whose verdicts are paid for.
        ``skipped`` lists the newer run folders passed over.

        A folder of pytest-gaia2 0.1 (results directly in ``--gaia2-output``) is a run
        folder too: it has run_config.json at its top.
        """
        if named is not None:
            path = Path(named)
            if not (path / RUN_CONFIG_FILE).is_file():
                raise StoreError(f"--gaia2-resume={named}: {path} is not a run folder (no {RUN_CONFIG_FILE})")
            return cls(path)
        latest = resolve_latest(output)
        newest = (
            sorted(
                (entry for entry in output.iterdir() if _RUN_NAME.fullmatch(entry.name)),
                reverse=True,
            )
            if output.is_dir()
            else []
        )
        candidates: list[RunFolder] = []
        for path in [*([latest] if latest is not None else []), *newest, output]:
            if (path / RUN_CONFIG_FILE).is_file() and all(not same_folder(path, c.path) for c in candidates):
                candidates.append(cls(path))
        if not candidates:
            raise StoreError(f"--gaia2-resume: no run folder to resume in --gaia2-output {output}")
        chosen = next((folder for folder in candidates if folder.holds_a_verdict()), candidates[0])
        chosen.skipped = [folder.path for folder in candidates[: candidates.index(chosen)]]
        return chosen

    def holds_a_verdict(self) -> bool:
        """Whether a judged verdict (pass or fail) is stored: one that resuming reuses."""
        return any(is_judged(record) for record in self.records())

    @classmethod
    def existing(cls, path: str | Path) -> RunFolder:
        """A finished or running run folder named on a command line: the folder itself, or an
        output folder whose ``latest`` (else newest) run is meant."""
        path = Path(path)
        if (path / RUN_CONFIG_FILE).is_file():
            return cls(path)
        latest = resolve_latest(path) if path.is_dir() else None
        if latest is not None and (latest / RUN_CONFIG_FILE).is_file():
            return cls(latest)
        raise StoreError(f"{path} is not a run folder (no {RUN_CONFIG_FILE})")

    def lock(self, holder: Mapping[str, Any]) -> None:
        """Hold the folder for this run; a second run into it stops at once, naming the holder."""
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.path / LOCK_FILE), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            held = read_json(self.path / HOLDER_FILE) or {}
            who = (
                ", ".join(f"{key} {held[key]}" for key in ("pid", "host", "session_id", "started_at") if key in held)
                or "another process"
            )
            raise StoreError(
                f"run folder {self.path} is in use by {who}; wait for that run to end or resume another folder"
            ) from None
        except OSError as exc:
            raise StoreError(f"cannot lock run folder {self.path}: {exc.strerror or exc}") from None
        self._lock = lock
        write_json(self.path / HOLDER_FILE, {**holder, "pid": os.getpid(), "host": socket.gethostname()})

    def unlock(self) -> None:
        if self._lock is not None:
            (self.path / HOLDER_FILE).unlink(missing_ok=True)
            self._lock.release()
            self._lock = None


def same_folder(one: Path, other: Path) -> bool:
    """Whether two paths name the same folder (through links and relative parts)."""
    try:
        return one.resolve() == other.resolve()
    except (OSError, RuntimeError):
        return False


def point_latest(output: Path, name: str) -> None:
    """``<output>/latest`` -> the newest run folder; a symlink where the OS allows it, else a
    one-line file. A ``latest`` that is not ours (a real folder or file) is left alone."""
    link = output / LATEST
    if link.exists() and not link.is_symlink() and not link.is_file():
        return
    tmp = output / f".{LATEST}.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)
        os.symlink(name, tmp, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)
        if not link.is_symlink():
            write_text(link, name + "\n")


def resolve_latest(output: Path) -> Path | None:
    """The folder ``latest`` points at (symlink or one-line file), if any."""
    link = output / LATEST
    if link.is_symlink():
        return output / os.readlink(link)
    try:  # a one-line file: bounded, regular, never a FIFO that would hang the reader
        name = read_regular_file(link, max_bytes=LATEST_MAX_BYTES, follow_symlinks=False)
    except JsonReadError:
        return None
    return output / name.decode("utf-8", errors="replace").strip()
