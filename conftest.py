"""The repository root's conftest: a bare ``pytest`` here is the main job (the shipped scenarios),
so the project's own test suite is collected only when asked for by path (``pytest tests``).

Without this, ``pytest -n 2 -m search_split`` at the root would import every test module
(and need every test-only dependency) only to deselect them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent / "tests"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path == TESTS and config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    return None
