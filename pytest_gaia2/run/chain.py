"""State carried along a sequential chain (``--gaia2-sequence``), checkpointed in the run folder.

After each *judged* scenario of a chain, the agent's home and the app state its container
left are copied out through the engine API into ``chains/<chain>/<position>/`` of the run
folder (masked and bounded like every copy out; the folder appears only once complete), as
members ``home/...`` and ``app_state/...`` of one archive (``container-files.tar``), never as
files a later tool could obey. The next scenario's container receives the latest checkpoint
before an earlier position, streamed from that archive: an
errored scenario writes none, so it never advances the chain. A resumed run restarts each
chain at its first scenario without a verdict, from the checkpoint before it, and runs the
scenarios after it again (their verdicts came from the state it replaces).

In the container, the home is ``/home/agent`` and the app state the ``<app>.json`` files of
the state folder; carried app state goes to ``/var/gaia2/carried_state/``, which the image's
init lays over the scenario's own initial state (the reference image does).
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pytest_gaia2.engine.archive import ArchivedFile, FileContent, Keeper
from pytest_gaia2.store.folder import inside
from pytest_gaia2.store.kept import CONTAINER_FILES, UNREADABLE, regular_members

if TYPE_CHECKING:
    from pytest_gaia2.engine.container import Container
    from pytest_gaia2.store.limits import Limits
    from pytest_gaia2.store.redact import Redactor

CHAINS_DIR = "chains"
HOME = "/home/agent"
STATE = "/var/gaia2/state"
CARRIED_STATE = "/var/gaia2/carried_state"
PARTS = {"home": HOME, "app_state": CARRIED_STATE}
"""Checkpoint part -> where the next container receives it."""
NOT_APP_STATE = frozenset({"daemon_status.json", "app_class_map.json", "user_details.json"})
"""Files of the state folder that describe one scenario's run, not the apps."""
FILE_MODE = 0o644


def checkpoint_dir(run_root: Path, chain: str, position: int) -> Path:
    """Where the state carried out of ``position`` of ``chain`` is kept."""
    return inside(run_root, CHAINS_DIR, chain, f"{position:04d}")


def _app_state(name: str) -> bool:
    return "/" not in name and name.endswith(".json") and name not in NOT_APP_STATE


def checkpoint(
    container: Container, run_root: Path, chain: str, position: int, limits: Limits, redactor: Redactor
) -> list[str]:
    """Copy the home and app state out of a judged scenario's container; what is missing and why.

    Written under a temporary name and renamed, so a checkpoint folder is always whole."""
    final = checkpoint_dir(run_root, chain, position)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    budget = limits.max_collect_size
    problems: list[str] = []
    with Keeper(partial / CONTAINER_FILES, redactor) as keep:
        for part, source, wanted in (("home", HOME, None), ("app_state", STATE, _app_state)):
            report = container.copy_out(
                source,
                partial,
                max_file_bytes=limits.max_file_size,
                max_total_bytes=max(0, budget),
                keep=keep,
                prefix=part,
                redactor=redactor,
                wanted=wanted,
                ignore_limit=limits.max_collect_size,
            )
            budget -= report.total_bytes
            problems += [f"{source}: {name}: {why}" for name, why in report.skipped] + report.notes
            if report.unlisted:
                problems.append(f"{source}: {report.unlisted} more files not copied")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return problems


def intact(run_root: Path, chain: str, position: int) -> bool:
    """Whether the scenarios up to ``position`` all left their checkpoints: only then is a verdict
    stored for ``position`` one of the chain's current state (a judged scenario always leaves
    one; :func:`forget_after` removes those an earlier scenario's new run made stale)."""
    return all(checkpoint_dir(run_root, chain, earlier).is_dir() for earlier in range(position + 1))


def forget_after(run_root: Path, chain: str, position: int) -> None:
    """A scenario runs again: the checkpoints after it came from the state it is about to
    replace, so they go (their scenarios run again too, see :func:`intact`)."""
    folder = inside(run_root, CHAINS_DIR, chain)
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        number = entry.name.removesuffix(".partial")
        if number.isdigit() and int(number) > position and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def latest(run_root: Path, chain: str, position: int) -> Path | None:
    """The checkpoint a scenario at ``position`` starts from: the latest of an earlier position."""
    for earlier in range(position - 1, -1, -1):
        found = checkpoint_dir(run_root, chain, earlier)
        if found.is_dir() and not found.is_symlink():
            return found
    return None


def carried_files(checkpoint: Path, max_file_bytes: int, max_total_bytes: int) -> list[tuple[str, FileContent, int]]:
    """The checkpoint's kept files as ``(container path, content, mode)`` for the next launch,
    each streamed from the checkpoint's archive when the container is made (never extracted);
    members outside ``home/`` and ``app_state/`` or over ``max_file_bytes`` are left out, the
    total stays within ``max_total_bytes``, and a damaged archive carries what was read of it."""
    archive = checkpoint / CONTAINER_FILES
    files: list[tuple[str, FileContent, int]] = []
    total = 0
    try:
        with regular_members(archive) as members:
            for member, _ in members:
                part, _, rest = member.name.partition("/")
                relative = PurePosixPath(rest)
                if part not in PARTS or not rest or relative.is_absolute() or ".." in relative.parts:
                    continue
                if member.size > max_file_bytes:
                    continue
                total += member.size
                if total > max_total_bytes:
                    break
                content = ArchivedFile(archive, member.offset_data, member.size)
                files.append((str(PurePosixPath(PARTS[part], relative)), content, FILE_MODE))
    except UNREADABLE:  # an absent archive (nothing was left to carry) or a damaged one
        pass
    return files
