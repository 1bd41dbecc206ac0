"""The console command against hostile run folders: ``pytest-gaia2 list``, ``export --check``,
``plan``, merge's shard refusal and the one error line a refused command prints.

Run folders are written here by hand (a run_config.json and a results.jsonl of records as the
plugin writes them), damaged, and handed to the console command: in this process
(``gaia2_testing.console``), and as ``.venv/bin/pytest-gaia2`` itself where the process is the
point (a temporary named by its pid, lists at once). A traceback, a raw escape in what it prints
or a write through a planted link fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import REPO, console, raw_controls

from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

COMMAND = REPO / ".venv" / "bin" / "pytest-gaia2"
PROMPT = 30.0
KEYS = ("search/scenario_universe_21_7kww6e", "search/scenario_universe_24_zqzvsf")


def clean(done: subprocess.CompletedProcess[str]) -> str:
    """Everything the command printed, checked free of tracebacks and raw control characters."""
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    assert not raw_controls(text), repr(text)
    return text


def make_run(folder: Path, **config: Any) -> Path:
    """A finished run folder of two passed scenarios, as the plugin writes one; ``config`` overrides
    keys of its run_config.json."""
    folder.mkdir(parents=True)
    records = [
        AttemptRecord.from_json({"scenario_id": key.split("/")[1], "split": "search", "success": True,
                                 "outcome": "passed", "repeat": 1, "repeats": 1, "attempt": 1, "folder": key})
        for key in KEYS
    ]  # fmt: skip
    base = {"started_at": "2026-12-02T08:07:18+00:00", "planned": list(KEYS), "run_id": "r" * 32}
    (folder / "run_config.json").write_text(json.dumps({**base, **config}), encoding="utf-8")
    (folder / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records), encoding="utf-8")
    return folder


# -- pytest-gaia2 list ---------------------------------------------------------------------------


@pytest.mark.parametrize("started", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_list_takes_a_start_that_has_no_utc_date(tmp_path: Path, started: str) -> None:
    """Year 1 at +01:00 is a valid ISO time with no UTC date: it read as an OverflowError."""
    make_run(tmp_path / "out" / "20260101T000000Z-a", started_at=started)
    done = console("list", tmp_path / "out")
    assert done.returncode == 0 and "unknown" in clean(done)


def test_list_shows_a_lone_surrogate_of_run_config_escaped(tmp_path: Path) -> None:
    """``"\\ud800"`` is valid JSON but no UTF-8: printing the name raised UnicodeEncodeError."""
    run = make_run(tmp_path / "out" / "r1")
    (run / "run_config.json").write_text(
        (run / "run_config.json").read_text().replace('"run_id"', '"name": "a\\ud800\\u001b[2J", "run_id"')
    )
    done = console("list", tmp_path / "out")
    assert done.returncode == 0 and "a\\ud800\\x1b[2J" in clean(done)
    assert "a\\ud800\\x1b[2J" in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")


def test_list_names_a_folder_that_is_not_utf8(tmp_path: Path) -> None:
    """A run folder named with a byte no UTF-8 has (and its own report.html): its link and name
    cannot be printed as they are (UnicodeEncodeError): the byte is shown as ``\\xff`` and the
    link percent-encoded."""
    output = tmp_path / "out"
    run = make_run(Path(os.fsdecode(os.fsencode(output) + b"/run-\xff\x1b[2J")))
    (run / "report.html").write_text("<p>the run's page</p>")
    done = console("list", output)
    assert done.returncode == 0 and "run-\\xff\\x1b[2J" in clean(done)
    assert 'href="run-%FF%1B%5B2J/report.html"' in (output / "index.html").read_text(encoding="utf-8")


def test_list_never_writes_through_a_link_planted_at_its_temporary_name(tmp_path: Path) -> None:
    """A results folder from elsewhere holds ``.index.html.<pid>.tmp`` -> a file outside: the
    index was written through it (the outside file overwritten, index.html left a link to it)."""
    output = tmp_path / "out"
    make_run(output / "r1")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # The console command is exec'd in place of this launcher, so the pid is known before it runs.
    launcher = "import os, sys; sys.stdin.readline(); os.execv(sys.argv[1], sys.argv[1:])"
    process = subprocess.Popen([sys.executable, "-c", launcher, str(COMMAND), "list", str(output)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    (output / f".index.html.{process.pid}.tmp").symlink_to(victim)
    out, err = process.communicate("\n")
    assert process.returncode == 0, out + err
    assert victim.read_text() == "precious\n"
    index = output / "index.html"
    assert not index.is_symlink() and "<table" in index.read_text(encoding="utf-8")


def test_list_leaves_an_index_link_to_outside_alone(tmp_path: Path) -> None:
    """Held: an index.html that is a link to a file outside (even one with the marker) is not ours."""
    output = tmp_path / "out"
    make_run(output / "r1")
    victim = tmp_path / "victim.html"
    victim.write_text("<!-- pytest-gaia2 list: written by `pytest-gaia2 list`; the next `list` replaces it -->\n")
    before = victim.read_text()
    (output / "index.html").symlink_to(victim)
    done = console("list", output)
    assert done.returncode == 0 and "not written" in clean(done)
    assert victim.read_text() == before and (output / "index.html").is_symlink()


def test_two_lists_at_once_leave_one_whole_index(tmp_path: Path) -> None:
    """Held: two lists of one folder at once each write a whole page; no temporary is left."""
    output = tmp_path / "out"
    for index in range(20):
        make_run(output / f"2026010{index % 10}T00000{index // 10}Z-r{index}")
    processes = [subprocess.Popen([str(COMMAND), "list", str(output)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]  # fmt: skip
    for process in processes:
        out, err = process.communicate(timeout=PROMPT * 2)
        assert process.returncode == 0 and "Traceback" not in err, out + err
    page = (output / "index.html").read_text(encoding="utf-8")
    assert page.count('<tr class="complete"') == 20 and page.rstrip().endswith("</html>")
    assert not list(output.glob(".*.tmp"))


def test_list_reads_no_ledger_through_a_link(tmp_path: Path) -> None:
    """spend.jsonl a link to a file outside the run folder (that file says $4242.50): the link is
    not followed and the cost is n/a, never the outside file's amount nor a wrong $0.00."""
    run = make_run(tmp_path / "out" / "r1")
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"entry": "outside", "usd": 4242.5}\n')
    (run / "spend.jsonl").symlink_to(outside)
    done = console("list", tmp_path / "out")
    text = clean(done)
    assert done.returncode == 0 and "4242" not in text and "$0.00" not in text
    assert "4242" not in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")


