"""The generated reference pages say what the code's tables say: OPTIONS and CATEGORIES.

The pages are committed so the docs site builds without running code; this test renders them
again in memory, so a table changed without its page fails CI instead of misleading a reader.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from gaia2_testing import module_from_file

from pytest_gaia2.config.options import OPTIONS
from pytest_gaia2.store.record import CATEGORIES

ROOT = Path(__file__).resolve().parents[2]


GEN_DOCS = module_from_file(ROOT / "scripts" / "gen_docs.py")


@pytest.mark.parametrize("relative", sorted(GEN_DOCS.PAGES))
def test_committed_page_matches_the_code(relative: str) -> None:
    committed = (ROOT / relative).read_text(encoding="utf-8")
    rendered = GEN_DOCS.PAGES[relative]()
    if committed != rendered:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                rendered.splitlines(keepends=True),
                fromfile=f"{relative} (committed)",
                tofile=f"{relative} (from the code)",
                n=0,
            )
        )
        pytest.fail(
            f"{relative} is out of date with the code's table: run `python scripts/gen_docs.py` and commit it.\n{diff}",
            pytrace=False,
        )


def test_every_option_and_category_is_on_its_page() -> None:
    """The pages name each entry once, by the name a user types or reads in result.json."""
    options = GEN_DOCS.options_page()
    for option in OPTIONS:
        rows = options.count(f"| `{option.cli}` |") + options.count(f"| `{option.cli}[=PATH]` |")
        assert rows == 1, option.cli
        assert f"`{option.ini}`" in options, option.ini
    categories = GEN_DOCS.categories_page()
    for name in CATEGORIES:
        assert categories.count(f"| `{name}` |") == 1, name


def test_a_changed_table_is_caught(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The check itself sees drift: a category added to the code makes the committed page stale."""
    for relative, render in GEN_DOCS.PAGES.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(render(), encoding="utf-8")
    assert GEN_DOCS.stale(tmp_path) == []
    monkeypatch.setitem(GEN_DOCS.CATEGORIES, "new_category", ("something new happened", "its log"))
    assert GEN_DOCS.stale(tmp_path) == ["docs/reference/categories.md"]


def test_table_cells_cannot_break_the_table() -> None:
    """Help texts hold pipes, brackets and angle brackets: they stay text inside one cell."""
    assert GEN_DOCS.escape("URL[#N[,api|ports]] <root>/x_y *a*") == (
        "URL\\[#N\\[,api\\|ports\\]\\] &lt;root&gt;/x\\_y \\*a\\*"
    )
