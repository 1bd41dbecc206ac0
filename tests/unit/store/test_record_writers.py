"""One record, one writer: result.json and results.jsonl are written by :class:`RunFolder` only,
masked like every file of the store; no other module writes a file of either name."""

from __future__ import annotations

import ast
import datetime as dt
import json
from pathlib import Path

from gaia2_testing import attempt_record

import pytest_gaia2
from pytest_gaia2.store import redact
from pytest_gaia2.store.folder import RESULT_FILE, RESULTS_FILE, RunFolder
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import Redactor

PACKAGE = Path(pytest_gaia2.__file__).parent
THE_WRITER = PACKAGE / "store" / "folder.py"
WRITERS = {"write_bytes", "write_text", "write_json", "append_jsonl"}
"""The store's writers (and pathlib's of the same names): outside the store, none may name a record file."""
RECORD_NAMES = {"RESULT_FILE", "RESULTS_FILE", "results", RESULT_FILE, RESULTS_FILE}
SECRET = "sk-canary-writers-0123456789"


def _record(scenario_id: str, success: bool | None, error: str | None = None) -> AttemptRecord:
    record: AttemptRecord = attempt_record(scenario_id, success, timeout_seconds=60.0, failure_reasons=[], error=error)
    return record


def record_file_writes(source: str) -> list[int]:
    """Lines of ``source`` that call a file writer on a record file: named in its arguments or
    in what it is called on (``path.write_text``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) not in WRITERS:
            continue
        receiver = [func.value] if isinstance(func, ast.Attribute) else []
        named = {
            part.attr if isinstance(part, ast.Attribute) else getattr(part, "id", getattr(part, "value", None))
            for expression in [*node.args, *(keyword.value for keyword in node.keywords), *receiver]
            for part in ast.walk(expression)
        }
        if named & RECORD_NAMES:
            found.append(node.lineno)
    return found


def test_the_check_sees_each_way_a_record_file_was_written_before() -> None:
    """The writes this rule replaced (attempt.py, the result book, rejudge's file) are caught, and
    a pathlib write too; the run folder's own methods and other files are not."""
    assert record_file_writes("store.write_json(self.folder / store.RESULT_FILE, record.to_json())") == [1]
    assert record_file_writes("store.append_jsonl(self.folder.results, record.to_json())") == [1]
    assert record_file_writes('write_text(dest / "results.jsonl", rows)') == [1]
    assert record_file_writes('(folder / "result.json").write_text(text)') == [1]
    assert record_file_writes('write_text(dest / "rejudgments.jsonl", rows)') == []
    assert record_file_writes("self.folder.append_result(record)\nRunFolder.write_record(folder, record)") == []


def test_only_the_run_folder_writes_result_json_and_results_jsonl() -> None:
    writes = {
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in PACKAGE.rglob("*.py")
        if path != THE_WRITER and "reference" not in path.relative_to(PACKAGE).parts
        for line in record_file_writes(path.read_text(encoding="utf-8"))
    }
    assert writes == set()


def test_result_json_is_the_record_masked_and_read_back(tmp_path: Path) -> None:
    record = _record("s1", None, error=f"the key {SECRET} leaked")
    with redact.installed(Redactor([SECRET])):
        RunFolder.write_record(tmp_path / "search" / "s1", record)
    text = (tmp_path / "search" / "s1" / RESULT_FILE).read_text()
    assert SECRET not in text and list(json.loads(text))[:2] == ["scenario_id", "success"]
    read = RunFolder.read_record(tmp_path / "search" / "s1")
    assert read is not None and read.key == "search/s1" and read.error == "the key *** leaked"


def test_results_jsonl_gets_a_line_per_verdict_and_keeps_the_last_per_key(tmp_path: Path) -> None:
    run = RunFolder.create(tmp_path, "c" * 32, dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    with redact.installed(Redactor([SECRET])):
        for record in (_record("s1", None, error=SECRET), _record("s2", False), _record("s1", True)):
            run.append_result(record)
    lines = run.results.read_text().splitlines()
    assert len(lines) == 3 and SECRET not in run.results.read_text()
    assert {record.key: record.outcome for record in run.records(strict=True)} == {
        "search/s1": "passed",
        "search/s2": "failed",
    }
