"""What the benchmarks that measure this checkout against another revision share: the two
options, the other revision's package exported from git, and runs that alternate after a
warm-up (these machines are noisy: a figure is only compared with one measured beside it)."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def parser(doc: str, against: str = "main", runs: int = 9) -> argparse.ArgumentParser:
    """An argument parser with ``--against REV`` and ``--runs N``, described by ``doc``'s first line."""
    made = argparse.ArgumentParser(description=doc.splitlines()[0])
    made.add_argument("--against", default=against, help=f"the revision compared with (default: {against})")
    made.add_argument("--runs", type=int, default=runs, help=f"runs of each, alternating (default: {runs})")
    return made


def exported(revision: str, folder: Path, paths: tuple[str, ...] = ("pytest_gaia2",)) -> Path:
    """``revision``'s package (or other ``paths``), exported into ``folder`` (made here)."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", revision, *paths], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def alternating(runs: int, theirs: Callable[[], T], ours: Callable[[], T]) -> tuple[list[T], list[T]]:
    """Each measured ``runs`` times, one after the other, after one unmeasured run of each
    (bytecode, the page cache and the package's own caches warm)."""
    theirs(), ours()
    measured: tuple[list[T], list[T]] = ([], [])
    for _ in range(runs):
        measured[0].append(theirs())
        measured[1].append(ours())
    return measured
