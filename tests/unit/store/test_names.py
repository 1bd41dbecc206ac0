"""Names that become folders: what is accepted is a valid, distinct folder on Windows, macOS and
Linux alike. The oracles below are the systems' own rules, written out independently of names.py."""

from __future__ import annotations

import importlib.machinery
import json
import re
import tempfile
import unicodedata
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.plan import items as plan
from pytest_gaia2.plan.scenarios import ScenarioError, discover
from pytest_gaia2.store import folder as store
from pytest_gaia2.store import names

WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{n}" for n in "0123456789¹²³"),
                   *(f"LPT{n}" for n in "0123456789¹²³")}


def valid_on_windows(name: str) -> bool:
    """Microsoft's "Naming Files, Paths, and Namespaces": forbidden characters, device names
    (also with an extension), no trailing space or period, at most 255 characters."""
    if not name or len(name) > 255 or name in {".", ".."}:
        return False
    if any(char in '<>:"/\\|?*' or ord(char) < 32 for char in name):
        return False
    if name.endswith((" ", ".")):
        return False
    return name.split(".", 1)[0].upper() not in WINDOWS_DEVICES


def valid_on_macos(name: str) -> bool:
    """APFS/HFS+: no '/', NUL or ':' (Finder's separator), at most 255 UTF-8 bytes; names are
    compared normalised, so a name must be its own NFD form to round-trip unchanged."""
    return (bool(name) and name not in {".", ".."} and not set(name) & {"/", "\0", ":"}
            and len(name.encode()) <= 255 and unicodedata.normalize("NFD", name) == name)


def valid_on_linux(name: str) -> bool:
    return bool(name) and name not in {".", ".."} and "/" not in name and "\0" not in name and len(name.encode()) <= 255


DEVICE_LIKE = st.builds(
    lambda word, case, ext: "".join(c.upper() if up else c.lower() for c, up in zip(word, case, strict=False)) + ext,
    st.sampled_from(sorted(WINDOWS_DEVICES)), st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from(["", ".txt", ".json", ".tar.gz", ".", " "]))
ANY_NAME = st.one_of(
    st.text(alphabet=st.sampled_from(list("abcXYZ019_.- <>:\"/\\|?*\x00\x1fé\u0301")), max_size=12),
    st.text(max_size=140),
    DEVICE_LIKE,
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,140}", fullmatch=True),
)


@settings(max_examples=examples(500), deadline=None)
@given(ANY_NAME)
def test_every_accepted_name_is_a_folder_on_every_system(name: str) -> None:
    problem = names.problem(name)
    assert problem is None or (isinstance(problem, str) and "\n" not in problem)
    if problem is None:
        assert valid_on_windows(name) and valid_on_macos(name) and valid_on_linux(name), name
        assert store.safe_part(name) == name
    else:
        with pytest.raises(store.StoreError, match="cannot be a folder name"):
            store.safe_part(name)


def _scenario(sid: str) -> str:
    return json.dumps({"metadata": {"definition": {"scenario_id": sid}}, "events": []})


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["search", "Search", "time", "CON", "x."]),
                          st.one_of(DEVICE_LIKE, st.sampled_from(["Case_A", "case_a", "CASE_A", "s_1", "s_2"]))),
                min_size=1, max_size=6))
