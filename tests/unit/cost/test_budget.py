"""The spend ledger and the budget's decisions."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.config.values import OptionError, usd
from pytest_gaia2.cost.budget import (
    LEDGER_FILE,
    LEGACY_LEDGER_FILE,
    STOPS,
    TOKENS_MAX,
    Budget,
    Ledger,
    entry_of,
    parse_all,
    parse_legacy,
    parse_lines,
    record_spend,
)
from pytest_gaia2.cost.prices import ATTEMPT_USD_MAX
from pytest_gaia2.store.folder import StoreError


def test_entries_are_per_attempt_and_never_counted_twice(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    assert ledger.total() == 0.0
    assert ledger.add(entry_of("search/a", 1), 0.25) == 0.25
    assert ledger.add(entry_of("search/a", 1), 0.25) == 0.25  # the same attempt again
    assert ledger.add(entry_of("search/a", 2), 0.5) == 0.75
    assert Ledger(tmp_path).total() == 0.75  # what a resumed session reads


def test_workers_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from pytest_gaia2.cost.budget import Ledger\n"
            "ledger = Ledger(Path(sys.argv[1]))\n"
            "for n in range(25): ledger.add(f'{sys.argv[2]}/{n}#1', 0.01)\n")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"gw{n}"]) for n in range(4)]
    assert all(worker.wait(60) == 0 for worker in workers)
    assert Ledger(tmp_path).total() == 1.0


def test_halt_and_cap() -> None:
    budget = Budget(halt=50.0, cap=80.0)
    assert budget.halted(49.99) is None and "halt is $50.00" in (budget.halted(50.0) or "")
    assert budget.capped(80.0) is None and "passed its cap $80.00" in (budget.capped(80.01) or "")
    assert Budget(cap=10.0).halted(10.0) is not None  # a cap alone also stops new starts
    assert Budget().halted(10**6) is None and Budget().capped(10**6) is None


# -- the append-only ledger: damage, legacy files, hostile bytes ---------------------------------


def test_each_attempt_is_one_appended_line_never_rewritten(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.add("search/a#1", 1.25)
    first = (tmp_path / LEDGER_FILE).read_bytes()
    ledger.add("search/b#1", 0.75)
    ledger.add("search/a#1", 1.25)  # the same spend again (a retried write): not added
    data = (tmp_path / LEDGER_FILE).read_bytes()
    assert data.startswith(first) and data.count(b"\n") == 2
    assert [json.loads(line)["entry"] for line in data.splitlines()] == ["search/a#1", "search/b#1"]
    assert ledger.total() == 2.0


def test_a_line_written_ahead_of_an_entry_cannot_hide_its_spend(tmp_path: Path) -> None:
    """A planted ``usd: 0`` line for an attempt that has not run yet: its spend is appended
    anyway, and an entry counts the largest of its lines, once."""
    path = tmp_path / LEDGER_FILE
    path.write_text(json.dumps({"entry": "search/a#1", "usd": 0.0}) + "\n", encoding="utf-8")
    ledger = Ledger(tmp_path)
    assert ledger.add("search/a#1", 9.0) == 9.0
    assert [json.loads(line)["usd"] for line in path.read_text(encoding="utf-8").splitlines()] == [0.0, 9.0]
    assert ledger.add("search/a#1", 0.0) == 9.0  # a smaller line later changes nothing
    assert ledger.total() == 9.0


def test_a_truncated_ledger_keeps_every_whole_line_and_names_the_damage(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    for n in range(3):
        ledger.add(f"search/s{n}#1", 1.0)
    path = tmp_path / LEDGER_FILE
    path.write_bytes(path.read_bytes()[:-20])  # the last line torn, as by a crash mid-write
    read = ledger.read()
    assert read.total == 2.0 and read.complete
    assert read.problems == (f"{path}: damaged line(s) 3 skipped; kept 2 entries ($2.00)",)
    ledger.add("search/s9#1", 0.5)  # appended on a line of its own, not glued to the torn one
    assert ledger.read().total == 2.5 and ledger.read().entries["search/s9#1"] == 0.5


def test_garbage_lines_cost_only_themselves(tmp_path: Path) -> None:
    lines = [b'{"entry": "a#1", "usd": 1.5, "at": "x"}', b"garbage", b'{"entry": "b#1", "usd": 1e308}',
             b'{"entry": "c#1", "usd": -1}', b'{"entry": "", "usd": 1}', b'{"entry": "d#1", "usd": true}',
             b'{"entry": "e#1", "usd": NaN}', b'["a#1", 1]', b'{"entry": "f#1", "usd": 2}']
    (tmp_path / LEDGER_FILE).write_bytes(b"\n".join(lines) + b"\n")
    read = Ledger(tmp_path).read()
    assert read.entries == {"a#1": 1.5, "f#1": 2.0}
    assert "damaged line(s) 2, 3, 4, 5, 6, 7, 8 skipped; kept 2 entries ($3.50)" in read.problems[0]
    (tmp_path / LEDGER_FILE).write_bytes(b"x\n" * 30)
    assert "damaged line(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 20 more skipped" in Ledger(tmp_path).read().problems[0]


def test_an_earlier_versions_spend_json_is_read_not_rewritten(tmp_path: Path) -> None:
    legacy = tmp_path / LEGACY_LEDGER_FILE
    legacy.write_text(json.dumps({"total_usd": 3.0, "attempts": {"search/a#1": 1.0, "search/b#1": 2.0}}, indent=2))
    before = legacy.read_bytes()
    ledger = Ledger(tmp_path)
    assert ledger.total() == 3.0 and ledger.read().problems == ()
    assert ledger.add("search/a#1", 1.0) == 3.0  # already in the old ledger: counted once
    assert ledger.add("search/c#1", 0.5) == 3.5
    assert legacy.read_bytes() == before and (tmp_path / LEDGER_FILE).is_file()


def test_a_truncated_spend_json_keeps_what_it_still_names(tmp_path: Path) -> None:
    text = json.dumps({"total_usd": 3.0, "attempts": {"search/a#1": 2.0, "search/b#1": 1.0}}, indent=2)
    (tmp_path / LEGACY_LEDGER_FILE).write_text(text[:text.index("search/b")])
    read = Ledger(tmp_path).read()
    assert read.entries == {"search/a#1": 2.0}
    assert read.problems == (f"{tmp_path / LEGACY_LEDGER_FILE}: damaged (not whole JSON); recovered 1 entries ($2.00)",)


def test_a_ledger_that_is_not_a_regular_file_is_incomplete_and_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LEDGER_FILE)
    read = Ledger(tmp_path).read()
    assert not read.complete and "not a regular file (fifo)" in read.problems[0]
    with pytest.raises(StoreError, match="not a regular file"):
        Ledger(tmp_path).add("a#1", 1.0)


def test_the_ledger_is_never_appended_through_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    run = tmp_path / "run"
    run.mkdir()
    (run / LEDGER_FILE).symlink_to(outside)
    with pytest.raises(StoreError, match="cannot append"):
        Ledger(run).add("a#1", 1.0)
    assert outside.read_bytes() == b""


@pytest.mark.parametrize("usd", [math.inf, math.nan, -0.5, ATTEMPT_USD_MAX * 2])
def test_an_amount_out_of_range_is_never_written(tmp_path: Path, usd: float) -> None:
    with pytest.raises(StoreError, match="not an amount of USD"):
        Ledger(tmp_path).add("a#1", usd)
    assert not (tmp_path / LEDGER_FILE).exists()


def test_record_spend_warns_instead_of_raising(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    record_spend(tmp_path, "search/a", 2, None)  # unknown cost: nothing to add
    assert not (tmp_path / LEDGER_FILE).exists()
    record_spend(tmp_path, "search/a", 2, 1.5)
    assert Ledger(tmp_path).read().entries == {"search/a#2": 1.5}
    os.mkfifo(tmp_path / "other.jsonl")
    (tmp_path / LEDGER_FILE).unlink()
    os.mkfifo(tmp_path / LEDGER_FILE)
    record_spend(tmp_path, "search/a", 3, 1.0)
    assert "spend of search/a#3 not in the ledger" in caplog.text


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_are_some_entries_and_some_damage(data: bytes) -> None:
    entries, damaged = parse_lines(data)
    assert all(isinstance(key, str) and 0 <= usd <= ATTEMPT_USD_MAX for key, usd in entries.items())
    assert math.isfinite(math.fsum(entries.values()))
    assert all(1 <= number <= data.count(b"\n") + 1 for number in damaged)
    legacy, _whole = parse_legacy(data)
    assert all(0 <= usd <= ATTEMPT_USD_MAX for usd in legacy.values())


ENTRY_LINES = st.lists(st.tuples(st.text(min_size=1, max_size=30),
                                 st.floats(min_value=0, max_value=ATTEMPT_USD_MAX)), max_size=20)


@settings(max_examples=examples(200), deadline=None)
@given(ENTRY_LINES, st.integers(min_value=0, max_value=10_000))
@example([("a", 1.0), ("a", 2.0)], 53)  # cut just before the last newline: that line is whole and counts
def test_a_ledger_cut_anywhere_keeps_every_line_before_the_cut(lines: list[tuple[str, float]], cut: int) -> None:
    encoded = [json.dumps({"entry": entry, "usd": usd}).encode() for entry, usd in lines]
    data = b"".join(line + b"\n" for line in encoded)
    cut = min(cut, len(data))
    entries, damaged = parse_lines(data[:cut])
    expected: dict[str, float] = {}
    end = 0
    for line, (entry, amount) in zip(encoded, lines, strict=True):
        end += len(line)
        if end > cut:
            break
        expected[entry] = max(amount, expected.get(entry, amount))  # a whole last line counts without its newline
        end += 1
    assert {key: entries[key] for key in expected} == expected
    assert len(damaged) <= 1


@settings(max_examples=examples(100), deadline=None)
@given(st.binary(max_size=1000))
def test_the_ledger_reader_never_raises_on_any_file(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("ledger")
    (folder / LEDGER_FILE).write_bytes(data)
    (folder / LEGACY_LEDGER_FILE).write_bytes(data)
    read = Ledger(folder).read()
    assert read.complete and math.isfinite(read.total)


@pytest.mark.parametrize("raw", ["0", "-1", "inf", "nan", "1e308", "$2e9", "lots"])
def test_a_budget_is_a_finite_positive_amount(raw: str) -> None:
    with pytest.raises(OptionError, match="^--gaia2-budget-halt: (expected|must not be negative)"):
        usd("budget-halt", raw)


def test_a_budget_in_range() -> None:
    assert usd("budget-cap", "$12.5") == 12.5 and usd("budget-cap", "1e9") == 1e9


def test_a_judged_record_at_every_money_ceiling_still_loads_for_resume(tmp_path: Path) -> None:
    """Resume must never re-run a judged verdict because its numbers were odd but valid: the
    largest cost, counts and model list the writers can produce read back as a judged record."""
    from pytest_gaia2.cost.usage import COUNT_MAX, MODELS_MAX
    from pytest_gaia2.store.folder import RunFolder, write_json
    from pytest_gaia2.store.record import AttemptRecord, is_judged

    usage = {"calls": 10**6, "usage_calls": 10**6, "input_tokens": COUNT_MAX * 10**6, "output_tokens": COUNT_MAX,
             "cached_input_tokens": 0, "cache_write_tokens": 0, "reported_cost_usd": 1e6 * 10**6,
             "reported_cost_calls": 10**6, "models": [f"m{n}" for n in range(MODELS_MAX)], "other_models": 10**6,
             "refused": ["trace.jsonl, llm_call 1: usage.cost is 1e+308, not a cost in USD up to 1e+06 a call"]}
    record = AttemptRecord(scenario_id="s", success=True, reward=1.0, num_agent_events=1, agent_response="",
                           judged_in_container=True, timed_out=False, timeout_seconds=600.0, daemon_status=None,
                           scenario_file="", failure_reasons=[], error=None, split="search", outcome="passed",
                           usage=usage, cost_usd=ATTEMPT_USD_MAX, cost_source="price file")
    write_json(tmp_path / "search" / "s" / "result.json", record.to_json())
    loaded = RunFolder(tmp_path).last_record(tmp_path / "search" / "s")
    assert loaded is not None and is_judged(loaded) and loaded.cost_usd == ATTEMPT_USD_MAX


# -- tokens (--gaia2-token-halt) and errors (--gaia2-max-errors) -----------------------------------


def test_tokens_are_counted_per_attempt_priced_or_not(tmp_path: Path) -> None:
    """A model priced at 0 or not at all still has its tokens in the ledger, once per attempt;
    an unpriced attempt adds no money."""
    record_spend(tmp_path, "search/a", 1, 0.0, 1_000)
    record_spend(tmp_path, "search/b", 1, None, 2_500)  # usage without a price
    record_spend(tmp_path, "search/b", 1, None, 2_500)  # the same attempt again
    record_spend(tmp_path, "search/c", 1, 0.5)  # a line of before: money only
    read = Ledger(tmp_path).read()
    assert read.total == 0.5 and read.entries == {"search/a#1": 0.0, "search/c#1": 0.5}
    assert read.tokens == {"search/a#1": 1_000, "search/b#1": 2_500} and read.total_tokens == 3_500
    lines = [json.loads(line) for line in (tmp_path / LEDGER_FILE).read_text().splitlines()]
    assert [(line["usd"], line.get("tokens")) for line in lines] == [(0.0, 1000), (None, 2500), (0.5, None)]
    with pytest.raises(StoreError, match="not a count of tokens"):
        Ledger(tmp_path).add("search/d#1", None, -1)


@pytest.mark.parametrize(
    "line",
    [
        b'{"entry": "a#1", "usd": null}',  # neither amount
        b'{"entry": "a#1", "usd": "1", "tokens": 5}',  # an amount that is no amount
        b'{"entry": "a#1", "usd": null, "tokens": -5}',
        b'{"entry": "a#1", "usd": null, "tokens": true}',
        b'{"entry": "a#1", "usd": null, "tokens": 1e30}',
    ],
)
def test_a_line_without_a_valid_amount_is_damage(line: bytes) -> None:
    entries, tokens, damaged = parse_all(line + b"\n")
    assert (entries, tokens, damaged) == ({}, {}, [1])


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_give_bounded_token_counts(data: bytes) -> None:
    entries, tokens, damaged = parse_all(data)
    assert all(isinstance(count, int) and 0 <= count <= TOKENS_MAX for count in tokens.values())
    assert (entries, damaged) == parse_lines(data)


def test_the_token_halt_stops_new_starts_as_the_money_halt_does() -> None:
    budget = Budget(token_halt=1_000_000)
    assert budget.limited and budget.halted(0.0, 999_999) is None
    assert budget.halted(0.0, 1_000_000) == (
        "budget: the run has used 1,000,000 tokens, its token halt is 1,000,000; no new scenario starts"
    )
    assert Budget(halt=1.0, token_halt=10).halted(2.0, 20) == (
        "budget: the run has spent $2.00, its halt is $1.00; no new scenario starts"
    )  # the money is named first
    assert Budget().halted(10**6, 10**9) is None


def test_max_errors_counts_this_sessions_errors_by_category() -> None:
    budget = Budget(max_errors=2)
    assert not budget.limited  # nothing to read from the ledger
    assert budget.errors_reached([]) is None and budget.errors_reached(["container_start"]) is None
    reason = budget.errors_reached(["health_timeout", "container_start", "health_timeout"])
    assert reason == (
        "errors: 3 infrastructure error(s) in this session (container_start 1, health_timeout 2) reached "
        "--gaia2-max-errors 2; no new scenario starts"
    )
    assert reason.startswith(STOPS) and Budget().errors_reached(["x"] * 100) is None


def test_a_ledger_below_the_records_it_pays_for_is_named_and_the_records_count(tmp_path: Path) -> None:
    """spend.jsonl rewritten with ``usd: 0`` for every entry cannot switch the budget off: the
    records in results.jsonl carry their attempts' cost, and the larger counts."""
    from pytest_gaia2.store.folder import RunFolder

    folder = RunFolder(tmp_path)
    for name, attempt, cost in (("a", 1, 2.0), ("a", 2, 3.0), ("b", 1, 1.5), ("c", 1, None)):
        record = {"scenario_id": name, "split": "search", "success": True, "attempt": attempt, "cost_usd": cost}
        folder.append_result(AttemptRecordOf(record))
    (tmp_path / LEDGER_FILE).write_text("".join(json.dumps({"entry": entry, "usd": 0}) + "\n"
                                                for entry in ("search/a#1", "search/a#2", "search/b#1")))
    read = Ledger(tmp_path).read()
    assert read.total == 6.5
    [problem] = read.problems
    assert problem == (f"{tmp_path / LEDGER_FILE}: 3 entries below the cost their records carry (ledger $0.00, "
                       "records $6.50): the records' cost counts (search/a#1, search/a#2, search/b#1)")
    Ledger(tmp_path).add("search/b#1", 1.5)  # the record's own spend, appended: no longer below
    assert Ledger(tmp_path).read().problems == (problem.replace("3 entries", "2 entries").replace("$6.50", "$5.00")
                                                .replace(", search/b#1", ""),)


