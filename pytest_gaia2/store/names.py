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
import unicodedata

MAX_PART = 128
"""Characters in one path component: far under NAME_MAX (255 bytes) on every system."""

_ALLOWED = re.compile(r"[A-Za-z0-9_.-]+")
_DEVICE = re.compile(r"(CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])", re.IGNORECASE)
RULES = (
    "letters, digits, '_', '.', '-'; no leading '.' or '-', no trailing '.'; "
    "not a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension)"
)
"""The rules in one line, for messages."""
RUNNABLE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pyz", ".pth", ".so", ".pyd", ".dylib", ".dll")
"""Python's sources, bytecode and path files, and native libraries: ``import json`` in a folder
holding ``json.cpython-311-x86_64-linux-gnu.so`` runs that library's code."""
CONFIG_NAMES = frozenset({"pytest.toml", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"})
"""Files pytest reads as its configuration in the folder it is started in or given
(``addopts = -p plugin`` loads code, ``--basetemp`` is emptied)."""
DOCTEST_GLOB = "test*.txt"
"""pytest's default ``--doctest-glob``: text files its doctest plugin collects and runs."""


NTFS_DATA = "::$DATA"
"""The default data stream's suffix: NTFS opens ``a.py::$DATA`` as ``a.py``."""


def spellings(name: str) -> tuple[str, ...]:
    """A name as this system and as Windows or macOS may resolve it, case-folded: also without
    the trailing dots and spaces Windows drops and the format characters (zero-width, direction
    marks) HFS+ ignored, NFKC-normalised, and up to an NTFS stream (``a.py::$DATA`` is ``a.py``),
    also when the name before the stream holds a colon itself (``:.py::$DATA``)."""

    def tidy(text: str) -> str:
        text = "".join(char for char in text if unicodedata.category(char) != "Cf").rstrip(". ")
        return unicodedata.normalize("NFKC", text).casefold()

    unstreamed = name[: -len(NTFS_DATA)] if name.casefold().endswith(NTFS_DATA.casefold()) else name
    return name.casefold(), tidy(name), tidy(name.split(":", 1)[0]), tidy(unstreamed)


def hazard(name: str) -> str | None:
    """Why a file or folder of this name must not be written into a run folder, or None. A run
    folder is where people and tools go afterwards: ``python`` there imports its modules and
    native libraries, ``pytest`` there (or given a path in it) reads its configuration, imports
    a ``conftest.py`` and runs test files and doctests, ``git status`` there obeys a
    ``.git/config``, a shell prompt may source an ``.envrc``. A container's files only become
    files under names the harness gives (the rest are archive members, see
    :mod:`~pytest_gaia2.store.kept`), so this is the second line of defence for those names:
    no list of names can cover what tools will read later."""
    forms = spellings(name)
    if any(form.startswith(".") for form in forms):
        return "a hidden name: tools read such files as their configuration (.git, .envrc, .pytest.ini)"
    if any(
        form.endswith(RUNNABLE_SUFFIXES)
        or form in CONFIG_NAMES
        or form.startswith("conftest.")
        or fnmatch.fnmatchcase(form, DOCTEST_GLOB)
        for form in forms
    ):
        return "a file Python or pytest would run or read as configuration (a module, native library or pytest file)"
    return None


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
