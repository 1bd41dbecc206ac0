"""The end-of-run text block and summary.json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from gaia2_records import headline_records, pass_at_k_records, record

from pytest_gaia2.report.gate import Gate, GateDecision
from pytest_gaia2.report.rates import percent_number
from pytest_gaia2.report.stats import summarise
from pytest_gaia2.report.summary import first_n, summary_lines, write_summary_json


def block(records: list[dict[str, Any]], gate: GateDecision | None = None,
          planned: list[str] | None = None, **kwargs: Any) -> list[str]:
    return summary_lines(summarise(records, planned=planned), gate, **kwargs)


def table_after(lines: list[str], first_header: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    end = start + 1
    while end < len(lines) and re.match(r"\S+\s+\d", lines[end]):
        end += 1
    return lines[start:end]


def assert_right_aligned(table: list[str]) -> None:
    """Every cell of every row ends where its header ends (first column excepted)."""
    header_ends = [match.end() for match in re.finditer(r"\S+", table[0])][1:]
    for row in table[1:]:
        assert [match.end() for match in re.finditer(r"\S+", row)][1:] == header_ends, row


def test_headline_numbers() -> None:
    lines = block(headline_records())
    assert lines[0] == "160 scenarios: 134 passed, 21 failed, 5 errors"
    assert lines[1] == "strict      134/160 = 83.8% [77.3–88.7]"
    assert lines[2] == "judged-only 134/155 = 86.5% [80.2–91.0]"


def test_reused_and_singular_error_in_totals() -> None:
    lines = block([record("a", "passed", reused=True), record("b", "error")])
    assert lines[0] == "2 scenarios: 1 passed, 0 failed, 1 error, 1 reused"


def test_rate_lines_line_up_on_the_equals_sign() -> None:
    lines = block([record(str(i), "passed" if i < 9 else "error") for i in range(10)])
    assert lines[1:3] == ["strict      9/10 =  90.0% [59.6–98.2]",
                          "judged-only  9/9 = 100.0% [70.1–100.0]"]


def test_split_table_counts_and_alignment() -> None:
    records = ([record(f"s{i}", "passed") for i in range(120)]
               + [record("e1", "failed", split="execution"), record("e2", "error", split="execution")])
    table = table_after(block(records), "split")
    assert table[0].split() == ["split", "n", "passed", "failed", "errors", "strict", "judged"]
    assert table[1].split() == ["execution", "2", "0", "1", "1", "0.0%", "0.0%"]
    assert table[2].split() == ["search", "120", "120", "0", "0", "100.0%", "100.0%"]
    assert_right_aligned(table)


def test_universe_table_only_when_more_than_one() -> None:
    one = block([record("a", "passed", universe="universe_21")])
    assert not any(line.startswith("universe") for line in one)
    two = block([record("a", "passed", universe="universe_21"),
                 record("b", "failed", universe="universe_3"),
                 record("c", "failed", universe="universe_3")])
    table = table_after(two, "universe")
    assert [row.split()[:2] for row in table[1:]] == [["universe_3", "2"], ["universe_21", "1"]]
    assert_right_aligned(table)


def test_errors_by_category_wrap_under_the_first_id() -> None:
    ids = [f"scenario_universe_2{i % 10}_{i:04d}" for i in range(12)]
    records = ([record(sid, "error", error_category="no_turn_boundary") for sid in ids]
               + [record("x1", "error", error_category="health_timeout")])
    lines = block(records, width=80)
    start = lines.index("errors by category:")
    section = lines[start + 1:]
    assert section[0].startswith("  no_turn_boundary  12  scenario_universe_20_0000, ")
    continuation = [line for line in section[1:] if line.startswith(" " * 20)]
    assert len(continuation) >= 2
    indent = section[0].index("scenario_")
    assert all(len(line) <= 80 for line in section[: 1 + len(continuation)])
    assert all(line[:indent].strip() == "" and line[indent] != " " for line in continuation)
    shown = " ".join(section[: 1 + len(continuation)])
    assert all(sid in shown for sid in ids)
    assert section[1 + len(continuation)] == "  health_timeout     1  x1"


def test_timing_lines() -> None:
    lines = block([record("a", "passed", wall_time_s=61.25, num_agent_events=20),
                   record("b", "failed", wall_time_s=612.0, num_agent_events=23)])
    assert "wall time: median 336.6 s, slowest b (612.0 s)" in lines
    assert "agent events per scenario: mean 21.5, median 21.5" in lines


def test_pass_at_k_section() -> None:
    summary = summarise(pass_at_k_records())
    assert summary.repeats is not None
    avg = summary.repeats.avg_at_k
    lines = summary_lines(summary, None)
    assert lines[0] == "12 results (4 scenarios x 3 runs): 7 passed, 4 failed, 1 error"
    start = next(i for i, line in enumerate(lines) if line.startswith("pass@3 (4 scenarios x 3 runs"))
    assert lines[start].endswith("its interval counts scenarios, not runs):")
    assert lines[start + 1:start + 4] == [
        f"  avg@3  7/12 = 58.3% [{percent_number(avg.low)}–{percent_number(avg.high)}]",  # scenario-clustered
        "  pass@3  3/4 = 75.0% [30.1–95.4]",
        "  pass^3  2/4 = 50.0% [15.0–85.0]",  # d's errored run left out, as the export counts it
    ]
    assert lines[start + 4] == "  per run: run_1 75.0%, run_2 25.0%, run_3 75.0%"
    assert lines[start + 5] == "  flipped (1): b PFP"
    assert lines[start + 6] == "  errored runs (1, not counted as flips): d run_2"


def test_incomplete_run_says_so_first() -> None:
    planned = [f"search/s{i}" for i in range(10)]
    lines = block([record("s0", "passed"), record("s1", "failed"), record("s2", "passed")], planned=planned)
    assert lines[0] == ("INCOMPLETE: 3 of 10 planned scenarios done "
                        "(7 not run: search/s3, search/s4, search/s5, search/s6, search/s7, search/s8, search/s9)")
    assert lines[1] == "3 scenarios: 2 passed, 1 failed, 0 errors"
    assert lines[2] == "strict      2/10 = 20.0% [5.7–51.0] (not-run counted as not passed)"
    assert lines[3] == "judged-only  2/3 = 66.7% [20.8–93.9]"
    table = table_after(lines, "split")
    assert table[0].split() == ["split", "n", "passed", "failed", "errors", "not-run", "strict", "judged"]
    assert table[1].split() == ["search", "3", "2", "1", "0", "7", "20.0%", "66.7%"]
    assert_right_aligned(table)


def test_incomplete_line_names_the_first_ten_not_run() -> None:
    planned = [f"search/s{i}" for i in range(1, 16)] + ["search/a/run_1"]
    line = block([record("a", "passed")], planned=planned)[0]
    assert line == ("INCOMPLETE: 1 of 16 planned scenarios done (15 not run: search/s1, search/s2, search/s3, "
                    "search/s4, search/s5, search/s6, search/s7, search/s8, search/s9, search/s10, ... (5 more))")


def test_incomplete_repeats_count_runs() -> None:
    records = [record("a", "passed", run=1), record("a", "failed", run=2)]
    lines = block(records, planned=["search/a/run_1", "search/a/run_2", "search/a/run_3"])
    assert lines[0] == "INCOMPLETE: 2 of 3 planned scenario runs done (1 not run: search/a/run_3)"


def test_complete_run_has_no_incomplete_line_or_not_run_column() -> None:
    lines = block([record("a", "passed"), record("b", "failed")], planned=["search/a", "search/b"])
    assert lines[0].startswith("2 scenarios")
    assert not any("not-run" in line or "not run" in line for line in lines)


@pytest.mark.parametrize(("items", "n", "text"), [
    (["a", "b", "c"], 3, "a, b, c"),
    (["a", "b", "c"], 10, "a, b, c"),
    (["a", "b", "c", "d", "e"], 2, "a, b, ... (3 more)"),
    (["a", "b"], 0, "... (2 more)"),
    ([], 5, ""),
])
def test_first_n(items: list[str], n: int, text: str) -> None:
    assert first_n(items, n) == text


def test_no_pass_at_k_section_for_single_runs() -> None:
    assert not any(line.startswith("pass@") for line in block(headline_records()))


def test_gate_lines_come_last() -> None:
    summary = summarise(headline_records())
    decision = Gate(min_pass_rate=0.8, max_error_rate=0.1).decide(summary)
    lines = summary_lines(summary, decision)
    assert lines[-2:] == decision.lines
    assert not any(line.startswith("gate:") for line in summary_lines(summary, None))


def test_write_summary_json(tmp_path: Path) -> None:
    path = tmp_path / "out" / "summary.json"
    summary = summarise(headline_records() + [record("café_1", "error", error_category="daemon_error")])
    decision = Gate(max_error_rate=0.1).decide(summary)
    path.parent.mkdir()
    path.write_text("old", encoding="utf-8")
    write_summary_json(path, summary, decision, extra={"model": "qwen3.6–35b", "image_id": "34801a117af7"})
    text = path.read_text(encoding="utf-8")
    assert "café_1" in text and "qwen3.6–35b" in text  # not \u-escaped
    data = json.loads(text)
    assert list(data)[:2] == ["model", "image_id"]
    assert (data["total"], data["errors"]) == (161, 6)
    assert data["gate"] == {"met": True, "lines": decision.lines, "unmet": []}
    assert sorted(p.name for p in path.parent.iterdir()) == ["summary.json"]


def test_write_summary_json_of_an_incomplete_run(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    summary = summarise([record("a", "passed")], planned=["search/a", "search/b", "time/c"])
    decision = Gate(min_pass_rate=0.3).decide(summary, allow_incomplete=True)
    write_summary_json(path, summary, decision)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["planned"], data["done"], data["complete"]) == (3, 1, False)
    assert data["not_run"] == ["search/b", "time/c"]
    assert (data["strict"]["successes"], data["strict"]["n"]) == (1, 3)
    assert data["gate"]["met"] and data["gate"]["lines"][0].startswith("gate: incomplete: 2 of 3")


def test_write_summary_json_without_gate(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_summary_json(path, summarise([]), None)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["gate"] is None
    assert data["total"] == 0 and data["strict"]["value"] is None


def test_extra_may_not_overwrite_summary_keys(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    with pytest.raises(ValueError, match="total"):
        write_summary_json(path, summarise([record("a", "passed")]), None, extra={"total": 999})
    assert list(tmp_path.iterdir()) == []


def test_empty_run_still_reports_and_gates() -> None:
    summary = summarise([])
    lines = summary_lines(summary, Gate(min_pass_rate=0.5).decide(summary))
    assert lines == ["0 scenarios: 0 passed, 0 failed, 0 errors",
                     "strict      0/0 = n/a",
                     "judged-only 0/0 = n/a",
                     "gate: not met: no scenario results to measure (0 scenarios ran)"]
