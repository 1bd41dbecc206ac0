"""Discovery and validation: each unusable file is reported once with its path and field."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_gaia2.scenarios import discover, load_scenario

DATA = Path(__file__).resolve().parents[1] / "data" / "scenarios"
SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"


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


def test_other_directory_is_its_own_split(tmp_path: Path) -> None:
    _write(tmp_path / "custom-set" / "x.json", _scenario("x1"))
    scenarios, _ = discover([tmp_path])
    assert scenarios[0].split == "custom-set"
    assert scenarios[0].marker == "custom_set_split"