def test_a_results_line_is_never_appended_through_a_link(tmp_path: Path) -> None:
    """results.jsonl of a resumed hostile folder a link to a file outside: the line was appended
    there; a FIFO there hung the run. Both are one StoreError naming the file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "results.jsonl").symlink_to(victim)
    with pytest.raises(store.StoreError, match="results.jsonl"):
        store.append_jsonl(tmp_path / "results.jsonl", {"a": 1})
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / "sessions.jsonl")
    with pytest.raises(store.StoreError, match="sessions.jsonl"):
        store.append_jsonl(tmp_path / "sessions.jsonl", {"a": 1})


# -- the console command's one error line ---------------------------------------------------------


def test_an_error_naming_a_hostile_folder_sends_no_escape(tmp_path: Path) -> None:
    """``latest`` of an output folder names a folder whose name is an escape sequence: the one
    error line named it raw, so the terminal turned red (or worse)."""
    output = tmp_path / "out"
    make_run(output / "r\x1b[31mX", planned=[1])
    (output / "latest").write_text("r\x1b[31mX\n")
    done = console("compare", output, output)
    assert done.returncode == 2 and "r\\x1b[31mX" in clean(done)


def test_merge_names_few_of_a_forged_million_missing_shards(tmp_path: Path) -> None:
    """A piece claiming shard ``1/999999``: the refusal listed 999998 shards, a line of megabytes."""
    piece = make_run(tmp_path / "piece", provenance={"shard": "1/999999"})
    done = console("merge", tmp_path / "merged", piece)
    text = clean(done)
    assert done.returncode == 2 and "999978 more" in text and len(text) < 2000
    assert not (tmp_path / "merged").exists()


# -- pytest-gaia2 export --check ------------------------------------------------------------------


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A valid export of a hand-made run, by the command itself."""
    done = console("export", make_run(tmp_path / "run"), "--output", tmp_path / "export", "--rows", "jsonl")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "export"


