"""The user's pytest-gaia2 cache folder, kept warm between runs (the scenario index, the per-image
pre-flight facts, the compiled report templates), and the check that a folder in it is the user's own."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pytest-gaia2``, else ``~/.cache/pytest-gaia2``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-gaia2"


def _own(path: Path) -> bool:
    """A real folder (no link), owned by this user, that no group or other user may write."""
    found = os.lstat(path)
    return (
        stat.S_ISDIR(found.st_mode)
        and found.st_uid == os.geteuid()
        and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def private_folder(name: str) -> Path | None:
    """``cache_dir() / name``, created 0o700, when both it and the cache folder are the user's own
    (see :func:`_own`); None otherwise, and where that cannot be checked. For what the process
    will run as code (compiled templates): a folder another user could write into is not used."""
    if not hasattr(os, "geteuid"):
        return None
    root = cache_dir()
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        for folder in (root, root / name):
            folder.mkdir(mode=0o700, exist_ok=True)
            if not _own(folder):
                return None
    except OSError:
        return None
    return root / name