def test_accepted_scenarios_own_distinct_folders_on_case_insensitive_systems(files: list[tuple[str, str]]) -> None:
    """Whatever ids and split folders a collection holds, the scenarios that are accepted own
    output folders that stay distinct when case is folded, and every other file is an error."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for number, (split, sid) in enumerate(files):
            folder = root / split
            folder.mkdir(exist_ok=True)
            (folder / f"f{number}.json").write_text(_scenario(sid), encoding="utf-8")
        found, errors = discover([root])
        written = sum(1 for _ in root.rglob("*.json"))  # a case-insensitive tmp folder merges splits
        assert len(found) + len(errors) == written
        assert all(isinstance(error, ScenarioError) for error in errors)
        for scenario in found:
            assert names.problem(scenario.split) is None and names.problem(scenario.scenario_id) is None
        assert len({names.folder_key(s.scenario_id) for s in found}) == len(found)
        splits = {s.split for s in found}
        assert len({names.folder_key(split) for split in splits}) == len(splits)


@pytest.mark.parametrize(("name", "problem"), [
    ("CON", "'CON' is a Windows device name (CON)"),
    ("nul", "'nul' is a Windows device name (NUL)"),
    ("COM1", "'COM1' is a Windows device name (COM1)"),
    ("aux.txt", "'aux.txt' is a Windows device name (AUX)"),
    ("LPT9.json", "'LPT9.json' is a Windows device name (LPT9)"),
    ("trailing.", "'trailing.' ends with '.', which Windows drops (it would name the same folder as 'trailing')"),
    ("trailing ", "'trailing ' may only hold letters, digits, '_', '.' and '-'"),
    ("a<b", "'a<b' may only hold letters, digits, '_', '.' and '-'"),
    ("a:b", "'a:b' may only hold letters, digits, '_', '.' and '-'"),
    ("tab\there", "'tab\\there' may only hold letters, digits, '_', '.' and '-'"),
])
def test_windows_names_are_refused_with_the_reason(name: str, problem: str) -> None:
    assert (names.problem(name) or "").startswith(problem)


@pytest.mark.parametrize("name", ["CONSOLE", "nullable", "COM10", "LPT", "con_1", "scenario_universe_21_7kww6e",
                                  "a.CON", "v1.2-x"])
def test_names_that_only_look_like_devices_are_accepted(name: str) -> None:
    assert names.problem(name) is None


def test_error_records_of_files_named_like_devices_get_usable_distinct_folders() -> None:
    taken: set[tuple[str, str]] = set()
    made = []
    for stem in ["CON", "con", "nul.x", "x.", "-rf", "Case_A", "case_a"]:
        name = plan.error_name(stem, taken, "search")
        taken.add((names.folder_key("search"), names.folder_key(name)))
        made.append(name)
    assert all(names.problem(name) is None for name in made), made
    assert len({names.folder_key(name) for name in made}) == len(made), made
    assert made[:2] == ["_CON", "_con-2"] and re.fullmatch(r"case_a-\d", made[-1]), made


HAZARDS = ["conftest.py", "test_doc.txt", "TEST_x.TXT", "__init__.py", "x.pyz", "json.cpython-311-x86_64-linux-gnu.so",
           "evil.abi3.so", "conftest.pyd", "lib.dylib", "pytest.ini", "PyProject.toml", "tox.ini", "setup.cfg",
           "conftest.txt", ".git", ".envrc", ".pytest.ini", "conftest.py.", "conftest.py ", "conftest.py::$DATA",
           "sitecustomize.py. .", "x.pth.", "test_x.txt.", "conf\u200btest.py", "\ufeff.git",
           "\uff43\uff4f\uff4e\uff46\uff54\uff45\uff53\uff54.py"]  # fullwidth letters: NFKC makes them conftest.py


@given(st.text(min_size=1, max_size=40).filter(lambda stem: "/" not in stem),
       st.sampled_from(importlib.machinery.SOURCE_SUFFIXES + importlib.machinery.BYTECODE_SUFFIXES
                       + importlib.machinery.EXTENSION_SUFFIXES + [".pth"]),
       st.lists(st.booleans(), min_size=40, max_size=40), st.sampled_from(["", ".", " ", ". ", "::$DATA", "\u200b"]))
@example(":", ".py", [False] * 40, "::$DATA")  # a colon in the name before the stream
def test_every_name_python_imports_is_a_hazard_however_a_system_spells_it(
        stem: str, suffix: str, upper: list[bool], tail: str) -> None:
    """Python's own list of the suffixes it imports from (sources, bytecode, this system's
    extension modules), in any mix of case and with what Windows drops at the end of a name: such
    a file from a container never lands in a run folder."""
    cased = "".join(char.upper() if flip else char for char, flip in zip(suffix, upper, strict=False))
    assert names.hazard(stem + cased + tail) is not None


@pytest.mark.parametrize("name", HAZARDS)
def test_files_python_pytest_git_or_a_shell_would_obey_are_hazards(name: str) -> None:
    assert names.hazard(name) is not None


def test_no_file_the_harness_keeps_is_a_hazard() -> None:
    kept = [*store.STATE_FILES, *store.STATE_FILES.values(), *store.LOG_FILES, *store.LOG_FILES.values(),
            store.OPENCLAW_LOG_DIR, "state", "notes.txt", "python.json", "contacts.json", "doc.txt", "py",
            "a.py.json", "report.md", "x.sox", "test.json", "n" * 250]
    assert [name for name in kept if names.hazard(name)] == []


def test_every_configuration_file_the_installed_pytest_discovers_is_a_hazard() -> None:
    """pytest 9 added pytest.toml; the next name it adds must fail here, not reach a run folder.
    (pytest's table of the names it discovers is private: if it moves, this test says so.)"""
    from _pytest.config import findpaths

    discovered = getattr(findpaths, "CONFIG_LOADERS_BY_NAME", None)
    assert discovered, "pytest no longer has findpaths.CONFIG_LOADERS_BY_NAME: find where it lists its config names"
    assert "pytest.toml" in discovered
    assert [name for name in discovered if names.hazard(name) is None] == []
