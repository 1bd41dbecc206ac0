"""Collect: what an attempt keeps from its container, copied into the attempt folder.

The state folder and the logs are streamed out with the per-file and per-scenario caps of
:mod:`limits`, masked on the way, on every path (a verdict, a fault, an interrupt). Every
archive the engine makes costs a mount of the container's file system (about 35 ms), so
the logs come in one archive of their folder; when that folder holds more than
LOG_DIR_IGNORE_LIMIT of other files (it is an agent's scratch space too), each log is
fetched on its own instead.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from . import store
from .limits import LOG_DIR_IGNORE_LIMIT, Limits
from .redact import Redactor

if TYPE_CHECKING:
    from .archive import CopyReport
    from .container import Container


def collect(container: Container | None, folder: Path, limits: Limits, redactor: Redactor) -> list[dict[str, Any]]:
    """Copy the state folder, the logs and the container's output into ``folder``; the files skipped."""
    if container is None:
        return []
    budget = limits.max_collect_size
    skipped: list[dict[str, Any]] = []

    def copy(path: str, rename: Mapping[str, str], prefix: str = "", **only: Any) -> CopyReport:
        nonlocal budget
        report = container.copy_out(
            path, folder, max_file_bytes=limits.max_file_size, max_total_bytes=max(0, budget),
            rename=rename, prefix=prefix, transform=redactor.redact_bytes, overlap=redactor.longest, **only,
        )
        budget -= report.total_bytes
        skipped.extend({"path": posixpath.join(posixpath.dirname(path), name), "reason": reason}
                       for name, reason in report.skipped)
        return report

    copy(store.STATE_DIR, store.STATE_FILES, "state")
    logs = copy(store.LOG_DIR, store.LOG_FILES, wanted=store.is_log_artifact, ignore_limit=LOG_DIR_IGNORE_LIMIT)
    if logs.gave_up:
        written = {name for name, _ in logs.written}
        for name, target in store.LOG_FILES.items():
            if target not in written:
                copy(f"{store.LOG_DIR}/{name}", {name: target})
        copy(f"{store.LOG_DIR}/{store.OPENCLAW_LOG_DIR}", {}, store.OPENCLAW_LOG_DIR)
    container.save_logs(folder / "container.log", max_bytes=limits.max_file_size,
                        transform=redactor.redact_bytes, overlap=redactor.longest)
    return skipped
