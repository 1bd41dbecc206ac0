"""The archive that holds what a container left beside the evidence files, read back bounded.

A container's files other than the evidence the harness reads are kept as members of one tar
archive (``container-files.tar`` in an attempt folder and in each chain checkpoint), never as
files: no tool a person later runs in a run folder (pytest, python, git, a shell) reads a
member as its configuration. The archive lives in a run folder, so it is read here as hostile
input: only a regular file (not through a link), a bounded number of headers, a bounded
number of bytes of any member, and no content that makes reading raise.
"""

from __future__ import annotations

import os
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pytest_gaia2.store.safejson import JsonReadError, open_regular

CONTAINER_FILES = "container-files.tar"
"""The archive of a container's files that are not evidence, beside the evidence files."""
MAX_MEMBERS = 10_000
"""Headers read of a kept archive at most: the harness writes no more (bounds time)."""
LISTED = 200
"""Members a page lists by name; past it they are only counted."""
SHOWN_BYTES = 64 << 10
"""A text member up to this size may be shown on a page (cut further by the page's budget)."""
UNREADABLE = (tarfile.TarError, OSError, ValueError, EOFError, OverflowError, JsonReadError)
"""What reading a damaged or forged archive may raise."""


def printable(name: str) -> str:
    """A hostile name with every character that is not printable (and every byte that is not
    UTF-8) escaped as ``\\xNN``: safe on a terminal and in a page."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(char if char.isprintable() else f"\\x{ord(char):02x}" for char in text)


@contextmanager
def regular_members(path: Path) -> Iterator[Iterator[tuple[tarfile.TarInfo, IO[bytes]]]]:
    """The regular members of the archive at ``path`` with a stream of each one's bytes, in
    order, at most :data:`MAX_MEMBERS` headers read; a member's stream is valid until the next.
    Raises one of :data:`UNREADABLE` when the file is not a regular file or not an archive;
    the iteration too, when the archive is damaged mid-way."""
    with open_regular(path, max_bytes=sys.maxsize, follow_symlinks=False) as stream:
        with tarfile.open(fileobj=stream, mode="r:") as archive:

            def members() -> Iterator[tuple[tarfile.TarInfo, IO[bytes]]]:
                for _ in range(MAX_MEMBERS):
                    member = archive.next()
                    if member is None:
                        return
                    archive.members.clear()  # type: ignore[attr-defined]  # only the one at hand is needed
                    if member.isreg():
                        source = archive.extractfile(member)
                        if source is not None:
                            yield member, source

            yield members()


@dataclass
class Member:
    """One member as a page shows it: printable name, size, and its text when short and UTF-8."""

    name: str
    size: int
    text: str | None = None


@dataclass
class Listing:
    """The first :data:`LISTED` members of a kept archive, how many more, and why not all."""

    members: list[Member] = field(default_factory=list)
    more: int = 0
    problem: str | None = None


def listing(path: Path, *, listed: int | None = None, shown_bytes: int = SHOWN_BYTES) -> Listing:
    """The members of the kept archive at ``path`` (the first ``listed``, :data:`LISTED` by
    default): never raises, whatever the file holds; memory stays at ``shown_bytes`` per
    member, time at :data:`MAX_MEMBERS` headers."""
    listed = LISTED if listed is None else listed
    found = Listing()
    try:
        with regular_members(path) as members:
            for member, source in members:
                if len(found.members) >= listed:
                    found.more += 1
                    continue
                text = None
                if member.size <= shown_bytes:
                    try:
                        text = source.read(shown_bytes).decode("utf-8")
                    except UnicodeDecodeError:
                        text = None
                found.members.append(Member(printable(member.name), member.size, text))
    except UNREADABLE as exc:
        found.problem = printable(f"{type(exc).__name__}: {exc}")[:300]
    return found
