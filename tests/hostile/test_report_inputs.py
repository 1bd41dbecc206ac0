"""The report's reads of a hostile run folder: one big scenario file named by a thousand spellings
in summary.json, a link at a newer re-judge number, control characters in a plot label, in
report.md's free text, its title and its categories.

Each test drives the reader or writer directly (no container): a file read once per spelling, a
re-judge hidden behind a link, or a raw escape on the terminal or in report.md would each fail here.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED, raw_controls
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.plan import scenarios
from pytest_gaia2.report import document, markdown, plots, rejudged
from pytest_gaia2.report.stats import ErrorGroup

SEARCH = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"


# -- summary.json's not_run_files ----------------------------------------------------------------


def test_a_scenario_file_is_read_once_however_many_spellings_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """summary.json naming one file as ``d/../d/f``, ``d/../d/../d/f`` ... (and a link to it) for
    each planned key not run: every spelling was read in full (up to 64 MiB each, 100000
    entries allowed), 200 spellings of a 60 MB file kept ``pytest-gaia2 report`` busy 2 minutes.
    Nor is each spelling resolved component by component (``realpath``: 20000 spellings 19 s):
    one ``stat`` each names the file."""
    data = tmp_path / "data"
    data.mkdir()
    file = data / SEARCH.name
    file.write_bytes(SEARCH.read_bytes())
    (data / "link.json").symlink_to(file)
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    spellings = [str(data) + "/../data" * depth + "/" + SEARCH.name for depth in range(200)]
    not_run = {f"search/s{n}": (name, sha) for n, name in enumerate([*spellings, str(data / "link.json")])}
    reads: list[Path] = []
    real_read = scenarios.read_regular_file

    def counted(path: Path, **limits: Any) -> bytes:
        reads.append(path)
        return real_read(path, **limits)

    resolved: list[str] = []
    real_resolve = os.path.realpath

    def resolving(path: Any, **how: Any) -> Any:
        resolved.append(path)
        return real_resolve(path, **how)

    monkeypatch.setattr(scenarios, "read_regular_file", counted)
    monkeypatch.setattr(os.path, "realpath", resolving)
    apps = document.scenario_apps([], None, not_run)
    monkeypatch.undo()
    assert len(reads) == 1 and len(resolved) < 10
    assert set(apps) == set(not_run) and all(apps.values())  # every spelling still gets the file's apps


# -- compare --judge ------------------------------------------------------------------------------


def test_a_link_at_a_newer_rejudge_number_hides_no_older_rejudge(tmp_path: Path) -> None:
    """``rejudge/999-evil`` a link out of the run: ``compare --judge`` stopped at it and said the
    run had no re-judge by that judge, though ``001-x`` holds one (the report passed over it)."""
    run, outside = tmp_path / "run", tmp_path / "outside"
    for root in (run / "rejudge" / "001-x", outside):
        (root / "jj").mkdir(parents=True)
        (root / "jj" / "rejudgments.jsonl").write_text(json.dumps({"key": "search/a", "success": True}) + "\n")
    (run / "rejudge" / "999-evil").symlink_to(outside)
    assert rejudged.latest_verdicts(run, "jj") == ("001-x", {"search/a": True})


# -- report plots --------------------------------------------------------------------------------


def test_a_plot_label_sends_no_control_character_to_the_terminal() -> None:
    """An error category ``ESC[31m...BEL`` from a results folder: matplotlib warned ``Glyph 27
    (<the raw ESC>) missing from font`` on stderr for each one."""
    evil = "\x1b[31mEVIL\x1b]0;title\x07\x9b"
    assert not raw_controls(plots.plain_label(evil)) and "\\x1b[31mEVIL" in plots.plain_label(evil)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.errors([ErrorGroup(evil, 2, ("search/a", "search/b"))])
    assert not [str(warning.message) for warning in caught if raw_controls(str(warning.message))]


def test_the_glyph_warning_is_real() -> None:
    """The control for the test above: an unescaped ESC on a plot does make matplotlib warn
    with the raw character (so the test above can fail)."""
    figure = plots._figure()
    figure.add_subplot().set_title("\x1b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots._png(figure)
    assert any(raw_controls(str(warning.message)) for warning in caught)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_markdown_free_text_carries_no_control_character(text: str) -> None:
    """A failure reason ``ESC[31m...BEL`` went into report.md raw (only the terminal's lines were
    escaped): ``cat report.md`` obeyed it."""
    for shown in (markdown.plain(text), markdown.code_span(text)):
        assert not raw_controls(shown) and not any("\u202a" <= char <= "\u202e" for char in shown)


def test_report_md_shows_a_hostile_category_and_folder_name_as_text(tmp_path: Path) -> None:
    """The run folder's name and each error category went into report.md raw (the category not
    even in a code span): an ESC sequence reached ``cat report.md``, a ``|`` or newline broke the table."""
    evil = "\x1b[31mEVIL\x07|x\n# heading"
    folder = tmp_path / "\x1b]0;title\x07run"
    folder.mkdir()
    record = {"scenario_id": "scenario_universe_21_7kww6e", "split": "search", "success": None, "outcome": "error",
              "error": evil, "error_category": evil, "repeat": 1, "repeats": 1, "attempt": 1}  # fmt: skip
    (folder / "run_config.json").write_text(json.dumps({"planned": ["search/scenario_universe_21_7kww6e"]}))
    (folder / "results.jsonl").write_text(json.dumps(record) + "\n")
    document.write_report(folder, index=tmp_path / "index.json")
    text = (folder / document.REPORT_MD).read_text(encoding="utf-8")
    assert not raw_controls(text)
    rows = [line for line in text.splitlines() if "EVIL" in line]
    assert rows and all(line.startswith("|") and line.endswith("|") for line in rows)
    assert "# heading" not in [line.strip() for line in text.splitlines()]
