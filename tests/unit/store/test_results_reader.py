"""Reading results.jsonl as hostile input: every line a valid record, or one error naming the
file, the line and the field; never another exception, never a silently dropped result."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from bad_records import BAD_FIELDS
from gaia2_testing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gaia2.store.folder import ResultsError, RunFolder, json_lines, numbered_lines
from pytest_gaia2.store.record import AttemptRecord, RecordError
from pytest_gaia2.store.safejson import JsonReadError

GOOD: dict[str, Any] = {
    "scenario_id": "scenario_universe_21_abc", "success": True, "reward": 1.0, "num_agent_events": 3,
    "agent_response": "ok", "judged_in_container": True, "timed_out": False, "timeout_seconds": 600.0,
    "daemon_status": {"status": "complete"}, "scenario_file": "/d/s.json", "failure_reasons": [], "error": None,
    "split": "search", "repeat": 1, "repeats": 1, "attempt": 1, "outcome": "passed", "folder": "search/s",
    "wall_time_s": 2.5, "cost_usd": 0.1, "usage": {"calls": 1}, "scenario_sha256": "0" * 64,
}
FIELDS = [name for name in AttemptRecord.__dataclass_fields__]
def _json(floats: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    return st.recursive(st.none() | st.booleans() | st.integers() | floats | st.text(max_size=8),
                        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                        max_leaves=8)


JSON = _json(st.floats())
LOADED_JSON = _json(st.floats(allow_nan=False, allow_infinity=False))
"""What the store's reader can hand a record: it refuses NaN and Infinity (and NaN != NaN would
make a round trip unequal)."""


def _write(folder: Path, lines: list[bytes]) -> RunFolder:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run_config.json").write_text("{}")
    (folder / "results.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    return RunFolder(folder)


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).replace("Infinity", "1e999").encode()


@pytest.mark.parametrize(("name", "value"), BAD_FIELDS, ids=[f"{n}={v!r}" for n, v in BAD_FIELDS])
def test_each_bad_field_is_one_error_naming_file_line_and_field(tmp_path: Path, name: str, value: object) -> None:
    run = _write(tmp_path / "run", [_line(GOOD), _line({**GOOD, "scenario_id": "b", name: value})])
    with pytest.raises(ResultsError) as raised:
        list(run.records(strict=True))
    assert str(raised.value).startswith(f"{run.results}: line 2: field {name!r}: ")
    assert len(list(run.records())) == 1  # a resuming run skips the line (and keeps the good one)


def test_a_good_file_reads_every_record_last_line_per_key(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", [_line({**GOOD, "success": False, "outcome": "failed"}), b"", _line(GOOD)])
    assert [record.outcome for record in run.records(strict=True)] == ["passed"]


@pytest.mark.parametrize("line", [b"{torn", b"[1, 2]", b'"text"', b"\xff\xfe", b"[" * 500 + b"]" * 500])
def test_a_line_that_is_no_record_names_its_line(tmp_path: Path, line: bytes) -> None:
    run = _write(tmp_path / "run", [_line(GOOD), line])
    with pytest.raises(ResultsError, match=r"results\.jsonl: line 2: "):
        list(run.records(strict=True))


def test_a_fifo_or_a_link_is_refused_at_once(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", [])
    run.results.unlink()
    os.mkfifo(run.results)
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(pytest.raises(ResultsError, list, run.records(True))),
                              daemon=True)
    reader.start()
    reader.join(5)
    assert result and "not a regular file (fifo)" in str(result[0].value)  # type: ignore[attr-defined]
    assert list(json_lines(run.results)) == []  # the lenient reader: empty, at once
    run.results.unlink()
    run.results.symlink_to("/dev/zero")
    with pytest.raises(ResultsError, match="symbolic link"):
        list(run.records(strict=True))


def test_a_line_without_end_costs_only_the_line_bound(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"7" * 5000 + b"\n" + b'{"b": 2}\n')
    found = list(numbered_lines(path, max_line_bytes=100))
    assert found[0] == (1, {"a": 1}) and found[2] == (3, {"b": 2})
    assert found[1][0] == 2 and "longer than the 100 bytes" in str(found[1][1])
    with pytest.raises(JsonReadError, match="larger than the 10 bytes"):
        list(numbered_lines(path, max_bytes=10))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(FIELDS), value=LOADED_JSON)
def test_any_json_value_in_any_field_loads_or_names_that_field(name: str, value: Any) -> None:
    try:
        record = AttemptRecord.from_json({**GOOD, name: value})
    except RecordError as exc:
        assert exc.field == name and str(exc).startswith(f"field {name!r}: ")
    else:
        assert AttemptRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.binary(max_size=40) | st.builds(lambda v: json.dumps(v).encode(), JSON), max_size=4))
def test_any_line_bytes_load_or_fail_with_the_one_error(tmp_path: Path, lines: list[bytes]) -> None:
    run = _write(tmp_path / "any", [line.replace(b"\n", b" ") for line in lines])
    try:
        records = list(run.records(strict=True))
    except ResultsError as exc:
        assert str(exc).startswith(f"{run.results}: line ") and "\n" not in str(exc)
    else:
        assert all(isinstance(record, AttemptRecord) for record in records)

