"""Every test module of the suite has a basename of its own: pytest imports them by basename
(rootdir-relative "prepend" mode), so two ``test_x.py`` in different folders fail collection of
the whole lane that holds both, as soon as one session collects both."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_name_of_its_own() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
