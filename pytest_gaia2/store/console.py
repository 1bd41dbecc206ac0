"""What the console command's stages share below it: its one-line error, and the new files it
writes outside every run folder (a comparison, a plan, an export), never over a file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_gaia2.store import redact
from pytest_gaia2.store.folder import holds_a_run


class CommandError(Exception):
    """Bad input to a subcommand: printed as one line, exit status 2 (so is a StoreError)."""


def enclosing_run(path: Path) -> Path | None:
    """The run folder ``path`` (resolved) is in or is, if any: the nearest folder holding a run's files."""
    for folder in (path, *path.parents):
        if holds_a_run(folder):
            return folder
    return None


def check_new_place(option: str, path: Path, inputs: Sequence[Path] = ()) -> Path:
    """``path`` made absolute (links in its folders resolved), after checking that nothing exists
    there and that it is inside no run folder, no ``inputs`` folder: one error naming ``option``."""
    target = path.parent.resolve() / path.name
    if os.path.lexists(target):
        raise CommandError(f"{option} {path}: already exists; the console command never overwrites a file")
    run = enclosing_run(target.parent) or next((root for root in inputs if target.is_relative_to(root)), None)
    if run is not None:
        raise CommandError(
            f"{option} {path}: inside run folder {run}; the console command never writes "
            "into a run folder (choose a path outside it)"
        )
    return target


def create_file(option: str, path: Path, data: bytes, inputs: Sequence[Path] = ()) -> None:
    """Write a new file outside every run folder (see :func:`check_new_place`): created exclusively,
    so a file that appeared meanwhile is not replaced either."""
    target = check_new_place(option, path, inputs)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise CommandError(f"{option} {path}: cannot create it: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(redact.active().redact_bytes(data))
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise CommandError(f"{option} {path}: cannot write it: {exc.strerror or exc}") from None
