"""Discovery and validation: each unusable file is reported once with its path and field."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_gaia2.plan import scenarios
from pytest_gaia2.plan.scenarios import Scenario, ScenarioError, discover, load_scenario

DATA = Path(__file__).resolve().parents[2] / "data" / "scenarios"
SHIPPED = Path(__file__).resolve().parents[3] / "scenarios"


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _scenario(sid: str, **extra: object) -> dict:
    return {"metadata": {"definition": {"scenario_id": sid, "duration": 30, "start_time": 1.0}},
            "events": [{"event_type": "USER", "event_id": "Event-USER-1", "dependencies": [],
                        "action": {"app": "AgentUserInterface", "function": "send_message_to_agent",
                                   "args": [{"name": "content", "value": "Do it", "value_type": "str"}]}}],
            **extra}


def test_shipped_scenarios_all_load() -> None:
    scenarios, errors = discover([SHIPPED])
    assert errors == []
    splits = {s.split for s in scenarios}
    assert splits == {"execution", "search", "adaptability", "time", "ambiguity"}
    assert all(s.universe and s.universe.startswith("universe_") for s in scenarios)


def test_metadata(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path / "search" / "a.json", _scenario("scenario_universe_22_abc")), "search")
    assert scenario.scenario_id == "scenario_universe_22_abc"
    assert scenario.task == "Do it"
    assert scenario.duration == 30.0
    assert scenario.universe == "universe_22"
    assert scenario.test_id == "search/scenario_universe_22_abc"
    assert scenario.marker == "search_split"


def test_each_bad_file_names_path_and_field(tmp_path: Path) -> None:
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "broken.json").write_text("{nope", encoding="utf-8")
    _write(tmp_path / "search" / "list.json", [1, 2])
    _write(tmp_path / "search" / "noid.json", {"metadata": {"definition": {}}, "events": []})
    _write(tmp_path / "search" / "events.json", {**_scenario("s_events"), "events": {"a": 1}})
    bad_action = _scenario("s_action")
    del bad_action["events"][0]["action"]["function"]
    _write(tmp_path / "search" / "action.json", bad_action)
    _write(tmp_path / "search" / "good.json", _scenario("s_good"))
    scenarios, errors = discover([tmp_path])
    assert [s.scenario_id for s in scenarios] == ["s_good"]
    fields = {e.path.name: e.field for e in errors}
    assert fields == {
        "broken.json": "file",
        "list.json": "file",
        "noid.json": "metadata.definition.scenario_id",
        "events.json": "events",
        "action.json": "events[0].action.function",
    }
    assert all(str(e.path) in str(e) for e in errors)


def test_duplicate_ids_are_reported_for_both_files(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "search" / "x.json", _scenario("same"))
    _write(tmp_path / "b" / "search" / "x.json", _scenario("same"))
    scenarios, errors = discover([tmp_path / "a", tmp_path / "b"])
    assert scenarios == []
    assert len(errors) == 2 and all("duplicate id 'same'" in str(e) for e in errors)


def test_ids_differing_only_in_case_are_refused_for_both_files(tmp_path: Path) -> None:
    """NTFS and APFS fold case: Case_A and case_a would share one output folder there."""
    _write(tmp_path / "search" / "a.json", _scenario("Case_A"))
    _write(tmp_path / "time" / "b.json", _scenario("case_a"))
    _write(tmp_path / "search" / "c.json", _scenario("s_c"))
    found, errors = discover([tmp_path])
    assert [s.scenario_id for s in found] == ["s_c"]
    problems = _problems(errors)
    assert problems.keys() == {"a.json", "b.json"}
    assert all(field == ID_FIELD and problem.startswith("ids 'Case_A', 'case_a' differ only in case")
               for field, problem in problems.values()), problems


def test_split_folders_differing_only_in_case_are_refused(tmp_path: Path) -> None:
    _write(tmp_path / "Search" / "a.json", _scenario("s_a"))
    _write(tmp_path / "search" / "b.json", _scenario("s_b"))
    _write(tmp_path / "time" / "c.json", _scenario("s_c"))
    found, errors = discover([tmp_path])
    assert [s.scenario_id for s in found] == ["s_c"]
    assert {name: field for name, (field, _) in _problems(errors).items()} == {
        "a.json": "split (folder name)", "b.json": "split (folder name)"}


@pytest.mark.parametrize("sid", ["CON", "nul", "COM1", "aux.txt", "LPT9.json", "trailing."])
def test_ids_windows_cannot_name_are_refused(tmp_path: Path, sid: str) -> None:
    _write(tmp_path / "search" / "bad.json", _scenario(sid))
    found, errors = discover([tmp_path])
    [(field, problem)] = _problems(errors).values()
    assert found == [] and field == ID_FIELD and problem.startswith(repr(sid)), problem


def test_other_directory_is_its_own_split(tmp_path: Path) -> None:
    _write(tmp_path / "custom-set" / "x.json", _scenario("x1"))
    scenarios, _ = discover([tmp_path])
    assert scenarios[0].split == "custom-set"
    assert scenarios[0].marker == "custom_set_split"


def _problems(errors: list[ScenarioError]) -> dict[str, tuple[str, str]]:
    return {e.path.name: (e.field, e.problem) for e in errors}


@pytest.mark.timeout(30)
def test_every_unreadable_file_is_its_own_error(tmp_path: Path) -> None:
    search = tmp_path / "search"
    _write(search / "good.json", _scenario("s_good"))
    os.mkfifo(search / "fifo.json")  # never opened: opening a FIFO for reading blocks until a writer comes
    latin1 = json.dumps(_scenario("s_é"), ensure_ascii=False).encode("latin-1")
    (search / "latin1.json").write_bytes(latin1)
    bad_byte = latin1.index("é".encode("latin-1"))
    (search / "deep.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)
    (search / "dir.json").mkdir()
    (search / "broken.json").symlink_to(search / "gone.json")
    (search / "nan.json").write_text('{"metadata": {"definition": {"scenario_id": "s_nan", "duration": NaN}}}')
    started = time.monotonic()
    found, errors = discover([tmp_path])
    assert time.monotonic() - started < 10
    assert [s.scenario_id for s in found] == ["s_good"]
    assert _problems(errors) == {
        "fifo.json": ("file", "not a regular file (fifo)"),
        "latin1.json": ("file", f"not valid UTF-8 (byte offset {bad_byte}: invalid continuation byte)"),
        "deep.json": ("file", "nested deeper than json's recursion limit allows"),
        "dir.json": ("file", "not a regular file (directory)"),
        "broken.json": ("file", "cannot be read (broken symbolic link)"),
        "nan.json": ("file", "not valid JSON (NaN is not a JSON number)"),
    }
    assert all(str(e).startswith(f"{e.path}: file: ") for e in errors)


def test_too_large_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "search" / "good.json", _scenario("s_good"))
    big = _write(tmp_path / "search" / "big.json", {**_scenario("s_big"), "pad": "x" * 5000})
    monkeypatch.setattr(scenarios, "MAX_SCENARIO_BYTES", 4000)
    found, errors = discover([tmp_path])
    assert [s.scenario_id for s in found] == ["s_good"]
    assert _problems(errors) == {"big.json": ("file", f"larger than the 4000 bytes allowed ({big.stat().st_size} bytes)")}


@pytest.mark.timeout(30)
def test_a_fifo_given_as_the_root_is_an_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.json")
    found, errors = discover([tmp_path / "x.json"])
    assert found == [] and [str(e) for e in errors] == [f"{tmp_path / 'x.json'}: file: not a regular file (fifo)"]


CHILD = """
import json, sys
from pathlib import Path
from pytest_gaia2.plan.scenarios import discover
found, errors = discover([Path(sys.argv[1])])
print(json.dumps({"ids": [s.scenario_id for s in found], "errors": [[e.path.name, e.field, e.problem] for e in errors]}))
"""


def test_unreadable_permissions_are_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "search" / "good.json", _scenario("s_good"))
    locked = _write(tmp_path / "search" / "locked.json", _scenario("s_locked"))
    locked.chmod(0)
    command = [sys.executable, "-c", CHILD, str(tmp_path)]
    if os.geteuid() == 0:  # root reads any file: run the discovery without that capability
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root, and setpriv (to drop root's right to read any file) is missing")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 and "setpriv" in result.stderr:
        pytest.skip(f"cannot drop root's right to read any file here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"ids": ["s_good"],
                                         "errors": [["locked.json", "file", "cannot be read (Permission denied)"]]}


ID_FIELD = "metadata.definition.scenario_id"


@pytest.mark.parametrize(("sid", "problem"), [
    (".", "'.' starts with '.' (hidden names, '.', '..' and option-like names cannot name a folder)"),
    ("..", "'..' starts with '.' (hidden names, '.', '..' and option-like names cannot name a folder)"),
    (".hidden", "'.hidden' starts with '.' (hidden names, '.', '..' and option-like names cannot name a folder)"),
    ("-rf", "'-rf' starts with '-' (hidden names, '.', '..' and option-like names cannot name a folder)"),
    ("a" * 129, "'" + "a" * 49 + "... is 129 characters long, more than the 128 allowed"),
    ("../escape", "'../escape' may only hold letters, digits, '_', '.' and '-'"),
    ("with space", "'with space' may only hold letters, digits, '_', '.' and '-'"),
    ("ünï", "'ünï' may only hold letters, digits, '_', '.' and '-'"),
    ("   ", "missing or empty"),
])
def test_ids_that_cannot_name_a_folder(tmp_path: Path, sid: str, problem: str) -> None:
    _write(tmp_path / "search" / "bad.json", _scenario(sid))
    found, errors = discover([tmp_path])
    assert found == [] and _problems(errors) == {"bad.json": (ID_FIELD, problem)}


def test_longest_allowed_id_and_dots_inside(tmp_path: Path) -> None:
    _write(tmp_path / "search" / "long.json", _scenario("a" * 128))
    _write(tmp_path / "search" / "dots.json", _scenario("v1.2-x_y"))
    found, errors = discover([tmp_path])
    assert errors == [] and sorted(s.scenario_id for s in found) == ["a" * 128, "v1.2-x_y"]


@pytest.mark.parametrize(("folder", "problem"), [
    ("my split", "'my split' may only hold letters, digits, '_', '.' and '-'"),
    ("splït", "'splït' may only hold letters, digits, '_', '.' and '-'"),
    ("s" * 65, "'" + "s" * 49 + "... is 65 characters long, more than the 64 allowed"),
    ("-x", "'-x' starts with '-' (hidden names, '.', '..' and option-like names cannot name a folder)"),
    ("CON", "'CON' is a Windows device name (CON): no folder can have it there"),
    ("aux.d", "'aux.d' is a Windows device name (AUX): no folder can have it there"),
    ("split.", "'split.' ends with '.', which Windows drops (it would name the same folder as 'split')"),
])
def test_odd_split_folders_give_an_error_for_each_file(tmp_path: Path, folder: str, problem: str) -> None:
    _write(tmp_path / folder / "a.json", _scenario("s_a"))
    _write(tmp_path / folder / "b.json", _scenario("s_b"))
    _write(tmp_path / "search" / "c.json", _scenario("s_c"))
    found, errors = discover([tmp_path])
    assert [s.scenario_id for s in found] == ["s_c"]
    assert _problems(errors) == {"a.json": ("split (folder name)", problem), "b.json": ("split (folder name)", problem)}
    with pytest.raises(ScenarioError, match=r"split \(folder name\)"):
        load_scenario(tmp_path / folder / "a.json", folder)


def test_hidden_folders_and_files_are_skipped(tmp_path: Path) -> None:
    _write(tmp_path / ".hidden" / "a.json", _scenario("s_hidden"))
    _write(tmp_path / "search" / ".tmp.json", _scenario("s_tmp"))
    _write(tmp_path / "search" / "c.json", _scenario("s_c"))
    assert discover([tmp_path]) == ([load_scenario(tmp_path / "search" / "c.json", "search")], [])


def test_hash_universe_marker_and_odd_shapes(tmp_path: Path) -> None:
    path = _write(tmp_path / "search" / "a.json", _scenario("scenario_universe_21_abc"))
    scenario = load_scenario(path, "search")
    assert scenario.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert scenario.universe == "universe_21"
    assert load_scenario(_write(tmp_path / "b.json", _scenario("plain")), "search").universe is None
    odd = {"metadata": ["not", "a", "dict"], "scenario_id": "odd", "events": [],
           "completed_events": [{"action": ["x"]}, 3, {"action": {"function": "send_message_to_agent",
                                                                  "args": {"content": "legacy"}}}]}
    assert load_scenario(_write(tmp_path / "odd.json", odd), "search").task == "legacy"


@pytest.mark.parametrize("duration", ["1e400", "1" + "0" * 400, '"soon"', "true"])
def test_durations_must_be_finite_numbers(tmp_path: Path, duration: str) -> None:
    path = tmp_path / "search" / "a.json"
    path.parent.mkdir()
    path.write_text(f'{{"metadata": {{"definition": {{"scenario_id": "s_a", "duration": {duration}}}}}}}')
    with pytest.raises(ScenarioError, match="metadata.definition.duration: expected a finite number, got "):
        load_scenario(path, "search")


def test_a_split_folder_with_a_hyphen_gets_one_valid_marker_everywhere() -> None:
    from pytest_gaia2.config.splits import split_marker
    from pytest_gaia2.plan.items import PlannedItem

    assert split_marker("my-set.v2") == "my_set_v2_split"
    assert PlannedItem("my-set.v2", "x").split_marker == Scenario("x", "my-set.v2", Path("x.json")).marker
