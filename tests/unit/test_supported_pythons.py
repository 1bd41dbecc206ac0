"""The supported Pythons are one list: pyproject's requires-python and classifiers, and the
versions noxfile.py runs the fast lane on (in CI too), so no version is claimed untested."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _nox_pythons() -> list[str]:
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    [value] = [node.value for node in tree.body
               if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "PYTHONS" for t in node.targets)]
    return list(ast.literal_eval(value))


def test_classifiers_requires_python_and_nox_name_the_same_versions() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    classified = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject)
    [lowest] = re.findall(r'^requires-python = ">=(3\.\d+)"$', pyproject, re.MULTILINE)
    tested = _nox_pythons()
    assert classified == tested, (classified, tested)
    assert lowest == tested[0] and tested == sorted(tested, key=lambda version: tuple(map(int, version.split("."))))


def test_ci_runs_every_fast_test_on_one_other_python() -> None:
    """.ci/run splits the fast lane among 3.10, 3.12 and 3.13: every test folder is in one part."""
    shards = re.findall(r"^  shard (3\.\d+) ([^&\n]+) &", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.MULTILINE)
    assert sorted(python for python, _ in shards) == sorted(set(_nox_pythons()) - {"3.11"})
    named = [path for _, paths in shards for path in paths.split()]
    covered = {found.relative_to(ROOT).as_posix() for path in named for found in ROOT.glob(path)}
    assert len(covered) == len(set(covered)) and len(named) == len(set(named))
    folders = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests" / "unit").iterdir()
               if path.is_dir() and path.name != "__pycache__"}
    files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests" / "unit").glob("test_*.py")}
    assert folders | files | {"tests/plugin"} <= covered, sorted(folders | files | {"tests/plugin"} - covered)
    fast = {path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and any(path.rglob("test_*.py"))}
    assert fast - {"unit", "plugin"} <= {"hostile", "integration"}  # engine tests only (marker docker)
