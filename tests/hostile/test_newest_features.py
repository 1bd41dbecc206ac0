"""The newest features against hostile input: the stop-when-decided test (a decision level too
small for a double, a baseline path with escapes in the reason, a baseline larger than a Gaia2
run), the pacer's files (links planted at pacer.json and its lock), the report's reads (one big
scenario file named by a thousand spellings in summary.json; control characters in a plot
label, in report.md's free text and its title and categories) and ``compare --judge`` (a link
at a newer re-judge number).

Each test drives the reader or writer directly (no container); each fails on the code before
its fix (a traceback mid-run, a file read a thousand times, a baseline held whole at 2 KB a
record, a raw escape on the terminal or in report.md, a re-judge hidden), or pins a defence no
other test covered (no write through a link at the pacer's files).
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.config.values import SMALLEST_LEVEL, OptionError, level
from pytest_gaia2.report import document, markdown, plots, rejudged, run_facts
from pytest_gaia2.report.sequential import (
    BASELINE_MAX_BYTES,
    BASELINE_MAX_KEYS,
    BASELINE_MAX_LINES,
    Baseline,
    first_decision,
)
from pytest_gaia2.report.stats import ErrorGroup
from pytest_gaia2.run.pacer import LOCK_FILE, PACER_FILE, Pacer
from pytest_gaia2.store.folder import StoreError

SEARCH = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"


def raw_controls(text: str) -> list[str]:
    return [char for char in text if ord(char) < 32 and char not in "\n\t" or 0x7F <= ord(char) <= 0x9F]


# -- --gaia2-decision-level ----------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["5e-324", "1e-320", "1e-7"])
def test_a_decision_level_too_small_to_decide_at_is_refused(raw: str) -> None:
    """5e-324 passed as "above 0": its threshold -log(level) is 744, and the first decision's
    ``exp`` of a ratio that high raised OverflowError in the worker, after a thousand pairs."""
    with pytest.raises(OptionError, match="the smallest level a test decides at"):
        level("decision-level", raw)


def test_at_the_smallest_level_a_long_one_way_run_decides_with_a_finite_ratio() -> None:
    decision = first_decision([(False, True)] * 5000, level("decision-level", str(SMALLEST_LEVEL)))
    assert decision is not None and decision.better == decision.pairs
    json.dumps(decision.to_dict(), allow_nan=False)


def test_the_decided_reason_shows_the_baseline_escaped() -> None:
    """The reason every scenario not started gives (pytest prints skip reasons raw) names the baseline."""
    decision = first_decision([(True, False)] * 8, 0.05, "/out/\x1b]0;pwned\x07run")
    assert decision is not None and not raw_controls(decision.reason) and "\\x1b]0;pwned" in decision.reason


# -- a baseline's size ------------------------------------------------------------------------------


def baseline_run(folder: Path, lines: Iterator[str]) -> Path:
    """A baseline run folder whose results.jsonl is ``lines``, written as they come."""
    folder.mkdir()
    (folder / "run_config.json").write_text("{}")
    with (folder / "results.jsonl").open("w") as results:
        results.writelines(lines)
    return folder


def read_measured(folder: Path) -> tuple[Baseline | StoreError, float, int]:
    """Baseline.load's result (or refusal), its seconds, and its peak of allocated bytes in a
    second read (tracing slows the reader several times over)."""

    def read() -> Baseline | StoreError:
        try:
            return Baseline.load(folder)
        except StoreError as exc:
            return exc

    started = time.perf_counter()
    result = read()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, seconds, peak


def test_a_baseline_of_a_whole_gaia2_run_is_read_keeping_only_its_verdicts(tmp_path: Path) -> None:
    """800 scenarios x 32 repeats of records of about 1.5 KB each (44 MB): every process held
    about 2 KB a record (110 us each) with the whole-record reader; now the verdicts alone."""
    padding = "x" * 1400
    lines = (
        json.dumps(
            {
                "scenario_id": f"s{index // 32}",
                "repeat": index % 32 + 1,
                "repeats": 32,
                "outcome": "passed",
                "agent_response": padding,
            }
        )
        + "\n"
        for index in range(BASELINE_MAX_KEYS)
    )
    read, seconds, peak = read_measured(baseline_run(tmp_path / "base", lines))
    assert isinstance(read, Baseline) and len(read.outcomes) == BASELINE_MAX_KEYS
    assert peak < 16 * 2**20, peak  # the whole records: over 50 MB
    assert seconds < 10, seconds


@pytest.mark.parametrize("kind", ["keys", "lines", "bytes"])
def test_a_baseline_larger_than_a_gaia2_run_is_refused_quickly_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """More scenario runs than 800 x 32, more lines than their attempts or more bytes than their
    records: one error naming the file, before the rest is read (a 75 MB file of small
    records took 68 s and 1.27 GB in every process; the 1 GiB a results file may be, 18 GB)."""
    folder = tmp_path / "base"
    if kind == "keys":
        baseline_run(folder, (f'{{"scenario_id": "s{index}"}}\n' for index in range(BASELINE_MAX_KEYS + 2)))
    elif kind == "lines":
        baseline_run(folder, ('{"scenario_id": "s"}\n' for _ in range(BASELINE_MAX_LINES + 2)))
    else:
        baseline_run(folder, iter(()))
        os.truncate(folder / "results.jsonl", BASELINE_MAX_BYTES + 1)
    read, seconds, peak = read_measured(folder)
    assert isinstance(read, StoreError) and str(read).startswith(f"{folder / 'results.jsonl'}: "), read
    assert {"keys": "scenario runs", "lines": "lines", "bytes": "bytes allowed"}[kind] in str(read)
    assert peak < 16 * 2**20, peak
    assert seconds < 10, seconds


# -- pacer.json and pacer.json.lock --------------------------------------------------------------


@pytest.mark.parametrize("planted", [PACER_FILE, LOCK_FILE])
def test_the_pacer_writes_nothing_through_a_link_planted_at_its_files(tmp_path: Path, planted: str) -> None:
    """A resumed run folder with pacer.json (or its lock) a link to a file outside: the outside
    file keeps its bytes, and a forged state there (a start a minute ahead) is never read."""
    folder, outside = tmp_path / "run", tmp_path / "outside.json"
    folder.mkdir()
    forged = json.dumps({"rate": 1.0, "next_start": 4e9}).encode()
    outside.write_bytes(forged)
    (folder / planted).symlink_to(outside)
    waits: list[float] = []
    pacer = Pacer(folder, None, sleep=waits.append)
    pacer.wait_turn()
    pacer.ended(True)
    pacer.wait_turn()
    assert outside.read_bytes() == forged
    assert waits == []
    if planted == PACER_FILE:  # replaced by the pacer's own file, not written through
        assert not (folder / PACER_FILE).is_symlink() and (folder / PACER_FILE).is_file()


# -- summary.json's not_run_files ----------------------------------------------------------------


def test_the_apps_of_a_scenario_not_run_are_bounded_and_printable(tmp_path: Path) -> None:
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
    document.write_report(folder)
    text = (folder / document.REPORT_MD).read_text(encoding="utf-8")
    assert not raw_controls(text)
    rows = [line for line in text.splitlines() if "EVIL" in line]
    assert rows and all(line.startswith("|") and line.endswith("|") for line in rows)
    assert "# heading" not in [line.strip() for line in text.splitlines()]
