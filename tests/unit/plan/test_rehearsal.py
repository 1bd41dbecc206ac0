"""The rehearsal pool (:mod:`pytest_gaia2.plan.rehearsal`): Gaia2's shape (five splits of 160 over
ten universes), the same files for the same seed, and every file valid for the reference image by
the checks the shipped scenarios pass (``scripts/scenarios/check_scenarios.py``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from gaia2_testing import REPO, module_from_file

from pytest_gaia2.plan import rehearsal
from pytest_gaia2.plan.builder import dumps
from pytest_gaia2.plan.scenarios import discover
from pytest_gaia2.store.names import SPLITS, universe_of


def _check_scenarios() -> ModuleType:
    return module_from_file(REPO / "scripts" / "scenarios" / "check_scenarios.py")


def _write(root: Path, count: int, seed: int = 0) -> list[Path]:
    paths = []
    for split, built in rehearsal.pool(count, seed):
        paths.append(built.write(root / split / f"{built.scenario_id}.json"))
    return paths


@pytest.fixture(scope="module")
def full_pool(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _write(tmp_path_factory.mktemp("pool"), rehearsal.MAX_COUNT)


def test_the_full_pool_is_gaia2_sized_160_per_split_16_per_universe(full_pool: list[Path]) -> None:
    assert len(full_pool) == 800
    per_split = Counter(path.parent.name for path in full_pool)
    assert per_split == dict.fromkeys(SPLITS, 160)
    per_stratum = Counter((path.parent.name, universe_of(path.stem)) for path in full_pool)
    assert set(per_stratum.values()) == {16}
    assert {universe for _, universe in per_stratum} == {f"universe_{n}" for n in range(21, 31)}
    assert len({path.stem for path in full_pool}) == 800  # ids are distinct


def test_every_file_passes_the_checks_of_the_shipped_scenarios(full_pool: list[Path]) -> None:
    check = _check_scenarios().check
    problems = {path.name: errors for path in full_pool if (errors := check(path))}
    assert problems == {}


def test_the_plugin_reads_every_file_in_its_split(full_pool: list[Path]) -> None:
    scenarios, errors = discover([full_pool[0].parents[1]])
    assert errors == []
    assert Counter(s.split for s in scenarios) == dict.fromkeys(SPLITS, 160)
    assert {s.duration for s in scenarios if s.split == "time"} == {120.0}
    assert {s.duration for s in scenarios if s.split != "time"} == {180.0}


def test_each_split_has_its_real_shape_and_calls_differ_by_split(full_pool: list[Path]) -> None:
    """One simulated model call per oracle action: search answers only; the others act, so a
    priced rehearsal costs more per scenario outside search."""
    calls: dict[str, set[int]] = {split: set() for split in SPLITS}
    for path in full_pool:
        data = json.loads(path.read_text(encoding="utf-8"))
        agent = [event for event in data["events"] if event["event_type"] == "AGENT"]
        calls[path.parent.name].add(len(agent))
        assert "rehearsal" in data["metadata"]["definition"]["tags"]
    assert calls["search"] == {1}
    assert calls["execution"] == {3, 5}  # one turn, or two as some real ones have
    assert calls["adaptability"] == calls["time"] == {2}
    assert calls["ambiguity"] == {3}


@pytest.mark.parametrize("count", [1, 4, 10, 40, 41, 160, 799])
def test_any_count_is_spread_evenly_over_splits_and_universes(count: int) -> None:
    pool = list(rehearsal.pool(count, seed=3))
    per_split = Counter(split for split, _ in pool)
    assert sum(per_split.values()) == count
    assert max(per_split.values()) - min(per_split.get(split, 0) for split in SPLITS) <= 1
    for split in SPLITS:
        universes = Counter(universe_of(built.scenario_id) for s, built in pool if s == split)
        if universes:
            assert max(universes.values()) - min(universes.values()) <= 1, (split, universes)


def test_the_same_seed_writes_the_same_bytes_and_another_seed_other_ones() -> None:
    def texts(count: int, seed: int) -> dict[str, str]:
        return {built.scenario_id: dumps(built.to_dict()) for _, built in rehearsal.pool(count, seed)}

    once, again = texts(40, 7), texts(40, 7)
    assert once == again
    other = texts(40, 8)
    assert not once.keys() & other.keys()
    # A smaller pool is the head of each split of a larger one with the same seed.
    larger = texts(160, 7)
    assert all(larger[sid] == text for sid, text in once.items())


@pytest.mark.parametrize("count", [0, -1, 801])
def test_a_count_outside_gaia2s_800_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="from 1 to 800"):
        rehearsal.shares(count)