def AttemptRecordOf(data: dict[str, object]):  # noqa: N802 - reads like the class it builds
    from pytest_gaia2.store.record import AttemptRecord

    return AttemptRecord.from_json(data)


def test_an_attempt_of_unknown_cost_counts_for_the_budget_at_the_priced_mean(tmp_path: Path) -> None:
    """Usage out of range (negative tokens, one bad trace line) makes a cost unknown, never zero."""
    ledger = Ledger(tmp_path)
    record_spend(tmp_path, "search/u", 1, None, refused=True)
    read = ledger.read()
    assert read.unknown == ("search/u#1",) and read.total == 0.0
    assert read.for_budget() is None  # nothing priced to stand in: a budget cannot go on blind
    record_spend(tmp_path, "search/u", 1, None, refused=True)  # marked once
    record_spend(tmp_path, "search/v", 1, None)  # merely unpriced (no price for the model): nothing to add
    record_spend(tmp_path, "search/a", 1, 1.0)
    record_spend(tmp_path, "search/b", 1, 3.0)
    read = ledger.read()
    assert (read.total, read.stand_in(), read.for_budget()) == (4.0, 2.0, 6.0)
    assert (tmp_path / LEDGER_FILE).read_text().count('"unknown": true') == 1
    assert read.problems == ()  # an unknown line is no damage
    record_spend(tmp_path, "search/u", 1, 0.5)  # priced after all: the price counts, not the stand-in
    assert ledger.read().unknown == () and ledger.read().for_budget() == 4.5
