"""``pytest-gaia2 list`` on run folders written with the real store and record code."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_compare import write_run

from pytest_gaia2.cli.main import main
from pytest_gaia2.store import folder as store


def test_sessions_that_ran_nothing_are_counted_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run resumed five times, three of those sessions stopped before any scenario (a halt, a
    crash): its sessions column says 3, and that 3 more ran nothing."""
    folder = write_run(tmp_path, {"a": "P", "b": "F"})
    run = store.RunFolder(folder)
    run.rewrite_results(
        replace(record, session_id="second") if record.scenario_id == "b" else record for record in run.records()
    )
    for session in ("crashed-1", "second", "crashed-2", "crashed-3"):
        store.append_jsonl(folder / store.SESSIONS_FILE, {"session_id": session, "planned": 2})
    plain = write_run(tmp_path, {"c": "P"}, minute=5)
    assert main(["list", str(tmp_path)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:] if line.startswith("2026")}
    assert " 2 (+3 ran nothing) " in rows[folder.name], rows
    assert " 1 " in rows[plain.name] and "ran nothing" not in rows[plain.name]
    assert "2 (+3 ran nothing)" in (tmp_path / "index.html").read_text(encoding="utf-8")
