"""The scenario index: a warm discovery parses nothing, a change is re-parsed, a bad index is rebuilt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_scenarios import _scenario, _write

from pytest_gaia2.plan import scenarios
from pytest_gaia2.plan.scenarios import Scenario, discover


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust files written a moment ago; the guard against same-tick rewrites has its own test."""
    monkeypatch.setattr(scenarios, "_SETTLED_NS", 0)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files parsed from now on."""
    parsed: list[Path] = []
    real = scenarios._parse

    def counting(path: Path, split: str) -> Scenario:
        parsed.append(path)
        return real(path, split)

    monkeypatch.setattr(scenarios, "_parse", counting)
    return parsed


def _tree(root: Path, count: int = 3) -> list[Path]:
    return [_write(root / "search" / f"s{n}.json", _scenario(f"scenario_universe_2{n}_abc")) for n in range(count)]


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path, split: str) -> Scenario:
        raise AssertionError(f"{path} was parsed")

    monkeypatch.setattr(scenarios, "_parse", refuse)


def test_warm_discovery_parses_nothing(tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path / "data")
    index = tmp_path / "cache" / "index.json"
    cold = discover([tmp_path / "data"], index)
    assert len(cold[0]) == 3 and cold[1] == [] and all(s.sha256 for s in cold[0])
    _no_parsing(monkeypatch)
    assert discover([tmp_path / "data"], index) == cold
    assert discover([tmp_path / "data" / "search"], index)[0] == cold[0]  # same files, split from the folder name


def test_warm_discovery_does_not_rewrite_the_index(tmp_path: Path, settled: None) -> None:
    _tree(tmp_path / "data")
    index = tmp_path / "index.json"
    discover([tmp_path / "data"], index)
    before = index.stat()
    discover([tmp_path / "data"], index)
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_changed_file_is_parsed_again(tmp_path: Path, settled: None, parses: list[Path]) -> None:
    files = _tree(tmp_path / "data")
    index = tmp_path / "index.json"
    discover([tmp_path / "data"], index)
    _write(files[1], _scenario("scenario_universe_21_abc", extra_field="changed"))
    parses.clear()
    found, errors = discover([tmp_path / "data"], index)
    assert parses == [files[1]] and errors == []
    changed = next(s for s in found if s.path == files[1].resolve())
    assert changed.sha256 == scenarios.load_scenario(files[1], "search").sha256


def test_a_file_replaced_by_another_of_the_same_size_and_time_is_parsed_again(
        tmp_path: Path, settled: None, parses: list[Path]) -> None:
    files = _tree(tmp_path / "data")
    index = tmp_path / "index.json"
    discover([tmp_path / "data"], index)
    replacement = _write(tmp_path / "other.json", _scenario("scenario_universe_29_abc"))
    info = files[0].stat()
    os.utime(replacement, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(replacement, files[0])
    parses.clear()
    found, _ = discover([tmp_path / "data"], index)
    assert parses == [files[0]] and "scenario_universe_29_abc" in {s.scenario_id for s in found}


def test_errors_are_not_kept_so_a_fixed_file_is_picked_up(tmp_path: Path, settled: None) -> None:
    broken = tmp_path / "data" / "search" / "x.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{nope")
    index = tmp_path / "index.json"
    assert [e.field for e in discover([tmp_path / "data"], index)[1]] == ["file"]
    assert [e.field for e in discover([tmp_path / "data"], index)[1]] == ["file"]
    _write(broken, _scenario("s_fixed"))
    found, errors = discover([tmp_path / "data"], index)
    assert [s.scenario_id for s in found] == ["s_fixed"] and errors == []


def test_a_file_written_just_now_is_not_trusted(tmp_path: Path, parses: list[Path]) -> None:
    """A rewrite within the same timestamp tick keeps size and times: such entries wait until the file settles."""
    files = _tree(tmp_path / "data", count=1)
    index = tmp_path / "index.json"
    discover([tmp_path / "data"], index)
    discover([tmp_path / "data"], index)
    assert parses == files * 2


@pytest.mark.parametrize("content", [
    b"", b"{trunc", b"[]", b'{"version": 99, "files": {}}', b'{"version": 1, "files": []}',
    b"\xff\xfe", b"[" * 100_000,
])
def test_a_corrupt_index_is_ignored_and_rebuilt(tmp_path: Path, settled: None, content: bytes) -> None:
    _tree(tmp_path / "data")
    expected = discover([tmp_path / "data"])
    index = tmp_path / "index.json"
    index.write_bytes(content)
    assert discover([tmp_path / "data"], index) == expected
    assert json.loads(index.read_bytes())["version"] == 1


@pytest.mark.parametrize("damage", [
    lambda entry: entry.update(apps="Contacts"),
    lambda entry: entry.update(duration="30"),
    lambda entry: entry.update(tags=[1]),
    lambda entry: entry.pop("sha256"),
    lambda entry: entry.pop("duration"),
    lambda entry: entry.update(scenario_id="../../etc"),
    lambda entry: entry.update(stat=[0, 0, 0, 0, 0]),
])
def test_a_damaged_entry_is_parsed_again(tmp_path: Path, settled: None, parses: list[Path],
                                          damage: Callable[[dict], object]) -> None:
    files = _tree(tmp_path / "data", count=1)
    index = tmp_path / "index.json"
    expected = discover([tmp_path / "data"], index)
    document = json.loads(index.read_bytes())
    damage(document["files"][str(files[0])])
    index.write_text(json.dumps(document))
    parses.clear()
    assert discover([tmp_path / "data"], index) == expected
    assert parses == files


def test_entries_outside_the_roots_are_kept_and_vanished_files_dropped(tmp_path: Path, settled: None) -> None:
    a_files = _tree(tmp_path / "a")
    _write(tmp_path / "b" / "search" / "other.json", _scenario("s_other"))
    index = tmp_path / "index.json"
    discover([tmp_path / "a"], index)
    discover([tmp_path / "b"], index)
    a_files[0].unlink()
    discover([tmp_path / "a"], index)
    names = set(json.loads(index.read_bytes())["files"])
    assert names == {str(a_files[1]), str(a_files[2]), str(tmp_path / "b" / "search" / "other.json")}


def test_an_unwritable_index_never_stops_discovery(tmp_path: Path, settled: None,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    _tree(tmp_path / "data")
    (tmp_path / "file").write_text("not a folder")
    found, errors = discover([tmp_path / "data"], tmp_path / "file" / "index.json")
    assert len(found) == 3 and errors == []
    assert "the next discovery parses the scenario files again" in caplog.text


CHILD = """
import sys
from pathlib import Path
from pytest_gaia2.plan import scenarios
scenarios._SETTLED_NS = 0
for _ in range(5):
    found, errors = scenarios.discover([Path(sys.argv[1])], Path(sys.argv[2]))
    assert len(found) == 20 and not errors, (found, errors)
