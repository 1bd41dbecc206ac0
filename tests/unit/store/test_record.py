"""The one record: gaia2-runner's keys first, a lossless round trip, files of version 0.1."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re

import pytest
from gaia2_testing import REPO, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.store.record import (
    OUTCOMES,
    RUNNER_KEYS,
    AttemptRecord,
    RecordError,
    is_judged,
    scenario_key,
    verdict_of,
)


def _record(**extra: object) -> AttemptRecord:
    values: dict[str, object] = dict(
        scenario_id="scenario_universe_21_abc", success=False, reward=0.0, num_agent_events=5,
        agent_response="done", judged_in_container=True, timed_out=False, timeout_seconds=600.0,
        daemon_status={"status": "stopped"}, scenario_file="/x.json", failure_reasons=["nope"], error=None,
        split="search", universe="universe_21", outcome="failed",
    )
    values.update(extra)
    return AttemptRecord(**values)  # type: ignore[arg-type]


def test_json_starts_with_the_runners_keys_in_its_order_and_round_trips() -> None:
    record = _record(repeat=2, repeats=3, attempt=2, skipped_files=[{"path": "/a", "reason": "fifo"}])
    data = json.loads(json.dumps(record.to_json()))
    assert tuple(data)[: len(RUNNER_KEYS)] == RUNNER_KEYS
    assert AttemptRecord.from_json(data) == record
    assert record.key == "search/scenario_universe_21_abc/run_2"


def test_a_version_0_1_row_reads_with_its_repeat_and_outcome() -> None:
    old = {"scenario_id": "s", "success": None, "run": 2, "split": "time", "error": "x", "extra": 1}
    record = AttemptRecord.from_json(old)
    assert (record.repeat, record.outcome, record.error) == (2, "error", "x")
    assert not is_judged(record) and is_judged(_record())


def test_keys_are_spelled_once() -> None:
    assert scenario_key("search", "s", 1, 1) == "search/s"
    assert scenario_key("search", "s", 1, 2) == "search/s/run_1"
    assert _record().message == "nope"
    assert _record(outcome="error", success=None, error="[x] y").message == "[x] y"


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(), st.text(max_size=8), st.sampled_from(OUTCOMES)
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        st.dictionaries(
            st.sampled_from(["scenario_id", "split", "repeat", "run", "outcome", "success", "attempt"]), VALUES
        ),
        VALUES,
    )
)
def test_a_verdict_read_alone_is_the_whole_records_verdict(data: object) -> None:
    """verdict_of checks only identity and outcome, so it refuses no more than from_json does,
    and whatever from_json reads, it reads the same key and outcome from (a baseline's reader
    keeps these alone)."""
    try:
        record = AttemptRecord.from_json(data)  # type: ignore[arg-type]
    except RecordError:
        with contextlib.suppress(RecordError):
            verdict_of(data)
        return
    assert verdict_of(data) == ((record.split, record.scenario_id, record.repeat), record.outcome)


def test_a_record_stands_for_a_scenario_file_unless_both_hashes_are_known_and_differ() -> None:
    known = _record(scenario_sha256="a" * 64)
    assert known.made_from("a" * 64) and known.made_from(None)
    assert not known.made_from("b" * 64)
    assert _record().made_from("b" * 64)


BASE = {"scenario_id": "s", "split": "search", "success": True}


@pytest.mark.parametrize(("usage", "why"), [
    ({"calls": 10**30}, f"usage.calls is {10**30}"),
    ({"input_tokens": -1}, "usage.input_tokens is -1"),
    ({"output_tokens": "5"}, "usage.output_tokens is '5'"),
    ({"cached_input_tokens": 1.5}, "usage.cached_input_tokens is 1.5"),
    ({"other_models": True}, "usage.other_models is True"),
    ({"reported_cost_usd": -0.01}, "usage.reported_cost_usd is -0.01"),
    ({"reported_cost_usd": 1e300}, "usage.reported_cost_usd is 1e+300"),
    ({"models": "m"}, "usage.models is not a list of strings"),
    ({"refused": [1]}, "usage.refused is not a list of strings"),
])
def test_a_records_usage_out_of_range_is_refused_by_field(usage: dict[str, object], why: str) -> None:
    with pytest.raises(RecordError) as excinfo:
        AttemptRecord.from_json({**BASE, "usage": usage})
    assert excinfo.value.field == "usage" and why in str(excinfo.value)


@settings(max_examples=examples(200), deadline=None)
@given(usage=st.dictionaries(st.sampled_from(["calls", "input_tokens", "reported_cost_usd", "models", "x"]),
                             st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
                             | st.lists(st.text(max_size=3), max_size=2), max_size=4))
@example(usage={"calls": 10**30})
def test_any_usage_object_is_a_record_or_one_record_error(usage: dict[str, object]) -> None:
    try:
        record = AttemptRecord.from_json({**BASE, "usage": usage})
    except RecordError as exc:
        assert exc.field == "usage"
        return
    assert record.usage == usage


def test_every_record_field_is_in_the_results_page_table() -> None:
    """docs/reference/results.md's table of record fields names every field of AttemptRecord, the new ones too."""
    text = (REPO / "docs" / "reference" / "results.md").read_text(encoding="utf-8")
    table = text[text.index("| Field | What |"):text.index("## summary.json")]
    named = set(re.findall(r"`(\w+)`", "\n".join(line.split("|")[1] for line in table.splitlines()[2:] if "|" in line)))
    assert {spec.name for spec in dataclasses.fields(AttemptRecord)} <= named
