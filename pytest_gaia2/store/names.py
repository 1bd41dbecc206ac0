"""Which names may become a folder of the results store on every system users run it on.

Scenario ids and split names become path components (``<run>/<split>/<id>/``), and a run
folder is read on Linux, macOS and Windows (Docker Desktop). A name is accepted only when
it is the same, valid and distinct folder everywhere: ASCII letters, digits, ``_``, ``.``
and ``-``; no leading dot or dash; no trailing dot (Windows drops it: ``a.`` is ``a``); not
one of Windows' device names (``CON``, ``nul``, ``COM1``, ``aux.txt``: the part before the
first dot is what Windows reserves, in any case). Case-insensitive file systems (NTFS,
APFS) fold case, so names are told apart by :func:`folder_key`, never by their spelling.
"""

from __future__ import annotations

import fnmatch
import re

MAX_PART = 128
"""Characters in one path component: far under NAME_MAX (255 bytes) on every system."""

_ALLOWED = re.compile(r"[A-Za-z0-9_.-]+")
_DEVICE = re.compile(r"(CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])", re.IGNORECASE)
RULES = (
    "letters, digits, '_', '.', '-'; no leading '.' or '-', no trailing '.'; "
    "not a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension)"
)
"""The rules in one line, for messages."""
RUNNABLE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pyz", ".pth")
DOCTEST_GLOB = "test*.txt"
"""pytest's default ``--doctest-glob``: text files its doctest plugin collects and runs."""


def runnable(name: str) -> bool:
    """Whether Python or pytest would run a file of this name found in a run folder: a module
    (any pytest that walks the folder imports a ``conftest.py`` and runs a ``test_*.py``), a
    path file, or a doctest file pytest collects by default. Such a file from a container is
    never written on the host. Case-folded: macOS and Windows find ``CONFTEST.PY`` as well."""
    folded = name.rsplit("/", 1)[-1].casefold()
    return folded.endswith(RUNNABLE_SUFFIXES) or fnmatch.fnmatchcase(folded, DOCTEST_GLOB)


def _shown(name: str) -> str:
    text = repr(name)
    return text if len(text) <= 50 else f"{text[:50]}..."


def problem(name: str, limit: int = MAX_PART) -> str | None:
    """Why ``name`` cannot be a folder on Linux, macOS and Windows alike, or None when it can."""
    shown = _shown(name)
    if len(name) > limit:
        return f"{shown} is {len(name)} characters long, more than the {limit} allowed"
    if not _ALLOWED.fullmatch(name):
        return f"{shown} may only hold letters, digits, '_', '.' and '-'"
    if name[0] in ".-":
        return f"{shown} starts with {name[0]!r} (hidden names, '.', '..' and option-like names cannot name a folder)"
    if name.endswith("."):
        return f"{shown} ends with '.', which Windows drops (it would name the same folder as {name.rstrip('.')!r})"
    if _DEVICE.fullmatch(name.split(".", 1)[0]):
        return f"{shown} is a Windows device name ({name.split('.', 1)[0].upper()}): no folder can have it there"
    return None


def folder_key(name: str) -> str:
    """What a case-insensitive file system compares: two names with one key share one folder."""
    return name.casefold()


# -- Gaia2's split names and what a scenario id says --------------------------------------------

SPLITS: tuple[str, ...] = ("execution", "search", "adaptability", "time", "ambiguity")
_UNIVERSE = re.compile(r"universe_(\d+)")
_NOT_IN_MARKER = re.compile(r"[^A-Za-z0-9_]")


def split_marker(split: str) -> str:
    """The split's marker, ``search_split``: any folder name becomes a valid marker name."""
    return f"{_NOT_IN_MARKER.sub('_', split)}_split"


def universe_of(scenario_id: str) -> str | None:
    """``universe_21`` for ``scenario_universe_21_5bftlu``: Gaia2 ids carry their universe."""
    match = _UNIVERSE.search(scenario_id)
    return f"universe_{match.group(1)}" if match else None