def test_export_check_refuses_deep_nesting_in_one_line(export: Path) -> None:
    """``[[[[...`` 100000 deep in computed_stats.json or in a row: json's RecursionError was a traceback."""
    (export / "computed_stats.json").write_text("[" * 100_000 + "]" * 100_000)
    done = console("export", "--check", export)
    assert done.returncode == 1 and "computed_stats.json" in clean(done) and "deeper" in done.stdout
    (export / "computed_stats.json").write_text("{}")
    with (export / "search" / "validation-00000-of-00001.jsonl").open("a") as rows:
        rows.write("[" * 100_000 + "\n")
    done = console("export", "--check", export)
    assert done.returncode == 1 and "validation-00000-of-00001.jsonl:3: nested deeper" in clean(done)


def test_export_check_shows_names_of_the_folder_escaped(export: Path) -> None:
    """A config folder named ``ESC[31m...BEL``: every problem line sent it to the terminal raw."""
    (export / "search").rename(export / "\x1b[31mEVIL\x1b]0;title\x07")
    done = console("export", "--check", export)
    assert done.returncode == 1 and "\\x1b[31mEVIL" in clean(done)


def test_export_check_names_a_statistic_no_double_can_hold(export: Path) -> None:
    """computed_stats.json's success_rate as a 401-digit integer (JSON takes up to 4300): math.isclose
    raised OverflowError, a traceback instead of the field named."""
    report = export / "computed_stats.json"
    report.write_text(report.read_text().replace('"success_rate": 100.0', '"success_rate": 1' + "0" * 400, 1))
    done = console("export", "--check", export)
    assert done.returncode == 1 and "field 'statistics.per_capability.search.success_rate' is 1000" in clean(done)


def test_export_check_refuses_deep_nesting_in_a_rows_run_config(export: Path) -> None:
    """A row's run_config (JSON inside a JSON string) 100000 deep: json.loads' RecursionError was a traceback."""
    rows = export / "search" / "validation-00000-of-00001.jsonl"
    first, *rest = rows.read_text().splitlines()
    row = {**json.loads(first), "run_config": "[" * 100_000 + "]" * 100_000}
    rows.write_text("\n".join([json.dumps(row), *rest]) + "\n")
    done = console("export", "--check", export)
    assert done.returncode == 1 and "validation-00000-of-00001.jsonl:1: field 'run_config' is not JSON" in clean(done)


def test_export_check_keeps_a_bounded_number_of_problems(export: Path) -> None:
    """A rows file of a million unknown fields held a message for each (18 times the file's size
    in memory: a 1 GiB file, the largest --check reads, would need about 18 GB); it stops at 1000."""
    rows = export / "search" / "validation-00000-of-00001.jsonl"
    line = json.dumps({str(field): 0 for field in range(2000)}) + "\n"
    rows.write_text(line * 20)
    done = console("export", "--check", export)
    assert done.returncode == 1 and "... and 950 more (the check stops at 1000)" in clean(done)


# -- pytest-gaia2 plan ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "asked", [("--gap", "1e-300"), ("--half-width", "1e-300"), ("--gap", "0.1", "--alpha", "1e-320")]
)
def test_plan_refuses_a_level_that_vanishes_in_doubles(tmp_path: Path, asked: tuple[str, ...]) -> None:
    """A gap squared of 0 (ZeroDivisionError) or ``1 - alpha/2 == 1`` (StatisticsError) was a traceback."""
    done = console("plan", make_run(tmp_path / "run"), *asked)
    assert done.returncode == 2 and "is below 1e-06, the smallest planned for" in clean(done)
