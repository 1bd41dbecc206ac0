"""Collect: what an attempt keeps from its container, copied into the attempt folder.

The state folder and the logs are streamed out with the per-file and per-scenario caps of
:mod:`limits`, masked on the way, on every path (a verdict, a fault, an interrupt). Only the
evidence files the harness reads become files, under the names it gives them; every other file
is a member of one archive, ``container-files.tar`` (:mod:`~pytest_gaia2.store.kept`), named by
its path in the container, so nothing a container plants is a file a later tool obeys. Every
archive the engine makes costs a mount of the container's file system (about 35 ms), so
the state folder and the logs come in one archive each; the files the harness needs (the
state files and logs of :mod:`store`) are taken whatever came before them, and when an
archive was not read to its end (too many entries, a broken stream, more than
LOG_DIR_IGNORE_LIMIT of an agent's scratch files beside the logs) each of them that was not
met is fetched on its own. Every file not copied, and every cut, is in the list returned.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.engine.archive import MAX_LISTED, Keeper
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.kept import CONTAINER_FILES
from pytest_gaia2.store.limits import LOG_DIR_IGNORE_LIMIT, Limits
from pytest_gaia2.store.redact import Redactor

if TYPE_CHECKING:
    from pytest_gaia2.engine.archive import CopyReport
    from pytest_gaia2.engine.container import Container

CONTAINER_LOG = "container.log"


def _the_file_itself(below_top: str) -> bool:
    """A single-file archive's entry has nothing below its top; a folder's entries do."""
    return below_top == ""


def collect(container: Container | None, folder: Path, limits: Limits, redactor: Redactor) -> list[dict[str, Any]]:
    """Copy the evidence files and the container's output into ``folder`` and keep the other
    files of the state folder and the logs in its :data:`CONTAINER_FILES`; the files skipped
    and the cuts, at most :data:`MAX_LISTED` named per copy plus a count of the rest."""
    if container is None:
        return []
    with Keeper(folder / CONTAINER_FILES, redactor) as keep:
        return _collect(container, folder, limits, redactor, keep)


def _collect(
    container: Container, folder: Path, limits: Limits, redactor: Redactor, keep: Keeper
) -> list[dict[str, Any]]:
    budget = limits.max_collect_size
    skipped: list[dict[str, Any]] = []

    def copy(path: str, rename: Mapping[str, str], **only: Any) -> CopyReport:
        nonlocal budget
        report = container.copy_out(
            path,
            folder,
            max_file_bytes=limits.max_file_size,
            max_total_bytes=max(0, budget),
            rename=rename,
            keep=keep,
            prefix=path.lstrip("/"),
            redactor=redactor,
            **only,
        )
        budget -= report.total_bytes
        skipped.extend(
            {"path": posixpath.join(posixpath.dirname(path), name), "reason": reason} for name, reason in report.skipped
        )
        if report.unlisted:
            skipped.append(
                {
                    "path": path,
                    "count": report.unlisted,
                    "reason": f"{report.unlisted} more files not copied (only the first {MAX_LISTED} are named)",
                }
            )
        skipped.extend({"path": path, "reason": note} for note in report.notes)
        return report

    def fetch_missing(folder_path: str, names: Mapping[str, str], report: CopyReport) -> None:
        """Each needed file the archive did not reach, fetched on its own (absent ones cost one
        call); only the file itself: a folder in its place brings nothing into ``folder``."""
        for name, target in names.items():
            if name not in report.met:
                copy(f"{folder_path}/{name}", {name: target}, wanted=_the_file_itself)

    state = copy(store.STATE_DIR, store.STATE_FILES)
    if state.notes:
        fetch_missing(store.STATE_DIR, store.STATE_FILES, state)
    logs = copy(store.LOG_DIR, store.LOG_FILES, wanted=store.is_log_artifact, ignore_limit=LOG_DIR_IGNORE_LIMIT)
    if logs.gave_up or logs.notes:
        fetch_missing(store.LOG_DIR, store.LOG_FILES, logs)
        if logs.gave_up:
            copy(f"{store.LOG_DIR}/{store.OPENCLAW_LOG_DIR}", {})
    for reason in container.save_logs(folder / CONTAINER_LOG, max_bytes=limits.max_file_size, redactor=redactor):
        skipped.append({"path": CONTAINER_LOG, "reason": reason})
    return skipped
