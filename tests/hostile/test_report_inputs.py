"""The report's reads of a hostile run folder: the apps summary.json gives the scenarios that did
not run, a link at a newer re-judge number, control characters in a plot label, in
report.md's free text, its title and its categories.

Each test drives the reader or writer directly (no container): an unbounded app name, a
re-judge hidden behind a link, or a raw escape on the terminal or in report.md would each fail here.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from gaia2_testing import examples, raw_controls
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.report import document, markdown, plots, rejudged, run_facts
from pytest_gaia2.report.stats import ErrorGroup

# -- summary.json's not_run_files ----------------------------------------------------------------


def test_the_apps_of_a_scenario_not_run_are_bounded_and_printable() -> None:
    """summary.json's ``not_run_files`` gives each key that did not run its apps: a hostile file
    may hold any number of names, of any length, with control characters; the report believes a
    list of at most MAX_APPS names, each cut and made printable, and reads no scenario file."""
    summary = {"not_run_files": {
        "search/long": {"apps": ["\x1b[31mEVIL\x07" + "x" * 10_000]},
        "search/many": {"apps": ["a"] * (run_facts.MAX_APPS + 1)},
        "search/odd": {"apps": {"a": 1}},
        "search/nested": {"apps": [["a"]]},
        "x" * (run_facts.KEY_CHARS + 1): {"apps": ["a"]},
    }}
    apps = run_facts.not_run_apps_of(summary)
    assert list(apps) == ["search/long"]
    (shown,) = apps["search/long"]
    assert len(shown) == run_facts.NAME_CHARS and not raw_controls(shown)
    assert document.scenario_apps([], apps) == {"search/long": (shown,)}


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


@settings(max_examples=examples(200), deadline=None)
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
    document.write_report(folder)
    text = (folder / document.REPORT_MD).read_text(encoding="utf-8")
    assert not raw_controls(text)
    rows = [line for line in text.splitlines() if "EVIL" in line]
    assert rows and all(line.startswith("|") and line.endswith("|") for line in rows)
    assert "# heading" not in [line.strip() for line in text.splitlines()]