"""


def test_concurrent_writers_leave_one_whole_index(tmp_path: Path, settled: None) -> None:
    _tree(tmp_path / "data", count=20)
    index = tmp_path / "index.json"
    workers = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "data"), str(index)],
                                stderr=subprocess.PIPE, text=True) for _ in range(6)]
    assert [(worker.wait(timeout=120), worker.stderr.read()) for worker in workers] == [(0, "")] * 6
    assert len(json.loads(index.read_bytes())["files"]) == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "index.json"]  # no temporaries left


def test_any_task_text_survives_the_index(tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data" / "search" / "a.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"scenario_id": "s_a", "events": [{"action": {"app": "AgentUserInterface", '
                    '"function": "send_message_to_agent", "args": {"content": "caf\\u00e9 \\ud800 \\u2603"}}}]}')
    index = tmp_path / "index.json"
    cold = discover([tmp_path / "data"], index)
    assert cold[0][0].task == "caf\u00e9 \ud800 \u2603"
    _no_parsing(monkeypatch)
    assert discover([tmp_path / "data"], index) == cold


def test_what_the_controller_ships_to_workers_comes_back_the_same(tmp_path: Path) -> None:
    """xdist workers collect from the controller's discovery, handed over through workerinput."""
    from pytest_gaia2.plan.scenarios import discover, shipped, unshipped

    _write(tmp_path / "search" / "a.json", _scenario("scenario_universe_21_abc"))
    (tmp_path / "search" / "bad.json").write_text("{nope", encoding="utf-8")
    scenarios, errors = discover([tmp_path])
    back, back_errors = unshipped(json.loads(json.dumps(shipped(scenarios, errors))))
    assert back == scenarios
    assert [(e.path, e.field, e.problem) for e in back_errors] == [(e.path, e.field, e.problem) for e in errors]


def test_the_files_of_a_deleted_folder_leave_the_index_at_its_next_write(tmp_path: Path, settled: None) -> None:
    """Every run reads the whole index: a test's temporary folder, long deleted, must not stay in it."""
    index = tmp_path / "index.json"
    gone = _tree(tmp_path / "gone")
    kept = _tree(tmp_path / "kept")
    discover([tmp_path / "gone"], index)
    discover([tmp_path / "kept"], index)
    for file in gone:
        file.unlink()
    _tree(tmp_path / "new", count=1)
    discover([tmp_path / "new"], index)
    names = set(json.loads(index.read_text())["files"])
    assert names == {os.path.abspath(file) for file in [*kept, tmp_path / "new" / "search" / "s0.json"]}
